"""Bodies the connection cuts short, in whole crawls of a raw loopback server (both HTTP
clients): a 2xx whose connection closes or is reset before the announced end of its body
(short of its Content-Length, a chunked body without its last chunk) is tried again as a
reset is; a retry that gets the whole body stores it, and once the retries are spent the last
partial copy is stored, flagged truncated (``incomplete-body``, ``WARC-Truncated:
disconnect``). A body our own ``max_body_bytes`` cuts is stored at once, as before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.cut_body_site import (
    ALWAYS,
    BIG,
    KEPT,
    ONCE,
    PAGE,
    PRIVATE,
    CutBodySite,
)
from tests.raw_site import serving
from tests.warc_check import read_dir

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

CLIENTS = pytest.mark.parametrize("client", ["lean", "aiohttp"])
MAX_RETRIES = 2
BODY_CAP = 2048


async def _crawl(site: CutBodySite, out: Path, client: str, **more: Any) -> CrawlStats:
    settings = {
        "seeds": [site.url("/")],
        "out": out,
        "quiet": True,
        "robots": False,
        "http_client": client,
        "max_retries": MAX_RETRIES,
        "retry_backoff": 0.05,
        "total_timeout": 2.0,
        "max_host_delay": 0.5,
        "max_body_bytes": BODY_CAP,
        "warc": True,
    } | more
    return await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)


def _records(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}


def _responses(out: Path, url: str) -> list[dict[str, Any]]:
    """The WARC response records of ``url``, in the order written."""
    found = read_dir(out / "warc")
    return [
        r
        for records in found.values()
        for r in records
        if r["type"] == "response" and r["target"] == url
    ]


@CLIENTS
async def test_a_body_cut_once_is_fetched_again_whole(tmp_path: Path, client: str) -> None:
    out = tmp_path / "out"
    async with serving(CutBodySite(paths=tuple(ONCE))) as site:
        stats = await _crawl(site, out, client)
    records, seen = _records(out), site.requests()
    for path in ONCE:
        record = records[path]
        whole = (record["status"], record["error"], record["truncated"], record["bytes"])
        assert whole == (200, None, False, len(PAGE)), (path, record)
        assert record["attempts"] == 2, (path, record)  # stored cut at the first try before
        assert seen[path] == 2, (path, seen)
        cut, kept = _responses(out, site.url(path))
        assert (cut["truncated"], kept["truncated"]) == ("disconnect", None), path
    assert stats.retries == len(ONCE)


@CLIENTS
async def test_a_body_always_cut_is_kept_partial_once_the_retries_are_spent(
    tmp_path: Path, client: str
) -> None:
    out = tmp_path / "out"
    async with serving(CutBodySite(paths=(ALWAYS,))) as site:
        stats = await _crawl(site, out, client)
    record = _records(out)[ALWAYS]
    assert (record["status"], record["error"], record["truncated"], record["bytes"]) == (
        200,
        "incomplete-body",
        True,
        KEPT,
    )
    assert record["attempts"] == MAX_RETRIES + 1  # 1 before: never retried
    assert site.requests()[ALWAYS] == MAX_RETRIES + 1
    archived = _responses(out, site.url(ALWAYS))
    assert [r["truncated"] for r in archived] == ["disconnect"] * (MAX_RETRIES + 1)
    assert stats.retries == MAX_RETRIES


@CLIENTS
async def test_a_body_cut_at_our_own_cap_is_not_asked_for_again(
    tmp_path: Path, client: str
) -> None:
    out = tmp_path / "out"
    async with serving(CutBodySite(paths=(BIG,))) as site:
        stats = await _crawl(site, out, client)
    record = _records(out)[BIG]
    assert (record["status"], record["error"], record["truncated"]) == (200, None, True)
    assert (record["attempts"], site.requests()[BIG]) == (1, 1)
    assert [r["truncated"] for r in _responses(out, site.url(BIG))] == ["length"]
    assert stats.retries == 0


@CLIENTS
async def test_a_robots_txt_cut_short_is_not_read_as_the_whole_file(
    tmp_path: Path, client: str
) -> None:
    """Its start allows everything: read as a whole file, /private would be fetched. A cut
    robots.txt counts as unreachable (its URLs wait for ``robots_retry``), as before."""
    out = tmp_path / "out"
    async with serving(CutBodySite(paths=(PRIVATE, "/length-once"))) as site:
        await _crawl(site, out, client, robots=True, robots_retry=0.3)
    records, seen = _records(out), site.requests()
    assert seen["/robots.txt"] == 2 and PRIVATE not in seen, seen
    assert records[PRIVATE]["error"] == "robots"
    assert (records["/length-once"]["attempts"], records["/length-once"]["error"]) == (2, None)

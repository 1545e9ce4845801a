"""Answers no client may accept, in whole crawls of a raw loopback server (both HTTP clients):
a malformed head (a NUL byte in a header, a bad status line, a header line without a colon, an
invalid or doubled Content-Length) is the same at every try, so it is asked for once, recorded
``protocol-error``, and its host's other pages go on at their pace. An answer cut short before
its head ended is retried and slows its host, as before; a body shorter than its
Content-Length is kept, flagged truncated, as before. Through a SOCKS5 proxy, which relays
the site's bytes, a malformed head is the site's: the proxy is not failed for it."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.fetch.proxy_servers import Socks5Proxy
from tests.malformed_site import CHAIN, CUT, MALFORMED, SHORT, MalformedSite
from tests.raw_site import serving

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

CLIENTS = pytest.mark.parametrize("client", ["lean", "aiohttp"])
PACE = 0.3
"""Longest gap between two pages of the chain at the host's own pace (they go one after the
other in a few milliseconds; a host slowed down for its failures waits 0.5 s at a 50% error
rate, more above)."""


async def _crawl(site: MalformedSite, out: Path, client: str, **flags: Any) -> CrawlStats:
    settings = flags | {
        "seeds": [site.url("/")],
        "out": out,
        "quiet": True,
        "robots": False,
        "http_client": client,
        "retry_backoff": 0.05,
        "total_timeout": 2.0,
        "max_host_delay": 1.0,  # a host slowed down waits 1 s at most: the test stays short
    }
    return await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)


def _records(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}


def _slowed(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if getattr(r, "event", "") == "host-slowed"]


@CLIENTS
async def test_a_malformed_head_is_asked_for_once(tmp_path: Path, client: str) -> None:
    out = tmp_path / "out"
    async with serving(MalformedSite(bad=tuple(MALFORMED))) as site:
        stats = await _crawl(site, out, client)
    records = _records(out)
    seen = site.requests()
    for path in MALFORMED:
        record = records[path]
        assert (record["status"], record["error"], record["attempts"]) == (
            None,
            "protocol-error",
            1,
        ), path
        assert seen[path] == 1, (path, seen)  # retried 3 times before, 4 requests
    assert (stats.retries, stats.errors) == (0, len(MALFORMED))
    assert stats.requests == len(MALFORMED) + 1 + CHAIN
    assert all(records[f"/chain{k}"]["status"] == 200 for k in range(1, CHAIN + 1))


@CLIENTS
async def test_a_malformed_head_holds_no_page_of_its_host_back(
    tmp_path: Path, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The host is not slowed down for answers that tell nothing of its load: its chain of
    pages, found one at a time while the malformed ones are answered, goes at its own pace."""
    caplog.set_level(logging.INFO, logger="gossamer.frontier.politeness")
    async with serving(MalformedSite(bad=tuple(MALFORMED))) as site:
        await _crawl(site, tmp_path / "out", client)
    chain = site.chain_times()
    assert len(chain) == CHAIN
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(chain)]
    assert max(gaps) < PACE, gaps
    assert not _slowed(caplog)


@CLIENTS
async def test_an_answer_cut_short_is_still_retried_and_slows_its_host(
    tmp_path: Path, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gossamer.frontier.politeness")
    out = tmp_path / "out"
    async with serving(MalformedSite(bad=(*CUT, SHORT, "/nul"))) as site:
        stats = await _crawl(site, out, client)
    records = _records(out)
    seen = site.requests()
    for path in CUT:  # the head never came whole: a second try may get it
        record = records[path]
        assert record["status"] is None and record["attempts"] == 4, (path, record)
        assert record["error"] in ("server-disconnected", "connection-reset"), (path, record)
        # aiohttp sends a request once more, itself, when a kept connection closes at once
        assert seen[path] >= 4, (path, seen)
    assert _slowed(caplog)  # failures of the host: it is slowed down, as before
    # a body shorter than its Content-Length is retried as well, then kept as it came, flagged
    short = records[SHORT]
    assert (short["status"], short["error"], short["truncated"]) == (200, "incomplete-body", True)
    assert (short["attempts"], seen[SHORT]) == (4, 4)
    assert stats.retries == 3 * (len(CUT) + 1)
    assert (records["/nul"]["error"], seen["/nul"]) == ("protocol-error", 1)


async def test_a_malformed_head_through_a_socks5_proxy_is_the_sites(tmp_path: Path) -> None:
    """Three malformed pages failed the only proxy (3 failures in a row): the crawl waited
    for its next check, 60 s, with every page still to fetch."""
    proxy = await Socks5Proxy().start()
    out = tmp_path / "out"
    try:
        async with serving(MalformedSite(bad=tuple(MALFORMED))) as site:
            stats = await _crawl(site, out, "lean", proxies=[proxy.url])
    finally:
        await proxy.stop()
    records = _records(out)
    assert {path: records[path]["error"] for path in MALFORMED} == dict.fromkeys(
        MALFORMED, "protocol-error"
    )
    assert all(records[path]["attempts"] == 1 for path in MALFORMED)
    seen = site.requests()
    assert [seen[path] for path in MALFORMED] == [1] * len(MALFORMED), seen
    assert stats.proxies is not None and stats.proxies["waiting"] is False
    assert [p["state"] for p in stats.proxies["proxies"]] == ["live"]
    assert records[f"/chain{CHAIN}"]["status"] == 200

"""Hostile answers to revisits in continuous crawls of a real loopback server: a
``Last-Modified`` a ``datetime`` cannot hold in UTC is not sent back and the crawl goes on (its
revisit once raised an ``OverflowError`` out of the fetch that ended the whole crawl, and every
resumed run of it, the date being stored); a ``304`` to a request that sent no validators says
nothing of the page (it once made the page ``unchanged`` for ever, each answer archived as a
``server-not-modified`` revisit of the first capture, whatever the page had become)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve
from warcio.archiveiterator import ArchiveIterator

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

DURATION = 3.0
GOOD = "Mon, 01 Jan 2024 00:00:00 GMT"
BEYOND = "Fri, 31 Dec 9999 23:00:00 -0100"  # 10000-01-01T00:00Z
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_PAGE = '<html><body><a href="/x">x</a></body></html>'

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _recrawl(handle: Handler, out: Path, **flags: Any) -> CrawlStats:
    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "recrawl": True,
            "max_duration": DURATION,
            "revisit_initial": 1,
            "revisit_min": 1,
            "revisit_max": 1,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
            "warc": True,
        } | flags
        return await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)


def _records(out: Path, path: str) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["url"].endswith(path)]


async def test_a_last_modified_past_year_9999_is_not_sent_back(tmp_path: Path) -> None:
    asked: list[tuple[str, str | None]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append((request.path, request.headers.get("If-Modified-Since")))
        dates = {"/": GOOD, "/x": BEYOND}
        if request.path not in dates:
            return web.Response(status=404)
        headers = {"Last-Modified": dates[request.path]}
        return web.Response(text=_PAGE, content_type="text/html", headers=headers)

    out = tmp_path / "out"
    stats = await _recrawl(handle, out)
    beyond = [since for path, since in asked if path == "/x"]
    assert len(beyond) >= 2 and beyond[1:] == [None] * (len(beyond) - 1)
    assert [since for path, since in asked if path == "/"][1:2] == [GOOD]
    assert [r["change"] for r in _records(out, "/x")][:2] == ["new", "unchanged"]
    assert stats.internal_errors == 0


class BareNotModified:
    """``/x`` answers its first request in full, without validators, then 304 to every
    one; ``asked``: the conditional headers of each request of ``/x``."""

    def __init__(self) -> None:
        self.asked: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path != "/x":
            return web.Response(text=_PAGE, content_type="text/html")
        self.asked.append({k: v for k, v in request.headers.items() if k.startswith("If-")})
        if len(self.asked) > 1:
            return web.Response(status=304)
        body = "<html><head><title>first</title></head><body>first</body></html>"
        return web.Response(text=body, content_type="text/html")


async def test_a_304_to_a_request_without_validators_is_no_unchanged_page(
    tmp_path: Path,
) -> None:
    site, out = BareNotModified(), tmp_path / "out"
    stats = await _recrawl(site.handle, out)
    asked = site.asked
    assert len(asked) >= 3 and not any(asked)
    revisits = _records(out, "/x")[1:]
    assert revisits and {(r["status"], r["change"]) for r in revisits} == {(304, None)}
    assert stats.revisits is not None and not stats.revisits["results"].get("not-modified")
    profiles = []
    for path in out.rglob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if (record.rec_headers.get_header("WARC-Target-URI") or "").endswith("/x"):
                    profiles.append(record.rec_headers.get_header("WARC-Profile"))
    assert profiles and not any(profiles)  # full response records, no revisit claimed


class FirstNotModified:
    """``/x`` answers its first ``bare`` requests 304 (none sends validators), then the same
    page in full; ``/y`` always 304; ``asked``: the paths requested, in order."""

    def __init__(self, bare: int = 2) -> None:
        self.bare = bare
        self.asked: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/":
            page = '<html><body><a href="/x">x</a> <a href="/y">y</a></body></html>'
            return web.Response(text=page, content_type="text/html")
        self.asked.append(request.path)
        if request.path == "/y" or self.asked.count("/x") <= self.bare:
            return web.Response(status=304)
        body = "<html><head><title>x</title></head><body>the page</body></html>"
        return web.Response(text=body, content_type="text/html")


async def test_a_304_to_a_first_fetch_is_no_new_page_and_keeps_the_url_due(
    tmp_path: Path,
) -> None:
    site, out = FirstNotModified(), tmp_path / "out"
    stats = await _recrawl(site.handle, out, max_duration=4.5)
    answers = [(r["status"], r["change"]) for r in _records(out, "/x")]
    assert answers[:4] == [(304, None), (304, None), (200, "new"), (200, "unchanged")]
    new = _records(out, "/x")[2]
    assert new["previous_fetched_at"] == pytest.approx(
        _records(out, "/x")[1]["fetched_at"], abs=0.01
    )
    assert site.asked.count("/y") >= 3  # never answered in full, never dropped
    assert {r["change"] for r in _records(out, "/y")} == {None}
    assert stats.revisits is not None and not stats.revisits["results"].get("not-modified")
    kinds = []
    for path in out.rglob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if uri.endswith("/x") and record.rec_type in ("response", "revisit"):
                    kinds.append(record.rec_headers.get_header("WARC-Profile"))
    assert kinds[2:4] == [None, IDENTICAL]


async def test_a_304_to_a_first_fetch_has_no_change_without_recrawl(tmp_path: Path) -> None:
    site, out = FirstNotModified(), tmp_path / "out"
    await _recrawl(site.handle, out, recrawl=False, max_duration=None)
    assert [(r["status"], r["change"]) for r in _records(out, "/x")] == [(304, None)]

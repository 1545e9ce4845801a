"""A ``Last-Modified`` a ``datetime`` cannot hold in UTC, in a continuous crawl of a real
loopback server: the page is revisited without ``If-Modified-Since`` and the crawl goes on.
Its revisit once raised an ``OverflowError`` out of the fetch that ended the whole crawl (and
every resumed run of it, the date being stored)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

DURATION = 3.0
GOOD = "Mon, 01 Jan 2024 00:00:00 GMT"
_DATES = {
    "/": GOOD,
    "/beyond": "Fri, 31 Dec 9999 23:00:00 -0100",  # 10000-01-01T00:00Z
}


async def test_a_last_modified_past_year_9999_is_not_sent_back(tmp_path: Path) -> None:
    asked: list[tuple[str, str | None]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append((request.path, request.headers.get("If-Modified-Since")))
        if request.path not in _DATES:
            return web.Response(status=404)
        body = '<html><body><a href="/beyond">b</a></body></html>'
        headers = {"Last-Modified": _DATES[request.path]}
        return web.Response(text=body, content_type="text/html", headers=headers)

    out = tmp_path / "out"
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
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)
    beyond = [since for path, since in asked if path == "/beyond"]
    assert len(beyond) >= 2 and beyond[1:] == [None] * (len(beyond) - 1)
    assert [since for path, since in asked if path == "/"][1:2] == [GOOD]
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    changes = [r["change"] for r in map(json.loads, lines) if r["url"].endswith("/beyond")]
    assert changes[:2] == ["new", "unchanged"]
    assert stats.internal_errors == 0

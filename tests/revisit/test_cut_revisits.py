"""Revisits of a page whose body the connection cuts short, in a continuous crawl of a real
loopback server (no retries: each fetch is one request). A first fetch cut short keeps no
validators: the next asks for the page unconditionally and gets it whole (before, its ETag
was sent back and the server's 304 made the partial copy ``unchanged``). A revisit cut short
says nothing of the page: its record has no ``change`` and the last whole capture's row and
validators stay (before, it was ``changed`` and the partial copy its new capture)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import cut_short, serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

DURATION = 5.5
PAGE = b"<html><body><p>" + b"the whole page " * 20 + b"</p></body></html>"
ETAG = '"v1"'
CUT = (1, 3)
"""The requests (1 for the first) whose body is cut short."""


class Site:
    """The seed ``/p``: its requests in ``CUT`` cut short, the others whole or 304."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        """The If-None-Match of each request of /p."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path != "/p":
            return web.Response(status=404)
        self.asked.append(request.headers.get("If-None-Match"))
        headers = {"Content-Type": "text/html", "ETag": ETAG}
        if len(self.asked) in CUT:
            return await cut_short(request, PAGE[:40], headers)
        if self.asked[-1] == ETAG:
            return web.Response(status=304, headers={"ETag": ETAG})
        return web.Response(body=PAGE, headers=headers)


async def test_a_cut_copy_is_never_taken_for_the_page(tmp_path: Path) -> None:
    site, out = Site(), tmp_path / "out"
    async with serve(site.handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/p"],
            "out": out,
            "quiet": True,
            "recrawl": True,
            "max_retries": 0,
            "max_duration": DURATION,
            "revisit_initial": 1,
            "revisit_min": 1,
            "revisit_max": 1,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), DURATION + 20)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    records: list[dict[str, Any]] = [r for r in map(json.loads, lines) if r["url"].endswith("/p")]
    assert len(records) >= 4, records
    assert site.asked[:4] == [None, None, ETAG, ETAG], site.asked
    found = [(r["status"], r["truncated"], r["change"]) for r in records[:4]]
    assert found == [
        (200, True, "new"),
        (200, False, "changed"),
        (200, True, None),
        (304, False, "unchanged"),
    ]

"""A host's pace holds across a resume: a crawl resumed at once after a stop asks a host
whose delay has not run out only once it has (robots.txt's request too). Before, the
hosts' last request times lived in memory only, and the resumed crawl asked at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

DELAY = 1.5


async def test_a_resumed_crawl_keeps_the_hosts_pace(tmp_path: Path) -> None:
    arrivals: list[tuple[float, str]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        arrivals.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nCrawl-delay: {DELAY}\n")
        links = "".join(f'<a href="/p{n}">p</a>' for n in range(6))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings: dict[str, Any] = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "checkpoint_interval": 0.05,
            "max_crawl_delay": DELAY,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings | {"max_pages": 2}, env={})), 30)
        first = len(arrivals)
        resumed = settings | {"seeds": [], "resume": True, "max_pages": 3}
        await asyncio.wait_for(run_crawl(load_settings(resumed, env={})), 30)
    assert first >= 2 and len(arrivals) > first, arrivals
    gap = arrivals[first][0] - arrivals[first - 1][0]
    assert gap >= DELAY - 0.05, (gap, arrivals)

"""A host's sitemaps are read in the order they were named (a real server on loopback)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

NAMED = [f"/maps/{n}.xml" for n in (7, 2, 9, 0, 5, 1, 8, 3, 6, 4)]
"""The sitemaps robots.txt names, in an order no sort gives."""
GIVEN = ["/given/b.xml", "/given/a.xml"]
"""The sitemaps ``--sitemap`` names: read before robots.txt's, which are named later."""
EMPTY = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'


async def test_a_host_s_sitemaps_are_read_in_the_order_named(tmp_path: Path) -> None:
    asked: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/robots.txt":
            base = f"http://site.test:{request.url.port}"
            lines = ["User-agent: *", "Allow: /", *(f"Sitemap: {base}{p}" for p in NAMED)]
            return web.Response(text="\n".join(lines) + "\n")
        if request.path.endswith(".xml"):
            return web.Response(body=EMPTY, content_type="application/xml")
        return web.Response(text="<title>home</title>", content_type="text/html")

    async with serve(handle) as port:
        base = f"http://site.test:{port}"
        settings = {
            "seeds": [f"{base}/"],
            "sitemap": [base + path for path in GIVEN],
            "out": tmp_path / "out",
            "resolve": ["site.test=127.0.0.1"],
            "delay": 0.01,
            "quiet": True,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)
    assert [path for path in asked if path.endswith(".xml")] == GIVEN + NAMED

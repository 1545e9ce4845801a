"""A continuous crawl reads its sitemaps again: a page announced later is found, and a newer
``lastmod`` makes a page fetched before it due although its interval has not passed."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from pathlib import Path

from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

DURATION = 5.0
ANNOUNCED = 1.5
"""Seconds after the crawl's first request when the sitemap lists /later and a newer lastmod
of /a."""


def _w3c(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


async def test_sitemaps_are_read_again_and_a_newer_lastmod_makes_a_page_due(
    tmp_path: Path,
) -> None:
    hits: list[tuple[float, str]] = []
    first: list[float] = []  # the crawl's first request (a slow start on a busy machine)

    async def handle(request: web.Request) -> web.StreamResponse:
        now = time.time()
        started = (first or [now])[0]
        first[:] = [started]
        old = started - 3600
        hits.append((now - started, request.path))
        later = now - started >= ANNOUNCED
        base = f"http://127.0.0.1:{request.url.port}"
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap.xml\n")
        if request.path == "/sitemap.xml":
            a_changed = _w3c(started + ANNOUNCED if later else old)
            rows = f"<url><loc>{base}/a</loc><lastmod>{a_changed}</lastmod></url>"
            if later:
                rows += f"<url><loc>{base}/later</loc><lastmod>{_w3c(now)}</lastmod></url>"
            xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
            return web.Response(text=xml, content_type="application/xml")
        if request.path in ("/", "/a", "/later"):
            version = "2" if later and request.path == "/a" else "1"
            headers = {"Last-Modified": formatdate(old, usegmt=True)}
            body = f"<html><body><p>{request.path} version {version}</p></body></html>"
            return web.Response(text=body, content_type="text/html", headers=headers)
        return web.Response(status=404)

    async with serve(handle) as port:
        settings = load_settings(
            {
                "seeds": [f"http://127.0.0.1:{port}/"],
                "out": tmp_path / "out",
                "quiet": True,
                "recrawl": True,
                "revisit_initial": 600,  # no page is due by its interval during the test
                "revisit_min": 1,
                "revisit_max": 600,
                "revisit": [{"url": "*/sitemap.xml", "initial": 1, "min": 1, "max": 1}],
                "max_duration": DURATION,
                "delay": 0.05,
                "checkpoint_interval": 0.05,
            },
            env={},
        )
        await asyncio.wait_for(run_crawl(settings), DURATION + 20)
    sitemap_reads = [at for at, path in hits if path == "/sitemap.xml"]
    assert len(sitemap_reads) >= 3, sitemap_reads  # read every second
    later = [at for at, path in hits if path == "/later"]
    assert later and later[0] - ANNOUNCED < 2.5, later  # found within two reads
    a_fetches = [at for at, path in hits if path == "/a"]
    assert len(a_fetches) >= 2 and a_fetches[1] >= ANNOUNCED, a_fetches
    assert a_fetches[1] - ANNOUNCED < 2.5, a_fetches  # due at the next read, not in 600 s

"""A feed's date of publication is not a ``lastmod``: an RSS ``pubDate`` before a page's fetch
says nothing of the edits since, so a feed read does not mark the page unchanged (which, with
``--revisit-spare``, left a page announced in a feed without a spare slot however often it
changed); a sitemap's ``lastmod`` and an Atom ``updated`` do."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from pathlib import Path

from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.crawldb import CrawlDB
from gossamer.settings import load_settings
from gossamer.urls import fingerprint

DURATION = 4.0
PAGES = ("/posted", "/updated", "/mapped")
"""Announced in an RSS feed (``pubDate``), an Atom feed (``updated``) and a sitemap
(``lastmod``), each dated an hour before the crawl; none changes."""


def _files(base: str, old: float) -> dict[str, tuple[str, str]]:
    w3c = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(old))
    rss = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        f"<item><link>{base}/posted</link><pubDate>{formatdate(old, usegmt=True)}</pubDate>"
        "</item></channel></rss>"
    )
    atom = (
        '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
        f'<entry><link href="{base}/updated"/><updated>{w3c}</updated></entry></feed>'
    )
    sitemap = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{base}/mapped</loc><lastmod>{w3c}</lastmod></url></urlset>"
    )
    return {
        "/rss.xml": (rss, "application/rss+xml"),
        "/atom.xml": (atom, "application/atom+xml"),
        "/sitemap.xml": (sitemap, "application/xml"),
    }


async def test_a_feed_pubdate_does_not_vouch_for_a_page_a_lastmod_does(tmp_path: Path) -> None:
    old = time.time() - 3600

    async def handle(request: web.Request) -> web.StreamResponse:
        base = f"http://127.0.0.1:{request.url.port}"
        files = _files(base, old)
        if request.path == "/robots.txt":
            lines = "".join(f"Sitemap: {base}{path}\n" for path in files)
            return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
        if request.path in files:
            text, kind = files[request.path]
            return web.Response(text=text, content_type=kind)
        if request.path in ("/", *PAGES):
            body = f"<html><body><p>{request.path}, the same at every fetch</p></body></html>"
            return web.Response(text=body, content_type="text/html")
        return web.Response(status=404)

    async with serve(handle) as port:
        base = f"http://127.0.0.1:{port}"
        settings = load_settings(
            {
                "seeds": [f"{base}/"],
                "out": tmp_path / "out",
                "quiet": True,
                "recrawl": True,
                "revisit_spare": 1.0,
                "revisit_initial": 600,
                "revisit_min": 600,
                "revisit_max": 600,
                "revisit": [{"url": "*.xml", "initial": 1, "min": 1, "max": 1}],
                "max_duration": DURATION,
                "delay": 0.05,
                "checkpoint_interval": 0.05,
            },
            env={},
        )
        await asyncio.wait_for(run_crawl(settings), DURATION + 20)
    db = CrawlDB(tmp_path / "out" / "crawl.db")
    checked = dict(db.query("SELECT fp, checked_at FROM revisits"))
    db.close()
    posted, updated, mapped = (checked[fingerprint(f"{base}{page}")] for page in PAGES)
    assert posted is None  # never unchanged as of a read: its wait counts from its fetch
    assert updated is not None and mapped is not None

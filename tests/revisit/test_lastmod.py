"""A sitemap read during a continuous crawl that lists a page with a ``lastmod`` newer than
its last fetch makes the page due now (its interval would have waited an hour); an older
``lastmod`` changes nothing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from tests.revisit.site import NOW, serve_site

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.urls import fingerprint

OLD = "2015-10-21T07:28:00Z"
HOUR = 3600


def _revisit_rows(db: Path, urls: list[str]) -> int:
    """How many of ``urls`` have a committed revisit row in crawl.db (0 before it exists)."""
    if not db.exists():
        return 0
    marks = ", ".join("?" * len(urls))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            sql = f"SELECT COUNT(*) FROM revisits WHERE fp IN ({marks})"
            count: int = conn.execute(sql, [fingerprint(u) for u in urls]).fetchone()[0]
        except sqlite3.OperationalError:  # the schema is not there yet
            return 0
    return count


async def test_a_newer_sitemap_lastmod_makes_a_page_due_now(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site, serve_site() as other:
        # The sitemap is another host's, named by the site's robots.txt (so its fetch, which
        # waits for the gate, holds no slot of the site's); its port in scope, or it is not
        # fetched.
        pages = [site.url("etag"), site.url("lm")]
        other.listed = {pages[0]: NOW, pages[1]: OLD}
        site.robots = f"User-agent: *\nAllow: /\nSitemap: {other.url('sitemap.xml')}\n"
        settings = {
            "seeds": [site.url()],
            "allow_ports": [other.port],
            "out": out,
            "quiet": True,
            "recrawl": True,
            "revisit_initial": HOUR,
            "revisit_min": HOUR,
            "revisit_max": HOUR,
            "max_duration": 4.0,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
        }
        crawl = asyncio.create_task(run_crawl(load_settings(settings, env={})))
        # The sitemap answers once both pages were fetched and their revisit rows committed.
        for _ in range(300):
            if _revisit_rows(out / "crawl.db", pages) == 2 or crawl.done():
                break
            await asyncio.sleep(0.02)
        assert _revisit_rows(out / "crawl.db", pages) == 2
        other.sitemap_gate.set()
        await asyncio.wait_for(crawl, 20)
    etag, lm = site.hits("etag"), site.hits("lm")
    assert len(etag) == 2, etag
    assert etag[1].if_none_match == '"e1"' and etag[1].status == 304
    assert len(lm) == 1, "an older lastmod makes nothing due"
    found = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    assert [r["change"] for r in found if r["url"] == pages[0]] == ["new", "unchanged"]

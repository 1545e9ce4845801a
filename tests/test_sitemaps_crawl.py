"""Sitemaps and feeds in whole crawls of a real server on loopback: pages reachable only
through them are crawled, politely and within robots.txt; hostile files end as flagged
records; ``--sitemaps off`` reads nothing; cross-host entries only where robots.txt allows."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.local_app import serve
from tests.sitemap_site import PAGES, SitemapSite
from tests.ui.test_metrics import get, samples, value

from gossamer.crawl import build_crawler, run_crawl
from gossamer.metrics.exporter import MetricsServer
from gossamer.settings import canonical_seeds, load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

DELAY = 0.15


async def _crawl(
    site: SitemapSite, out: Path, given: tuple[str, ...] = (), **flags: Any
) -> CrawlStats:
    """Crawl ``site`` from both hosts' home pages, with ``--sitemap`` for each site.test
    path of ``given``."""
    async with serve(site.handle) as port:
        site.port = port
        settings = {
            "seeds": [site.url("site.test", "/"), site.url("other.test", "/")],
            "out": out,
            "resolve": ["site.test=127.0.0.1", "other.test=127.0.0.1"],
            "delay": DELAY,
            "quiet": True,
            "sitemap": [site.url("site.test", path) for path in given],
        }
        return await asyncio.wait_for(run_crawl(load_settings(settings | flags, env={})), 45)


def _records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _pages(out: Path, host: str) -> set[str]:
    return {
        "/" + r["url"].split("/", 3)[3]
        for r in _records(out)
        if r["kind"] == "page" and f"//{host}:" in r["url"]
    }


def _sitemaps(out: Path) -> dict[str, dict[str, Any]]:
    return {"/" + r["url"].split("/", 3)[3]: r for r in _records(out) if r["kind"] == "sitemap"}


async def test_pages_only_in_sitemaps_and_feeds_are_crawled_politely(tmp_path: Path) -> None:
    site = SitemapSite()
    out = tmp_path / "out"
    stats = await _crawl(site, out, ("/feed.rss", "/atom.xml"))
    assert stats.sitemaps is not None
    assert _pages(out, "site.test") == {"/", *PAGES}
    assert _pages(out, "other.test") == {"/", "/o1", "/o2"}
    maps = _sitemaps(out)
    index = maps["/sitemap_index.xml"]["extra"]
    assert index == {"format": "sitemapindex", "entries": 2, "dropped": 0}
    assert maps["/maps/a.xml.gz"]["extra"]["format"] == "urlset"
    assert maps["/feed.rss"]["extra"] == {"format": "rss", "entries": 1, "dropped": 0}
    assert maps["/atom.xml"]["extra"] == {"format": "atom", "entries": 1, "dropped": 0}
    blocked = maps["/private/sitemap.xml"]
    assert (blocked["status"], blocked["error"]) == (None, "robots")
    assert "/private/sitemap.xml" not in site.paths("site.test")
    # cross-host: site.test's robots.txt names other.test/cross.xml, not other.test/own.xml
    assert maps["/own.xml"]["extra"]["dropped"] == 1
    assert "/forbidden-cross" not in site.paths("site.test")
    assert site.closest("site.test") >= DELAY * 0.95
    assert site.closest("other.test") >= DELAY * 0.95
    assert stats.pages == len(PAGES) + 4  # sitemap records count as no page
    assert stats.sitemaps["files_total"] == len(maps)
    assert stats.sitemaps["blocked_total"] == 1
    with sqlite3.connect(out / "crawl.db") as db:
        row = db.execute(
            "SELECT lastmod, changefreq, priority FROM sitemap_entries WHERE url LIKE '%/a1'"
        ).fetchone()
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM pages GROUP BY kind").fetchall())
    assert row == (1714557600.0, "daily", 0.8)
    assert kinds == {"page": stats.pages, "sitemap": len(maps)}
    assert json.loads((out / "stats.json").read_text())["sitemaps"]["files_total"] == len(maps)


async def test_sitemaps_off_reads_nothing(tmp_path: Path) -> None:
    site = SitemapSite()
    out = tmp_path / "out"
    stats = await _crawl(site, out, ("/feed.rss",), sitemaps="off")
    assert _pages(out, "site.test") == {"/"}
    assert not _sitemaps(out)
    assert stats.sitemaps is None
    assert all(p in ("/", "/robots.txt") for _, _, p in site.log)


async def test_hostile_sitemaps_end_as_flagged_records(tmp_path: Path) -> None:
    site = SitemapSite(robots=False, hostile=True)
    out = tmp_path / "out"
    stats = await _crawl(site, out)
    maps = _sitemaps(out)
    assert "gzip-bomb" in maps["/bomb.xml.gz"]["flags"]
    assert "entities" in maps["/laughs.xml"]["flags"]
    assert maps["/laughs.xml"]["extra"]["entries"] == 0
    assert stats.sitemaps is not None and stats.sitemaps["flagged_total"] == 2
    assert _pages(out, "site.test") == {"/"}


def _cli(site: SitemapSite, out: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gossamer",
        "crawl",
        site.url("site.test", "/"),
        site.url("other.test", "/"),
        "--out",
        str(out),
        "--resolve",
        "*.test=127.0.0.1",
        "--delay",
        "0.05",
        "--checkpoint-interval",
        "0.05",
        "--quiet",
        *args,
    ]


async def _entries_committed(out: Path, count: int) -> None:
    """Until crawl.db holds ``count`` sitemap entries (bounded)."""
    for _ in range(500):
        with contextlib.suppress(sqlite3.Error), sqlite3.connect(out / "crawl.db") as db:
            if db.execute("SELECT COUNT(*) FROM sitemap_entries").fetchone()[0] >= count:
                return
        await asyncio.sleep(0.02)
    raise TimeoutError("no sitemap entries committed")


async def test_resume_after_kill_mid_sitemap_loses_nothing(tmp_path: Path) -> None:
    site = SitemapSite(stall="/maps/b.xml")
    out = tmp_path / "out"
    async with serve(site.handle) as port:
        site.port = port
        crawl = await asyncio.create_subprocess_exec(*_cli(site, out))
        try:
            await asyncio.wait_for(site.stalled.wait(), 30)
            await _entries_committed(out, 2)  # /maps/a.xml.gz's, before the kill
        finally:
            crawl.kill()
            await crawl.wait()
            site.release.set()
        site.stall = None
        before = len(site.log)
        resumed = await asyncio.create_subprocess_exec(*_cli(site, out, "--resume"))
        assert await asyncio.wait_for(resumed.wait(), 45) == 0
    assert _pages(out, "site.test") >= {"/a1", "/a2", "/b1", "/x1"}
    assert _pages(out, "other.test") >= {"/o1", "/o2"}
    again = [p for _, h, p in site.log[before:] if h == "site.test"]
    assert "/maps/b.xml" in again  # the index not read to its end is read again
    assert "/private/sitemap.xml" not in again
    fetched = [p for _, h, p in site.log if h == "site.test" and p in PAGES]
    assert len(fetched) == len(set(fetched))  # no page fetched twice


async def test_metrics_and_stats_count_sitemaps(tmp_path: Path) -> None:
    site = SitemapSite()
    server = MetricsServer("local", "w")
    await server.start("127.0.0.1", 0)
    assert server.port
    try:
        async with serve(site.handle) as port:
            site.port = port
            settings = load_settings(
                {
                    "seeds": [site.url("site.test", "/")],
                    "out": tmp_path,
                    "resolve": ["site.test=127.0.0.1", "other.test=127.0.0.1"],
                    "quiet": True,
                },
                env={},
            )
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds, None, server) as crawler:
                stats = await asyncio.wait_for(crawler.run(seeds), 30)
                _, _, text = await get(server.port, "/metrics")
    finally:
        await server.close()
    assert stats.sitemaps is not None
    scrape = samples(text)
    for name in ("files", "entries", "admitted", "flagged", "blocked", "offscope", "invalid"):
        assert value(scrape, f"gossamer_sitemap_{name}_total") == stats.sitemaps[f"{name}_total"]
    assert stats.sitemaps["files_total"] == 4  # the index, its 2 children, private
    assert stats.sitemaps["blocked_total"] == 1
    assert stats.sitemaps["offscope_total"] == 1  # cross.xml: other.test is no seed's host
    assert "sitemaps 4 (+" in stats.progress_line()

"""Sitemaps and feeds in a cluster job: the worker that owns a host (it fetches its
robots.txt) reads the sitemaps robots.txt names, and the job's ``--sitemap`` feeds; their
entries go to the Redis frontier, which routes them. Real redis-server, a real site on
loopback, the worker as a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cluster.harness import FAST, one_worker_job
from tests.local_app import serve
from tests.redis_server import RedisServer
from tests.sitemap_scope_site import LISTED, ScopeSite
from tests.sitemap_site import PAGES, SitemapSite

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_worker_reads_sitemaps_and_feeds(tmp_path: Path, redis_server: RedisServer) -> None:
    site = SitemapSite()
    async with serve(site.handle) as port:
        site.port = port
        seeds = [site.url("site.test", "/"), site.url("other.test", "/")]
        options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--delay", "0.1"]
        options += ["--sitemap", site.url("site.test", "/feed.rss")]
        records = await one_worker_job(tmp_path, redis_server.url, *seeds, *FAST, *options)
    pages = {r["url"].split("/", 3)[3] for r in records if r["kind"] == "page"}
    maps = {r["url"].split("/", 3)[3]: r for r in records if r["kind"] == "sitemap"}
    assert {p.lstrip("/") for p in PAGES - {"/t1"}} <= pages
    assert {"o1", "o2"} <= pages
    assert maps["feed.rss"]["extra"]["format"] == "rss"
    assert maps["private/sitemap.xml"]["error"] == "robots"
    assert "/private/sitemap.xml" not in site.paths("site.test")
    assert site.closest("site.test") >= 0.1 * 0.95


async def test_a_worker_fetches_no_sitemap_out_of_the_job_scope(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Sitemap: lines on another port, the loopback address, a host out of scope, with a
    port out of range, and a sitemap's redirect to another port: none fetched, none an
    internal error; the sitemap in scope is read."""
    site = ScopeSite()
    async with serve(site.handle) as port, serve(site.listen) as listener:
        site.port, site.listener = port, listener
        options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--delay", "0.01"]
        records = await one_worker_job(
            tmp_path, redis_server.url, site.url("a.test", "/"), *FAST, *options
        )
    assert site.heard == []
    assert [r for r in site.requests if not r[0].startswith("a.test:")] == []
    maps = {r["url"] for r in records if r["kind"] == "sitemap"}
    assert maps == {site.url("a.test", "/redirect.xml"), site.url("a.test", "/in-scope.xml")}
    assert all(r["error"] != "internal-error" for r in records)
    assert site.url("a.test", LISTED) in {r["url"] for r in records if r["kind"] == "page"}

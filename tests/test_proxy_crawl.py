"""A whole crawl through a proxy pool of real proxies on 127.0.0.1: the records name the proxy
that fetched each page, stats.json holds the pool's figures, and no credential reaches any
output. A real tinyproxy: a site whose root answers 404 is crawled through it, and a crawl
whose every proxy dies waits, spending no attempt, until one comes back."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import generate_latest
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.fetch.tinyproxy import tinyproxy
from tests.local_app import serve

from gossamer.crawl import build_crawler, run_crawl
from gossamer.engine import RobotsFetch
from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.proxies import ProxyPool
from gossamer.frontier.robots import RobotsCache, RobotsDeferred
from gossamer.metrics.exporter import MetricsServer
from gossamer.proxyurl import parse_proxy
from gossamer.settings import SettingsError, canonical_seeds, load_settings

pytestmark = pytest.mark.timeout(60)

PAGES = 12


async def _page(request: web.Request) -> web.Response:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES)) if request.path == "/" else ""
    return web.Response(text=f"<html><body>{links}leaf</body></html>", content_type="text/html")


async def test_crawl_through_the_pool(tmp_path: Path) -> None:
    plain = await HttpProxy().start()
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    dead = f"http://127.0.0.1:{dead_port()}"
    listed = tmp_path / "proxies.txt"
    listed.write_text(f"# collected\n{guarded.url}\n{dead}\n")
    try:
        async with serve(_page) as port:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "robots": False,
                    "quiet": True,
                    "text": False,
                    "proxies": [plain.url],
                    "proxies_file": listed,
                    "per_host": 4,
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await plain.stop()
        await guarded.stop()
    assert stats.ok == PAGES + 1
    out = tmp_path / "out"
    lines = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    used = {r["proxy"] for r in lines}
    assert used == {f"http://127.0.0.1:{plain.port}", f"http://127.0.0.1:{guarded.port}"}
    pool: dict[str, Any] = json.loads((out / "stats.json").read_text())["proxies"]
    by_proxy = {p["proxy"]: p for p in pool["proxies"]}
    assert by_proxy[dead]["state"] == "dead"
    assert sum(p["requests"] for p in pool["proxies"]) == PAGES + 1
    assert pool["live"] == 2
    for path in out.iterdir():
        if path.is_file():
            assert b"pa55word" not in path.read_bytes(), path.name


def test_a_bad_proxy_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match=r"invalid setting 'proxies'.*scheme") as info:
        load_settings({"seeds": ["http://a.example/"], "proxies": ["ftp://u:hunter2@p:1"]})
    assert "hunter2" not in str(info.value)
    settings = load_settings({}, env={"GOSSAMER_PROXIES": "http://p:1,socks5://q:2"})
    assert settings.proxies == ["http://p:1", "socks5://q:2"]


def test_a_cluster_job_stores_its_proxies_without_passwords() -> None:
    from gossamer.cluster.jobs import job_settings
    from gossamer.settings import JobSettings

    settings = JobSettings(seeds=["http://a.example/"], proxies=["http://u:pw@p.example:3128"])
    stored = job_settings(settings, ["http://a.example/"])
    assert stored.proxies == ["http://u@p.example:3128"]


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


async def test_a_site_whose_root_answers_404_is_crawled_through_tinyproxy(tmp_path: Path) -> None:
    """The report's case: a real tinyproxy and a dead port, seeds on a site whose root
    answers 404. The live proxy passes its check (the first seed, after robots.txt), every
    page is fetched; the root is never asked for."""
    paths: list[str] = []

    async def site(request: web.Request) -> web.Response:
        paths.append(request.path)
        if request.path == "/robots.txt":
            sitemap = f"http://{request.host}/sitemap.xml"
            return web.Response(text=f"User-agent: *\nDisallow: /private\nSitemap: {sitemap}\n")
        if request.path == "/":
            raise web.HTTPNotFound()
        links = (
            "".join(f'<a href="/p{i}">{i}</a>' for i in range(17)) if request.path == "/s" else ""
        )
        return web.Response(text=f"<html><body>{links}page</body></html>", content_type="text/html")

    dead = f"http://127.0.0.1:{dead_port()}"
    async with serve(site) as port, tinyproxy(tmp_path) as proxy:
        settings = load_settings(
            {
                "seeds": [f"http://127.0.0.1:{port}/s"],
                "out": tmp_path / "out",
                "quiet": True,
                "text": False,
                "proxies": [proxy.url, dead],
                "sitemaps": False,  # the first requests: the check's, then the page's
            },
            env={},
        )
        stats = await asyncio.wait_for(run_crawl(settings), 30)
    assert stats.ok == 18
    records = _records(tmp_path / "out")
    assert {r["proxy"] for r in records} == {proxy.url}
    assert not [r for r in records if r["error"]]
    assert "/" not in paths
    assert paths[:3] == ["/robots.txt", "/s", "/s"]  # the check's robots.txt and URL, the page
    pool = json.loads((tmp_path / "out" / "stats.json").read_text())["proxies"]
    assert {p["proxy"]: p["state"] for p in pool["proxies"]} == {proxy.url: "live", dead: "dead"}
    assert pool["waiting"] is False
    with sqlite3.connect(tmp_path / "out" / "crawl.db") as db:  # the check's robots.txt's
        kept = db.execute("SELECT url FROM sitemaps").fetchall()
    assert kept == [(f"http://127.0.0.1:{port}/sitemap.xml",)]


class _Events(logging.Handler):
    """Sets an event for each log record of an ``event`` it is told to watch."""

    def __init__(self, **events: asyncio.Event) -> None:
        super().__init__()
        self.events = events
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        name = getattr(record, "event", None)
        if name in self.events:
            self.seen.append(name)
            self.events[name].set()


async def test_the_crawl_waits_while_no_proxy_is_live(tmp_path: Path) -> None:
    """Every proxy dies mid-crawl (tinyproxy stopped, the other a dead port): the crawl
    leases nothing, says so once in the log, the progress line and /metrics, spends no
    URL's attempt, and goes on when tinyproxy is back."""
    pages = 20
    half = asyncio.Event()

    async def site(request: web.Request) -> web.Response:
        if request.path == "/p5":
            half.set()
        links = (
            "".join(f'<a href="/p{i}">{i}</a>' for i in range(pages)) if request.path == "/" else ""
        )
        return web.Response(text=f"<html><body>{links}page</body></html>", content_type="text/html")

    none_live, back = asyncio.Event(), asyncio.Event()
    watch = _Events(**{"proxies-none-live": none_live, "proxies-back": back})
    logger = logging.getLogger("gossamer.fetch.proxies")
    logger.addHandler(watch)
    level = logger.level
    logger.setLevel(logging.INFO)
    metrics = MetricsServer("j", "w")
    try:
        async with serve(site) as port, tinyproxy(tmp_path) as proxy:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "text": False,
                    "robots": False,
                    "per_host": 1,
                    "delay": 0.05,
                    "proxies": [proxy.url, f"http://127.0.0.1:{dead_port()}"],
                    "proxy_max_failures": 1,
                    "proxy_revalidate": 0.3,
                },
                env={},
            )
            (tmp_path / "out").mkdir()
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds, metrics=metrics) as crawler:
                run = asyncio.create_task(crawler.run(seeds))
                async with asyncio.timeout(20):
                    await half.wait()
                    await proxy.stop()
                    await none_live.wait()
                    assert "no proxy live" in crawler.stats().progress_line()
                    scrape = generate_latest(metrics.registry).decode()
                    assert 'gossamer_proxies_waiting{job="j",worker="w"} 1.0' in scrape
                    stalled = crawler.stats().pages
                    await proxy.start()
                    await back.wait()
                    stats = await run
    finally:
        logger.removeHandler(watch)
        logger.setLevel(level)
    assert stalled < pages + 1
    assert stats.ok == pages + 1
    records = _records(tmp_path / "out")
    assert [r["attempts"] for r in records] == [1] * (pages + 1)
    assert not [r for r in records if r["error"]]
    assert watch.seen == ["proxies-none-live", "proxies-back"]
    assert stats.proxies is not None and stats.proxies["waits"] == 1
    assert stats.proxies["waiting"] is False


async def test_a_robots_txt_that_no_proxy_reached_is_asked_for_again(tmp_path: Path) -> None:
    """robots.txt asked for while the proxy fails (its request never reached the site) is
    not cached as unreachable: the host's URLs would spend their attempts on that verdict."""

    async def site(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /private\n")

    async with serve(site) as port:
        url = f"http://127.0.0.1:{port}/robots.txt"
        proxy = await HttpProxy().start()
        pool = ProxyPool([parse_proxy(proxy.url)])
        config = FetchConfig(proxy_check_url=url, connect_timeout=1.0, total_timeout=3.0)
        try:
            async with Fetcher(config, proxies=pool) as fetcher:
                await pool.check_due()
                await proxy.stop()  # live still (one failure is not enough), fails every request
                robots = RobotsCache(RobotsFetch(fetcher, proxied=True))
                with pytest.raises(RobotsDeferred):
                    await robots.get(url)
                assert robots.known(url) is None
                assert await robots.allowed(f"http://127.0.0.1:{port}/page") is False
                await proxy.start()
                assert await robots.allowed(f"http://127.0.0.1:{port}/page") is True
        finally:
            await proxy.stop()
    assert robots.stats().unreachable == 0

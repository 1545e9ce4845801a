"""A whole crawl through a proxy pool of real proxies on 127.0.0.1: the records name the proxy
that fetched each page, stats.json holds the pool's figures, and no credential reaches any
output. A real tinyproxy: a site whose root answers 404 is crawled through it, and a crawl
whose every proxy dies waits, spending no attempt, until one comes back."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import generate_latest
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.fetch.test_lean import serve as serve_raw
from tests.fetch.tinyproxy import tinyproxy
from tests.local_app import serve

import gossamer
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


async def test_the_proxy_check_url_s_credentials_reach_the_site_and_no_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``--proxy-check-url http://user:secret@site/check``: the check sends them to the site
    (a crawl and its ``--resume``); no file of the crawl and no log line holds the secret."""
    secret = "Ch3ck-S3cret-Zx"
    caplog.set_level(logging.DEBUG)
    checked: list[str | None] = []

    async def site(request: web.Request) -> web.Response:
        if request.path == "/check":
            checked.append(request.headers.get("Authorization"))
        return await _page(request)

    proxy = await HttpProxy().start()
    try:
        async with serve(site) as port:
            for resume in (False, True):
                settings = load_settings(
                    {
                        "seeds": [f"http://127.0.0.1:{port}/"],
                        "out": tmp_path / "out",
                        "resume": resume,
                        "robots": False,
                        "quiet": True,
                        "proxies": [proxy.url],
                        "proxy_check_url": f"http://checker:{secret}@127.0.0.1:{port}/check",
                    },
                    env={},
                )
                await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await proxy.stop()
    assert checked and set(checked) == {"Basic Y2hlY2tlcjpDaDNjay1TM2NyZXQtWng="}, checked
    assert not [r.getMessage() for r in caplog.records if secret in r.getMessage()]
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert files and [p.name for p in files if secret.encode() in p.read_bytes()] == []


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


async def test_a_crawl_whose_every_proxy_rejects_its_credentials_ends_with_an_error(
    tmp_path: Path,
) -> None:
    """Every proxy answers 407: the crawl does not wait for ever (no check can pass until the
    credentials change) but stops, says why in one line with exit status 1, and keeps its
    queue: run again with --resume and the right password, it crawls the site."""
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    wrong = f"http://carol:n0tit@127.0.0.1:{guarded.port}"
    out = tmp_path / "out"
    try:
        async with serve(_page) as port:
            seed = f"http://127.0.0.1:{port}/"
            flags = ["--no-robots", "--no-text", "--quiet", "--out", str(out)]
            command = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gossamer",
                "crawl",
                seed,
                *flags,
                "--proxy",
                wrong,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(Path(gossamer.__file__).parents[1])},
            )
            try:
                _, stderr = await asyncio.wait_for(command.communicate(), 30)
            finally:
                if command.returncode is None:  # it never ended: end it
                    command.kill()
                    await command.wait()
            assert command.returncode == 1
            said = stderr.decode()
            assert "every proxy rejected the crawl's credentials (407" in said
            assert "--resume" in said and "n0tit" not in said
            assert (out / "pages.jsonl").read_text() == ""
            assert json.loads((out / "stats.json").read_text())["pages"] == 0
            log = (out / "crawl.log").read_text()
            assert "rejected: credentials (407 Proxy Authentication Required)" in log
            assert "the crawl waits" not in log  # it stops
            assert "n0tit" not in log
            settings = load_settings(
                {
                    "seeds": [seed],
                    "out": out,
                    "robots": False,
                    "text": False,
                    "quiet": True,
                    "resume": True,
                    "proxies": [guarded.url],
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await guarded.stop()
    assert stats.ok == PAGES + 1
    assert [r["attempts"] for r in _records(out)] == [1] * (PAGES + 1)


async def test_proxies_that_hang_or_answer_garbage_keep_the_crawl_waiting_and_say_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A proxy that hangs or answers garbage may come back: with one rejecting the
    credentials beside them, the crawl waits (no error), and its warning says why each
    proxy failed."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # takes the request, never answers

    garbage = await HttpProxy(corrupt=True).start()
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    none_live = asyncio.Event()
    watch = _Events(**{"proxies-none-live": none_live})
    logger = logging.getLogger("gossamer.fetch.proxies")
    logger.addHandler(watch)
    try:
        async with serve(_page) as port, serve_raw(silent) as (hung_url, _):
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "robots": False,
                    "text": False,
                    "quiet": True,
                    "read_timeout": 0.5,
                    "total_timeout": 1.0,
                    "proxies": [
                        hung_url,
                        garbage.url,
                        f"http://carol:n0tit@127.0.0.1:{guarded.port}",
                    ],
                },
                env={},
            )
            (tmp_path / "out").mkdir()
            seeds = canonical_seeds(settings)
            with caplog.at_level(logging.WARNING, "gossamer.fetch.proxies"):
                async with build_crawler(settings, seeds) as crawler:
                    run = asyncio.create_task(crawler.run(seeds))
                    await asyncio.wait_for(none_live.wait(), 20)
                    crawler.stop()
                    stats = await asyncio.wait_for(run, 20)
    finally:
        logger.removeHandler(watch)
        for proxy in (garbage, guarded):
            await proxy.stop()
    assert stats.pages == 0
    [waiting] = [r.getMessage() for r in caplog.records if "no proxy live" in r.getMessage()]
    assert "1 rejected: credentials (407 Proxy Authentication Required)" in waiting
    assert "failing: timeout" in waiting or "failing: read-timeout" in waiting
    assert "failing: protocol-error" in waiting
    assert f"the next proxy check of http://127.0.0.1:{port}/ (" in waiting  # the first seed
    assert "n0tit" not in caplog.text


async def test_a_first_seed_that_hangs_cannot_fail_every_proxy(tmp_path: Path) -> None:
    """Proxies are checked with the first seed: when it gives no answer through a proxy,
    the first seed of another host is tried, so the crawl goes on (the hanging host's pages
    end as the site's timeouts)."""

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()
        finally:
            writer.close()

    hung = await asyncio.start_server(hang, "127.0.0.1", 0)
    hung_port = hung.sockets[0].getsockname()[1]
    first, second = await HttpProxy().start(), await HttpProxy().start()
    try:
        async with serve(_page) as port:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{hung_port}/", f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "robots": False,
                    "quiet": True,
                    "text": False,
                    "proxies": [first.url, second.url],
                    "read_timeout": 2.0,  # the hung seed's wait, not a loaded machine's
                    "total_timeout": 4.0,
                    "max_retries": 0,
                    "per_host": 4,
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 40)
    finally:
        await first.stop()
        await second.stop()
        hung.close()
    assert stats.ok == PAGES + 1
    pool: dict[str, Any] = json.loads((tmp_path / "out" / "stats.json").read_text())["proxies"]
    assert pool["live"] == 2

"""Proxy checks in whole crawls through real proxies on 127.0.0.1 of a real site with a
Crawl-delay: the checks take a small share of the check URL's host's slots (many proxies,
a check interval far below proxies x delay), and a proxy that answers a plain 404 to
everything has its 404s asked of another proxy, so none is recorded as the site's."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy
from tests.local_app import serve

from gossamer.crawl import build_crawler, run_crawl
from gossamer.settings import canonical_seeds, load_settings

pytestmark = pytest.mark.timeout(60)

DELAY = 0.4
PAGES = 6


def _site(
    log: list[tuple[float, str]], gone: str = "", pages: int = PAGES, delay: float = DELAY
) -> web.Handler:
    async def handler(request: web.Request) -> web.Response:
        log.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nCrawl-delay: {delay}\n")
        if request.path == gone:
            raise web.HTTPNotFound()
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(pages))
        if gone:
            links += f'<a href="{gone}">gone</a>'
        body = links if request.path == "/" else "leaf"
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    return handler


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


async def test_checks_of_many_proxies_keep_to_a_small_share_of_the_hosts_slots(
    tmp_path: Path,
) -> None:
    """12 proxies, a Crawl-delay of 0.4 s and a check interval of 0.5 s (far below 12 x 0.4):
    the pages go out from the start, one slot after another, and the checks take few of
    the host's slots (before: 12 checks before the first page, then checks crowding them)."""
    log: list[tuple[float, str]] = []
    proxies = [await HttpProxy().start() for _ in range(12)]
    try:
        async with serve(_site(log)) as port:
            origin = f"http://127.0.0.1:{port}"
            settings = load_settings(
                {
                    "seeds": [f"{origin}/"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "text": False,
                    "per_host": 1,
                    "proxies": [p.url for p in proxies],
                    "proxy_check_url": f"{origin}/check",
                    "proxy_check_interval": 0.5,
                },
                env={},
            )
            started = time.monotonic()
            stats = await asyncio.wait_for(run_crawl(settings), 40)
    finally:
        for proxy in proxies:
            await proxy.stop()
    assert stats.ok == PAGES + 1
    paths = [path for _, path in log]
    checks = paths.count("/check")
    pages = len(paths) - checks - paths.count("/robots.txt")
    assert pages == PAGES + 1
    assert 1 <= checks <= 2, paths  # one at the start, another a while later at most
    first_page = next(at for at, path in log if path == "/")
    assert first_page - started < 4 * DELAY + 1.0  # robots.txt, one check, then the seed
    assert {r["proxy"] for r in _records(tmp_path / "out")} <= {p.url for p in proxies}


async def test_checks_take_one_of_the_check_host_s_slots_in_ten_at_most(tmp_path: Path) -> None:
    """A longer crawl of the check host (40 pages, Crawl-delay 0.2 s) with 12 proxies due for
    a check every 0.3 s: quick checks (the host was due) take a slot each all the same, so
    they wait for nine of the host's pages each (before: spaced in time only, more)."""
    log: list[tuple[float, str]] = []
    proxies = [await HttpProxy().start() for _ in range(12)]
    try:
        async with serve(_site(log, pages=39, delay=0.2)) as port:
            origin = f"http://127.0.0.1:{port}"
            settings = load_settings(
                {
                    "seeds": [f"{origin}/"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "text": False,
                    "per_host": 1,
                    "proxies": [p.url for p in proxies],
                    "proxy_check_url": f"{origin}/check",
                    "proxy_check_interval": 0.3,
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 40)
    finally:
        for proxy in proxies:
            await proxy.stop()
    assert stats.ok == 40
    paths = [path for _, path in log]
    pages = len(paths) - paths.count("/check")  # robots.txt is one of the host's requests
    assert paths.count("/check") <= 1 + pages / 9, paths


async def test_a_proxy_answering_404_to_everything_has_no_404_recorded(tmp_path: Path) -> None:
    """A proxy whose every answer is a plain 404 of its own passes its check (it relays an
    answer): its 404s are asked of another proxy, which relays the page, so it is charged
    (``proxy-404``) and dies, while the site's own 404 (``/gone``) is recorded as one."""
    log: list[tuple[float, str]] = []
    good = [await HttpProxy().start() for _ in range(2)]
    liar = await HttpProxy(not_found=True).start()
    try:
        async with serve(_site(log, gone="/gone")) as port:
            origin = f"http://127.0.0.1:{port}"
            settings = load_settings(
                {
                    "seeds": [f"{origin}/"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "text": False,
                    "robots": False,
                    "delay": 0.02,
                    "per_host": 1,
                    "proxies": [liar.url, *(p.url for p in good)],
                    "proxy_check_url": f"{origin}/check",
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 40)
    finally:
        for proxy in (liar, *good):
            await proxy.stop()
    records = {r["url"].removeprefix(origin): r for r in _records(tmp_path / "out")}
    assert sorted(records) == sorted(["/", "/gone", *(f"/p{i}" for i in range(PAGES))])
    assert {url: r["status"] for url, r in records.items() if r["status"] != 200} == {"/gone": 404}
    assert all(r["proxy"] != liar.url for r in records.values())
    assert liar.requests >= 1  # it was asked, and refuted
    assert stats.proxies is not None
    by_proxy = {p["proxy"]: p for p in stats.proxies["proxies"]}
    assert by_proxy[liar.url]["failures"] >= 1


async def test_proxies_that_all_hang_at_the_start_spend_no_attempt(tmp_path: Path) -> None:
    """Proxies that take connections and never answer (their upstream down): no check passes,
    so none is trusted with the crawl's pages; the checks go back to back (no page waits for
    them) and the crawl waits with every URL's attempts whole."""
    log: list[tuple[float, str]] = []
    proxies = [await HttpProxy(hang_paths=("/",)).start() for _ in range(3)]
    none_live = asyncio.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "event", None) == "proxies-none-live":
                none_live.set()

    watch = Watch()
    logger = logging.getLogger("gossamer.fetch.proxies")
    logger.addHandler(watch)
    try:
        async with serve(_site(log)) as port:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "text": False,
                    "robots": False,
                    "read_timeout": 0.3,
                    "total_timeout": 0.6,
                    "max_retries": 1,
                    "proxies": [p.url for p in proxies],
                },
                env={},
            )
            (tmp_path / "out").mkdir()
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds) as crawler:
                run = asyncio.create_task(crawler.run(seeds))
                await asyncio.wait_for(none_live.wait(), 20)
                crawler.stop()
                stats = await asyncio.wait_for(run, 20)
    finally:
        logger.removeHandler(watch)
        for proxy in proxies:
            await proxy.stop()
    assert stats.pages == 0 and log == []
    assert not (tmp_path / "out" / "pages.jsonl").read_text().strip()

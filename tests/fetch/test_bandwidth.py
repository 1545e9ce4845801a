"""The ``--max-bandwidth`` token bucket: exact on a fake clock, then held by real fetches and a
real crawl against a loopback server serving large bodies."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from tests.clock import SleepClock

from gossamer.balance.probe import BandwidthMeter
from gossamer.crawl import build_crawler, prepare_out_dir
from gossamer.fetch import FetchConfig, Fetcher
from gossamer.fetch.ratelimit import BURST_SECONDS, TokenBucket
from gossamer.settings import CrawlSettings, canonical_seeds

CAP = 1 << 20  # bytes per second
BIG = 640 * 1024
BIG_PAGES = 4  # 2.5 MiB: about 2.4 s at the cap


# --- the bucket on a fake clock -----------------------------------------------------------


def test_a_fresh_bucket_holds_its_burst() -> None:
    clock = SleepClock(now=100.0)
    bucket = TokenBucket(1000, clock=clock)
    assert bucket.burst == 1000 * BURST_SECONDS
    assert bucket.take(100) == 0.0
    assert bucket.tokens == 0.0
    assert bucket.take(250) == 0.25


def test_debts_queue_up_in_arrival_order() -> None:
    clock = SleepClock(now=100.0)
    bucket = TokenBucket(1000, burst=0, clock=clock)
    assert [bucket.take(500) for _ in range(4)] == [0.5, 1.0, 1.5, 2.0]
    clock.now += 1.0
    assert bucket.tokens == -1000
    assert bucket.take(0) == 1.0


def test_idle_time_refills_only_up_to_the_burst() -> None:
    clock = SleepClock(now=100.0)
    bucket = TokenBucket(1000, burst=300, clock=clock)
    bucket.take(1300)
    clock.now += 1.0
    assert bucket.tokens == 0.0
    clock.now += 3600.0
    assert bucket.tokens == 300.0
    assert bucket.take(300) == 0.0
    assert bucket.take(500) == 0.5


async def test_a_paced_reader_takes_exactly_bytes_over_rate_less_the_burst() -> None:
    clock = SleepClock(now=100.0)
    bucket = TokenBucket(10_000, burst=2_000, clock=clock, sleep=clock.sleep)
    start = clock.now
    slept = [await bucket.pay(1_000) for _ in range(100)]
    assert clock.now - start == pytest.approx((100_000 - 2_000) / 10_000, abs=1e-9)
    assert slept[:2] == [0.0, 0.0]
    assert sum(slept) == pytest.approx(9.8, abs=1e-9)
    assert clock.slept == [s for s in slept if s > 0]


async def test_pay_within_the_balance_does_not_sleep() -> None:
    clock = SleepClock(now=100.0)
    bucket = TokenBucket(1000, burst=1000, clock=clock, sleep=clock.sleep)
    assert await bucket.pay(1000) == 0.0
    assert clock.slept == []


@pytest.mark.parametrize(("rate", "burst"), [(0, None), (-5, None), (100, -1)])
def test_bad_bucket_arguments_are_refused(rate: float, burst: float | None) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate, burst)


def test_fetch_config_refuses_a_zero_cap() -> None:
    with pytest.raises(ValueError, match="max_bandwidth"):
        FetchConfig(max_bandwidth=0)


# --- real fetches ---------------------------------------------------------------------------


def _app() -> web.Application:
    body = bytes(range(256)) * (BIG // 256)

    async def index(request: web.Request) -> web.Response:
        links = "".join(f'<a href="/big/{i}">{i}</a>' for i in range(BIG_PAGES))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/big/{n}", big)
    return app


@contextlib.asynccontextmanager
async def serve() -> AsyncIterator[str]:
    runner = web.AppRunner(_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def _fetch_all(base: str, cap: int | None, meter: BandwidthMeter) -> tuple[float, list[int]]:
    config = FetchConfig(max_bandwidth=cap, total_timeout=30.0)
    async with Fetcher(config, meter=meter) as fetcher:
        started = time.monotonic()
        urls = [f"{base}/big/{i}" for i in range(BIG_PAGES)]
        results = await asyncio.gather(*(fetcher.fetch(url) for url in urls))
        wall = time.monotonic() - started
        stats = fetcher.stats()
    assert all(r.ok and len(r.body) == BIG for r in results)
    if cap is not None:
        assert stats.paced > 0
        for r in results:
            # the wait for the cap is left out of elapsed (hosts do not look slow)
            assert r.paced > 0.5
            assert r.elapsed < r.paced
            assert r.elapsed + r.paced <= wall + 0.05
    return wall, [r.wire_bytes for r in results]


async def test_fetches_hold_the_cap_and_feed_the_meter() -> None:
    async with serve() as base:
        await _fetch_all(base, None, BandwidthMeter())  # warm up
        meter = BandwidthMeter()
        wall, sizes = await _fetch_all(base, CAP, meter)
        free_wall, _ = await _fetch_all(base, None, BandwidthMeter())
    rate = sum(sizes) / wall
    assert 0.85 * CAP <= rate <= 1.15 * CAP, f"{rate:.0f} B/s against a cap of {CAP}"
    assert meter.total == sum(sizes)
    assert 0.85 * CAP <= meter.rate() <= 1.15 * CAP
    assert free_wall < wall / 4, f"uncapped {free_wall:.2f}s, capped {wall:.2f}s"


async def _crawl(tmp_path: Path, base: str, cap: int | None) -> tuple[float, int]:
    settings = CrawlSettings(
        seeds=[f"{base}/"], out=tmp_path, max_bandwidth=cap, quiet=True, concurrency=8
    )
    seeds = canonical_seeds(settings)
    prepare_out_dir(settings)
    async with build_crawler(settings, seeds) as crawler:
        started = time.monotonic()
        stats = await crawler.run(seeds)
        wall = time.monotonic() - started
    assert stats.ok == 1 + BIG_PAGES
    return wall, stats.requests


async def test_a_crawl_with_max_bandwidth_holds_the_cap(tmp_path: Path) -> None:
    async with serve() as base:
        wall, requests = await _crawl(tmp_path / "capped", base, CAP)
        free_wall, _ = await _crawl(tmp_path / "free", base, None)
    assert requests == 2 + BIG_PAGES  # robots.txt, the index, the big pages
    rate = BIG_PAGES * BIG / wall
    assert 0.85 * CAP <= rate <= 1.15 * CAP, f"{rate:.0f} B/s against a cap of {CAP}"
    assert free_wall < wall / 4, f"uncapped {free_wall:.2f}s, capped {wall:.2f}s"

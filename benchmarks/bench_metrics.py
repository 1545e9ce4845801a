"""What ``/metrics`` costs: the fetch-time histogram's observation on every fetch, against the
fetcher's own CPU per fetch, and the time of one scrape.

1. The observation (``Fetcher._count``'s bucket increment and sum) timed alone, per fetch.
2. The fetcher's CPU per fetch: ``--fetches`` fetches of a small page from an aiohttp server
   on 127.0.0.1 (run in a thread of its own: its CPU is not the fetcher's), 32 at a time.
3. One scrape of a crawl process' ``/metrics`` (collector and text format), with
   ``--hosts`` hosts waiting in the frontier's ready heap (the one part of a scrape that grows
   with the crawl).

Usage: ``.venv/bin/python benchmarks/bench_metrics.py [--fetches 3000] [--hosts 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import random
import threading
import time
import timeit
from collections.abc import Callable
from types import SimpleNamespace

from aiohttp import web
from prometheus_client import generate_latest

from gossamer.engine import LoopState
from gossamer.fetch.http import DURATION_BUCKETS, FetchConfig, Fetcher
from gossamer.frontier.hosts import HostScheduler
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.metrics.exporter import MetricsServer, Sources
from gossamer.stats import CrawlStats


def observation_ns() -> float:
    """Nanoseconds the histogram adds to one fetch (minus an empty loop's)."""
    counts = [0] * (len(DURATION_BUCKETS) + 1)
    total = [0.0]
    values = [random.random() * 2 for _ in range(1000)]

    def observe() -> None:
        for value in values:
            counts[bisect.bisect_left(DURATION_BUCKETS, value)] += 1
            total[0] += value

    def empty() -> None:
        for _ in values:
            pass

    with_it = min(timeit.repeat(observe, number=200, repeat=5))
    without = min(timeit.repeat(empty, number=200, repeat=5))
    return (with_it - without) / (200 * 1000) * 1e9


def serve_in_thread() -> tuple[int, Callable[[], None]]:
    """A small page on 127.0.0.1 from a thread of its own; its port and what stops it."""
    ready = threading.Event()
    port: list[int] = []
    loop: list[asyncio.AbstractEventLoop] = []

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>" + "x" * 2000 + "</body></html>")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(runner.addresses[0][1])
        stopped = asyncio.Event()
        loop.append(asyncio.get_running_loop())
        stop_event.append(stopped)
        ready.set()
        await stopped.wait()
        await runner.cleanup()

    stop_event: list[asyncio.Event] = []
    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)

    def stop_server() -> None:
        loop[0].call_soon_threadsafe(stop_event[0].set)
        thread.join(10)

    return port[0], stop_server


async def fetch_cpu_us(port: int, fetches: int) -> float:
    """Microseconds of this thread's CPU per fetch."""
    fetcher = Fetcher(FetchConfig(concurrency=32))
    url = f"http://127.0.0.1:{port}/"
    left = list(range(fetches))

    async def worker() -> None:
        while left:
            left.pop()
            await fetcher.fetch(url)

    await fetcher.fetch(url)  # warm the pool
    start = time.thread_time()
    await asyncio.gather(*(worker() for _ in range(32)))
    spent = time.thread_time() - start
    await fetcher.close()
    return spent / fetches * 1e6


def scrape_ms(hosts: int) -> float:
    """Milliseconds of one scrape with ``hosts`` hosts waiting in the ready heap."""
    scheduler: HostScheduler[SimpleNamespace] = HostScheduler(
        PolitenessPolicy(delay=1.0), clock=lambda: 0.0
    )
    for i in range(hosts):
        scheduler.push(f"http://h{i}.test", SimpleNamespace(priority=0))
    scheduler._ready = [(1.0, key) for key in scheduler._hosts]
    for host in scheduler._hosts.values():
        host.heap_time = 1.0
    stats = CrawlStats(
        pages=1000, ok=900, errors=50, robots_blocked=10, retries=20, requests=1100,
        duplicates=5000, rejected={"out-of-scope": 300}, status_counts={"200": 900},
        queued=hosts * 5, in_flight=64, elapsed=10.0, pages_per_second=100.0, peak_rss_mb=1.0,
    )  # fmt: skip
    fetcher = Fetcher()
    server = MetricsServer("local", "bench")
    server.attach(
        Sources(
            crawl=lambda: stats,
            fetch=fetcher.stats,
            waiting_hosts=scheduler.waiting,
            loop=lambda: LoopState("running", 0.0),
        )
    )
    return min(timeit.repeat(lambda: generate_latest(server.registry), number=10, repeat=3)) * 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetches", type=int, default=3000)
    parser.add_argument("--hosts", type=int, default=10_000)
    args = parser.parse_args()
    observed = observation_ns()
    port, stop = serve_in_thread()
    per_fetch = asyncio.run(fetch_cpu_us(port, args.fetches))
    stop()
    print(f"histogram observation: {observed:.0f} ns per fetch")
    print(f"fetcher CPU: {per_fetch:.0f} us per fetch ({args.fetches} fetches, loopback)")
    print(f"observation share of the fetch CPU: {observed / (per_fetch * 1000):.3%}")
    print(f"one scrape with {args.hosts} hosts waiting: {scrape_ms(args.hosts):.1f} ms")


if __name__ == "__main__":
    main()

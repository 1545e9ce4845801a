"""A continuous cluster job (``cluster submit --recrawl``) reads its sitemaps and feeds again
on the embedded backend's schedule, one worker at a time: a page a feed announces later is
fetched, and a newer ``lastmod`` makes a page fetched before it due."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from aiohttp import web
from tests.cluster.harness import (
    FAST,
    read_records,
    run,
    start,
    until_waiting,
    worker_args,
    worker_logs,
)
from tests.local_app import serve
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

DURATION = 12.0
ANNOUNCED = 1.5
"""Seconds after the first sitemap read when the feed lists /later and the sitemap a newer
lastmod of /a, or later: the next whole second but one after /a's first fetch, so that
fetch (however late a loaded machine makes it) saw the old /a and the new lastmod, written to
the second, is newer than it."""
CONFIG = """
[[revisit]]
url = "*/sitemap.xml"
initial = 1
min = 1
max = 1
[[revisit]]
url = "*/feed.rss"
initial = 1
min = 1
max = 1
"""


def _w3c(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


class _Site:
    """robots.txt names /sitemap.xml (/a with its lastmod); /feed.rss is given with
    ``--sitemap``; both announce more at :attr:`announce_at`."""

    def __init__(self) -> None:
        self.hits: list[tuple[float, str]] = []
        self.first_read: float | None = None
        self.first_a: float | None = None
        self.old = time.time() - 3600

    @property
    def announce_at(self) -> float | None:
        """When the feed and sitemap announce more (see ``ANNOUNCED``)."""
        if self.first_read is None or self.first_a is None:
            return None
        return max(self.first_read + ANNOUNCED, math.floor(self.first_a) + 2.0)

    def announced(self, now: float) -> bool:
        at = self.announce_at
        return at is not None and now >= at

    async def handle(self, request: web.Request) -> web.StreamResponse:
        now = time.time()
        self.hits.append((now, request.path))
        base = f"http://127.0.0.1:{request.url.port}"
        later = self.announced(now)
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap.xml\n")
        if request.path == "/sitemap.xml":
            if self.first_read is None:
                self.first_read = now
            changed = _w3c(self.announce_at if later and self.announce_at else self.old)
            row = f"<url><loc>{base}/a</loc><lastmod>{changed}</lastmod></url>"
            xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{row}</urlset>'
            return web.Response(text=xml, content_type="application/xml")
        if request.path == "/feed.rss":
            item = f"<item><title>later</title><link>{base}/later</link></item>" if later else ""
            rss = f'<rss version="2.0"><channel><title>t</title>{item}</channel></rss>'
            return web.Response(text=rss, content_type="application/rss+xml")
        if request.path in ("/", "/a", "/later"):
            if request.path == "/a" and self.first_a is None:
                self.first_a = now
            version = "2" if later and request.path == "/a" else "1"
            headers = {"Last-Modified": formatdate(self.old, usegmt=True)}
            body = f"<html><body><p>{request.path} version {version}</p></body></html>"
            return web.Response(text=body, content_type="text/html", headers=headers)
        return web.Response(status=404)

    def at(self, path: str) -> list[float]:
        return [at for at, hit in self.hits if hit == path]


async def _submit(
    tmp_path: Path, url: str, seed: str, *extra: str
) -> list[asyncio.subprocess.Process]:
    """Start workers 0 and 1, then submit the continuous job of ``seed`` (its feed given with
    ``--sitemap``, every sitemap and feed read again each second) with ``extra`` options once
    both wait for it; the workers."""
    config = tmp_path / "job.toml"
    config.write_text(CONFIG)
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [await start(logs[i], *worker_args(url, tmp_path, i)) for i in range(2)]
    await until_waiting(logs)
    job = ["--recrawl", "--config", str(config), "--revisit-initial", "600"]
    job += ["--max-duration", str(DURATION), "--delay", "0.05", "--checkpoint-interval", "0.05"]
    job += ["--heartbeat-ttl", "2", "--claim-timeout", "2", "--partitions", "8"]
    job += ["--sitemap", f"{seed}feed.rss", *FAST, "--quiet", *extra]
    assert await run(tmp_path / "submit.log", "cluster", "submit", "--redis", url, seed, *job) == 0
    return workers


async def test_a_continuous_job_reads_sitemaps_and_feeds_again_one_worker_at_a_time(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    site = _Site()
    async with serve(site.handle) as port:
        extra = ["--revisit-min", "1", "--revisit-max", "600"]
        workers = await _submit(tmp_path, url, f"http://127.0.0.1:{port}/", *extra)
        for worker in workers:
            assert await asyncio.wait_for(worker.wait(), DURATION + 30) == 0, worker_logs(
                tmp_path, 2
            )
    announced = site.announce_at
    assert announced is not None, site.hits
    for path in ("/sitemap.xml", "/feed.rss"):
        reads = site.at(path)
        assert len(reads) >= 3, (path, reads)  # read again every second
        gaps = [b - a for a, b in itertools.pairwise(reads)]
        assert min(gaps) > 0.5, (path, gaps)  # by one worker at a time, not one each
    later = site.at("/later")
    # Within a few reads (1 s apart; slack for a loaded machine), not at a 600-s revisit.
    assert later and later[0] - announced < 5, (later, announced)
    a_fetches = site.at("/a")
    assert len(a_fetches) >= 2 and a_fetches[1] >= announced, (a_fetches, announced)
    assert a_fetches[1] - announced < 5, (a_fetches, announced)  # not 600 s later


async def _reader(tmp_path: Path, limit: float = 20) -> int:
    """The first of workers 0 and 1 with a record of the feed read."""
    for _ in range(int(limit / 0.05)):
        for i in range(2):
            if any(r["url"].endswith("/feed.rss") for r in read_records(tmp_path / f"w{i}")):
                return i
        await asyncio.sleep(0.05)
    raise AssertionError(worker_logs(tmp_path, 2))


async def test_a_killed_readers_feed_is_read_on_time_by_another_worker(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    site = _Site()
    async with serve(site.handle) as port:
        workers = await _submit(tmp_path, url, f"http://127.0.0.1:{port}/", "--sitemaps", "on")
        reader = await _reader(tmp_path)
        workers[reader].kill()  # kill -9: its claims and "done" stay in Redis to expire
        await workers[reader].wait()
        killed = time.time()
        other = workers[1 - reader]
        assert await asyncio.wait_for(other.wait(), DURATION + 30) == 0, worker_logs(tmp_path, 2)
    after = [at for at in site.at("/feed.rss") if at > killed]
    assert after and after[0] - killed < 2.5, (after, killed)  # the next read on time
    gaps = [b - a for a, b in itertools.pairwise(after)]
    assert len(after) >= 3 and min(gaps) > 0.5, after  # then once a second
    assert site.at("/later"), "the survivor found what the feed announced"

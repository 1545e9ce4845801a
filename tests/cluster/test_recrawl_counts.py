"""A continuous cluster job's counts (``cluster status --json``'s ``freshness``) against the
records its workers wrote, with a real redis-server and real sites on three hosts.

A worker that stops (SIGTERM, ``--max-duration``) leaves the registry with its final counts:
once every worker has stopped the job's revisits by result and its sitemap files read are
exactly those of the records (a read the stop cut has no record; the URLs it listed so far
are counted). A worker killed (``kill -9``) publishes nothing more: the job's counts lack
what it counted after its last heartbeat, and no more than that."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import read_records, run, start, wait_alive, worker_args, worker_logs
from tests.redis_server import RedisServer
from tests.revisit.site import NOW, Site, serve_site

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import status

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLOCK = ["--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"]
JOB = ["--no-robots", "--delay", "0.05", "--partitions", "4", "--checkpoint-interval", "0.05",
       "--claim-timeout", "60", "--quiet"]  # fmt: skip


def _recorded(out: Path, workers: int) -> tuple[Counter[str], int, int]:
    """The workers' records: revisits by result (a 304 is ``not-modified``), sitemap files
    and the URLs they listed."""
    results: Counter[str] = Counter()
    files = entries = 0
    for i in range(workers):
        for record in read_records(out / f"w{i}"):
            if record.get("kind") == "sitemap":
                files += 1
                entries += record["extra"]["entries"]
                continue
            change = record["change"]
            if change == "unchanged" and record["status"] == 304:
                change = "not-modified"
            if change in ("changed", "unchanged", "not-modified", "gone"):
                results[change] += 1
    return results, files, entries


async def _revisited(out: Path, workers: int, least: int) -> None:
    """Once the workers have recorded ``least`` revisits (30 s at most)."""
    deadline = time.monotonic() + 30
    while sum(_recorded(out, workers)[0].values()) < least:
        assert time.monotonic() < deadline, worker_logs(out, workers)
        await asyncio.sleep(0.1)


async def _sites(stack: AsyncExitStack) -> list[Site]:
    sites = [await stack.enter_async_context(serve_site()) for _ in range(3)]
    for site in sites:  # the sitemap lists each page of its site
        site.listed = {site.url(page): NOW for page in ("etag", "changing", "gone")}
        site.sitemap_gate.set()
    return sites


async def _submit(url: str, sites: list[Site], out: Path, *flags: str) -> None:
    sitemaps = [arg for site in sites for arg in ("--sitemap", site.url("sitemap.xml"))]
    seeds = [site.url() for site in sites]
    submit = ["cluster", "submit", "--redis", url, *seeds, *sitemaps, *CLOCK, *JOB, *flags]
    assert await run(out / "submit.log", *submit) == 0


async def test_a_stopped_workers_final_counts_are_in_the_jobs(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Heartbeats every 10 s: after the first, only a leaving worker's last figures can
    carry what it counted; one worker gets SIGTERM, the other stops at --max-duration."""
    url = redis_server.url
    async with AsyncExitStack() as stack:
        sites = await _sites(stack)
        await _submit(url, sites, tmp_path, "--heartbeat-ttl", "30", "--max-duration", "10")
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in (0, 1)
        ]
        await wait_alive(url, 2)
        await _revisited(tmp_path, 2, 10)
        with contextlib.suppress(ProcessLookupError):  # unless --max-duration came first
            workers[1].send_signal(signal.SIGTERM)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
        fresh = (await status(url, DEFAULT_JOB))["freshness"]
    results, files, entries = _recorded(tmp_path, 2)
    assert results["not-modified"] and results["changed"] and results["gone"], results
    assert fresh["results"] == {name: results[name] for name in fresh["results"]}
    # every file read has its record; a read cut by the stop has none, its entries counted
    assert fresh["sitemap_files"] == files > 0
    assert fresh["sitemap_entries"] >= entries >= files


async def _last_beat(url: str, name: str, ttl: float) -> float:
    """When the worker ``name`` last beat (Redis' clock): its heartbeat runs out ``ttl`` after."""
    redis = Redis.from_url(url)
    try:
        expires = await redis.zscore(f"gs:{{{DEFAULT_JOB}}}:alive", name)
    finally:
        await redis.aclose()
    assert expires is not None
    return expires / 1000 - ttl


async def test_a_killed_worker_loses_at_most_its_last_heartbeats_worth(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Heartbeats every second (TTL 3 s): the counts of a worker killed with kill -9 hold
    every revisit it recorded before its last heartbeat, and lack only some of those after."""
    url = redis_server.url
    ttl = 3.0
    async with AsyncExitStack() as stack:
        sites = await _sites(stack)
        await _submit(url, sites, tmp_path, "--heartbeat-ttl", str(ttl), "--sitemaps", "off")
        worker = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await _revisited(tmp_path, 1, 20)
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
        beat = await _last_beat(url, "w0", ttl)
        fresh: dict[str, Any] = (await status(url, DEFAULT_JOB))["freshness"]
    revisits = [r for r in read_records(tmp_path / "w0") if r["change"] not in (None, "new")]
    counted = sum(fresh["results"].values())
    before = sum(r["fetched_at"] < beat - 0.5 for r in revisits)
    after = sum(r["fetched_at"] >= beat - 0.5 for r in revisits)
    assert before <= counted, (before, counted, fresh)  # all it counted by its last heartbeat
    lost = len(revisits) - counted
    assert lost <= after, (lost, after)  # what it fetched since: at most a beat's worth

"""Workers ride through a Redis Cluster failover: a master killed with kill -9 mid-crawl, its
replica promoted; no worker exits, the crawl finishes, every page is fetched once but for the
leases in flight at the kill (counted from the test web's own request log).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    LOG_ARGS,
    WEB_ARGS,
    cluster_wait,
    event_names,
    reference,
    run,
    small_web,
    start,
    url_counts,
    wait_alive,
    worker_args,
    worker_logs,
)
from tests.redis_replicas import ReplicatedCluster

from gossamer.testweb import TestWebServer

WORKERS = 3
HOSTS = 10
JOB = [*FAST, "--per-host", "1", "--delay", "0.3", "--concurrency", "8", "--partitions", "64"]
"""About 300 pages, one request at a time per host, 0.3 s apart: a crawl of at least 9 s."""


@pytest.fixture
def replicated() -> ReplicatedCluster:  # type: ignore[misc]
    with ReplicatedCluster() as cluster:
        yield cluster


def _fetches(server: TestWebServer, until: float | None = None) -> Counter[str]:
    """Page requests per URL up to ``until`` (time.monotonic), robots.txt and its redirect out."""
    return Counter(
        f"http://{e.host}:{e.port}{e.path}"
        for e in server.log
        if not e.path.startswith("/robots") and (until is None or e.monotonic <= until)
    )


async def _until_served(server: TestWebServer, least: int, limit: float = 30.0) -> None:
    """Until the web served ``least`` requests (so the kill lands early in the crawl)."""
    for _ in range(int(limit / 0.02)):
        if len(server.log) >= least:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"fewer than {least} requests after {limit:g}s")


def _victim(cluster: ReplicatedCluster) -> tuple[int, int]:
    """The busiest master's port and its replica's."""
    victim = cluster.busiest_master()
    return victim, cluster.replica_of(victim)


def _said(logs: list[str]) -> list[str]:
    """What the workers printed besides their JSON log lines (an exit's one line)."""
    return [line for log in logs for line in log.splitlines() if not line.startswith("{")]


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_workers_ride_through_a_master_failover(
    tmp_path: Path, replicated: ReplicatedCluster
) -> None:
    url = replicated.url
    web = small_web(11, hosts=HOSTS, pages_per_host=30)
    async with TestWebServer(web, flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, FAST)
        requested = set(_fetches(server))  # what a single crawl asks the web for
        server.log.clear()
        submit = ["cluster", "submit", "--redis", url, seed, *JOB, *WEB_ARGS]
        submit += ["--heartbeat-ttl", "3", "--claim-timeout", "15"]
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i, *LOG_ARGS))
            for i in range(WORKERS)
        ]
        await wait_alive(url, WORKERS)
        await _until_served(server, 30)
        victim, heir = await asyncio.to_thread(_victim, replicated)
        killed_at = time.monotonic()
        replicated.kill(victim)
        promoted_in = await asyncio.to_thread(replicated.wait_promoted, heir)
        before = _fetches(server, killed_at)
        assert sum(before.values()) < len(expected) / 2, "the kill came too late"
        # No worker exits while the crawl goes on.
        for proc in workers:
            assert proc.returncode is None, _said(worker_logs(tmp_path, WORKERS))
        await cluster_wait(f"redis://127.0.0.1:{heir}/0", 60)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        logs = worker_logs(tmp_path, WORKERS)
        fetched = _fetches(server)

    assert codes == [0] * WORKERS, _said(logs)
    assert promoted_in < 15
    assert set(fetched) == requested, sorted(requested ^ set(fetched))[:5]
    assert set(url_counts(tmp_path, WORKERS)) == expected
    twice = sorted(u for u, n in fetched.items() if n > 1)
    print(f"promoted in {promoted_in:.1f}s; fetched twice: {len(twice)}")
    # A page fetched twice was in flight at the kill: first fetched before it.
    assert all(before[u] == 1 for u in twice), twice
    assert len(twice) <= HOSTS, twice
    assert not any("Traceback" in log for log in logs), logs
    # The workers whose calls met the dead master's slots waited, and logged it once.
    assert any({"redis-unreachable", "redis-recovered"} <= event_names(log) for log in logs)

"""Workers ride through a Redis Cluster failover: a master killed with kill -9 mid-crawl, its
replica promoted; no worker exits, the crawl finishes, every page is fetched once but for the
leases in flight at the kill (counted from the test web's own request log).

The stages a worker can be at when the master dies are forced here too: a call that begins
right after the kill (the job's end check, a heartbeat, leaving the job) waits for the
replica, and the notices' subscription moves to the promoted replica.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
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

from gossamer.cluster.control import Control
from gossamer.cluster.jobs import open_control
from gossamer.cluster.notices import Notices
from gossamer.cluster.redisretry import GuardedCluster
from gossamer.cluster.resilient import install_guard
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.testweb import TestWebServer
from gossamer.urls import Scope

WORKERS = 3
HOSTS = 10
JOB = [*FAST, "--per-host", "1", "--delay", "0.3", "--concurrency", "8", "--partitions", "64"]
"""About 300 pages, one request at a time per host, 0.3 s apart: a crawl of at least 9 s."""


@pytest.fixture
def replicated() -> Iterator[ReplicatedCluster]:
    with ReplicatedCluster() as cluster:
        yield cluster


@pytest.fixture
def slow_failover() -> Iterator[ReplicatedCluster]:
    """A replica promoted some 4 s after its master dies: a call made right after the kill
    meets the dead master still in the slot table every node answers with."""
    with ReplicatedCluster(node_timeout_ms=3000) as cluster:
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


@pytest.mark.timeout(60)
async def test_calls_begun_right_after_a_kill_wait_for_the_replica(
    slow_failover: ReplicatedCluster,
) -> None:
    # Reading the slot table again (as the guard asks after any call met the dead master)
    # asks the table's first master for its command table: the dead one, until the failover.
    # A pipeline reads the table as it begins: the job's end check, a heartbeat and leaving
    # the job all did so outside the guard, and the worker exited with "Redis failed".
    url = slow_failover.url
    control = await open_control(url, "j")
    redis = control.redis
    assert isinstance(redis, GuardedCluster)
    guard = install_guard(redis, url, budget=30)
    frontier = RedisFrontier(
        redis,
        "j",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        config=RedisFrontierConfig(partitions=64, refresh_interval=0.0),
    )
    try:
        await frontier.add([Candidate(f"http://h{i % 40}.test/{i}") for i in range(100)])
        await control.heartbeat("w0", {"pages": 0}, 30.0)
        first = redis.get_default_node()
        assert first is not None
        heir = slow_failover.replica_of(first.port)
        slow_failover.kill(first.port)
        await redis.refresh()
        done, _, _ = await asyncio.gather(
            frontier.done(),
            control.heartbeat("w1", {"pages": 0}, 30.0),
            control.leave("w0", {"pages": 0}),
        )
        live = await control.live_workers()
        await frontier.refresh()  # a look at every partition's counts
    finally:
        await redis.aclose()
    assert slow_failover.role(heir) == "master"
    assert done is False
    assert frontier.stats().queued == 100  # nothing lost with the master
    assert live == ["w1"]
    assert guard.stats().outages_total >= 1 and not guard.gave_up


@pytest.mark.timeout(60)
async def test_notices_are_heard_from_the_promoted_replica(replicated: ReplicatedCluster) -> None:
    url = replicated.url
    control = await open_control(url, "j")
    redis = control.redis
    assert isinstance(redis, GuardedCluster)
    install_guard(redis, url, budget=30)
    heard: list[str] = []
    ups: list[bool] = []
    notices = Notices(control, "w0", heard.append, ups.append)
    notices.start()
    try:
        await _until(lambda: notices.up)
        await _announce(control)  # on a Redis Cluster, a script's PUBLISH reaches every node
        await _until(lambda: bool(heard))
        held_by = redis.nodes_manager.get_node_from_slot(redis.keyslot(control.keys["notify"]))
        heir = replicated.replica_of(held_by.port)
        replicated.kill(held_by.port)
        await _until(lambda: not notices.up)
        await asyncio.to_thread(replicated.wait_promoted, heir)
        heard.clear()
        # Another client announces: nothing makes the worker's client read the slot table
        # again but the subscription itself.
        other = await open_control(f"redis://127.0.0.1:{heir}/0", "j")
        install_guard(other.redis, url, budget=30)
        try:
            for _ in range(80):  # a notice is lost while the subscription is down: repeat
                await _announce(other)
                if heard:
                    break
                await asyncio.sleep(0.25)
        finally:
            await other.redis.aclose()
    finally:
        await notices.stop()
        await redis.aclose()
    assert heard and set(heard) == {"assignment"}
    assert ups == [True, False, True]


async def _announce(control: Control) -> None:
    """Publish an assignment as the leader does (the script publishing it sends the notice)."""
    assert await control.lead("w0", 30.0)
    assert await control.publish("w0", {"w0": frozenset(range(4))}) > 0


async def _until(condition: Callable[[], bool], limit: float = 20.0) -> None:
    for _ in range(int(limit / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"not so after {limit:g}s")


def test_a_node_whose_port_was_taken_starts_the_cluster_on_other_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ports are chosen free, then bound by the nodes: another test's connection may take one
    in between (the node exits at once). The cluster then starts again on other ports."""
    import socket

    from tests import redis_replicas

    chosen = redis_replicas._free_ports
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    first = [taken.getsockname()[1]]

    def ports(count: int) -> list[int]:
        if first:
            return [first.pop(), *chosen(count - 1)]
        return chosen(count)

    monkeypatch.setattr(redis_replicas, "_free_ports", ports)
    with taken, ReplicatedCluster() as cluster:
        assert taken.getsockname()[1] not in cluster.ports
        assert len(cluster.master_ports()) == 3 and len(cluster.replicas()) == 3

"""Cluster workers through joins, clean leaves, a killed leader and Redis going away.

The end-to-end tests run real worker subprocesses against a real redis-server and the
in-process test web, like test_cluster.py, and compare the union of the workers' pages.jsonl
with a single ``gossamer crawl`` of the same web. The first tests drive
:class:`~gossamer.cluster.resilient.RedisGuard` directly, with a fake clock or a real
redis-server that is stopped and started again.
"""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.clock import SleepClock
from tests.cluster.harness import (
    FAST,
    GOSSAMER,
    LOG_ARGS,
    WEB_ARGS,
    assert_same_urls,
    cluster_status,
    cluster_wait,
    event_names,
    log_events,
    next_leader,
    read_records,
    reference,
    run,
    small_web,
    start,
    url_counts,
    wait_alive,
    wait_for_records,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisClusterServer, RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import open_control
from gossamer.cluster.resilient import RedisGuard, RedisUnavailable, install_guard
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.redact import redact_url as redact
from gossamer.testweb import TestWebServer, Web
from gossamer.urls import Scope

END_TO_END = [pytest.mark.slow, pytest.mark.timeout(90)]
PARTITIONS = ["--partitions", "64"]
SLOW = [*FAST, "--per-host", "1", "--delay", "0.5", "--concurrency", "6", "--robots-retry", "2"]
"""A crawl of ``_web()`` that takes at least 10 s however fast the workers are: ~20 pages a
host, one request at a time, half a second apart (so a disturbance lands mid-crawl even on a
loaded machine). An unreachable robots.txt is cached longer than the delay: with a shorter
retry the engine would fetch it again at each lease of the host and never give up."""


def _web() -> Web:
    return small_web(7, hosts=12, pages_per_host=25)


@pytest.fixture
def redis_aof() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        yield server


# -- the guard ------------------------------------------------------------------------------


def _guard(clock: SleepClock, budget: float = 10.0) -> RedisGuard:
    return RedisGuard("redis://:secret@db.example:6379/0", budget, clock=clock, sleep=clock.sleep)


async def _noop(*_: Any) -> None:
    return None


async def test_guard_backs_off_exponentially_capped_and_jittered() -> None:
    clock = SleepClock()
    guard = _guard(clock)
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls <= 8:
            raise RedisConnectionError("Connection refused")
        return "ok"

    assert await guard.call_with_retry(flaky, _noop) == "ok"
    assert calls == 9
    # Ceilings 0.05, 0.1, 0.2, 0.4, 0.8, then 1.0 (the cap); each wait is half to all of it.
    ceilings = [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert all(c / 2 <= s <= c for s, c in zip(clock.slept, ceilings, strict=True)), clock.slept
    assert len(set(clock.slept)) > 1
    assert guard.steady_for() == pytest.approx(clock.slept[-1])  # since the last failure
    clock.now += 5
    assert guard.steady_for() == pytest.approx(clock.slept[-1] + 5)


async def test_guard_gives_up_after_its_budget_then_fails_at_once() -> None:
    clock = SleepClock()
    guard = _guard(clock, budget=10.0)
    failed: list[int] = []

    async def down() -> None:
        raise RedisConnectionError("Error 111 connecting to db.example:6379. Connection refused.")

    async def fail(_: Exception, count: int) -> None:
        failed.append(count)

    with pytest.raises(RedisUnavailable) as caught:
        await guard.call_with_retry(down, fail, with_failure_count=True)
    message = str(caught.value)
    assert message.startswith("Redis at redis://:***@db.example:6379/0 unreachable for 10 s: ")
    assert "Connection refused" in message and "secret" not in message
    assert 10.0 <= clock.now <= 10.5
    assert failed == list(range(1, len(failed) + 1)) and len(failed) > 10
    assert guard.gave_up
    # Every later call fails at once, without trying Redis.
    tried = []

    async def record() -> None:
        tried.append(1)

    started = clock.now
    with pytest.raises(RedisUnavailable):
        await guard.call_with_retry(record, _noop)
    assert (tried, clock.now) == ([], started)


async def test_guard_budget_is_per_outage_and_shared_by_calls() -> None:
    clock = SleepClock()
    guard = _guard(clock, budget=10.0)
    answers = iter([RedisConnectionError("down")] * 3 + ["up"])

    async def flaky() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    clock.now = 100.0
    assert await guard.call_with_retry(flaky, _noop) == "up"
    # A success ended that outage: a later one has the whole budget again.
    clock.now = 200.0

    async def down() -> None:
        raise RedisConnectionError("down")

    with pytest.raises(RedisUnavailable):
        await guard.call_with_retry(down, _noop)
    assert 210.0 <= clock.now <= 210.5
    # A copy (each new connection deep-copies its retry policy) is the same guard.
    assert copy.deepcopy(guard) is guard


def test_redact_hides_only_the_password() -> None:
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert redact("redis://user:pw@h:1/2") == "redis://user:***@h:1/2"
    assert redact("rediss://:pw@h/0") == "rediss://:***@h/0"


async def test_a_client_rides_out_a_restart_and_its_scripts_load_again(
    redis_aof: RedisServer,
) -> None:
    client = Redis.from_url(redis_aof.url, socket_connect_timeout=1)
    install_guard(client, redis_aof.url, budget=20)
    scope = Scope.for_seeds(["http://a.test/"], ["test"])
    frontier = RedisFrontier(
        client, "job", scope, PolitenessPolicy(), config=RedisFrontierConfig(partitions=8)
    )
    try:
        first = await frontier.add([Candidate(f"http://a.test/{i}") for i in range(20)])
        assert first.added == 20
        await client.set("before", "restart")
        down = asyncio.create_task(asyncio.to_thread(redis_aof.restart, 1.0))
        await asyncio.sleep(0.3)  # redis-server is stopped now: the calls below wait for it
        started = time.monotonic()
        # A pipeline of scripts the restarted server has never loaded (NOSCRIPT), and commands.
        again = await frontier.add([Candidate(f"http://a.test/{i}") for i in range(10, 40)])
        assert time.monotonic() - started >= 0.3
        await down
        assert (again.added, again.duplicates) == (20, 10)
        assert await client.get("before") == b"restart"  # the AOF kept it
        await frontier.refresh()
        assert frontier.stats().seen == 40
    finally:
        await client.aclose()


async def _versions_until_done(url: str, limit: float = 50) -> set[int]:
    """The assignment versions published until the job is done (workers leave only then)."""
    client = Redis.from_url(url)
    control = Control(client, "gossamer")
    deadline = time.monotonic() + limit
    seen: set[int] = set()
    try:
        while True:
            version = await control.version()
            if (await control.totals(64)).done:
                return seen
            seen.add(version)
            assert time.monotonic() < deadline, seen
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()


# -- end to end -----------------------------------------------------------------------------


def _submit(url: str, seed: str, *extra: str) -> list[str]:
    return ["cluster", "submit", "--redis", url, seed, *SLOW, *WEB_ARGS, *PARTITIONS, *extra]


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_worker_joining_mid_crawl_takes_partitions(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        submit = _submit(url, seed, "--heartbeat-ttl", "3")
        assert await run(tmp_path / "submit.log", *submit) == 0
        first = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await wait_for_records(tmp_path, range(1), 1)
        second = await start(tmp_path / "w1.log", *worker_args(url, tmp_path, 1))
        state = await wait_alive(url, 2)
        assert not state["done"], "the join came too late to test anything"
        # equal shares of the queued URLs (and of the empty partitions): about half each
        deadline = time.monotonic() + 15
        while not _split(parts := _partitions(await cluster_status(url))):
            assert time.monotonic() < deadline, parts
            await asyncio.sleep(0.2)
        await cluster_wait(url)
        codes = await asyncio.wait_for(asyncio.gather(first.wait(), second.wait()), 30)
        assert list(codes) == [0, 0], worker_logs(tmp_path, 2)

    counts = url_counts(tmp_path, 2)
    assert_same_urls(counts, expected)
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    assert read_records(tmp_path / "w1"), "the joining worker fetched nothing"


def _split(parts: dict[str, int]) -> bool:
    """Both workers own partitions, together all 64, neither less than a quarter."""
    return set(parts) == {"w0", "w1"} and sum(parts.values()) == 64 and min(parts.values()) >= 16


def _partitions(state: dict[str, Any]) -> dict[str, int]:
    return {w["name"]: w["partitions"] for w in state["workers"] if w["alive"]}


async def _assignment(url: str) -> dict[str, frozenset[int]]:
    """The published assignment, read from Redis (a Redis Cluster too)."""
    control = await open_control(url, DEFAULT_JOB)
    try:
        return await control.assignment()
    finally:
        await control.redis.aclose()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_sigterm_hands_partitions_back_and_loses_nothing(
    tmp_path: Path, any_redis: RedisServer | RedisClusterServer
) -> None:
    url = any_redis.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        # Heartbeats (30 s) outlive the checks below and claims (120 s) `cluster wait` (50 s):
        # its partitions move soon and the job finishes only if the leaver handed them back.
        submit = _submit(url, seed, "--heartbeat-ttl", "30", "--claim-timeout", "120")
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        await wait_alive(url, 3)
        v = await wait_for_records(tmp_path, range(3), 10)
        workers[v].send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(workers[v].wait(), 15) == 0, worker_logs(tmp_path, 3)[v]
        state = await cluster_status(url)
        assert not state["done"], "the leave came too late to test anything"
        # It left: the others own every partition within seconds.
        survivors_names = {f"w{i}" for i in range(3) if i != v}
        deadline = time.monotonic() + 10
        while set(assignment := await _assignment(url)) != survivors_names:
            assert time.monotonic() < deadline, assignment
            await asyncio.sleep(0.2)
        assert sorted(p for parts in assignment.values() for p in parts) == list(range(64))
        await cluster_wait(url, workers=tmp_path)
        survivors = [w for i, w in enumerate(workers) if i != v]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in survivors)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 3)

    counts = url_counts(tmp_path, 3)
    assert_same_urls(counts, expected)
    # A clean leave loses no lease and leaves nothing in flight: no URL is fetched twice.
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    assert (tmp_path / f"w{v}" / "stats.json").exists()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_killing_the_leader_moves_the_lease(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    ttl = 2.0
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        submit = _submit(url, seed, "--heartbeat-ttl", str(ttl), "--claim-timeout", "2")
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i, *LOG_ARGS))
            for i in range(3)
        ]
        await wait_alive(url, 3)
        await wait_for_records(tmp_path, range(3), 10)
        leader = (await cluster_status(url))["leader"]
        assert leader in {"w0", "w1", "w2"}
        v = int(leader[1:])
        workers[v].send_signal(signal.SIGKILL)
        await workers[v].wait()
        _, moved_in = await next_leader(url, leader)
        assert not (await cluster_status(url))["done"], "the kill came too late to test anything"
        await cluster_wait(url)
        survivors = [w for i, w in enumerate(workers) if i != v]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in survivors)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 3)
        state = await cluster_status(url)

    # The lease lives one TTL after its last renewal; a survivor takes it within a second.
    assert moved_in < ttl + 2.5, moved_in
    assert state["leader"] is None or state["leader"] != leader
    counts = url_counts(tmp_path, 3)
    assert_same_urls(counts, expected)
    twice = {u for u, n in counts.items() if n > 1}
    assert twice <= {r["url"] for r in read_records(tmp_path / leader)}
    alive = {w["name"]: w["alive"] for w in state["workers"]}
    assert alive[leader] is False
    # The logs say so: the killed worker led, then a survivor did and published the next plan.
    logs = worker_logs(tmp_path, 3)
    assert "leader-acquired" in event_names(logs[v])
    survivors_events = [event_names(log) for i, log in enumerate(logs) if i != v]
    assert any("leader-acquired" in events for events in survivors_events), logs
    assert any("assignment-published" in events for events in survivors_events), logs


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_worker_logs_follow_leadership_assignment_and_reclaims(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """w0 crawls alone and is killed holding claims; w1, started then, leads, takes every
    partition and returns w0's expired claims: each step is an event in the JSON logs."""
    url = redis_server.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        submit = _submit(url, server.url(0), "--heartbeat-ttl", "2", "--claim-timeout", "2")
        assert await run(tmp_path / "submit.log", *submit) == 0
        first = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0, *LOG_ARGS))
        await wait_for_records(tmp_path, range(1), 3)
        assert (await cluster_status(url))["totals"]["claimed"] > 0
        first.send_signal(signal.SIGKILL)
        await first.wait()
        second = await start(tmp_path / "w1.log", *worker_args(url, tmp_path, 1, *LOG_ARGS))
        await cluster_wait(url)
        assert await asyncio.wait_for(second.wait(), 30) == 0, worker_logs(tmp_path, 2)[1]

    killed, survivor = (log_events(log) for log in worker_logs(tmp_path, 2))
    assert {"worker-started", "leader-acquired", "partitions-moved"} <= {
        e.get("event") for e in killed
    }
    events = {e.get("event"): e for e in survivor}
    assert {"worker-started", "leader-acquired", "assignment-published", "partitions-moved",
            "claims-reclaimed", "worker-stopped"} <= set(events), survivor  # fmt: skip
    assert events["leader-acquired"]["worker"] == "w1"
    assert events["assignment-published"]["leader"] == "w1"
    moved = [e for e in survivor if e.get("event") == "partitions-moved"]
    assert moved[-1]["partitions"] == 64 and moved[-1]["worker"] == "w1"
    reclaimed = events["claims-reclaimed"]
    assert reclaimed["claims"] > 0 and reclaimed["logger"] == "gossamer.frontier.redis.claims"
    assert all({"time", "level", "logger", "message"} <= set(e) for e in killed + survivor)


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_redis_restart_mid_crawl_loses_nothing(
    tmp_path: Path, redis_aof: RedisServer
) -> None:
    url = redis_aof.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        # Heartbeats (2 s) expire while Redis is down; claims (10 s) do not.
        submit = _submit(url, seed, "--heartbeat-ttl", "2", "--claim-timeout", "10")
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i, *LOG_ARGS))
            for i in range(2)
        ]
        await wait_alive(url, 2)
        # `cluster wait` runs through the restart too.
        waiter = asyncio.create_task(cluster_wait(url))
        await wait_for_records(tmp_path, range(2), 10)
        before = sum(url_counts(tmp_path, 2).values())
        version = (await cluster_status(url))["assignment_version"]
        await asyncio.to_thread(redis_aof.restart, 2.0)
        state = await cluster_status(url)
        assert not state["done"], "the restart came too late to test anything"
        versions = await _versions_until_done(url)
        await asyncio.wait_for(waiter, 55)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        logs = worker_logs(tmp_path, 2)
        assert codes == [0, 0], logs
        state = await cluster_status(url)

    assert before < len(expected) / 2
    counts = url_counts(tmp_path, 2)
    assert_same_urls(counts, expected)
    # Every claim outlived the outage and was renewed after it: none was fetched twice.
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    assert state["done"] and state["totals"]["queued"] == state["totals"]["claimed"] == 0
    # The leader waited for the workers to beat again: no partition moved while the job ran.
    assert versions == {version}
    assert not any("Traceback" in log for log in logs), logs
    # Each worker logged the outage and its end.
    for log in logs:
        assert {"redis-unreachable", "redis-recovered"} <= event_names(log), log
        assert redis_aof.url in log


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_redis_gone_for_good_is_one_line_exit_75(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    budget = 3.0
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        assert await run(tmp_path / "submit.log", *_submit(url, seed)) == 0
        args = worker_args(url, tmp_path, 0, "--redis-timeout", str(budget), "--log-json")
        worker = await asyncio.create_subprocess_exec(
            *GOSSAMER, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        await wait_for_records(tmp_path, range(1), 10)
        halted_at = time.monotonic()
        await asyncio.to_thread(redis_server.halt)
        out, err = await asyncio.wait_for(worker.communicate(), budget + 20)
        gone_for = time.monotonic() - halted_at

    stderr = err.decode()
    assert worker.returncode == 75, stderr
    assert budget <= gone_for < budget + 10, gone_for
    # One line says why it stopped; before it, the outage's start, logged as JSON.
    *logged, last = stderr.splitlines()
    assert "Traceback" not in stderr, stderr
    assert last.startswith(f"gossamer: Redis at {url} unreachable for 3 s: "), stderr
    assert logged and {json.loads(line)["event"] for line in logged} == {"redis-unreachable"}
    # Its last checkpoint ran before it exited: pages.jsonl holds every record of crawl.db.
    records = read_records(tmp_path / "w0")
    with sqlite3.connect(tmp_path / "w0" / "crawl.db") as db:
        (stored,) = db.execute("SELECT COUNT(*) FROM pages").fetchone()
    assert len(records) == stored > 0
    assert out == b""  # --quiet: no summary

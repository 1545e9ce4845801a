"""The control plane with 50 simulated workers (the real keepers, nothing crawled) on one real
Redis: the assignment reaches every worker, a dead leader is replaced within its lease, 10% of
the workers leaving moves their partitions and few others, none is left unowned, no worker
reads the whole assignment table when it changes, a new assignment reaches every worker by
its notice (long before their slow polls), and a steady worker polls Redis less than once a
second (``benchmarks/bench_control_plane.py`` runs the same with 1,000 workers)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.cluster.control import Control
from gossamer.cluster.keeper import HEARD
from gossamer.cluster.simulate import SimConfig, SimWorker, seed

WORKERS = 50
PARTITIONS = 1024
TTL = 5.0
"""Heartbeat TTL and leader lease, seconds (long enough that a busy machine's slow event
loop does not let a live worker's heartbeat run out)."""


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.flushall()
    await client.aclose()


async def until(check: Callable[[], object], limit: float, what: str) -> float:
    """Seconds until ``check()`` (awaited if need be) is true; fails after ``limit``."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {limit} s: {what}")


READS = [0]
"""The test's own reads of the whole table (HGETALL), not counted against the workers."""


async def settled(control: Control, live: list[SimWorker]) -> bool:
    """Every live worker, and no other, owns partitions at the version each one follows."""
    version, table = await _table(control)
    names = {w.name for w in live}
    if {n for n, parts in table.items() if parts} != names:
        return False
    return all(w.assignment.ownership.version == version for w in live)


async def hgetall_calls(redis: Redis) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_hgetall", {}).get("calls", 0))


POLLS = ("get", "spop", "exists", "hkeys", "multi")
"""What a worker used to poll with: the assignment's version, the job's state, wake hints, the
live workers (the leader), transactions (the heartbeat)."""


async def polls(redis: Redis) -> int:
    stats = await redis.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in POLLS)


async def test_fifty_workers_follow_fail_over_and_shrink(
    redis: Redis, redis_server: RedisServer
) -> None:
    config = SimConfig(redis_server.url, "sim", PARTITIONS, heartbeat_ttl=TTL, claim_timeout=15.0)
    control = Control(redis, "sim")
    await seed(config, 200)  # a busy job: URLs queued, none leased
    workers = [SimWorker(config, f"w{i:02d}") for i in range(WORKERS)]
    try:
        await asyncio.gather(*(w.start() for w in workers))
        await until(lambda: settled(control, workers), 20, "the first assignment reaches all")
        start, before = time.monotonic(), await polls(redis)
        await asyncio.sleep(3.0)
        rate = (await polls(redis) - before - 2) / (time.monotonic() - start) / WORKERS
        assert rate < 1.0  # polls per worker and second (notices replaced 37 a second)
        _, table = await _table(control)
        owned = [p for parts in table.values() for p in parts]
        assert sorted(owned) == list(range(PARTITIONS))  # each partition once

        head = await control.leader()
        leader = next(w for w in workers if w.name == head)
        await leader.die()
        live = [w for w in workers if w is not leader]
        took = await until(
            lambda: _new_leader(control, leader.name), TTL + 3, "a new leader after its death"
        )
        assert took <= TTL + 2  # the lease runs out, the next turn of another worker takes it
        await until(lambda: settled(control, live), 20, "the dead leader's share moves")

        _, before = await _table(control)
        head = await control.leader()
        leaving = [w for w in live if w.name != head][: WORKERS // 10]
        calls, ours = await hgetall_calls(redis), READS[0]
        await asyncio.gather(*(w.leave() for w in leaving))
        live = [w for w in live if w not in leaving]
        await until(lambda: settled(control, live), 15, "the new assignment reaches all")
        version = await control.version()  # a later turn may have published again meanwhile:
        await until(  # each worker's own record of when it reached it is what is measured
            lambda: all(any(v >= version for v in w.seen.reached) for w in live), 10, "reached"
        )
        published = next(w.seen.published[version] for w in live if version in w.seen.published)
        reach = max(min(t for v, t in w.seen.reached.items() if v >= version) for w in live)
        assert reach - published < HEARD / 2  # by its notice, not a poll
        workers_reads = await hgetall_calls(redis) - calls - (READS[0] - ours)
        _, after = await _table(control)

        owner_before = {p: n for n, parts in before.items() for p in parts}
        owner_after = {p: n for n, parts in after.items() for p in parts}
        assert sorted(owner_after) == list(range(PARTITIONS))  # none unowned
        moved = sum(owner_before[p] != n for p, n in owner_after.items())
        minimum = sum(len(before[w.name]) for w in leaving)
        assert minimum <= moved <= minimum + 2 * PARTITIONS // WORKERS  # their share, + slack
        # the leader reads the table once per version; no follower reads it at all
        assert workers_reads <= 4
    finally:
        await asyncio.gather(*(w.leave() for w in workers), return_exceptions=True)


async def _table(control: Control) -> tuple[int, dict[str, frozenset[int]]]:
    READS[0] += 1
    return await control.version(), await control.assignment()


async def _new_leader(control: Control, old: str) -> bool:
    name = await control.leader()
    return name is not None and name != old


async def test_a_heartbeat_is_one_call_and_a_follower_learns_when_the_lease_runs_out(
    redis: Redis,
) -> None:
    control = Control(redis, "one")
    await control.heartbeat("a", {"pages": 0}, TTL)  # loads the script
    stats = await redis.info("commandstats")
    await control.heartbeat("a", {"pages": 1}, TTL)
    after = await redis.info("commandstats")
    sent = {
        name: after.get(name, {}).get("calls", 0) - stats.get(name, {}).get("calls", 0)
        for name in ("cmdstat_evalsha", "cmdstat_multi", "cmdstat_exec")
    }
    assert sent == {"cmdstat_evalsha": 1, "cmdstat_multi": 0, "cmdstat_exec": 0}
    await control.heartbeat("b", {"pages": 0}, 0.2)
    assert await control.live_workers() == ["a", "b"]
    await until(lambda: _only_a(control), 5, "b's heartbeat runs out")

    assert await control.try_lead("a", TTL) == 0.0  # a leads
    wait = await control.try_lead("b", TTL)
    assert TTL - 1.0 < wait <= TTL  # b tries again when a's lease could have run out
    assert await control.leader() == "a"


async def _only_a(control: Control) -> bool:
    return await control.live_workers() == ["a"]

"""How much of the job's counts a worker reads: a new share costs the partitions gained, and an
idle worker's ``done()`` in a busy job costs a few partitions, not every one of them each
second (1,000 idle workers of 4,096 partitions would read 4 million counts a second)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontier, RedisFrontierConfig, partition_of
from gossamer.frontier.redis.counts import RECHECKED
from gossamer.urls import Scope

P = 256


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.flushall()
    await client.aclose()


def _worker(redis: Redis, owned: set[int], clock: Clock) -> RedisFrontier:
    return RedisFrontier(
        redis,
        "looks",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        ownership=Ownership(frozenset(owned)),
        clock=clock,
        wall_clock=clock,
        config=RedisFrontierConfig(partitions=P),
    )


async def _counts_read(redis: Redis) -> int:
    """Partition counts read so far (``counts.lua`` reads each with one HMGET)."""
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_hmget", {}).get("calls", 0))


def _urls(hosts: int) -> list[str]:
    return [f"http://h{i}.test/" for i in range(hosts)]


async def test_a_new_share_reads_the_counts_of_the_partitions_gained_only(redis: Redis) -> None:
    clock = Clock()
    await _worker(redis, set(), clock).add([Candidate(url) for url in _urls(400)])
    worker = _worker(redis, set(range(10)), clock)
    before = await _counts_read(redis)
    assert await worker.own(Ownership(frozenset(range(30)), version=1)) == 0
    assert await _counts_read(redis) - before == 20
    # the gained partitions with URLs queued are claimed from at the next lease
    wanted = {u for u in _urls(400) if 10 <= partition_of(u.rstrip("/"), P) < 30}
    assert wanted
    leased = await worker.lease(len(wanted) + 10)
    assert {lease.url for lease in leased} == wanted
    for lease in leased:
        await worker.ack(lease, None)


async def test_an_idle_worker_asks_done_of_a_few_partitions_while_the_job_is_busy(
    redis: Redis,
) -> None:
    clock = Clock()
    busy = _worker(redis, set(range(P)), clock)
    await busy.add([Candidate(url) for url in _urls(50)])
    idle = _worker(redis, set(), clock)
    assert not await idle.done()  # its first look: at every partition
    for _ in range(5):
        clock.now += 4.0  # refresh_interval times BACKOFF: a check each time
        before = await _counts_read(redis)
        assert not await idle.done()
        assert await _counts_read(redis) - before == RECHECKED
    clock.now += 1.0
    assert not await idle.done()  # while busy, it asks less often than each second
    # the job drains: the busiest partitions are idle, so done() looks at every one and ends
    acked = 0
    for _ in range(10):  # a claim takes a batch of each partition believed to have some
        for lease in await busy.lease(100):
            await busy.ack(lease, None)
            acked += 1
    assert acked == 50
    clock.now += 4.0
    before = await _counts_read(redis)
    assert await idle.done()
    assert await _counts_read(redis) - before == RECHECKED + P

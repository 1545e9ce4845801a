"""Handing a partition over (host mode): the new owner claims none of its URLs while the old
owner still has a request to one of its hosts in flight, nor before that host's delay has
passed since the request started; a dead old owner's fence lapses with its leases."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from importlib import resources

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.base import Candidate, Feedback, Lease
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    Ownership,
    RedisFrontier,
    RedisFrontierConfig,
    partition_keys,
    partition_of,
    run_scripts,
)
from gossamer.urls import Scope

DELAY = 0.3
HOST = "http://slow.test"


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.flushall()
    await redis.aclose()


EVERY, NONE = Ownership(frozenset(range(8))), Ownership(frozenset())


def frontier(client: Redis, owned: Ownership, lease_timeout: float = 30.0) -> RedisFrontier:
    return RedisFrontier(
        client,
        "handover",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=1, delay=DELAY),
        ownership=owned,
        config=RedisFrontierConfig(partitions=8, lease_timeout=lease_timeout),
    )


async def first_lease(new: RedisFrontier, limit: float = 3.0) -> tuple[Lease, float]:
    """Lease from ``new`` every 10 ms until it gets a URL; the URL and when."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = await new.lease(1)
        if got:
            return got[0], time.monotonic()
        await asyncio.sleep(0.01)
    raise AssertionError("the new owner never got a URL")


async def test_new_owner_waits_for_the_request_in_flight_and_the_delay(client: Redis) -> None:
    old, new = frontier(client, EVERY), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(3)])
    (in_flight,) = await old.lease(5)  # one at a time: the host has a delay
    started = time.monotonic()
    assert await old.own(NONE) == 2
    await new.own(EVERY)
    for _ in range(4):  # the request is still in flight: nothing for the new owner
        assert await new.lease(5) == []
        await asyncio.sleep(0.1)
    await old.ack(in_flight, Feedback(started_at=started))
    lease, at = await first_lease(new)
    assert lease.url != in_flight.url
    assert at - started >= DELAY - 0.005  # the fence is kept in whole milliseconds
    assert at - started < DELAY + 0.5


async def test_a_host_fetched_just_before_the_hand_over_keeps_its_delay(client: Redis) -> None:
    old, new = frontier(client, EVERY), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (done,) = await old.lease(5)
    started = time.monotonic()
    await old.ack(done, Feedback(started_at=started))
    assert await old.own(NONE) == 1
    await new.own(EVERY)
    _, at = await first_lease(new)
    assert at - started >= DELAY - 0.005


async def test_a_dead_old_owners_fence_lapses_with_its_leases(client: Redis) -> None:
    old, new = frontier(client, EVERY, lease_timeout=0.6), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    assert len(await old.lease(5)) == 1
    dropped = time.monotonic()
    await old.own(NONE)  # and then it dies: no ack ever comes
    await new.own(EVERY)
    _, at = await first_lease(new)
    assert 0.6 - 0.005 <= at - dropped < 0.6 + 0.5


async def test_a_partition_back_before_its_request_ended_is_fenced_until_then(
    client: Redis,
) -> None:
    """Given away and handed back (assignments in quick succession while workers join): the
    request still in flight lifts the worker's own fence when it ends, as for anyone."""
    worker = frontier(client, EVERY)
    await worker.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (in_flight,) = await worker.lease(5)
    started = time.monotonic()
    await worker.own(NONE)
    await worker.own(EVERY)  # back at once
    assert await worker.lease(5) == []  # its own request is still in flight
    await worker.ack(in_flight, Feedback(started_at=started))
    _, at = await first_lease(worker)
    assert DELAY - 0.005 <= at - started < DELAY + 0.5


async def test_a_late_fence_call_never_undoes_a_later_one(client: Redis) -> None:
    """Fence calls of one worker can reach Redis out of order (two connections, a retried
    call): the lift numbered after the fence wins even when it arrives first."""
    new = frontier(client, EVERY)
    await new.add([Candidate(f"{HOST}/0")])
    fence = partition_keys("handover", partition_of(HOST, 8))["fence"]
    script = client.register_script(
        (resources.files("gossamer.frontier.redis") / "lua" / "fence.lua").read_text("utf-8")
    )
    lift, hold = [0, 2, 60_000], [30_000, 1, 60_000]  # ms, sequence, keep
    assert await run_scripts(client, [(script, [fence], ["old", *lift])]) == [1]
    assert await run_scripts(client, [(script, [fence], ["old", *hold])]) == [0]
    assert await client.hget(fence, "old") == b"0:2"
    assert len(await new.lease(5)) == 1

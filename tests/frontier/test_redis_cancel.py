"""A lease's end cancelled midway (the engine's drain cancels the URLs still in flight after its
grace): the URL stays where ``close()`` finds it, so the next owner gets it at once rather than
after the claim's lease timeout, and only once."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from redis.asyncio import Redis
from tests.frontier.test_redis_handover import LATER_EVERY, LATER_NONE, pair

from gossamer.frontier.base import Candidate, Feedback, Lease
from gossamer.frontier.redis import RedisFrontier, partition_keys, partition_of
from gossamer.frontier.redis.faults import read_aside
from gossamer.urls import host_key

URLS = [f"http://host{i}.test/" for i in range(3)]


async def end(frontier: RedisFrontier, lease: Lease, how: str) -> None:
    if how == "retry":
        await frontier.retry(lease, 0.0, Feedback(started_at=time.monotonic()))
    else:
        await frontier.release(lease, None)


@pytest.mark.parametrize("steps", range(12))
@pytest.mark.parametrize("given_away", [False, True], ids=["owned", "given-away"])
@pytest.mark.parametrize("how", ["retry", "release"])
async def test_a_lease_end_cancelled_midway_goes_back_at_the_close(
    client: Redis, how: str, given_away: bool, steps: int
) -> None:
    """The lease's end is cancelled ``steps`` turns of the loop in (at each of its awaits, or
    after it ended), then released as the engine's ``_process`` does on a cancel; its
    partition given away before (the entry an orphan) or at the close."""
    old, new = pair(client)
    await old.add([Candidate(url) for url in URLS])
    leases = await old.lease(10)
    assert len(leases) == len(URLS)
    if given_away:
        await old.own(LATER_NONE)
    ending = asyncio.create_task(end(old, leases[0], how))
    for _ in range(steps):
        await asyncio.sleep(0)
    ending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ending
    await old.release(leases[0], None)
    for lease in leases[1:]:
        await old.ack(lease, Feedback(started_at=time.monotonic()))
    await old.close()
    await new.own(LATER_EVERY)
    got: list[str] = []
    deadline = time.monotonic() + 3.0  # the claims' lease timeout is 30 s
    while not got:
        assert time.monotonic() < deadline, "the URL is still claimed by the old owner"
        for lease in await new.lease(10):
            got.append(lease.url)
            await new.ack(lease, Feedback(started_at=time.monotonic()))
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)  # past the hosts' delay: a second copy would be leasable now
    got += [lease.url for lease in await new.lease(10)]
    assert got == [leases[0].url]


@pytest.mark.parametrize("stagger", [1, 2, 3, 5])
async def test_leases_of_given_away_partitions_ending_together_each_go_back_once(
    client: Redis, stagger: int
) -> None:
    """Requests in flight as their partitions go (a rebalance, a drain's cancels) end at the
    same time: each hand-back sends what is waiting without another taking it from under it,
    no end fails, and the new owner gets every URL at once."""
    old, new = pair(client)
    urls = [f"http://h{i}.test/" for i in range(6)]
    await old.add([Candidate(url) for url in urls])
    leases = await old.lease(10)
    assert len(leases) == len(urls)
    await old.own(LATER_NONE)

    async def release(i: int, lease: Lease) -> None:
        for _ in range(i % stagger):
            await asyncio.sleep(0)
        await old.release(lease, None)

    await asyncio.gather(*(release(i, lease) for i, lease in enumerate(leases)))
    await old.close()
    await new.own(LATER_EVERY)
    got: list[str] = []
    deadline = time.monotonic() + 3.0
    while len(got) < len(urls):
        assert time.monotonic() < deadline, sorted(got)
        for lease in await new.lease(10):
            got.append(lease.url)
            await new.ack(lease, Feedback(started_at=time.monotonic()))
        await asyncio.sleep(0.01)
    assert sorted(got) == sorted(urls)


async def test_a_partition_given_away_during_a_retry_goes_with_its_url(client: Redis) -> None:
    """The keeper gives every partition away while a retry's update is on its way to Redis:
    the retried URL goes to the new owner with the rest, and the old owner never leases it."""
    old, new = pair(client)
    await old.add([Candidate(url) for url in URLS])
    leases = await old.lease(10)
    retrying = asyncio.create_task(old.retry(leases[0], 0.0, Feedback(started_at=time.monotonic())))
    await asyncio.sleep(0)  # the retry awaits its pipeline
    await old.own(LATER_NONE)
    await retrying
    for lease in leases[1:]:
        await old.ack(lease, Feedback(started_at=time.monotonic()))
    await new.own(LATER_EVERY)
    got: list[str] = []
    deadline = time.monotonic() + 3.0
    while not got:
        assert await old.lease(10) == []
        assert time.monotonic() < deadline, "the retried URL stayed with the old owner"
        got += [lease.url for lease in await new.lease(10)]
        await asyncio.sleep(0.01)
    assert got == [leases[0].url]


async def test_a_fence_redis_refuses_fails_neither_the_ack_it_rides_with_nor_the_close(
    client: Redis,
) -> None:
    """A hand-over fence call Redis answers with an error of its data (its key of another
    type) is logged and dropped: the ack in its pipeline ends its URL, and the worker is done."""
    old, _ = pair(client)
    await old.add([Candidate(URLS[0])])
    (lease,) = await old.lease(5)
    await old.own(LATER_NONE)  # fenced while the request is in flight; lifted by its end
    fence = partition_keys("handover", partition_of(host_key(URLS[0]), 8))["fence"]
    await client.delete(fence)
    await client.set(fence, b"not a hash")
    await old.ack(lease, Feedback(started_at=time.monotonic()))
    await client.delete(fence)
    await old.close()
    await old.refresh()
    assert await old.done()


async def test_a_give_back_redis_refuses_leaves_the_claims_to_lapse(client: Redis) -> None:
    """A give-back Redis answers with an error of its data (the queue's key of another type)
    sets its partition aside, named in the job's record; its entries are not held, and
    renewed, for ever: their claims lapse."""
    old, _ = pair(client)
    await old.add([Candidate(f"{URLS[0]}{i}") for i in range(3)])
    (lease,) = await old.lease(5)  # the others wait in memory for the host's delay
    await old.ack(lease, Feedback(started_at=time.monotonic()))
    keys = partition_keys("handover", partition_of(host_key(URLS[0]), 8))
    await client.delete(keys["queue"])
    await client.hset(keys["queue"], "not", "a list")
    assert await old.own(LATER_NONE) == 0
    part = partition_of(host_key(URLS[0]), 8)
    assert await read_aside(client, "handover") == {
        part: f"{keys['queue']} holds a hash, not a list"
    }
    before = await client.zrange(keys["deadlines"], 0, -1, withscores=True)
    await asyncio.sleep(0.05)
    await old.renew()
    assert before
    assert await client.zrange(keys["deadlines"], 0, -1, withscores=True) == before

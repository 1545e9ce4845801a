"""The Redis frontier across workers: ownership, dead workers, hand-overs, hash tags.

Every test runs twice: on a one-node Redis Cluster owning every slot through a plain client, so
any script or command whose keys span two slots fails with CROSSSLOT (every test here also
checks the hash-tag layout), and on a 3-master Redis Cluster through a cluster client, so
partitions live on different nodes.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisClusterException, ResponseError
from tests.frontier import topologies

from gossamer.frontier.base import Candidate, Lease
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    Ownership,
    RedisClient,
    RedisFrontier,
    RedisFrontierConfig,
    partition_keys,
    partition_of,
)
from gossamer.urls import Scope

# the fixtures of both Redis topologies (tests/frontier/topologies.py)
redis_server = topologies.redis_server
client = topologies.client
job = topologies.job

P = 16


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def make(
    client: RedisClient, job: str, clock: Clock, owned: set[int] | None = None, **kw: object
) -> RedisFrontier:
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    return RedisFrontier(
        client,
        job,
        scope,
        PolitenessPolicy(per_host=2),
        config=RedisFrontierConfig(
            partitions=P,
            claim_batch=8,
            refresh_interval=0.0,
            **kw,  # type: ignore[arg-type]
        ),
        ownership=None if owned is None else Ownership(frozenset(owned)),
        clock=clock,
        wall_clock=clock,
    )


def urls(hosts: int = 12, per_host: int = 5) -> list[str]:
    return [f"http://h{h}.test/{i}" for h in range(hosts) for i in range(per_host)]


def part(url: str) -> int:
    return partition_of(url.split("/", 3)[0] + "//" + url.split("/", 3)[2], P)


async def drain(*frontiers: RedisFrontier, rounds: int = 200) -> dict[int, list[Lease]]:
    """Lease and ack on every frontier in turn until all are done."""
    got: dict[int, list[Lease]] = {i: [] for i in range(len(frontiers))}
    for _ in range(rounds):
        for i, frontier in enumerate(frontiers):
            for lease in await frontier.lease(10):
                got[i].append(lease)
                await frontier.ack(lease, None)
        if all([await frontier.done() for frontier in frontiers]):
            return got
    raise AssertionError("frontiers never finished")


_LAYOUT = {"hosts", "sl", "sp"}
"""Fields of a partition's counts that number its hosts and seen SETs, not its URLs."""


async def counts(client: Redis, job: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for p in range(P):
        raw = await client.hgetall(partition_keys(job, p)["counts"])
        for name, value in raw.items():
            key = name.decode() if isinstance(name, bytes) else name
            if key not in _LAYOUT:
                total[key] = total.get(key, 0) + int(value)
    return total


async def test_cluster_rejects_keys_of_two_slots(client: Redis, job: str) -> None:
    keys = [partition_keys(job, 0)["queue"], partition_keys(job, 1)["queue"]]
    # The server refuses it (one node), or the cluster client before sending it (3 masters).
    with pytest.raises((ResponseError, RedisClusterException), match=r"same (key )?slot"):
        await client.eval("return 1", 2, *keys)


def test_partition_keys_share_one_hash_tag() -> None:
    for p in (0, 7, 4095):
        tags = {re.search(r"\{(.*?)\}", key).group(1) for key in partition_keys("j", p).values()}  # type: ignore[union-attr]
        assert tags == {f"j:{p}"}


async def test_two_workers_lease_disjoint_sets_exactly_once(client: Redis, job: str) -> None:
    clock = Clock()
    evens, odds = set(range(0, P, 2)), set(range(1, P, 2))
    a, b = make(client, job, clock, evens), make(client, job, clock, odds)
    everything = urls()
    await a.add([Candidate(u) for u in everything[::2]])
    await b.add([Candidate(u) for u in everything[1::2]])
    assert (await b.add([Candidate(everything[0])])).duplicates == 1  # seen is shared
    got = await drain(a, b)
    leased_a = [lease.url for lease in got[0]]
    leased_b = [lease.url for lease in got[1]]
    assert {part(u) for u in leased_a} <= evens and {part(u) for u in leased_b} <= odds
    assert sorted(leased_a + leased_b) == sorted(everything)
    assert await counts(client, job) == {
        "seen": len(everything),
        "finished": len(everything),
        "queued": 0,
        "claimed": 0,
        "token": len(everything),
    }


async def test_abandoned_claims_are_reclaimed_by_another_worker(client: Redis, job: str) -> None:
    clock = Clock()
    dead = make(client, job, clock, lease_timeout=10.0)
    everything = urls(hosts=4, per_host=3)
    await dead.add([Candidate(u) for u in everything])
    leased = await dead.lease(3)
    assert leased and (await counts(client, job))["claimed"] == len(everything)
    del dead  # kill -9: no ack, no close, its claims stay in Redis

    heir = make(client, job, clock, lease_timeout=10.0)
    assert await heir.reclaim_expired() == 0  # deadlines not passed yet
    assert await heir.lease(10) == []
    clock.now += 10.5
    assert await heir.reclaim_expired() == len(everything)
    got = await drain(heir)
    assert sorted(lease.url for lease in got[0]) == sorted(everything)


async def test_ack_after_reclaim_counts_once(client: Redis, job: str) -> None:
    clock = Clock()
    slow = make(client, job, clock, lease_timeout=10.0)
    await slow.add([Candidate("http://a.test/x")])
    (stale,) = await slow.lease(1)
    clock.now += 11
    other = make(client, job, clock, lease_timeout=10.0)
    assert await other.reclaim_expired() == 1
    (fresh,) = await other.lease(1)
    await other.ack(fresh, None)
    await slow.ack(stale, None)  # too late: its claim is gone
    assert await counts(client, job) == {
        "seen": 1,
        "finished": 1,
        "queued": 0,
        "claimed": 0,
        "token": 2,
    }
    for frontier in (slow, other):
        assert await frontier.done()


async def test_live_claims_are_renewed(client: Redis, job: str) -> None:
    clock = Clock()
    alive = make(client, job, clock, lease_timeout=10.0)
    await alive.add([Candidate(f"http://a.test/{i}") for i in range(4)])
    assert await alive.lease(0) == []  # claims the URLs into memory
    assert (await counts(client, job))["claimed"] == 4
    for _ in range(5):
        clock.now += 4  # well past the first deadline; renewed every lease_timeout / 3
        await alive.renew()
    other = make(client, job, clock, lease_timeout=10.0)
    assert await other.reclaim_expired() == 0
    got = await drain(alive)
    assert len(got[0]) == 4 and (await counts(client, job))["finished"] == 4


async def test_drop_partitions_hands_entries_back(client: Redis, job: str) -> None:
    clock = Clock()
    a = make(client, job, clock)
    everything = urls(hosts=6, per_host=4)
    await a.add([Candidate(u) for u in everything])
    in_flight = await a.lease(3)
    assert len(in_flight) == 3
    given = await a.own(Ownership(frozenset()))
    assert given == len(everything) - 3
    assert (await counts(client, job))["queued"] == given

    b = make(client, job, clock)
    await b.refresh()  # what the keeper does: b finds the entries a gave back
    first = await b.lease(10)
    for lease in first:
        await b.ack(lease, None)
    await a.ack(in_flight[0], None)  # an ack after the drop still finishes the URL
    await a.release(in_flight[1], None)  # goes back to Redis, to the new owner
    await a.retry(in_flight[2], 0.0, None)  # likewise, with its attempt counted
    rest = (await drain(b))[0]
    all_b = [lease.url for lease in first + rest]
    assert sorted([*all_b, in_flight[0].url]) == sorted(everything)
    retried = next(lease for lease in rest if lease.url == in_flight[2].url)
    assert retried.attempts == 1
    assert await a.done()
    totals = await counts(client, job)
    assert (totals["finished"], totals["queued"], totals["claimed"]) == (len(everything), 0, 0)


async def test_close_gives_back_held_entries(client: Redis, job: str) -> None:
    clock = Clock()
    a = make(client, job, clock)
    await a.add([Candidate(u) for u in urls(hosts=3, per_host=3)])
    assert len(await a.lease(1)) == 1
    await a.close()
    totals = await counts(client, job)
    assert (totals["queued"], totals["claimed"]) == (8, 1)


async def test_close_gives_back_the_urls_of_acks_never_sent(client: Redis, job: str) -> None:
    """Deferred acks whose checkpoint failed (taken, never sent) or that no checkpoint took:
    their records are not durable, so ``close()`` queues their URLs again at once; sent ones
    stay finished."""
    clock = Clock()
    a = make(client, job, clock, defer_acks=True)
    await a.add([Candidate(u) for u in urls(hosts=3, per_host=3)])
    leases = await a.lease(3)
    await a.ack(leases[0], None)
    await a.take_acks()()  # its checkpoint committed: sent
    await a.ack(leases[1], None)
    a.take_acks()  # its checkpoint failed: never sent
    await a.ack(leases[2], None)  # no checkpoint took it
    await a.close()
    totals = await counts(client, job)
    assert (totals["queued"], totals["claimed"], totals["finished"]) == (8, 0, 1)


async def test_refresh_over_4096_partitions_is_fast(client: Redis, job: str) -> None:
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    frontier = RedisFrontier(
        client, job, scope, PolitenessPolicy(), config=RedisFrontierConfig(refresh_interval=0.0)
    )
    await frontier.add([Candidate(u) for u in urls(hosts=50, per_host=2)])
    # The client's CPU, not the wall clock: a loaded machine stretches the latter, and the
    # cost guarded here is the client's work per partition (one HMGET each on a cluster).
    started = time.process_time()
    await frontier.refresh()
    assert time.process_time() - started < 1.0
    assert frontier.stats().queued == 100 and not await frontier.done()


async def test_a_claim_answered_after_its_partitions_went_is_given_back(
    client: Redis, job: str
) -> None:
    """The keeper hands over a new ownership while ``lease()`` waits for a claim: what the
    claim brings of partitions no longer owned goes straight back, never leased here."""
    clock = Clock()
    a = make(client, job, clock)
    everything = urls(hosts=4, per_host=2)
    await a.add([Candidate(u) for u in everything])
    leasing = asyncio.create_task(a.lease(10))
    await asyncio.sleep(0)  # the claim is on its way to Redis
    await a.own(Ownership(frozenset()))
    assert await leasing == []
    totals = await counts(client, job)
    assert (totals["queued"], totals["claimed"]) == (len(everything), 0)
    assert await a.done() is False and a.stats().leased == 0

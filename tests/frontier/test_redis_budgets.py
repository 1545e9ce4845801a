"""Per-host page budgets and trap guards on the Redis frontier: a host's page count lives in
Redis (its partition's ``pages`` hash), so the budget holds across workers and partition moves."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Lease, Outlinks
from gossamer.frontier.budgets import BudgetLimits
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    Ownership,
    RedisClient,
    RedisFrontier,
    RedisFrontierConfig,
    partition_keys,
)
from gossamer.frontier.redis.keys import partition_of
from gossamer.urls import Scope

P = 8
_jobs = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[RedisClient]:
    redis: RedisClient = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


def make(
    client: RedisClient, job: str, owned: set[int], guards: Guards, allow: tuple[str, ...] = ()
) -> RedisFrontier:
    clock = Clock()
    return RedisFrontier(
        client,
        job,
        Scope.for_seeds([], ["test", *allow]),
        PolitenessPolicy(per_host=2),
        config=RedisFrontierConfig(partitions=P, claim_batch=4, refresh_interval=0.0),
        ownership=Ownership(frozenset(owned)),
        clock=clock,
        wall_clock=clock,
        guards=guards,
    )


async def drain(*frontiers: RedisFrontier, most: int | None = None) -> list[Lease]:
    """Lease and ack on every frontier in turn until all are done (or ``most`` page leases)."""
    got: list[Lease] = []
    for _ in range(200):
        for frontier in frontiers:
            leases = await frontier.lease(2)
            if most is not None and sum(g.kind == "page" for g in got + leases) > most:
                for lease in leases:
                    await frontier.release(lease, None)
                return got
            for lease in leases:
                got.append(lease)
                await frontier.ack(lease, None)
        if all([await frontier.done() for frontier in frontiers]):
            return got
    raise AssertionError("frontiers never finished")


def by_kind(leases: list[Lease]) -> Counter[tuple[str, str]]:
    return Counter((lease.host.partition("//")[2], lease.kind) for lease in leases)


async def test_two_workers_stop_each_host_at_its_budget(client: RedisClient) -> None:
    job = f"budget{next(_jobs)}"
    guards = Guards(budgets=BudgetLimits(per_host=3))
    a = make(client, job, set(range(0, P, 2)), guards)
    b = make(client, job, set(range(1, P, 2)), guards)
    hosts = [f"h{i}.test" for i in range(6)]
    await a.add([Candidate(f"http://{h}/{i}") for h in hosts for i in range(5)])
    kinds = by_kind(await drain(a, b))
    assert kinds == Counter({(h, k): n for h in hosts for k, n in (("page", 3), ("budget", 2))})
    pages = partition_keys(job, partition_of("http://h0.test", P))["pages"]
    assert int(await client.hget(pages, "http://h0.test")) == 3  # type: ignore[misc]


async def test_the_budget_holds_when_a_host_moves_to_another_worker(client: RedisClient) -> None:
    job = f"budget{next(_jobs)}"
    guards = Guards(budgets=BudgetLimits(per_host=4))
    first = make(client, job, set(range(P)), guards)
    await first.add([Candidate(f"http://moving.test/{i}") for i in range(10)])
    taken = await drain(first, most=2)
    assert by_kind(taken) == {("moving.test", "page"): 2}
    await first.own(Ownership(frozenset()))  # its partitions go to a new worker
    second = make(client, job, set(range(P)), guards)
    assert not second.budget_spent("http://moving.test")
    kinds = by_kind(await drain(second))
    assert kinds == {("moving.test", "page"): 2, ("moving.test", "budget"): 6}
    assert second.budget_spent("http://moving.test")  # (the sitemap stage asks)
    assert not second.budget_spent("http://other.test")


async def test_the_addresses_of_one_ipv6_64_are_one_budget(client: RedisClient) -> None:
    """A worker counts each address's pages in Redis and the /64's budget over the addresses
    it met (gossamer.frontier.budgets): one worker holding them all stops the /64 at 3."""
    addresses = [f"2001:db8:0:1::{n:x}" for n in range(1, 7)]
    guards = Guards(budgets=BudgetLimits(per_host=3))
    front = make(client, f"budget{next(_jobs)}", set(range(P)), guards, tuple(addresses))
    await front.add([Candidate(f"http://[{a}]/{i}") for a in addresses for i in range(2)])
    kinds = by_kind(await drain(front))
    assert sum(n for (_, kind), n in kinds.items() if kind == "page") == 3  # before: 12
    assert sum(n for (_, kind), n in kinds.items() if kind == "budget") == 9


async def test_admission_strips_and_guards_on_the_redis_frontier(client: RedisClient) -> None:
    front = make(client, f"budget{next(_jobs)}", set(range(P)), Guards())
    result = await front.add(
        [
            Candidate("http://h.test/a?utm_source=x"),
            Candidate("http://h.test/a;jsessionid=F00"),
            Candidate("http://h.test/loop/a/b/a/b/a/b/", depth=3),
            Candidate("http://h.test/account?session_id=1", depth=1),
        ]
    )
    assert result.added == 1 and result.duplicates == 1
    assert result.rejected == {"trap-loop": 1, "trap-session": 1}
    assert [lease.url for lease in await drain(front)] == ["http://h.test/a"]


async def test_lines_of_descent_and_credentials_on_the_redis_frontier(client: RedisClient) -> None:
    front = make(client, f"budget{next(_jobs)}", set(range(P)), Guards())
    hashes = [f"http://h.test/a/{i:04x}9f3e{i:02x}b1" for i in range(12)]
    first = await front.add(Outlinks(hashes[:4], 1, "http://h.test/"))  # found on a list
    assert first.added == 4
    second = await front.add(Outlinks(hashes[4:8], 2, hashes[0]))  # one step down: allowed
    assert second.added == 4
    third = await front.add(Outlinks(hashes[8:], 3, hashes[4]))  # two steps: a trap's
    assert third.added == 0 and third.rejected == {"trap-generated": 4}
    secret = await front.add(Outlinks(["http://u:p@h.test/b"], 1, "http://h.test/"))
    assert secret.rejected == {"userinfo": 1}

"""The Redis frontier partitioned by URL, and its shared per-host limiter.

Frontiers on one job stand for workers; a real redis-server (a one-node Redis Cluster, so a
script touching keys of two slots fails with CROSSSLOT) holds the limiter. The limiter keeps
time with Redis' own clock, so these tests run on the real monotonic clock with short delays,
and time bounds are lower bounds (CPU contention only makes waits longer) or generous.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.base import Candidate, Feedback, Lease
from gossamer.frontier.hosts import RulesLookup
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    Ownership,
    RedisFrontier,
    RedisFrontierConfig,
    host_keys,
    partition_of,
)
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import Scope

P = 16
HOST = "http://a.test"
EVENS, ODDS = frozenset(range(0, P, 2)), frozenset(range(1, P, 2))
_jobs = itertools.count()


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


@pytest.fixture
def job() -> str:
    return f"limit{next(_jobs)}"


def make(
    client: Redis,
    job: str,
    owned: frozenset[int] | None = None,
    *,
    per_host: int = 2,
    delay: float = 0.0,
    partition_by: str = "url",
    lease_timeout: float = 600.0,
    rules: RulesLookup | None = None,
) -> RedisFrontier:
    return RedisFrontier(
        client,
        job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=per_host, delay=delay),
        config=RedisFrontierConfig(
            partitions=P,
            partition_by=partition_by,  # type: ignore[arg-type]
            lease_timeout=lease_timeout,
        ),
        ownership=None if owned is None else Ownership(owned),
        rules=rules,
    )


def pages(count: int, host: str = HOST) -> list[Candidate]:
    return [Candidate(f"{host}/{i}") for i in range(count)]


async def holders(client: Redis, job: str, host: str = HOST) -> int:
    count: int = await client.zcard(host_keys(job, host)["slots"])
    return count


async def lease_when_free(frontier: RedisFrontier, limit: float = 3.0) -> Lease:
    """Lease one URL, waiting as the frontier says; bounded by ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = await frontier.lease(1)
        if got:
            return got[0]
        await asyncio.sleep(min(frontier.next_ready() or 0.01, 0.5))
    raise AssertionError(f"no lease within {limit}s")


def test_limiter_keys_share_one_hash_tag_per_host() -> None:
    a, b = host_keys("j", "http://a.test"), host_keys("j", "http://b.test:8080")
    tags = [{re.search(r"\{(.*?)\}", k).group(1) for k in ks.values()} for ks in (a, b)]  # type: ignore[union-attr]
    assert all(len(t) == 1 for t in tags) and tags[0] != tags[1]
    assert all(t.startswith("j:h:") for (t,) in tags)


async def test_url_mode_spreads_one_host_over_two_owners(client: Redis, job: str) -> None:
    by_url = [make(client, job, EVENS), make(client, job, ODDS)]
    await by_url[0].add(pages(40))
    by_url[1].wake(by_url[0].filled())  # the keeper's hint
    got: list[list[str]] = [[], []]
    for _ in range(200):
        for i, frontier in enumerate(by_url):
            for lease in await frontier.lease(4):
                got[i].append(lease.url)
                await frontier.ack(lease, Feedback(started_at=time.monotonic()))
        if len(got[0]) + len(got[1]) == 40:
            break
        await asyncio.sleep(0.01)
    assert sorted(got[0] + got[1]) == sorted(c.url for c in pages(40))
    assert len(got[0]) >= 5 and len(got[1]) >= 5, got  # 40 fingerprints over 16 partitions
    # By host (the default) the same URLs all belong to one owner.
    by_host = [make(client, job + "h", own, partition_by="host") for own in (EVENS, ODDS)]
    await by_host[0].add(pages(40))
    by_host[1].wake(by_host[0].filled())
    owner = 0 if partition_of(HOST, P) in EVENS else 1
    assert len(await by_host[owner].lease(40)) == 2  # per_host, no limiter
    assert await by_host[1 - owner].lease(40) == []


async def test_per_host_never_exceeded_by_two_frontiers(client: Redis, job: str) -> None:
    frontiers = [make(client, job, EVENS, per_host=2), make(client, job, ODDS, per_host=2)]
    await frontiers[0].add(pages(30))
    frontiers[1].wake(frontiers[0].filled())
    flying: list[tuple[RedisFrontier, Lease]] = []
    fetched: list[str] = []
    most = 0
    for turn in range(400):
        for frontier in frontiers:
            flying += [(frontier, lease) for lease in await frontier.lease(10)]
        most = max(most, len(flying))
        assert len(flying) <= 2, [lease.url for _, lease in flying]
        assert await holders(client, job) == len(flying)
        if flying:  # finish the oldest request: each side in turn holds the free slot
            frontier, lease = flying.pop(0)
            fetched.append(lease.url)
            await frontier.ack(lease, Feedback(started_at=time.monotonic()))
        elif len(fetched) == 30:
            break
        if turn % 4 == 3:
            await asyncio.sleep(0.06)  # past a refused frontier's retry time
    assert sorted(fetched) == sorted(c.url for c in pages(30))
    assert most == 2  # once a request reported no delay, two ran at once


async def test_delay_held_from_real_start_across_frontiers(client: Redis, job: str) -> None:
    a, b = make(client, job, EVENS), make(client, job, ODDS)
    await a.add(pages(30))
    b.wake(a.filled())
    first = await lease_when_free(a)
    assert await b.lease(5) == []  # nobody reported the host's delay yet: one at a time
    await asyncio.sleep(0.1)
    started = time.monotonic()  # the request really starts a while after its lease
    await a.ack(first, Feedback(started_at=started, crawl_delay=0.3))  # a read Crawl-delay
    assert await b.lease(5) == []  # b has not read robots.txt, the limiter has the delay
    wait = b.next_ready()
    assert wait is not None and 0.15 < wait <= 0.301  # milliseconds, rounded up
    second = await lease_when_free(b)
    assert time.monotonic() - started >= 0.3
    assert await a.lease(5) == []  # a delay: one request at a time, whoever holds it
    started = time.monotonic()
    await b.ack(second, Feedback(started_at=started, crawl_delay=0.3, retry_after=0.5))
    third = await lease_when_free(a)
    assert time.monotonic() - started >= 0.5
    await a.release(third, None)  # no request made: the next start stays
    assert await holders(client, job) == 0


async def test_dead_holders_slot_expires(client: Redis, job: str) -> None:
    dead = make(client, job, EVENS, lease_timeout=0.5)
    await dead.add(pages(30))
    leased_at = time.monotonic()
    assert len(await dead.lease(1)) == 1
    del dead  # kill -9: no ack, its slot stays in Redis until it expires
    heir = make(client, job, ODDS, lease_timeout=0.5)
    heir.wake(range(P))
    assert await heir.lease(5) == []
    await lease_when_free(heir)
    assert time.monotonic() - leased_at >= 0.5
    assert await holders(client, job) == 1


async def test_robots_blocked_urls_take_no_slot(client: Redis, job: str) -> None:
    policy = RobotsPolicy.parse(b"User-agent: *\nDisallow: /private-\n")
    frontier = make(client, job, rules=lambda key: policy)
    # one section of the host's queue (pages at its root), so arrival order decides
    await frontier.add([Candidate(f"{HOST}/private-{i}") for i in range(3)])
    await frontier.add([Candidate(f"{HOST}/open")])
    leases = await frontier.lease(5)
    assert [lease.kind for lease in leases].count("blocked") == 3
    assert [lease.url for lease in leases if lease.kind == "page"] == [f"{HOST}/open"]
    assert await holders(client, job) == 1
    for lease in leases:
        await frontier.ack(lease, None)
    assert await holders(client, job) == 0


async def test_dropped_hosts_leave_no_stale_heap_items(client: Redis, job: str) -> None:
    frontier = make(client, job, partition_by="host", per_host=1)
    await frontier.add([Candidate(f"http://h{h}.test/{i}") for h in range(4) for i in range(3)])
    assert len(await frontier.lease(2)) == 2
    await frontier.own(Ownership(frozenset()))
    assert frontier.next_ready() is not None  # no KeyError on a dropped host's heap item
    assert await frontier.lease(10) == []

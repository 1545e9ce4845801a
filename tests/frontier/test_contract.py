"""The frontier contract, run on every backend: embedded (with crawl.db) and Redis, the latter
on a one-node Redis Cluster through a plain client and on a 3-master Redis Cluster through a
cluster client (partitions on different nodes).

The Redis backend looks at the whole job in ``done()`` at most once per ``refresh_interval``;
the suite sets that to 0, so each ``done()`` looks.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from tests.redis_server import RedisClusterServer, RedisServer

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import Candidate, Feedback, Frontier
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisClient, RedisFrontier
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import Scope

_jobs = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Make(Protocol):
    def __call__(
        self, clock: Clock, *, per_host: int = 1, delay: float = 0.0, **kw: Any
    ) -> Frontier: ...


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisClusterServer]:
    with RedisClusterServer() as cluster:
        yield cluster


@pytest.fixture(params=["local", "redis", "redis-cluster"])
async def make(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Make]:
    dbs: list[CrawlDB] = []
    client: RedisClient | None = None
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        client = Redis.from_url(server.url)
    elif request.param == "redis-cluster":
        cluster: RedisClusterServer = request.getfixturevalue("redis_cluster")
        client = RedisCluster.from_url(cluster.url)

    def make_local(clock: Clock, *, per_host: int = 1, delay: float = 0.0, **kw: Any) -> Frontier:
        db = CrawlDB(tmp_path / f"crawl{len(dbs)}.db")
        dbs.append(db)
        policy = PolitenessPolicy(per_host=per_host, delay=delay)
        return LocalFrontier(_scope(), policy, db, clock=clock, **kw)

    def make_redis(clock: Clock, *, per_host: int = 1, delay: float = 0.0, **kw: Any) -> Frontier:
        assert client is not None
        policy = PolitenessPolicy(per_host=per_host, delay=delay)
        job = f"contract-{next(_jobs)}"
        return RedisFrontier(
            client, job, _scope(), policy, partitions=16, clock=clock, wall_clock=clock,
            refresh_interval=0.0, **kw,
        )  # fmt: skip

    yield make_local if client is None else make_redis
    for db in dbs:
        db.close()
    if client is not None:
        await client.aclose()


def rules_of(body: bytes) -> Callable[[str], RobotsPolicy]:
    """A rules lookup that knows every host's robots.txt: ``body``."""
    policy = RobotsPolicy.parse(body)
    return lambda key: policy


def _scope() -> Scope:
    return Scope.for_seeds([], ["test"], max_depth=5)


async def settled(frontier: Frontier) -> bool:
    """``done()`` as the engine sees it."""
    return await frontier.done()


async def test_dedup_and_scope(make: Make) -> None:
    frontier = make(Clock())
    result = await frontier.add(
        [
            Candidate("http://a.test/x"),
            Candidate("HTTP://A.TEST:80/./x#frag"),
            Candidate("http://elsewhere.org/"),
            Candidate("http://a.test:6379/"),
            Candidate("mailto:x@y"),
            Candidate("http://a.test/deep", depth=6),
        ]
    )
    assert result.added == 1
    assert result.duplicates == 1
    rejected = {"offsite": 1, "offsite-port": 1, "invalid-url": 1, "depth": 1}
    assert result.rejected == rejected
    again = await frontier.add([Candidate("http://a.test/x")])
    assert again.added == 0 and again.duplicates == 1
    stats = frontier.stats()
    assert (stats.duplicates, stats.rejected) == (2, rejected)


async def test_offsite_hosts_leave_no_state(make: Make) -> None:
    """One page linking to 220,000 offsite hosts: the per-host scope cache stays bounded."""
    frontier = make(Clock())
    for start in range(0, 220_000, 20_000):
        batch = [Candidate(f"http://h{i}.example/") for i in range(start, start + 20_000)]
        assert (await frontier.add(batch)).rejected == {"offsite": 20_000}
        assert frontier._admission.origins_cached <= 10_000  # type: ignore[attr-defined]
    assert frontier.stats().hosts == 0


async def test_per_host_limit_and_fifo(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, per_host=2)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(5)])
    await frontier.add([Candidate("http://b.test/0")])
    leases = await frontier.lease(10)
    assert sorted(lease.url for lease in leases) == [
        "http://a.test/0",
        "http://a.test/1",
        "http://b.test/0",
    ]
    assert await frontier.lease(10) == []
    first = next(lease for lease in leases if lease.url == "http://a.test/0")
    await frontier.ack(first, Feedback(started_at=clock.now))
    more = await frontier.lease(10)
    assert [lease.url for lease in more] == ["http://a.test/2"]


async def test_delay_spaces_starts_from_real_start_time(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, delay=2.0)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(3)])
    (first,) = await frontier.lease(5)
    clock.now += 0.5  # the request really started half a second after the lease
    started = clock.now
    clock.now += 0.1
    await frontier.ack(first, Feedback(started_at=started, elapsed=0.1))
    clock.now = started + 1.999
    assert await frontier.lease(5) == []
    ready_in = frontier.next_ready()
    assert ready_in is not None and abs(ready_in - 0.001) < 1e-6
    clock.now = started + 2.0
    assert len(await frontier.lease(5)) == 1


async def test_crawl_delay_retry_after_and_release_to_the_front(make: Make) -> None:
    clock = Clock()
    frontier = make(clock)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(3)])
    (lease,) = await frontier.lease(1)
    await frontier.release(lease, Feedback(started_at=clock.now, crawl_delay=5.0))
    clock.now += 4.9
    assert await frontier.lease(1) == []
    clock.now += 0.1
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0" and lease.attempts == 0  # back at the front
    await frontier.retry(lease, 1.0, Feedback(started_at=clock.now, retry_after=30.0))
    clock.now += 29.0
    assert await frontier.lease(1) == []
    clock.now += 1.0
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0" and lease.attempts == 1


async def test_higher_priorities_first_inside_a_host(make: Make) -> None:
    clock = Clock()
    frontier = make(clock)
    await frontier.add(
        [
            Candidate("http://a.test/0"),
            Candidate("http://a.test/hot", priority=2.5),
            Candidate("http://a.test/1"),
            Candidate("http://a.test/cold", priority=-1),
        ]
    )
    await frontier.add([Candidate("http://a.test/warm", priority=1)])
    order: list[str] = []
    for _ in range(20):
        if await settled(frontier):
            break
        for lease in await frontier.lease(1):
            order.append(lease.url.rsplit("/", 1)[1])
            await frontier.ack(lease, None)
    assert order == ["hot", "warm", "0", "1", "cold"]


async def test_robots_blocked_urls_use_no_slot(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, rules=rules_of(b"User-agent: *\nDisallow: /private\n"))
    await frontier.add([Candidate("http://a.test/private/1"), Candidate("http://a.test/ok")])
    leases = await frontier.lease(1)
    assert [(lease.url, lease.kind) for lease in leases] == [
        ("http://a.test/private/1", "blocked"),
        ("http://a.test/ok", "page"),
    ]
    await frontier.ack(leases[0], None)
    await frontier.ack(leases[1], Feedback(started_at=clock.now))
    assert await settled(frontier)


async def test_a_hosts_urls_wait_for_its_robots_lease(make: Make) -> None:
    clock = Clock()
    known: dict[str, RobotsPolicy] = {}
    frontier = make(clock, per_host=2, rules=known.get)
    await frontier.add([Candidate("http://a.test/private/1"), Candidate("http://a.test/ok")])
    (robots,) = await frontier.lease(5)
    assert (robots.kind, robots.url) == ("robots", "http://a.test/robots.txt")
    assert await frontier.lease(5) == []  # one robots lease, nothing else of the host
    known["http://a.test"] = RobotsPolicy.parse(b"User-agent: *\nDisallow: /private\n")
    await frontier.rules(robots, known["http://a.test"], Feedback(started_at=clock.now))
    leases = await frontier.lease(5)
    assert [(lease.kind, lease.url) for lease in leases] == [
        ("blocked", "http://a.test/private/1"),
        ("page", "http://a.test/ok"),
    ]
    for lease in leases:
        await frontier.ack(lease, None)
    assert await settled(frontier)


async def test_urls_of_a_host_with_unreachable_robots_go_out_unreachable(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, delay=10.0, rules={}.get)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(3)])
    (robots,) = await frontier.lease(5)
    await frontier.rules(robots, RobotsPolicy.disallow_all(), Feedback(started_at=clock.now))
    clock.now += 10.0
    leases = await frontier.lease(1)
    assert [lease.kind for lease in leases] == ["unreachable"] * 3
    for lease in leases:
        await frontier.retry(lease, 30.0, None)
    assert not await settled(frontier)
    clock.now += 30.0
    (again,) = await frontier.lease(5)  # the verdict has lapsed: robots.txt again
    assert again.kind == "robots"


async def test_expired_leases_are_reclaimed(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, lease_timeout=10.0)
    await frontier.add([Candidate("http://a.test/x")])
    (lease,) = await frontier.lease(1)
    clock.now += 11
    (again,) = await frontier.lease(1)
    assert again.url == lease.url and again.token != lease.token
    await frontier.ack(lease, None)  # the stale lease is ignored
    assert not await settled(frontier)
    await frontier.ack(again, None)
    assert await settled(frontier)


async def test_done_tracks_queue_leases_and_retries(make: Make) -> None:
    clock = Clock()
    frontier = make(clock)
    assert await settled(frontier) and frontier.next_ready() is None
    await frontier.add([Candidate("http://a.test/x")])
    assert not await settled(frontier)
    (lease,) = await frontier.lease(1)
    assert not await settled(frontier)
    await frontier.retry(lease, 5.0, None)
    assert not await settled(frontier)
    assert frontier.next_ready() == 5.0
    assert frontier.stats().delayed == 1
    clock.now += 5
    (lease,) = await frontier.lease(1)
    await frontier.ack(lease, None)
    assert await settled(frontier)
    assert frontier.next_ready() is None


async def test_every_url_once_in_fifo_order_per_host(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, per_host=3)
    expected = {host: [f"http://{host}.test/{i}" for i in range(40)] for host in "abcde"}
    for i in range(40):
        await frontier.add([Candidate(urls[i]) for urls in expected.values()])
    urls: list[str] = []
    for _ in range(1000):
        if await settled(frontier):
            break
        for lease in await frontier.lease(7):
            urls.append(lease.url)
            await frontier.ack(lease, None)
    assert sorted(urls) == sorted(u for us in expected.values() for u in us)
    for host, want in expected.items():
        assert [u for u in urls if f"//{host}.test/" in u] == want

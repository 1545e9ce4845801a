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
from gossamer.frontier.local import LocalFrontier, LocalFrontierConfig
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisClient, RedisFrontier, RedisFrontierConfig
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
        self,
        clock: Clock,
        *,
        per_host: int = 1,
        delay: float = 0.0,
        per_domain: int | None = None,
        **kw: Any,
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

    def make_local(
        clock: Clock,
        *,
        per_host: int = 1,
        delay: float = 0.0,
        per_domain: int | None = None,
        **kw: Any,
    ) -> Frontier:
        db = CrawlDB(tmp_path / f"crawl{len(dbs)}.db")
        dbs.append(db)
        policy = PolitenessPolicy(per_host=per_host, delay=delay, per_domain=per_domain)
        rules = kw.pop("rules", None)
        config = LocalFrontierConfig(**kw)
        return LocalFrontier(_scope(), policy, db, rules=rules, config=config, clock=clock)

    def make_redis(
        clock: Clock,
        *,
        per_host: int = 1,
        delay: float = 0.0,
        per_domain: int | None = None,
        **kw: Any,
    ) -> Frontier:
        assert client is not None
        policy = PolitenessPolicy(per_host=per_host, delay=delay, per_domain=per_domain)
        job = f"contract-{next(_jobs)}"
        rules = kw.pop("rules", None)
        config = RedisFrontierConfig(partitions=16, refresh_interval=0.0, **kw)
        return RedisFrontier(
            client, job, _scope(), policy, config=config, rules=rules, clock=clock, wall_clock=clock
        )

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


@pytest.mark.parametrize("outcome", ["ack", "error", "retry", "release", "expired"])
async def test_the_hosts_of_a_domain_share_its_slots_given_back_on_every_outcome(
    make: Make, outcome: str
) -> None:
    """Three hosts of swamp.test share ``per_domain`` 2 (a host of another site goes beside
    them); a lease of the domain that ends in any way gives its slot to the next host."""
    clock = Clock()
    frontier = make(clock, per_host=2, per_domain=2, lease_timeout=10.0)
    swamp = [f"http://h{i}.swamp.test/{j}" for i in range(3) for j in range(2)]
    await frontier.add([Candidate(url) for url in swamp])
    await frontier.add([Candidate("http://good.test/0")])
    leases = await frontier.lease(10)
    ours = [lease for lease in leases if "swamp" in lease.url]
    assert len(ours) == 2
    assert [lease.url for lease in leases if "good" in lease.url] == ["http://good.test/0"]
    assert await frontier.lease(10) == []
    ended = ours[0]
    if outcome == "ack":
        await frontier.ack(ended, Feedback(started_at=clock.now))
    elif outcome == "error":
        await frontier.ack(ended, Feedback(started_at=clock.now, failed=True))
    elif outcome == "retry":
        await frontier.retry(ended, 100.0, Feedback(started_at=clock.now, failed=True))
    elif outcome == "release":  # cancelled before any request
        await frontier.release(ended, None)
    else:  # its fetch stuck: reclaimed at the deadline, with every other lease out
        clock.now += 11
        reclaimed = await frontier.lease(10)
        assert len([lease for lease in reclaimed if "swamp" in lease.url]) == 2
        return
    more = await frontier.lease(10)
    assert len(more) == 1 and "swamp" in more[0].url
    assert await frontier.lease(10) == []


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


# -- best first (priorities across hosts, the slack, reprioritize) ------------------------------


async def drain(frontier: Frontier, clock: Clock, n: int = 1, steps: int = 200) -> list[str]:
    """Lease ``n`` at a time, ack each at once; the clock moves 1 s when nothing is due."""
    order: list[str] = []
    for _ in range(steps):
        if await settled(frontier):
            break
        leases = await frontier.lease(n)
        for lease in leases:
            order.append(lease.url.split("//", 1)[1].replace(".test", ""))
            await frontier.ack(lease, Feedback(started_at=clock.now))
        if not leases:
            clock.now += 1.0
    return order


async def test_best_first_across_and_inside_hosts(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, per_host=2, slack=float("inf"))
    await frontier.add(
        [
            Candidate("http://a.test/low", priority=0.1),
            Candidate("http://b.test/top", priority=0.9),
            Candidate("http://c.test/zero"),
            Candidate("http://a.test/best", priority=1.0),
            Candidate("http://c.test/mid", priority=0.5),
            Candidate("http://b.test/cold", priority=-0.5),
        ]
    )
    assert await drain(frontier, clock) == ["a/best", "b/top", "c/mid", "a/low", "c/zero", "b/cold"]


async def test_best_first_keeps_each_hosts_delay(make: Make) -> None:
    """The best host (a Crawl-delay of 3 s) never goes faster; with no slack nothing worse
    goes while it waits, with an infinite one the rest goes meanwhile."""
    for slack, expected in [
        (0.0, ["a/0", "a/1", "a/2", "b/0", "b/1"]),
        (float("inf"), ["a/0", "b/0", "b/1", "a/1", "a/2"]),
    ]:
        clock = Clock()
        frontier = make(clock, slack=slack)
        await frontier.add([Candidate(f"http://a.test/{i}", priority=1.0) for i in range(3)])
        await frontier.add([Candidate(f"http://b.test/{i}", priority=0.2) for i in range(2)])
        starts = await _slow_a_order(frontier, clock)
        assert list(starts) == expected, slack
        assert starts["a/1"] - starts["a/0"] >= 3.0 and starts["a/2"] - starts["a/1"] >= 3.0


async def test_the_slack_is_a_share_of_the_best_priority(make: Make) -> None:
    """Slack 0.5 while the best host (0.8) waits out its Crawl-delay: 0.45 goes meanwhile,
    0.35 (at least 0.8 - 0.5 but under half of 0.8) waits for the best host's next turn."""
    clock = Clock()
    frontier = make(clock, slack=0.5)
    await frontier.add([Candidate(f"http://a.test/{i}", priority=0.8) for i in range(2)])
    await frontier.add([Candidate("http://b.test/0", priority=0.35)])
    await frontier.add([Candidate("http://c.test/0", priority=0.45)])
    assert list(await _slow_a_order(frontier, clock)) == ["a/0", "c/0", "a/1", "b/0"]


async def _slow_a_order(frontier: Frontier, clock: Clock) -> dict[str, float]:
    """Lease one URL at a time until the frontier is settled, host ``a`` answering with a
    Crawl-delay of 3 s: each URL (``host/path``) in lease order, with its start time."""
    starts: dict[str, float] = {}
    for _ in range(40):
        if await settled(frontier):
            break
        leases = await frontier.lease(1)
        for lease in leases:
            name = lease.url.split("//", 1)[1].replace(".test", "")
            starts[name] = clock.now
            feedback = Feedback(started_at=clock.now, crawl_delay=3.0)
            await frontier.ack(lease, feedback if name.startswith("a") else None)
        if not leases:
            clock.now += 0.5
    return starts


async def test_retried_and_released_urls_keep_their_priority(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, slack=float("inf"))
    await frontier.add(
        [
            Candidate("http://a.test/0", priority=0.9),
            Candidate("http://a.test/1", priority=0.3),
            Candidate("http://b.test/0", priority=0.5),
        ]
    )
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0"
    await frontier.release(lease, None)
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0"
    await frontier.retry(lease, 2.0, None)
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://b.test/0"
    await frontier.ack(lease, None)
    clock.now += 2.0
    assert await drain(frontier, clock) == ["a/0", "a/1"]


async def test_reprioritize_reorders_queued_urls(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, per_host=3, slack=float("inf"))
    await frontier.add([Candidate(f"http://{h}.test/{i}") for i in range(3) for h in "ab"])
    (leased,) = await frontier.lease(1)
    assert leased.url == "http://a.test/0"
    changed = await frontier.reprioritize(
        {
            "HTTP://B.TEST:80/2#x": 0.8,  # spelled as a candidate may spell it
            "http://a.test/2": 0.5,
            "http://a.test/1": 0.0,  # unchanged
            "http://a.test/0": 1.0,  # leased: untouched
            "http://c.test/9": 1.0,  # unknown
            "not a url": 1.0,
        }
    )
    assert changed == 2
    await frontier.ack(leased, None)
    assert await drain(frontier, clock) == ["b/2", "a/2", "a/1", "b/0", "b/1"]
    assert await frontier.reprioritize({"http://b.test/2": 0.1}) == 0  # finished


async def test_reprioritize_twice_and_back_to_zero(make: Make) -> None:
    clock = Clock()
    frontier = make(clock, slack=float("inf"))
    await frontier.add([Candidate(f"http://a.test/{i}", priority=0.5) for i in range(3)])
    await frontier.add([Candidate("http://b.test/0", priority=0.4)])
    assert await frontier.reprioritize({"http://a.test/0": 0.0, "http://a.test/2": 0.9}) == 2
    assert await frontier.reprioritize({"http://a.test/2": 0.9, "http://a.test/1": 0.1}) == 1
    assert await drain(frontier, clock) == ["a/2", "b/0", "a/1", "a/0"]


async def test_a_priority_that_is_not_a_finite_number_is_turned_away(make: Make) -> None:
    frontier = make(Clock())
    result = await frontier.add(
        [
            Candidate("http://a.test/nan", priority=float("nan")),
            Candidate("http://a.test/inf", priority=float("inf")),
            Candidate("http://a.test/ok", priority=0.5),
        ]
    )
    assert (result.added, result.rejected) == (1, {"bad-priority": 2})
    assert await frontier.reprioritize({"http://a.test/ok": float("nan")}) == 0

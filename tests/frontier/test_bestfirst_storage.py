"""Priorities through each backend's storage: Redis partitions ranked best first (claims,
reclaim of a dead worker's claims, hand-over, a FIFO partition turning ranked) and crawl.db
(``--resume``, spilled URLs reprioritized).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import Candidate, Frontier
from gossamer.frontier.local import LocalFrontier, LocalFrontierConfig
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontier, RedisFrontierConfig, partition_keys
from gossamer.urls import Scope

INF = float("inf")
_jobs = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


def scope() -> Scope:
    return Scope.for_seeds([], ["test"], max_depth=5)


def redis_frontier(
    client: Redis, job: str, clock: Clock, *, owned: frozenset[int] | None = None, **kw: object
) -> RedisFrontier:
    options: dict[str, object] = {
        "partitions": 4,
        "claim_batch": 2,
        "memory_budget": 4,
        "refresh_interval": 0.0,
        "slack": INF,
        **kw,
    }
    return RedisFrontier(
        client,
        job,
        scope(),
        PolitenessPolicy(per_host=4),
        config=RedisFrontierConfig(**options),  # type: ignore[arg-type]
        ownership=None if owned is None else Ownership(owned),
        clock=clock,
        wall_clock=clock,
    )


async def order(frontier: Frontier, n: int = 1, rounds: int = 300) -> list[str]:
    got: list[str] = []
    for _ in range(rounds):
        if await frontier.done():
            return got
        for lease in await frontier.lease(n):
            got.append(lease.url)
            await frontier.ack(lease, None)
    raise AssertionError("never finished")


def ranked_urls(seed: int, count: int = 40) -> list[tuple[str, float]]:
    rng = random.Random(seed)
    return [(f"http://h{i % 7}.test/{i}", round(rng.random(), 2)) for i in range(count)]


def best_first(pairs: list[tuple[str, float]]) -> list[str]:
    return [url for url, _ in sorted(pairs, key=lambda pair: -pair[1])]  # stable: arrival


# -- Redis ---------------------------------------------------------------------------------------


async def test_a_partition_hands_out_its_best_entries_first(client: Redis) -> None:
    """One partition, a memory of 4 URLs: what comes out of Redis is best first, not just
    what is held in memory."""
    clock = Clock()
    pairs = ranked_urls(1)
    frontier = redis_frontier(client, f"bf{next(_jobs)}", clock, partitions=1)
    await frontier.add([Candidate(url, priority=p) for url, p in pairs])
    got = await order(frontier)
    priorities = dict(pairs)
    assert [priorities[url] for url in got] == sorted(priorities.values(), reverse=True)


async def test_all_zero_priorities_keep_the_fifo_list(client: Redis) -> None:
    clock = Clock()
    job = f"bf{next(_jobs)}"
    frontier = redis_frontier(client, job, clock, partitions=1)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(5)])
    keys = partition_keys(job, 0)
    assert await client.llen(keys["queue"]) == 5
    assert not await client.exists(keys["ranked"], keys["ranks"])
    assert await client.hget(keys["counts"], "ranked") is None
    assert await order(frontier) == [f"http://a.test/{i}" for i in range(5)]


async def test_a_fifo_partition_turns_ranked_keeping_arrival_order(client: Redis) -> None:
    clock = Clock()
    job = f"bf{next(_jobs)}"
    frontier = redis_frontier(client, job, clock, partitions=1, memory_budget=2, claim_batch=1)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(4)])
    assert await frontier.reprioritize({"http://a.test/2": 0.5}) == 1  # moves the list once
    await frontier.add([Candidate("http://b.test/top", priority=0.9)])
    await frontier.add([Candidate("http://b.test/zero")])
    keys = partition_keys(job, 0)
    assert await client.llen(keys["queue"]) == 0
    assert await client.zcard(keys["ranked"]) == 6
    got = [url.split("//")[1] for url in await order(frontier)]
    assert got == ["b.test/top", "a.test/2", "a.test/0", "a.test/1", "a.test/3", "b.test/zero"]


async def test_a_dead_workers_claims_come_back_with_their_priorities(client: Redis) -> None:
    clock = Clock()
    job = f"bf{next(_jobs)}"
    pairs = ranked_urls(2, 12)
    dead = redis_frontier(
        client, job, clock, memory_budget=1000, claim_batch=100, lease_timeout=10.0
    )
    await dead.add([Candidate(url, priority=p) for url, p in pairs])
    assert await dead.lease(0) == []  # every URL claimed into its memory
    assert await dead.reprioritize({pairs[-1][0]: 5.0}) == 1  # stored in its claim too
    del dead  # kill -9

    heir = redis_frontier(
        client, job, clock, memory_budget=1000, claim_batch=100, lease_timeout=10.0
    )
    clock.now += 11
    assert await heir.reclaim_expired() == len(pairs)
    pairs[-1] = (pairs[-1][0], 5.0)
    got = await order(heir)
    priorities = dict(pairs)
    assert got[0] == pairs[-1][0]
    assert [priorities[url] for url in got] == sorted(priorities.values(), reverse=True)


async def test_a_handed_over_partition_keeps_its_ranking(client: Redis) -> None:
    clock = Clock()
    job = f"bf{next(_jobs)}"
    pairs = ranked_urls(3, 16)
    old = redis_frontier(client, job, clock, memory_budget=1000, claim_batch=100)
    await old.add([Candidate(url, priority=p) for url, p in pairs])
    assert await old.lease(0) == []
    assert await old.own(Ownership(frozenset())) == len(pairs)
    new = redis_frontier(client, job, clock, memory_budget=1000, claim_batch=100)
    await new.refresh()
    got = await order(new)
    priorities = dict(pairs)
    assert [priorities[url] for url in got] == sorted(priorities.values(), reverse=True)


async def test_reprioritize_reaches_partitions_this_worker_does_not_own(client: Redis) -> None:
    clock = Clock()
    job = f"bf{next(_jobs)}"
    owner = redis_frontier(client, job, clock, partitions=1)
    other = redis_frontier(client, job, clock, partitions=1, owned=frozenset())
    await other.add([Candidate(f"http://a.test/{i}", priority=0.1) for i in range(3)])
    assert await other.reprioritize({"http://a.test/2": 0.9, "http://A.test/1": 0.1}) == 1
    assert await order(owner) == ["http://a.test/2", "http://a.test/0", "http://a.test/1"]


# -- crawl.db ------------------------------------------------------------------------------------


def local(
    tmp_path: Path, clock: Clock, memory_budget: int = 100_000
) -> tuple[LocalFrontier, CrawlDB]:
    db = CrawlDB(tmp_path / "crawl.db")
    policy = PolitenessPolicy(per_host=4)
    config = LocalFrontierConfig(memory_budget=memory_budget, slack=INF)
    frontier = LocalFrontier(scope(), policy, db, config=config, clock=clock)
    return frontier, db


async def test_priorities_and_reprioritized_ones_survive_resume(tmp_path: Path) -> None:
    clock = Clock()
    pairs = ranked_urls(4, 12)
    frontier, db = local(tmp_path, clock)
    await frontier.add([Candidate(url, priority=p) for url, p in pairs])
    assert await frontier.reprioritize({pairs[0][0]: 3.0}) == 1
    await db.commit()
    db.close()  # a crash: the next run resumes

    again, db2 = local(tmp_path, clock)
    assert again.restore() == (len(pairs), 0)
    pairs[0] = (pairs[0][0], 3.0)
    assert await order(again) == best_first(pairs)
    db2.close()


async def test_spilled_urls_are_reprioritized_in_crawl_db(tmp_path: Path) -> None:
    clock = Clock()
    frontier, db = local(tmp_path, clock, memory_budget=2)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(6)])
    await db.commit()
    assert frontier.in_memory == 2
    new = {"http://a.test/4": 0.5, "http://a.test/0": 0.2, "http://a.test/5": 0.0}
    assert await frontier.reprioritize(new) == 2
    await db.commit()
    stored = dict(db.query("SELECT url, priority FROM urls"))
    assert (stored["http://a.test/4"], stored["http://a.test/0"]) == (0.5, 0.2)
    db.close()


async def test_garbage_in_a_ranked_partition_is_set_aside(client: Redis) -> None:
    """Members of the ranked set another writer garbled: claims set them aside (the worker
    goes on), reprioritize leaves them, and the good entries still come out best first."""
    clock = Clock()
    job = f"bf{next(_jobs)}"
    frontier = redis_frontier(client, job, clock, partitions=1)
    await frontier.add(
        [Candidate("http://a.test/0", priority=0.2), Candidate("http://a.test/1", priority=0.7)]
    )
    keys = partition_keys(job, 0)
    garbage = {
        "x": -5.0,
        "1000000000000099|": -4.0,
        "1000000000000098|1|deep,,,,nan|/2": -3.0,
        "1000000000000097|no fields at all": -2.0,
    }
    await client.zadd(keys["ranked"], garbage)
    bad = "1000000000000098|1|deep,,,,nan|/2"
    await client.hset(keys["ranks"], "1|/2", bad)  # a.test is the partition's host number 1
    await client.hset(keys["ranks"], "1|/3", "short")
    await client.hincrby(keys["counts"], "queued", len(garbage))
    # the first is rewritten with its new priority (and still set aside: its depth is no
    # number), the second is no member: left alone
    assert await frontier.reprioritize({"http://a.test/2": 0.9, "http://a.test/3": 0.9}) == 1
    assert await order(frontier) == ["http://a.test/1", "http://a.test/0"]
    assert frontier.stats().set_aside == len(garbage)


async def test_a_small_memory_holds_the_best_of_every_partition(client: Redis) -> None:
    """16 partitions, room for 32 URLs, batches of 256: once ranked, a worker claims the best
    two of every partition rather than a whole batch of one, so it leases the job's best."""
    clock = Clock()
    job = f"bf{next(_jobs)}"
    pairs = [(f"http://h{i}.test/{j}", round(random.Random(i * 100 + j).random(), 4))
             for i in range(40) for j in range(5)]  # fmt: skip
    frontier = redis_frontier(
        client, job, clock, partitions=16, memory_budget=32, claim_batch=256, slack=INF
    )
    await frontier.add([Candidate(url, priority=p) for url, p in pairs])
    got = await order(frontier, rounds=1000)
    priorities = dict(pairs)
    best = sorted(priorities.values(), reverse=True)
    assert [priorities[url] for url in got[:5]] == best[:5]
    assert sorted(got) == sorted(priorities)

"""A continuous crawl's partition keys of the wrong type (``revisits``, ``due``, ``pages``, and
the keys its revisit scripts write) set their partition aside, whichever call meets them first:
the lease that reads a revisit's state, its ack, the look for due revisits, a sitemap's newer
``lastmod``, a page budget's count. No call raises, no URL is lost: once the key is mended, the
partition is taken up again by the worker's next refresh, without a restart, and its URL is
crawled again (the claim left when its ack was refused comes back with a reclaim).

Each case runs on a real redis-server; the key is broken as an operator or a red team would
(DEL, then a value of another type) and mended by RESTORE of what it held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from msgspec.structs import replace
from redis.asyncio import Redis
from tests.cluster.acl import GOSSAMER_ACL, acl_user
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_status,
    read_records,
    run,
    small_web,
    start,
    worker_args,
    worker_tails,
)
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.freshness import due_backlog
from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Lease
from gossamer.frontier.budgets import BudgetLimits
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontierConfig, partition_keys, partition_of
from gossamer.frontier.redis.continuous import ContinuousFrontier
from gossamer.frontier.redis.faults import RETAKE_EVERY, read_aside
from gossamer.frontier.redis.keys import aside_key, bad_keys
from gossamer.frontier.revisit import Bounds
from gossamer.frontier.revisits import RevisitState
from gossamer.testweb import TestWebServer
from gossamer.urls import Scope, host_key

P = 8
INTERVAL = 10.0
LEASE = 60
URLS = [f"http://h{i}.test/p" for i in range(6)]
VICTIM = URLS[0]
PART = partition_of(host_key(VICTIM), P)
RECRAWL = [
    *("--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"),
    *("--checkpoint-interval", "0.05", "--heartbeat-ttl", "2", "--claim-timeout", "2"),
]
"""A continuous job on the 1-second revisit clock, with short claims."""
TYPES = {"revisits": "hash", "due": "zset", "queue": "list", "hosts": "hash", "pages": "hash"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def make(redis: Redis, clock: Clock, guards: Guards | None = None) -> ContinuousFrontier:
    frontier = ContinuousFrontier(
        redis,
        "j",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=2),
        config=RedisFrontierConfig(partitions=P, lease_timeout=LEASE, refresh_interval=0.0),
        ownership=Ownership.every(P),
        clock=clock,
        wall_clock=clock,
        guards=guards,
    )
    frontier.recrawl(lambda url, kind: Bounds(INTERVAL, INTERVAL, INTERVAL))
    return frontier


async def crawl(frontier: ContinuousFrontier, clock: Clock, rounds: int = 3) -> list[Lease]:
    """Lease every page ready and ack it with a new state due an interval later."""
    got: list[Lease] = []
    for _ in range(rounds):
        for lease in await frontier.lease(10):
            if lease.kind == "page":
                got.append(lease)
                await fetched(frontier, lease, clock)
    return got


async def fetched(frontier: ContinuousFrontier, lease: Lease, clock: Clock) -> None:
    """Ack ``lease`` with the page's new state (what the page stage does with a 2xx)."""
    revisits = frontier.revisits
    assert revisits is not None
    state = revisits.state(lease.url) or RevisitState(lease.fp)
    new = replace(state, fetched_at=clock.now, interval=INTERVAL, due=clock.now + INTERVAL)
    revisits.observed(lease.url, new)
    await frontier.ack(lease, None)


class Breaker:
    """Breaks one key of the victim's partition (a value of another type) and mends it (the
    value it held, restored)."""

    def __init__(self, admin: Redis, name: str, kind: str) -> None:
        self.admin, self.kind = admin, kind
        self.key = partition_keys("j", PART)[name]
        self.want = TYPES[name]
        self.held: bytes | None = None

    async def __call__(self) -> None:
        self.held = await self.admin.dump(self.key)
        await self.admin.delete(self.key)
        if self.kind == "string":
            await self.admin.set(self.key, "garbage")
        elif self.kind == "list":
            await self.admin.rpush(self.key, "x")
        elif self.kind == "zset":
            await self.admin.zadd(self.key, {"x": 1})
        else:
            await self.admin.hset(self.key, "x", "1")

    async def mend(self) -> None:
        await self.admin.delete(self.key)
        if self.held is not None:
            await self.admin.restore(self.key, 0, self.held)


async def take_up(frontier: ContinuousFrontier, clock: Clock) -> list[str]:
    """Once the key is mended: the claims lapse, the refresh takes the partition up again, the
    leader's reclaim returns its claims; the URLs leased until every page was."""
    clock.now += max(LEASE, RETAKE_EVERY) + INTERVAL + 1
    await frontier.refresh()
    await frontier.reclaim_expired()
    return [lease.url for lease in await crawl(frontier, clock)]


PHASES = ("first", "ack", "due", "sooner")
CASES = [
    *[("revisits", kind, phase) for kind in ("string", "list", "zset") for phase in PHASES],
    *[("due", kind, phase) for kind in ("string", "list", "hash") for phase in PHASES],
    ("queue", "string", "due"),
    ("queue", "zset", "sooner"),
    ("hosts", "string", "due"),
    ("hosts", "list", "sooner"),
]  # fmt: skip
"""(key, the type put in its place, the step before which it is broken)."""


@pytest.mark.parametrize(("name", "kind", "phase"), CASES)
async def test_a_revisit_key_of_the_wrong_type_sets_its_partition_aside_until_mended(
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    name: str,
    kind: str,
    phase: str,
) -> None:
    redis = Redis.from_url(redis_server.url)
    clock = Clock()
    frontier = make(redis, clock)
    broken = Breaker(redis, name, kind)
    try:
        await frontier.add([Candidate(url) for url in URLS])
        first: list[str] = []
        with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
            if phase == "first":  # before the first lease reads the pages' states
                await broken()
            if phase == "ack":  # leased, then broken before the ack stores the new state
                leases = [lease for lease in await frontier.lease(10) if lease.kind == "page"]
                await broken()
                for lease in leases:
                    first.append(lease.url)
                    await fetched(frontier, lease, clock)
            first += [lease.url for lease in await crawl(frontier, clock)]
            clock.now += INTERVAL
            if phase == "due":  # before the look for due revisits
                await broken()
            if phase == "sooner":  # a sitemap's newer lastmod meets it first
                await broken()
                await frontier.sooner([(url, clock.now + 1) for url in URLS])
            again = [lease.url for lease in await crawl(frontier, clock)]
        why = f"{broken.key} holds a {kind}, not a {broken.want}"
        assert await read_aside(redis, "j") == {PART: why}
        said = [r.message for r in caplog.records if "set aside" in r.message]
        assert len(said) == 1 and broken.key in said[0], said
        others = sorted(URLS[1:])
        assert sorted(set(first) - {VICTIM}) == others and sorted(again) == others
        await broken.mend()
        with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
            taken = await take_up(frontier, clock)
        assert VICTIM in taken  # nothing lost: its claim or its due time came back
        assert await read_aside(redis, "j") == {}
        assert sum("taken up again" in r.message for r in caplog.records) == 1
    finally:
        await redis.aclose()


@pytest.mark.parametrize("kind", ["string", "list"])
async def test_a_spare_revisit_meeting_a_revisits_key_of_the_wrong_type_sets_it_aside(
    redis_server: RedisServer, kind: str
) -> None:
    """The look for spare revisits of idle hosts (``--revisit-spare``) reads the states too."""
    redis = Redis.from_url(redis_server.url)
    clock = Clock()
    frontier = make(redis, clock)
    revisits = frontier.revisits
    assert revisits is not None
    broken = Breaker(redis, "revisits", kind)
    try:
        await frontier.add([Candidate(url) for url in URLS])
        await crawl(frontier, clock)
        await broken()
        clock.now += 2
        other = partition_of(host_key(URLS[1]), P)
        idle = [(PART, host_key(VICTIM)), (other, host_key(URLS[1]))]
        assert await revisits.spare(idle) == [other]
        assert await read_aside(redis, "j") == {PART: f"{broken.key} holds a {kind}, not a hash"}
    finally:
        await redis.aclose()


async def test_a_pages_key_of_the_wrong_type_sets_its_partition_aside_until_mended(
    redis_server: RedisServer,
) -> None:
    """The page budget's count of a host, read when its entries are claimed and written as
    its pages are leased."""
    redis = Redis.from_url(redis_server.url)
    clock = Clock()
    frontier = make(redis, clock, Guards(budgets=BudgetLimits(per_host=100)))
    broken = Breaker(redis, "pages", "string")
    try:
        await frontier.add([Candidate(url) for url in URLS])
        await broken()
        first = [lease.url for lease in await crawl(frontier, clock)]
        assert await read_aside(redis, "j") == {PART: f"{broken.key} holds a string, not a hash"}
        assert sorted(set(first) - {VICTIM}) == sorted(URLS[1:])
        await broken.mend()
        assert VICTIM in await take_up(frontier, clock)
        assert await read_aside(redis, "j") == {}
    finally:
        await redis.aclose()


async def test_a_partition_stays_aside_while_its_key_is_still_wrong(
    redis_server: RedisServer,
) -> None:
    redis = Redis.from_url(redis_server.url)
    clock = Clock()
    frontier = make(redis, clock)
    broken = Breaker(redis, "due", "string")
    try:
        await frontier.add([Candidate(url) for url in URLS])
        await crawl(frontier, clock)
        await broken()
        clock.now += INTERVAL
        await crawl(frontier, clock)
        await redis.delete(aside_key("j"))  # by hand, the key still wrong: recorded again
        assert VICTIM not in await take_up(frontier, clock)
        assert list(await read_aside(redis, "j")) == [PART]
        await redis.hset(partition_keys("j", PART)["counts"], "queued", "many")  # not a number
        await broken.mend()
        assert VICTIM not in await take_up(frontier, clock)
        await redis.hset(partition_keys("j", PART)["counts"], "queued", "0")
        assert VICTIM in await take_up(frontier, clock)
    finally:
        await redis.aclose()


async def test_a_partition_set_aside_again_and_again_waits_longer_each_time(
    redis_server: RedisServer,
) -> None:
    """A ``seen:n`` SET of the wrong type: the probes do not read those, so the partition is
    taken up, and set aside again by the next add; each next look waits twice as long."""
    redis = Redis.from_url(redis_server.url)
    clock = Clock()
    frontier = make(redis, clock)
    seen = partition_keys("j", PART)["seen"]
    try:
        await frontier.add([Candidate(url) for url in URLS])
        for key in [k async for k in redis.scan_iter(match=seen + ":*")]:
            await redis.delete(key)
            await redis.set(key, "garbage")
        await frontier.add([Candidate(VICTIM + "0")])  # kept with the bad entries
        assert list(await read_aside(redis, "j")) == [PART]
        await frontier.refresh()  # the first look takes it up: the probes find nothing wrong
        assert await read_aside(redis, "j") == {}
        for n, wait in enumerate((2, 4, 8), 1):
            await frontier.add([Candidate(f"{VICTIM}{n}")])
            assert list(await read_aside(redis, "j")) == [PART]
            clock.now += wait * RETAKE_EVERY - RETAKE_EVERY
            await frontier.refresh()
            assert list(await read_aside(redis, "j")) == [PART], wait
            clock.now += RETAKE_EVERY
            await frontier.refresh()
            assert await read_aside(redis, "j") == {}, wait
        assert await redis.llen(bad_keys("j")["entries"]) == 4
    finally:
        await redis.aclose()


async def test_the_documented_acl_sets_aside_and_takes_up_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The documented ACL has no TYPE: the scripts name the key, the retake probes by type."""
    password = "crawler-secret"
    with RedisServer(password="admin", config=acl_user("crawler", password, *GOSSAMER_ACL)) as s:
        admin = Redis.from_url(s.url)
        redis = Redis.from_url(f"redis://crawler:{password}@127.0.0.1:{s.port}/0")
        clock = Clock()
        frontier = make(redis, clock)
        broken = Breaker(admin, "due", "string")
        try:
            await frontier.add([Candidate(url) for url in URLS])
            await crawl(frontier, clock)
            await broken()
            clock.now += INTERVAL
            await crawl(frontier, clock)
            assert await read_aside(redis, "j") == {PART: f"{broken.key} is not a zset"}
            await broken.mend()
            assert VICTIM in await take_up(frontier, clock)
            assert await read_aside(redis, "j") == {}
        finally:
            await redis.aclose()
            await admin.aclose()


async def test_status_reads_the_due_backlog_past_a_due_key_of_the_wrong_type(
    redis_server: RedisServer,
) -> None:
    redis = Redis.from_url(redis_server.url)
    try:
        for part in range(P):
            await redis.zadd(partition_keys("j", part)["due"], {"1": 5.0, "2": 50.0})
        await redis.delete(partition_keys("j", PART)["due"])
        await redis.set(partition_keys("j", PART)["due"], "garbage")
        assert await due_backlog(redis, "j", P, now=10.0) == P - 1
    finally:
        await redis.aclose()


async def _until(check: Callable[[], Awaitable[bool]], seconds: float) -> bool:
    """Whether ``check`` came true within ``seconds`` (asked every 50 ms: Redis sends no
    event for what a worker writes)."""
    end = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_continuous_worker_goes_on_and_takes_the_partition_up_when_mended(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A worker process of a continuous job: ``due`` of one partition turned into a string
    mid-crawl sets it aside (the worker goes on, ``status`` names it); restored, the worker
    takes it up again by itself and revisits its pages."""
    url = redis_server.url
    async with TestWebServer(small_web(hosts=4, pages_per_host=3), flaky_failures=0) as web:
        seeds = [web.url(i) for i in range(4)]
        victim = seeds[0]  # its partition (another host may share it: the port is random)
        part = partition_of(host_key(victim), 64)
        submit = ["cluster", "submit", "--redis", url, *seeds, *FAST, *WEB_ARGS, *RECRAWL,
                  "--partitions", "64", "--max-duration", "20"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        admin = Redis.from_url(url)
        due = partition_keys(DEFAULT_JOB, part)["due"]
        worker = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        try:
            assert await _until(lambda: _exists(admin, due), 30), worker_tails(tmp_path, 1)
            held = await admin.dump(due)
            await admin.delete(due)
            await admin.set(due, "garbage")
            assert await _until(lambda: _aside(url, part), 20), worker_tails(tmp_path, 1)
            assert worker.returncode is None
            assert held is not None
            await admin.delete(due)
            await admin.restore(due, 0, held)
            mended = time.time()
            assert await _until(lambda: _taken_up(url), 20), worker_tails(tmp_path, 1)
            assert await asyncio.wait_for(worker.wait(), 40) == 0, worker_tails(tmp_path, 1)
        finally:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
            await admin.aclose()
    log = (tmp_path / "w0.log").read_text()
    assert log.count(f"partition {part} set aside") == 1 and due in log, log
    assert log.count(f"partition {part} taken up again") == 1, log
    assert "Traceback" not in log and "WRONGTYPE" not in log.replace(due, ""), log
    again = [r for r in read_records(tmp_path / "w0") if host_key(r["url"]) == host_key(victim)]
    assert any(r["fetched_at"] > mended for r in again), again


async def _exists(redis: Redis, key: str) -> bool:
    return bool(await redis.exists(key))


async def _aside(url: str, part: int) -> bool:
    state = await cluster_status(url)
    return str(part) in state["aside"] and "holds a string" in state["aside"][str(part)]


async def _taken_up(url: str) -> bool:
    return not (await cluster_status(url))["aside"]

"""The Redis frontier of a continuous crawl on a fake clock: a page's state goes with its ack
and comes back with its revisit, due times move with their partitions to a new owner, a state
that does not decode is dropped, a sitemap's newer lastmod queues a page at once, an idle host
gets a spare revisit of its page of the greatest spare index, a seed's password stays out of
the states.

Each test runs on a one-node Redis Cluster through a plain client (a script touching two
slots fails) and on a 3-master Redis Cluster through a cluster client.
"""

from __future__ import annotations

import logging

import pytest
from msgspec.structs import replace
from tests.frontier import topologies

from gossamer.frontier.base import Candidate, Lease
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisClient, RedisFrontierConfig, partition_keys
from gossamer.frontier.redis.continuous import ContinuousFrontier
from gossamer.frontier.redis.faults import RETAKE_EVERY, read_aside
from gossamer.frontier.redis.revisits import RedisRevisits
from gossamer.frontier.revisit import Bounds
from gossamer.frontier.revisits import RevisitState
from gossamer.urls import Scope, fingerprint

# the fixtures of both Redis topologies (tests/frontier/topologies.py)
redis_server = topologies.redis_server
client = topologies.client
job = topologies.job

P = 8
INTERVAL = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def make(
    client: RedisClient, job: str, clock: Clock, spare: float = 0.0
) -> tuple[ContinuousFrontier, RedisRevisits]:
    frontier = ContinuousFrontier(
        client,
        job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=2),
        config=RedisFrontierConfig(partitions=P, lease_timeout=60, refresh_interval=0.0),
        ownership=Ownership.every(P),
        clock=clock,
        wall_clock=clock,
    )
    revisits = frontier.recrawl(lambda url, kind: Bounds(INTERVAL, INTERVAL, INTERVAL), spare=spare)
    return frontier, revisits


async def lease_all(frontier: ContinuousFrontier, rounds: int = 5) -> list[Lease]:
    got: list[Lease] = []
    for _ in range(rounds):
        got += [lease for lease in await frontier.lease(10) if lease.kind == "page"]
    return got


def fetched(revisits: RedisRevisits, lease: Lease, now: float, etag: str) -> None:
    """What the page stage does with a 2xx answer: the page's new state."""
    previous = revisits.state(lease.url) or RevisitState(lease.fp)
    state = replace(previous, etag=etag, fetched_at=now, interval=INTERVAL, due=now + INTERVAL)
    revisits.observed(lease.url, state)


async def test_a_page_comes_back_when_due_with_its_state(client: RedisClient, job: str) -> None:
    clock = Clock()
    frontier, revisits = make(client, job, clock)
    url = "http://a.test/page"
    await frontier.add([Candidate(url)])
    [first] = await lease_all(frontier)
    assert revisits.state(url) is None and revisits.validators(url) is None  # a first fetch
    fetched(revisits, first, clock.now, '"v1"')
    await frontier.ack(first, None)
    assert await lease_all(frontier) == [] and not await frontier.done()
    assert 0 < frontier.next_ready() <= INTERVAL  # type: ignore[operator]
    clock.now += INTERVAL
    [again] = await lease_all(frontier)
    assert again.url == url and revisits.validators(url) == {"If-None-Match": '"v1"'}
    state = revisits.state(url)
    assert state is not None and state.fetched_at == 1_000_000.0
    # A revisit that ends without an answer judged is due again one interval later.
    await frontier.ack(again, None)
    clock.now += INTERVAL
    assert [lease.url for lease in await lease_all(frontier)] == [url]


async def test_a_dead_workers_revisits_go_to_the_next_owner(client: RedisClient, job: str) -> None:
    clock = Clock()
    dead, dead_revisits = make(client, job, clock)
    pages = [f"http://h{i}.test/p" for i in range(6)]
    await dead.add([Candidate(url) for url in pages])
    for lease in await lease_all(dead):
        fetched(dead_revisits, lease, clock.now, '"old"')
        await dead.ack(lease, None)
    clock.now += INTERVAL
    out = await lease_all(dead)  # leased as revisits, never acked: the worker dies
    assert len(out) == len(pages)
    clock.now += 61  # its claims expire
    heir, heir_revisits = make(client, job, clock)
    assert await heir.reclaim_expired() == len(pages)
    again = await lease_all(heir)
    assert sorted(lease.url for lease in again) == sorted(pages)
    assert all(heir_revisits.validators(url) == {"If-None-Match": '"old"'} for url in pages)


async def test_a_state_that_does_not_decode_is_dropped(client: RedisClient, job: str) -> None:
    clock = Clock()
    frontier, revisits = make(client, job, clock)
    url, other = "http://a.test/x", "http://a.test/y"
    await frontier.add([Candidate(url), Candidate(other)])
    for lease in await lease_all(frontier):
        fetched(revisits, lease, clock.now, '"e"')
        await frontier.ack(lease, None)
    keys = partition_keys(job, frontier._part("http://a.test", fingerprint(url)))
    await client.hset(keys["revisits"], str(fingerprint(url)), b"\xff not json")
    long_etag = f'[1.0,0,"{other}","{"e" * 10_000}",null,null,null,1.0,10.0,0,0,0,0.0,0,null]'
    await client.hset(keys["revisits"], str(fingerprint(other)), long_etag)
    clock.now += INTERVAL
    leased = await lease_all(frontier)
    assert [lease.url for lease in leased] == [other]  # the other one is no longer revisited
    assert revisits.state(other) is None  # leased, but fetched as a first fetch
    assert not await client.hexists(keys["revisits"], str(fingerprint(url)))


async def test_a_newer_lastmod_queues_a_page_at_once(client: RedisClient, job: str) -> None:
    clock = Clock()
    frontier, revisits = make(client, job, clock)
    newer, older, unknown = "http://a.test/n", "http://b.test/o", "http://c.test/u"
    await frontier.add([Candidate(newer), Candidate(older)])
    for lease in await lease_all(frontier):
        fetched(revisits, lease, clock.now, '"e"')
        await frontier.ack(lease, None)
    listed = [(newer, clock.now + 1), (older, clock.now - 1), (unknown, clock.now + 1)]
    assert await frontier.sooner(listed) == 1
    assert [lease.url for lease in await lease_all(frontier)] == [newer]


async def _spare_round(client: RedisClient, job: str, spare: float) -> tuple[list[str], int]:
    """Pages of a.test fetched with 0, 3 and 1 changes seen, due in an hour, and a state that
    does not decode in their partition; the pages leased once their slot is free (a second
    after their fetch), and the spare revisits counted."""
    clock = Clock()
    frontier, revisits = make(client, job, clock, spare)
    pages = [f"http://a.test/{i}" for i in range(3)]
    await frontier.add([Candidate(url) for url in pages])
    for _ in range(2):  # two at once to a host
        for lease in await lease_all(frontier):
            changes = {0: 0, 1: 3, 2: 1}[pages.index(lease.url)]
            state = RevisitState(
                lease.fp, fetched_at=clock.now, due=clock.now + 3600, checks=4,
                changes=changes, observed=40.0, interval=INTERVAL,
            )  # fmt: skip
            revisits.observed(lease.url, state)
            await frontier.ack(lease, None)
    keys = partition_keys(job, frontier._part("http://a.test", 0))
    await client.hset(keys["revisits"], "7", b"[not json")
    await client.zadd(keys["due"], {"7": clock.now + 3600})
    clock.now += 2
    leased = [lease.url for lease in await lease_all(frontier)]
    return leased, revisits.stats().spared


async def test_an_idle_host_gets_its_page_of_greatest_spare_index_early(
    client: RedisClient, job: str
) -> None:
    assert await _spare_round(client, job, 1.0) == (["http://a.test/1"], 1)


async def test_without_spare_an_idle_host_waits_for_its_due_time(
    client: RedisClient, job: str
) -> None:
    assert await _spare_round(client, job, 0.0) == ([], 0)


async def test_a_seed_s_password_stays_out_of_the_revisit_state(
    client: RedisClient, job: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The state keeps the URL as entries do, its password masked (format 4); the revisit
    leased from it has the password back, from the job's ``credentials``; a state dropped is
    logged with the URL masked."""
    clock = Clock()
    frontier, revisits = make(client, job, clock)
    url, other = "http://alice:pw-91@a.test/x", "http://alice:pw-91@a.test/y"
    await frontier.add([Candidate(url, seed=True), Candidate(other, seed=True)])
    for lease in await lease_all(frontier):
        fetched(revisits, lease, clock.now, '"e"')
        await frontier.ack(lease, None)
    keys = partition_keys(job, frontier._part("http://a.test", fingerprint(url)))
    states = await client.hgetall(keys["revisits"])
    assert len(states) == 2 and not [s for s in states.values() if b"pw-91" in s], states
    assert b'"http://alice:***@a.test/x"' in states[str(fingerprint(url)).encode()]
    masked = other.replace("pw-91", "***")
    long_etag = f'[1.0,0,"{masked}","{"e" * 10_000}",null,null,null,1.0,10.0,0,0,0,0.0,0,null]'
    await client.hset(keys["revisits"], str(fingerprint(other)), long_etag)
    clock.now += INTERVAL
    with caplog.at_level(logging.WARNING):
        leased = await lease_all(frontier)
    assert sorted(lease.url for lease in leased) == [url, other]
    assert revisits.validators(url) == {"If-None-Match": '"e"'}  # the state found
    [dropped] = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert "http://alice:***@a.test/y" in dropped and "pw-91" not in dropped, dropped


async def test_a_due_key_of_the_wrong_type_sets_its_partition_aside_until_mended(
    client: RedisClient, job: str
) -> None:
    """On both topologies: the look for due revisits refused, the partition set aside (the
    others revisited); its key restored, the next refresh takes it up and its page comes back."""
    clock = Clock()
    frontier, revisits = make(client, job, clock)
    pages = [f"http://h{i}.test/p" for i in range(4)]
    await frontier.add([Candidate(url) for url in pages])
    for lease in await lease_all(frontier):
        fetched(revisits, lease, clock.now, '"e"')
        await frontier.ack(lease, None)
    due = partition_keys(job, frontier._part("http://h0.test", 0))["due"]
    held = await client.dump(due)
    await client.delete(due)
    await client.set(due, "garbage")
    clock.now += INTERVAL
    again = [lease.url for lease in await lease_all(frontier)]
    assert pages[0] not in again and len(again) >= 1
    assert list(await read_aside(client, job)) == [frontier._part("http://h0.test", 0)]
    await client.delete(due)
    await client.restore(due, 0, held)
    clock.now += RETAKE_EVERY
    await frontier.refresh()
    assert await read_aside(client, job) == {}
    assert pages[0] in [lease.url for lease in await lease_all(frontier)]

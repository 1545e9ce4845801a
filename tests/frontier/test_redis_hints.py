"""Wake hints: a worker claims URLs another worker queued in its partitions at once, without
waiting for its next look at every partition; and ``lease()`` does no upkeep of its own.

The hints travel as the cluster keeper carries them: the adding frontier's ``filled()``, the
owners by the assignment, ``Control.wake`` / ``woken``, the owner frontier's ``wake()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.cluster.assignment import Assignment
from gossamer.cluster.control import Control
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontier, RedisFrontierConfig, partition_of
from gossamer.urls import Scope

P = 16


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def control(redis_server: RedisServer) -> AsyncIterator[Control]:
    redis = Redis.from_url(redis_server.url)
    yield Control(redis, "hints")
    await redis.flushall()
    await redis.aclose()


def _worker(control: Control, owned: set[int], clock: Clock) -> RedisFrontier:
    return RedisFrontier(
        control.redis,
        control.job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        ownership=Ownership(frozenset(owned)),
        clock=clock,
        wall_clock=clock,
        config=RedisFrontierConfig(partitions=P),
    )


async def _carry(control: Control, assignment: Assignment, a: RedisFrontier) -> None:
    """What the keepers do: a's keeper wakes the owners of what a filled."""
    owners = await assignment.owners(a.filled())
    if owners:
        await control.wake(owners)


@pytest.mark.parametrize("hinted", [True, False])
async def test_a_hint_lets_the_owner_claim_before_its_next_look(
    control: Control, hinted: bool
) -> None:
    host = "http://h1.test"
    b_part = partition_of(host, P)
    a_parts = {p for p in range(P) if p != b_part}
    assert await control.lead("a", 10.0)
    assert await control.publish("a", {"a": a_parts, "b": {b_part}}) >= 0
    assignment = Assignment(control, "a")
    assert (await assignment.follow()) == Ownership(frozenset(a_parts), 1)
    clock = Clock()
    a, b = _worker(control, a_parts, clock), _worker(control, {b_part}, clock)
    a_seed = next(
        f"http://h{i}.test/" for i in range(2, 99) if partition_of(f"http://h{i}.test", P) != b_part
    )
    await a.add([Candidate(a_seed)])
    await b.refresh()  # nothing for b yet
    [lease] = await a.lease(10)
    await a.add([Candidate(f"{host}/page")])
    await _carry(control, assignment, a)
    woken = await control.woken("b")
    if hinted:
        b.wake(woken)  # else the hint is lost: b waits for its next look
    got = await b.lease(10)
    assert [g.url for g in got] == ([f"{host}/page"] if hinted else [])
    if not hinted:  # the look is the safety net
        await b.refresh()
        assert [g.url for g in await b.lease(10)] == [f"{host}/page"]
    await a.ack(lease, None)


async def test_lease_does_no_upkeep_and_starts_no_task(control: Control) -> None:
    """``lease()`` claims what it hands out and nothing more: it never looks at every
    partition, renews or reclaims, and leaves no task behind."""
    clock = Clock()
    b = _worker(control, set(range(P)), clock)
    await b.add([Candidate(f"http://h{i}.test/{j}") for i in range(20) for j in range(20)])
    upkeep: list[str] = []
    for name in ("refresh", "renew", "reclaim_expired"):
        method = getattr(b, name)

        async def counted(*args: object, name: str = name, method: object = method) -> None:
            upkeep.append(name)
            await method(*args)  # type: ignore[operator]

        setattr(b, name, counted)
    tasks = asyncio.all_tasks()
    leased = 0
    while leased < 400:
        for lease in await b.lease(1):
            await b.ack(lease, None)
            leased += 1
        clock.now += 0.02
        assert clock.now < 1_010.0
    assert asyncio.all_tasks() == tasks
    assert upkeep == []
    assert await b.done()

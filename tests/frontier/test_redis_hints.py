"""Wake hints: a worker claims URLs another worker queued in its partitions at once, without
waiting for its periodic refresh of every partition."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.cluster.control import Control
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, partition_of
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


def _worker(
    control: Control, name: str, owned: set[int], owners: dict[int, str], clock: Clock
) -> RedisFrontier:
    async def notify(parts: Collection[int]) -> None:
        targets: dict[str, list[int]] = {}
        for part in parts:
            targets.setdefault(owners[part], []).append(part)
        await control.wake(targets)

    async def hints() -> set[int]:
        return await control.woken(name)

    return RedisFrontier(
        control.redis,
        control.job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        partitions=P,
        owned=lambda: owned,
        clock=clock,
        wall_clock=clock,
        refresh_interval=1.0,
        notify=notify if name == "a" else None,
        hints=hints if name == "b" else None,
    )


@pytest.mark.parametrize("hinted", [True, False])
async def test_a_hint_lets_the_owner_claim_before_its_refresh(
    control: Control, hinted: bool
) -> None:
    host = "http://h1.test"
    b_part = partition_of(host, P)
    owners = {p: ("b" if p == b_part else "a") for p in range(P)}
    clock = Clock()
    a = _worker(control, "a", {p for p in range(P) if p != b_part}, owners, clock)
    b = _worker(control, "b", {b_part}, owners, clock)
    a_seed = next(
        f"http://h{i}.test/" for i in range(2, 99) if partition_of(f"http://h{i}.test", P) != b_part
    )
    await a.add([Candidate(a_seed)])
    await b.lease(10)  # b refreshes once: nothing for it yet
    [lease] = await a.lease(10)
    clock.now += 0.1  # well inside b's refresh interval
    await a.add([Candidate(f"{host}/page")])
    if not hinted:
        await control.woken("b")  # the hint is lost: b must wait for its refresh
    got = await b.lease(10)
    assert [g.url for g in got] == ([f"{host}/page"] if hinted else [])
    if not hinted:  # the refresh is the safety net
        clock.now += 1.0
        assert [g.url for g in await b.lease(10)] == [f"{host}/page"]
    await a.ack(lease, None)


async def test_a_busy_worker_with_hints_refreshes_every_fifth_interval(
    control: Control,
) -> None:
    """Hints stand in for the refresh of every partition while the worker holds work: lease
    calls more often than hints are polled still refresh only every five intervals."""
    clock = Clock()
    b = _worker(control, "b", set(range(P)), {}, clock)
    await b.add([Candidate(f"http://h{i}.test/{j}") for i in range(20) for j in range(20)])
    refreshes: list[float] = []
    refresh = b.refresh

    async def counted() -> None:
        refreshes.append(clock.now)
        await refresh()

    b.refresh = counted  # type: ignore[method-assign]
    leased = 0
    while leased < 400:  # 8 s in steps of 20 ms: faster than hints are polled
        for lease in await b.lease(1):
            await b.ack(lease, None)
            leased += 1
        await asyncio.sleep(0)  # let background housekeeping run
        clock.now += 0.02
        assert clock.now < 1_010.0
    # the first lease's (nothing held yet), then one 5 s later, not one a second
    assert len(refreshes) <= 2, refreshes


async def test_lease_hands_out_held_urls_while_housekeeping_waits_on_redis(
    control: Control,
) -> None:
    """URLs held in memory are leased at once; only a worker with nothing to lease waits for
    its housekeeping (here a hints call that does not answer until released)."""
    clock = Clock()
    answer = asyncio.Event()
    asked = asyncio.Event()

    async def hints() -> set[int]:
        asked.set()
        await answer.wait()
        return set()

    frontier = RedisFrontier(
        control.redis,
        control.job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        partitions=P,
        clock=clock,
        wall_clock=clock,
        hints=hints,
    )
    await frontier.add([Candidate(f"http://h{i}.test/") for i in range(4)])
    answer.set()
    assert len(await frontier.lease(2)) == 2  # claims (awaited: nothing was held)
    answer.clear()
    clock.now += 1.0
    got = await asyncio.wait_for(frontier.lease(2), 1.0)  # hints are stuck, still leases
    assert len(got) == 2 and asked.is_set()
    waiting = asyncio.create_task(frontier.lease(2))  # nothing left to lease: it waits
    await asyncio.sleep(0.2)
    assert not waiting.done()
    answer.set()
    assert await asyncio.wait_for(waiting, 1.0) == []
    await frontier.close()

"""Wake hints: a worker claims URLs another worker queued in its partitions at once, without
waiting for its periodic refresh of every partition."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterator

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


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer(cluster=True) as server:
        yield server


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

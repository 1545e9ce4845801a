"""The leader lease and the heartbeat are renewed on time however long the leader's duties
take, and a leader that finds its lease lost stops acting as leader: a real keeper on a real
Redis, its balancer made slow (as a new leader's assignment of 1,000 workers is)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from redis.asyncio import Redis
from tests.cluster.test_control_plane import until
from tests.redis_server import RedisServer

from gossamer.cluster.assignment import Assignment
from gossamer.cluster.balancer import Balancer
from gossamer.cluster.control import Control
from gossamer.cluster.keeper import Keeper, Pace
from gossamer.cluster.leadership import Leadership
from gossamer.cluster.membership import Membership, Report
from gossamer.cluster.resilient import RedisGuard
from gossamer.engine import Crawler
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.urls import Scope

TTL = 2.0
"""The heartbeat TTL and leader lease, seconds."""
SLOW = 2.5
"""Seconds each of the leader's rebalances takes: longer than the lease."""
PARTITIONS = 16


class SlowBalancer(Balancer):
    """A balancer whose every turn awaits ``SLOW`` seconds of I/O before it plans."""

    async def rebalance(self, leader: str) -> int | None:
        await asyncio.sleep(SLOW)
        return await super().rebalance(leader)


class Idle:
    """A crawl that fetches nothing."""

    paused = False
    stopping = False

    def stop(self) -> None:
        self.stopping = True

    def pause(self, paused: bool) -> None:
        self.paused = paused


class Figures:
    def figures(self, partitions: int) -> dict[str, Any]:
        return {"pages": 0, "partitions": partitions}

    def capability(self) -> None:
        return None


def keeper(redis: Redis, url: str, name: str) -> tuple[Keeper, Leadership]:
    control = Control(redis, "pulse")
    guard = RedisGuard(url)
    assignment = Assignment(control, name)
    frontier = RedisFrontier(
        redis,
        "pulse",
        Scope.for_seeds([], ["pulse.test"], max_depth=1),
        PolitenessPolicy(),
        config=RedisFrontierConfig(partitions=PARTITIONS, lease_timeout=30.0),
        ownership=assignment.ownership,
    )
    balancer = SlowBalancer(control, PARTITIONS, "equal")
    leadership = Leadership(control, name, TTL, balancer, guard, settle=0.0, train=False)
    built = Keeper(
        control,
        name,
        frontier,
        cast(Crawler, Idle()),
        membership=Membership(control, name, TTL, cast(Report, Figures())),
        leadership=leadership,
        assignment=assignment,
        guard=guard,
        pace=Pace(TTL, 30.0, partitions=PARTITIONS),
    )
    return built, leadership


@pytest.mark.timeout(60)
async def test_a_leader_with_slow_duties_keeps_its_lease_and_stops_when_it_is_lost(
    redis_server: RedisServer,
) -> None:
    redis = Redis.from_url(redis_server.url)
    control = Control(redis, "pulse")
    lease, beat = control.keys["leader"], control.keys["worker"] + "a"
    worker, leadership = keeper(redis, redis_server.url, "a")
    try:
        await worker.start()  # its first rebalance, slow, publishes the first assignment
        assert await control.leader() == "a"
        lowest = {"lease": TTL, "heartbeat": TTL}
        start = time.monotonic()
        while time.monotonic() - start < SLOW:  # a slow turn of the leader's work at least
            for what, key in (("lease", lease), ("heartbeat", beat)):
                lowest[what] = min(lowest[what], await redis.pttl(key) / 1000)
            await asyncio.sleep(0.05)
        # renewed every TTL/3 (heartbeat) and 0.5 s (lease), late by the loop's latency only
        assert min(lowest.values()) >= TTL / 2, lowest
        assert await control.leader() == "a"

        version = await control.version()
        await redis.set(lease, "b", px=30_000)  # another took the lease (say, after a stall)
        await control.heartbeat("b", {"pages": 0}, 30.0)  # a new member: a rebalance is due
        lost = await until(lambda: not leadership.leading, SLOW, "a sees its lease lost")
        assert lost < SLOW / 2, lost  # at the next renewal, not after the slow duty
        await asyncio.sleep(SLOW + 0.5)  # a rebalance in progress meanwhile runs to its end
        assert await control.version() == version  # and publishes nothing: a does not lead
        assert await control.leader() == "b"
    finally:
        await worker.stop()
        await redis.aclose()
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert pending == []  # both of the keeper's tasks ended

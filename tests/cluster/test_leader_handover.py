"""A leader that leaves (a worker that ends, or is stopped with SIGTERM) is followed at once,
not when its lease would have run out: simulated workers (the real keepers) on one real Redis,
with a lease far longer than the hand-over may take."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis
from tests.cluster.test_control_plane import settled, until
from tests.redis_server import RedisServer

from gossamer.cluster.control import Control
from gossamer.cluster.simulate import SimConfig, SimWorker, seed

TTL = 20.0
"""The heartbeat TTL and leader lease: a follower that waited for the lease to run out would
try again up to 20 s after the leader left."""


@pytest.mark.timeout(60)
async def test_a_leader_that_leaves_is_followed_at_once(redis_server: RedisServer) -> None:
    config = SimConfig(redis_server.url, "hand", 64, heartbeat_ttl=TTL, claim_timeout=30.0)
    redis = Redis.from_url(redis_server.url)
    control = Control(redis, "hand")
    await seed(config, 20)
    workers = [SimWorker(config, f"w{i}") for i in range(3)]
    leader = None
    try:
        for worker in workers:  # each follower's next try is a lease TTL after its first
            await worker.start()
        await until(lambda: settled(control, workers), 20, "the first assignment")
        head = await control.leader()
        leader = next(w for w in workers if w.name == head)
        await leader.leave()
        live = [w for w in workers if w is not leader]

        async def other_leads() -> bool:
            return await control.leader() not in (None, head)

        took = await until(other_leads, TTL, "a new leader")
        assert took < 2.0, took
        moved = await until(lambda: settled(control, live), TTL, "its share moved")
        assert moved < 3.0, moved
    finally:
        for worker in workers:
            if worker is not leader:
                await worker.leave()
        await redis.aclose()

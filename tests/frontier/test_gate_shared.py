"""The host gate's aside passes (sitemaps and feeds) by URL in a cluster: each takes a slot of
the job's shared host limiter too, as a page lease does, so one pace per host holds over the
workers' pages and sitemaps alike. Two Redis frontiers on one job stand for two workers; a real
redis-server holds the limiter, which keeps Redis' own time, so the tests run on the real
monotonic clock and their time bounds are lower bounds or generous."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.frontier.test_redis_limiter import EVENS, HOST, holders, lease_when_free, make
from tests.frontier.test_redis_limiter import pages as candidates
from tests.redis_server import RedisServer

from gossamer.frontier.base import Feedback
from gossamer.frontier.gate import HostGate

DELAY = 0.3
_jobs = itertools.count()


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


async def test_an_aside_pass_takes_the_shared_slot_by_url(client: Redis) -> None:
    job = f"aside{next(_jobs)}"
    mine, theirs = make(client, job, EVENS, delay=DELAY), make(client, job, delay=DELAY)
    gate = HostGate()
    gate.bind(mine.slots)
    shared = mine.shared_slots()
    assert shared is not None and make(client, job, partition_by="host").shared_slots() is None
    gate.share(shared)
    await theirs.add(candidates(4))
    lease = await lease_when_free(theirs)  # the other worker's page holds the host's slot
    entering = asyncio.create_task(gate.enter(f"{HOST}/sitemap.xml", aside=True))
    done, _ = await asyncio.wait({entering}, timeout=2 * DELAY)
    assert not done  # a sitemap waits for the shared slot as a page would
    await theirs.ack(lease, Feedback(started_at=time.monotonic()))
    taken = await asyncio.wait_for(entering, 5)
    started = time.monotonic()
    assert await holders(client, job) == 1  # the sitemap's, in Redis
    gate.leave(taken, gate.now(), status=200)
    # the other worker's next page waits the host's delay after the sitemap's start
    await lease_when_free(theirs)
    assert time.monotonic() - started >= DELAY * 0.9

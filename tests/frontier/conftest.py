"""Fixtures for the frontier tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A one-node Redis Cluster per test module: a script touching two slots fails, as on a
    real cluster (a test module may override this with its own)."""
    with RedisServer(cluster=True) as server:
        yield server


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A client of the module's Redis, its data flushed after the test (a module may define
    its own)."""
    redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.flushall()
    await redis.aclose()

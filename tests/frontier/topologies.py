"""Fixtures of the frontier tests that run on both Redis topologies: a one-node Redis Cluster
through a plain client (a script touching two slots fails) and a 3-master Redis Cluster through
a cluster client. A test module imports them by name."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from tests.redis_server import RedisClusterServer, RedisServer

from gossamer.frontier.redis import RedisClient

_jobs = itertools.count()


@pytest.fixture(scope="module", params=["one-node", "3-masters"])
def redis_server(request: pytest.FixtureRequest) -> Iterator[RedisServer | RedisClusterServer]:
    server = RedisServer(cluster=True) if request.param == "one-node" else RedisClusterServer()
    with server:
        yield server


@pytest.fixture
async def client(redis_server: RedisServer | RedisClusterServer) -> AsyncIterator[RedisClient]:
    if isinstance(redis_server, RedisClusterServer):
        redis: RedisClient = RedisCluster.from_url(redis_server.url)
    else:
        redis = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


@pytest.fixture
def job() -> str:
    return f"job{next(_jobs)}"

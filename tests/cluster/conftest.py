"""Fixtures for the cluster tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from tests.cluster.harness import reap_started
from tests.redis_server import RedisClusterServer, RedisServer


@pytest.fixture(autouse=True)
async def no_process_outlives_its_test() -> AsyncIterator[None]:
    """A test that fails midway leaves no worker running into the next tests, nor its
    process' handle open in the test's event loop as it closes (uvloop reports it then, or
    the next test does)."""
    yield
    await reap_started()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A private redis-server for one test."""
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["one-server", "3-masters"])
def any_redis(request: pytest.FixtureRequest) -> Iterator[RedisServer | RedisClusterServer]:
    """A private redis-server, then a private 3-master Redis Cluster: the test runs on both
    (workers are given one node's URL, as users give it)."""
    kind = RedisServer if request.param == "one-server" else RedisClusterServer
    with kind() as server:
        yield server

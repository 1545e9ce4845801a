"""Fixtures for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.redis_server import RedisClusterServer, RedisServer


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

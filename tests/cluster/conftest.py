"""Fixtures for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.redis_server import RedisServer


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A private redis-server for one test."""
    with RedisServer() as server:
        yield server

"""Fixtures for the frontier tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A one-node Redis Cluster per test module: a script touching two slots fails, as on a
    real cluster (a test module may override this with its own)."""
    with RedisServer(cluster=True) as server:
        yield server

"""Fixtures for the cluster tests."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest
from tests.cluster.harness import STARTED
from tests.redis_server import RedisClusterServer, RedisServer


@pytest.fixture(autouse=True)
def no_process_outlives_its_test() -> Iterator[None]:
    """A test that fails midway leaves no worker running into the next tests."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.returncode is None:  # not reaped: its pid is still its own
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)


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

"""Fixtures for the sink tests: one private PostgreSQL per session, a fresh table per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from tests.pg_server import PostgresServer

_TABLES = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[PostgresServer]:
    """A running PostgreSQL shared by the session's tests (each uses its own table)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def table() -> str:
    """A table name no other test uses."""
    return f"pages_{next(_TABLES)}"

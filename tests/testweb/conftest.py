"""Fixtures for the testweb tests: a generated web and a running server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from gossamer.testweb import TestWebServer, Web, generate

from .support import client


@pytest.fixture(scope="session")
def web() -> Web:
    """The default web (seed 7): 5 hosts, 40 pages each, every special linked."""
    return generate(7)


@pytest.fixture
async def server(web: Web) -> AsyncIterator[TestWebServer]:
    """A running server for ``web``."""
    async with TestWebServer(web, flaky_failures=2) as running:
        yield running


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP client that reaches ``*.test`` on loopback."""
    async with client() as opened:
        yield opened

"""Both HTTP clients on both event loops a crawl runs on (:mod:`gossamer.eventloop`): the
standard asyncio loop and uvloop. uvloop's timers count whole milliseconds (one may ring up to
half a millisecond early; one due now is a plain handle, with no ``when()``), and its
transports are not ``asyncio.Transport`` subclasses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from tests.local_app import serve_pages

from gossamer.fetch import FetchConfig, Fetcher

pytestmark = pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])

CLIENTS = pytest.mark.parametrize("client", ["lean", "aiohttp"])


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A server that reads a request and never answers; yields its base URL."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for writer in held:
            writer.transport.abort()
        await server.wait_closed()


@CLIENTS
async def test_a_page_comes_whole(client: str) -> None:
    async with (
        serve_pages({"/": "<title>Home</title>"}) as port,
        Fetcher(FetchConfig(http_client=client, read_timeout=5.0, total_timeout=10.0)) as fetch,
    ):
        result = await fetch.fetch(f"http://127.0.0.1:{port}/")
    assert (result.status, result.error) == (200, None)
    assert b"<title>Home</title>" in result.body


@CLIENTS
async def test_a_read_timeout_between_milliseconds_fires(client: str) -> None:
    """A deadline 0.4 ms past a whole millisecond: uvloop's timer rings before it, and
    the timer set again for the rest is due at once."""
    config = FetchConfig(http_client=client, read_timeout=0.2004, total_timeout=10.0)
    async with silent_server() as base, Fetcher(config) as fetch:
        result = await asyncio.wait_for(fetch.fetch(base + "/"), 5)
    assert (result.status, result.error) == (None, "read-timeout")
    assert 0.15 < result.elapsed < 2.0

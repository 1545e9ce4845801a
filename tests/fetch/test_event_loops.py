"""Both HTTP clients on both event loops a crawl runs on (:mod:`gossamer.eventloop`): the
standard asyncio loop and uvloop. uvloop's timers count whole milliseconds (one may ring up to
half a millisecond early; one due now is a plain handle, with no ``when()``), and its
transports are not ``asyncio.Transport`` subclasses."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.local_app import serve_pages

from gossamer.fetch import FetchConfig, Fetcher
from gossamer.fetch.lean import LeanClient

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


async def test_a_connection_closed_before_its_request_is_sent_fails_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server closes each connection as it accepts it, and the loop is busy elsewhere
    (10 ms) before the fetch resumes to send: uvloop raised RuntimeError from the write,
    asyncio dropped the write and waited out the read timeout. Either way now a
    ``server-disconnected`` at once."""
    original = LeanClient._connect

    async def busy_then_connected(self: LeanClient, *args: Any) -> Any:
        conn = await original(self, *args)
        await asyncio.sleep(0.01)
        return conn

    monkeypatch.setattr(LeanClient, "_connect", busy_then_connected)

    async def close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(close, "127.0.0.1", 0)
    config = FetchConfig(http_client="lean", read_timeout=5.0, total_timeout=10.0)
    try:
        async with Fetcher(config) as fetch:
            url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            started = time.monotonic()
            results = [await fetch.fetch(url) for _ in range(3)]
            took = time.monotonic() - started
    finally:
        server.close()
        await server.wait_closed()
    assert [(r.status, r.error) for r in results] == [(None, "server-disconnected")] * 3
    assert took < 2.5  # not three read timeouts of 5 s

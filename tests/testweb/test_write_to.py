"""A test server's write to a client that went away raises ConnectionResetError on both event
loops (uvloop raises RuntimeError from a write to a closed transport), which the servers
handle as a client gone."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

import pytest

from gossamer.testweb.protocol import write_to

pytestmark = pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])


async def test_a_write_to_a_client_that_reset_is_a_reset() -> None:
    seen: list[str] = []
    done = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the client's reset
        for _ in range(2):
            try:
                write_to(writer, b"x" * 100_000)
                await writer.drain()
                seen.append("written")
            except Exception as exc:  # what each loop raises is the point
                seen.append(type(exc).__name__)
        done.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        _, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        writer.write(b"GET\n")
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        await asyncio.wait_for(done.wait(), 10)
    finally:
        server.close()
        await server.wait_closed()
    assert seen == ["ConnectionResetError"] * 2

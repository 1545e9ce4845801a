"""A 304 that a server sends a body with anyway (raw asyncio servers writing the exact bytes):
the answer is the 304, its body ignored, whether the body comes with the head, after it, or
the head comes in pieces; and the next request to the server is answered as it should be
(the connection that carried the body is not reused)."""

from __future__ import annotations

import asyncio

import pytest
from tests.fetch.test_http import fetcher, raw_server

_BODY = b"<html>BODY-IN-304 " + b"Q" * 100_000 + b"</html>"


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers on one connection, by path, for as long as the client asks."""
    for _ in range(20):  # bounded: a test asks a few times at most
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1]
        if path == b"/with-body":
            length = b"Content-Length: %d\r\n" % len(_BODY)
            writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n' + length + b"\r\n" + _BODY)
        elif path == b"/body-later":
            writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 20\r\n\r\n')
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.write(b"x" * 20)
        elif path == b"/in-pieces":
            writer.write(b"HTTP/1.1 304 Not Mod")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b'ified\r\nETag: "v1"\r\n\r\nsome body')
        else:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok"
            )
        await writer.drain()


@pytest.mark.parametrize("path", ["/with-body", "/body-later", "/in-pieces"])
async def test_a_304_with_a_body_is_the_304(path: str) -> None:
    async with raw_server(_serve) as base, fetcher() as f:
        first = await f.fetch(f"{base}/page")
        got = await f.fetch(f"{base}{path}", headers={"If-None-Match": '"v1"'})
        after = [await f.fetch(f"{base}/page") for _ in range(2)]
    assert (first.status, first.error) == (200, None)
    assert (got.status, got.error, got.body, got.headers.get("etag")) == (304, None, b"", '"v1"')
    assert [(r.status, r.error, r.body) for r in after] == [(200, None, b"ok")] * 2

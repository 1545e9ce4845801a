"""A header sent on several lines is one comma list (RFC 9110 5.3): Content-Type so sent is
read as the Fetch Standard's "extract a MIME type" reads it, the last valid type counting,
with both HTTP clients against a byte-level server on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest
from tests.fetch.test_http import PAGE
from tests.fetch.test_lean import fetch, serve

from gossamer.fetch.headers import parse_content_type


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text/html, text/html; charset=utf-8", ("text/html", "utf-8")),
        ("text/html; charset=latin1, text/html", ("text/html", "latin1")),
        ("text/plain; charset=latin1, text/html", ("text/html", None)),
        ("text/html, */*", ("text/html", None)),
        ("text/html, nonsense", ("text/html", None)),
        ("nonsense, , ;", (None, None)),
    ],
)
def test_a_content_type_list_takes_the_last_valid_type(
    value: str, expected: tuple[str | None, str | None]
) -> None:
    assert parse_content_type(value) == expected


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_a_content_type_on_two_lines(client: str) -> None:
    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
        writer.write(b"Content-Type: text/html; charset=iso-8859-1\r\n")
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE))
        await writer.drain()
        await reader.read()

    async with serve(send) as (base, _):
        result, _took = await fetch(base + "/", http_client=client)
    assert (result.status, result.error) == (200, None)
    assert (result.content_type, result.charset) == ("text/html", "iso-8859-1")

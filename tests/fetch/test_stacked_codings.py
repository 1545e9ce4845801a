"""Stacked content codings (``Content-Encoding: zstd, gzip``) against real servers on
127.0.0.1: undone in reverse order, under one decoded cap and bomb ratio for the whole; a
coding not supported anywhere in the list leaves the body unread as the page."""

from __future__ import annotations

import asyncio
import gzip
import sys
from pathlib import Path

import brotli
import pytest
from aiohttp import web
from tests.content_site import crawl
from tests.fetch.test_http import PAGE, fetcher, serve_app
from tests.fetch.test_lean import fetch, serve

from gossamer.fetch import FetchResult

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

ENCODE = {"gzip": gzip.compress, "zstd": zstd.compress, "br": brotli.compress}


def _encoded(body: bytes, coding: str) -> bytes:
    """``body`` with the codings of ``coding`` applied in the order named."""
    for name in coding.split(","):
        body = ENCODE[name.strip()](body)
    return body


async def _fetch(body: bytes, coding: str, **config: object) -> FetchResult:
    async def send(request: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Encoding": coding})

    app = web.Application()
    app.router.add_get("/", send)
    async with serve_app(app) as base, fetcher(**config) as f:
        return await f.fetch(base + "/")


@pytest.mark.parametrize("coding", ["zstd, gzip", "gzip, zstd", "br,gzip", "gzip, identity"])
async def test_stacked_codings_are_undone_in_reverse(coding: str) -> None:
    result = await _fetch(_encoded(PAGE, coding.replace(", identity", "")), coding)
    assert (result.status, result.error, result.truncated) == (200, None, False)
    assert result.body == PAGE


async def test_a_bomb_in_any_layer_is_capped() -> None:
    body = _encoded(b"<" * (8 << 20), "gzip, gzip")
    result = await _fetch(body, "gzip, gzip", max_body_bytes=1 << 20)
    assert result.error == "decompression-bomb" and result.truncated
    assert len(result.body) <= 1 << 20


@pytest.mark.parametrize("coding", ["gzip, compress", "gzip, gzip, gzip, gzip"])
async def test_an_unsupported_stack(coding: str) -> None:
    result = await _fetch(b"whatever", coding)
    assert result.error == "unsupported-encoding"


async def handle(request: web.Request) -> web.Response:
    if request.path == "/":
        links = '<a href="/zg">zg</a><a href="/gz">gz</a><a href="/odd">odd</a>'
        return web.Response(body=links.encode(), content_type="text/html")
    coding = {"/zg": "zstd, gzip", "/gz": "gzip, zstd", "/odd": "gzip, compress"}[request.path]
    page = b"<html><title>Stacked</title><p>A page under two codings.</p></html>"
    body = _encoded(page, coding) if request.path != "/odd" else gzip.compress(page)
    return web.Response(body=body, content_type="text/html", headers={"Content-Encoding": coding})


async def test_stacked_pages_in_a_crawl(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="off")
    for path in ("/zg", "/gz"):
        assert records[path]["title"] == "Stacked" and "two codings" in records[path]["text"]
    odd = records["/odd"]
    assert odd["error"] == "unsupported-encoding" and odd["text"] is None and odd["title"] is None


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ([b"gzip", b"gzip"], None),  # one list on two lines (RFC 9110 5.3): both undone
        ([b"gzip", b"compress"], "unsupported-encoding"),
        ([b"gzip, gzip", b"gzip, gzip"], "unsupported-encoding"),  # past the layer limit
    ],
    ids=["gzip-twice", "then-compress", "four-layers"],
)
async def test_a_coding_list_on_several_lines_is_one_list(
    client: str, lines: list[bytes], error: str | None
) -> None:
    body = gzip.compress(gzip.compress(PAGE))
    head = b"".join(b"Content-Encoding: %s\r\n" % line for line in lines)

    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + head)
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        await reader.read()

    async with serve(send) as (base, _):
        result, _took = await fetch(base + "/", http_client=client)
    assert (result.status, result.error) == (200, error)
    assert (result.body == PAGE) == (error is None)

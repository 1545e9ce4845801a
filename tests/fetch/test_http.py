"""Tests for the Fetcher against real servers on 127.0.0.1.

Well-behaved endpoints are a small aiohttp.web app; the broken ones (hangs, resets, bad
chunking) are raw asyncio servers that write exactly the bytes under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import random
import socket
import struct
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from email.utils import formatdate

import brotli
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from gossamer.fetch import CachingResolver, FetchConfig, Fetcher, FetchResult
from gossamer.fetch.decoding import Body
from gossamer.fetch.http import parse_content_type, parse_retry_after
from gossamer.testweb import payloads

PAGE = b"<html><head><title>t</title></head><body>" + b"<p>gossamer</p>" * 2000 + b"</body></html>"
FAST = {"connect_timeout": 2.0, "read_timeout": 2.0, "total_timeout": 5.0}

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


# --- servers -----------------------------------------------------------------------------


def _app(peers: set[object]) -> web.Application:
    async def page(request: web.Request) -> web.Response:
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        return web.Response(body=PAGE, content_type="text/html", charset="utf-8")

    async def echo_headers(request: web.Request) -> web.Response:
        return web.json_response(dict(request.headers))

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/target?a=1"}, text="moved")

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="nope")

    async def busy(request: web.Request) -> web.Response:
        return web.Response(status=503, headers={"Retry-After": request.query["v"]})

    async def multi(request: web.Request) -> web.Response:
        response = web.Response(text="multi")
        response.headers.add("X-Multi", "a")
        response.headers.add("X-Multi", "b")
        response.headers.add("Set-Cookie", "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT")
        response.headers.add("Set-Cookie", "b=2")
        return response

    async def encoded(request: web.Request) -> web.Response:
        coding = request.match_info["coding"]
        header = {
            "deflate-raw": "deflate",
            "deflate-lookalike": "deflate",
            "deflate-garbage": "deflate",
            "gzip-corrupt": "gzip",
            "gzip-multi": "gzip",
            "gzip-trailing": "gzip",
        }.get(coding, coding)
        payload = request.app[BODIES][coding]
        return web.Response(body=payload, headers={"Content-Encoding": header})

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"x" * 200_000)

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/headers", echo_headers)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/missing", missing)
    app.router.add_get("/busy", busy)
    app.router.add_get("/multi", multi)
    app.router.add_get("/enc/{coding}", encoded)
    app.router.add_get("/big", big)
    return app


BODIES = web.AppKey("bodies", dict[str, bytes])


def _bodies() -> dict[str, bytes]:
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return {
        "gzip": gzip.compress(PAGE),
        "x-gzip": gzip.compress(PAGE),
        "deflate": zlib.compress(PAGE),
        "deflate-raw": raw.compress(PAGE) + raw.flush(),
        "br": brotli.compress(PAGE),
        "compress": b"\x1f\x9d\x90-lzw-not-really",
        "gzip-corrupt": gzip.compress(PAGE)[:40] + b"\xff" * 200,
        "gzip-multi": payloads.gzip_members(PAGE, 3),
        "gzip-trailing": gzip.compress(PAGE) + b"\x00\x00not gzip",
        "deflate-lookalike": payloads.raw_deflate_lookalike(PAGE),
        "deflate-garbage": b"\x78\x9c" + b"\xff" * 200,
    }


@contextlib.asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[tuple[str, set[object]]]:
    peers: set[object] = set()
    app = _app(peers)
    app[BODIES] = _bodies()
    async with serve_app(app) as base:
        yield base, peers


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[str]:
    """Run ``handler`` for each connection; yields the base URL."""
    tasks: set[asyncio.Task[None]] = set()

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await handler(reader, writer)
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(run, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> None:
    await reader.readuntil(b"\r\n\r\n")


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST instead of a FIN."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextlib.asynccontextmanager
async def fetcher(**overrides: object) -> AsyncIterator[Fetcher]:
    config = FetchConfig(**{**FAST, **overrides})  # type: ignore[arg-type]
    async with Fetcher(config) as f:
        yield f


# --- normal responses --------------------------------------------------------------------


async def test_ok_response_and_keep_alive_pooling(site: tuple[str, set[object]]) -> None:
    base, peers = site
    before = time.time()
    async with fetcher(concurrency=4) as f:
        results = await asyncio.gather(*(f.fetch(base + "/") for _ in range(40)))
    result = results[0]
    assert result.ok
    assert result.status == 200
    assert result.body == PAGE
    assert result.content_type == "text/html"
    assert result.charset == "utf-8"
    assert result.headers["content-type"] == "text/html; charset=utf-8"
    assert all(name == name.lower() for name in result.headers)
    assert not result.truncated
    assert result.error is None
    assert result.wire_bytes == len(PAGE)
    assert result.retry_after is None
    assert result.location is None
    assert before <= result.fetched_at <= time.time()
    assert 0 <= result.elapsed < 5
    assert all(r.ok for r in results)
    assert len(peers) <= 4 < len(results)


async def test_stats_snapshot(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        await f.fetch(base + "/")
        await f.fetch(base + "/missing")
        await f.fetch(base + "/redirect")
        await f.fetch("ftp://example.com/")
        stats = f.stats()
    assert stats.requests == 4
    assert stats.in_flight == stats.waiting == 0
    assert dict(stats.responses) == {"2xx": 1, "3xx": 1, "4xx": 1}
    assert dict(stats.errors) == {"invalid-url": 1}
    assert stats.body_bytes == len(PAGE) + len(b"nope") + len(b"moved")
    with pytest.raises(AttributeError):
        stats.requests = 0  # type: ignore[misc]


async def test_redirect_is_not_followed(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(base + "/redirect")
    assert result.status == 302
    assert result.location == "/target?a=1"
    assert result.is_redirect
    assert not result.ok
    assert result.body == b"moved"
    assert result.error is None


async def test_not_found(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(base + "/missing")
    assert result.status == 404
    assert result.body == b"nope"
    assert result.error is None
    assert not result.ok
    assert result.location is None


async def test_retry_after_delta_seconds(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(base + "/busy?v=120")
    assert result.status == 503
    assert result.retry_after == 120.0


async def test_retry_after_http_date_is_measured_against_the_date_header(
    site: tuple[str, set[object]],
) -> None:
    base, _ = site
    when = formatdate(time.time() + 3600, usegmt=True)
    async with Fetcher(FetchConfig(**FAST), wall_clock=lambda: 0.0) as f:  # type: ignore[arg-type]
        result = await f.fetch(f"{base}/busy?v={when}")
    # the server's Date header is "now"; our absurd wall clock is not used
    assert result.retry_after is not None
    assert 3590 < result.retry_after <= 3601


def test_parse_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after(None, now) is None
    assert parse_retry_after(" 30 ", now) == 30.0
    assert parse_retry_after(formatdate(now + 90, usegmt=True), now) == pytest.approx(90)
    assert parse_retry_after(formatdate(now - 90, usegmt=True), now) == 0.0
    later = formatdate(now + 50, usegmt=True)
    assert parse_retry_after(later, 0.0, formatdate(now, usegmt=True)) == pytest.approx(50)
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("-5", now) is None


def test_parse_content_type() -> None:
    assert parse_content_type(None) == (None, None)
    assert parse_content_type("Text/HTML") == ("text/html", None)
    assert parse_content_type('text/html; Charset="ISO-8859-1"') == ("text/html", "iso-8859-1")
    assert parse_content_type("application/xml;foo=bar; charset=UTF-8") == (
        "application/xml",
        "utf-8",
    )
    assert parse_content_type("; charset=utf-8") == (None, "utf-8")


async def test_repeated_headers_are_joined(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(base + "/multi")
    assert result.headers["x-multi"] == "a, b"
    assert result.headers["set-cookie"] == ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT\nb=2")


async def test_default_and_per_request_headers(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher(user_agent="gossamer-test/1") as f:
        sent = await f.fetch(base + "/headers")
        custom = await f.fetch(base + "/headers", headers={"Accept-Language": "fr"})
    headers = json.loads(sent.body)
    assert headers["User-Agent"] == "gossamer-test/1"
    assert headers["Accept-Encoding"] == "gzip, deflate, br, zstd"
    assert headers["Accept"].startswith("text/html")
    assert json.loads(custom.body)["Accept-Language"] == "fr"


async def test_concurrency_bounds_connections() -> None:
    release = asyncio.Event()
    active: list[int] = [0, 0]  # now, peak

    async def gated(request: web.Request) -> web.Response:
        active[0] += 1
        active[1] = max(active)
        await asyncio.wait_for(release.wait(), 5)
        active[0] -= 1
        return web.Response(text="done")

    app = web.Application()
    app.router.add_get("/", gated)
    async with serve_app(app) as base, fetcher(concurrency=2) as f:
        tasks = [asyncio.create_task(f.fetch(base + "/")) for _ in range(6)]
        for _ in range(200):
            if active[0] == 2:
                break
            await asyncio.sleep(0.01)
        stats = f.stats()
        assert (stats.in_flight, stats.waiting) == (2, 4)
        release.set()
        results = await asyncio.gather(*tasks)
    assert all(r.ok for r in results)
    assert active[1] == 2


# --- content decoding --------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "deflate", "deflate-raw", "br"])
async def test_content_decoding(site: tuple[str, set[object]], coding: str) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/{coding}")
    assert result.error is None
    assert not result.truncated
    assert result.body == PAGE
    assert result.wire_bytes == len(_bodies()[coding]) < len(PAGE)


async def test_every_gzip_member_is_decoded(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/gzip-multi")
    assert (result.error, result.truncated, result.flags) == (None, False, ())
    assert result.body == PAGE


async def test_bytes_after_gzip_data_are_flagged_and_the_body_kept(
    site: tuple[str, set[object]],
) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/gzip-trailing")
    assert (result.error, result.truncated, result.flags) == (None, False, ("trailing-garbage",))
    assert result.body == PAGE


async def test_raw_deflate_that_looks_zlib_wrapped_falls_back(
    site: tuple[str, set[object]],
) -> None:
    lookalike = _bodies()["deflate-lookalike"]
    assert (lookalike[0] << 8 | lookalike[1]) % 31 == 0 and lookalike[0] & 0x0F == 8
    with pytest.raises(zlib.error):
        zlib.decompress(lookalike)
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/deflate-lookalike")
        plain = await f.fetch(f"{base}/enc/deflate")
    assert (result.error, result.truncated) == (None, False)
    assert result.flags == ("deflate-raw-fallback",)
    assert result.body == PAGE
    assert (plain.error, plain.flags, plain.body) == (None, (), PAGE)


async def test_deflate_garbage_is_a_decode_error(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/deflate-garbage")
    assert (result.error, result.truncated, result.body, result.flags) == (
        "decode-error",
        True,
        b"",
        (),
    )


async def test_unsupported_encoding_returns_raw_body(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/compress")
    assert result.status == 200
    assert result.error == "unsupported-encoding"
    assert result.body == _bodies()["compress"]


async def test_corrupt_gzip_is_a_decode_error(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher() as f:
        result = await f.fetch(f"{base}/enc/gzip-corrupt")
    assert result.status == 200
    assert result.error == "decode-error"
    assert result.truncated


async def test_truncated_gzip_stream_is_flagged() -> None:
    cut = gzip.compress(PAGE)[:-20]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(cut)}\r\n\r\n"
        writer.write(head.encode() + cut)
        await writer.drain()
        await reader.read()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.error is None
    assert result.truncated
    assert PAGE.startswith(result.body)


def _zeros_bomb(coding: str, megabytes: int) -> bytes:
    zeros = bytes(1 << 20)
    if coding == "gzip":
        gz = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return b"".join(gz.compress(zeros) for _ in range(megabytes)) + gz.flush()
    br = brotli.Compressor(quality=5)
    chunks: list[bytes] = [br.process(zeros) for _ in range(megabytes)]
    return b"".join(chunks) + bytes(br.finish())


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {"gzip": _zeros_bomb("gzip", 100), "br": _zeros_bomb("br", 100)}


@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_decompression_bomb_is_capped(bombs: dict[str, bytes], coding: str) -> None:
    bomb = bombs[coding]
    cap = 1 << 20

    async def send_bomb(request: web.Request) -> web.Response:
        return web.Response(body=bomb, headers={"Content-Encoding": coding})

    app = web.Application()
    app.router.add_get("/", send_bomb)
    # Python's allocations while the bomb is fetched (the process's peak RSS would count what
    # earlier tests in the same process allocated)
    tracemalloc.start()
    try:
        async with serve_app(app) as base, fetcher(max_decoded_bytes=cap) as f:
            result = await f.fetch(base + "/")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.status == 200
    assert result.truncated
    assert result.error == "decompression-bomb"
    assert len(result.body) == cap
    assert result.body == bytes(cap)
    assert result.wire_bytes <= len(bomb)
    # 100 MB of zeros never existed in memory: the peak stays near where we started
    assert peak < 40 * 1024 * 1024


@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_cap_on_ordinary_text_truncates_without_error(coding: str) -> None:
    rng = random.Random(7)
    words = ["crawl", "spider", "web", "page", "link", "host", "queue", "fetch", "parse"]
    text = " ".join(f"{rng.choice(words)}{rng.randrange(1000)}" for _ in range(20_000)).encode()
    payload = gzip.compress(text) if coding == "gzip" else brotli.compress(text)

    async def send(request: web.Request) -> web.Response:
        return web.Response(body=payload, headers={"Content-Encoding": coding})

    app = web.Application()
    app.router.add_get("/", send)
    async with serve_app(app) as base, fetcher(max_decoded_bytes=10_000) as f:
        result = await f.fetch(base + "/")
    assert result.truncated
    assert result.error is None
    assert result.body == text[:10_000]


async def test_body_over_max_body_bytes_is_truncated(site: tuple[str, set[object]]) -> None:
    base, _ = site
    async with fetcher(max_body_bytes=50_000) as f:
        result = await f.fetch(base + "/big")
        after = await f.fetch(base + "/")
    assert result.status == 200
    assert result.truncated
    assert result.error is None
    assert result.body == b"x" * 50_000
    assert result.wire_bytes >= 50_000
    assert after.ok  # the pool survives the cut connection


async def test_compressed_body_over_max_body_bytes_is_truncated(
    site: tuple[str, set[object]],
) -> None:
    base, _ = site
    async with fetcher(max_body_bytes=100, max_decoded_bytes=1 << 20) as f:
        result = await f.fetch(f"{base}/enc/gzip")
    assert result.truncated
    assert 0 < len(result.body) < len(PAGE)
    assert PAGE.startswith(result.body)


# --- broken servers ----------------------------------------------------------------------


async def test_slow_headers_hit_the_read_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async with raw_server(handler) as base, fetcher(read_timeout=0.2) as f:
        result = await f.fetch(base + "/")
    assert result.status is None
    assert result.error == "read-timeout"
    assert 0.15 < result.elapsed < 1.5


async def test_hanging_server_hits_the_total_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    async with raw_server(handler) as base, fetcher(total_timeout=0.3) as f:
        result = await f.fetch(base + "/")
    assert result.status is None
    assert result.error == "timeout"
    assert 0.25 < result.elapsed < 1.5


async def test_trickling_body_hits_the_total_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(100):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.02)

    async with raw_server(handler) as base, fetcher(total_timeout=0.3) as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "timeout"
    assert result.truncated
    assert 0 < len(result.body) < 1000


async def test_stalled_body_hits_the_read_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(5)

    async with raw_server(handler) as base, fetcher(read_timeout=0.2) as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "read-timeout"
    assert result.truncated
    assert result.body == b"abc"


async def test_read_timeout_counts_from_the_last_chunk() -> None:
    # Chunks 0.1 s apart keep a 0.25 s read timeout from firing however long the body
    # takes; once they stop, it fires 0.25 s after the last one, not after the first.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        for _ in range(6):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.1)
        await asyncio.sleep(5)

    async with raw_server(handler) as base, fetcher(read_timeout=0.25) as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "read-timeout"
    assert result.body == b"x" * 6
    assert 0.7 < result.elapsed < 2.0


async def test_connection_dropped_without_response() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status is None
    assert result.error == "server-disconnected"
    assert result.body == b""


async def test_reset_before_response() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        reset(writer)

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status is None
    assert result.error in {"connection-reset", "server-disconnected"}


async def test_reset_mid_body() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"y" * 1000)
        await writer.drain()
        await asyncio.sleep(0.05)
        reset(writer)

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "connection-reset"
    assert result.truncated
    assert result.body == b"y" * 1000


async def test_close_mid_body_is_incomplete() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"y" * 1000)
        await writer.drain()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "incomplete-body"
    assert result.truncated
    assert result.body == b"y" * 1000


@pytest.mark.parametrize("bad", [b"ZZZ\r\nxx\r\n", b"5\r\nhelloEXTRA\r\n"])
async def test_broken_chunked_encoding(bad: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(bad)
        await writer.drain()
        await asyncio.sleep(5)

    async with raw_server(handler) as base, fetcher(read_timeout=3, total_timeout=4) as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "protocol-error"
    assert result.truncated
    assert result.body in (b"hello", b"hellohello")
    assert result.elapsed < 1  # reported at once, not at a timeout


async def test_chunked_body_cut_before_last_chunk() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status == 200
    assert result.error == "incomplete-body"
    assert result.body == b"hello"


async def test_garbage_status_line_is_a_protocol_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SPAM SPAM SPAM\r\n\r\n")
        await writer.drain()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.status is None
    assert result.error == "protocol-error"


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with fetcher() as f:
        result = await f.fetch(f"http://127.0.0.1:{port}/")
    assert result.status is None
    assert result.error == "connection-refused"


async def test_tls_to_a_plain_http_server_is_a_tls_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base.replace("http://", "https://") + "/")
    assert result.status is None
    assert result.error == "tls"


@pytest.mark.parametrize(
    "url",
    ["http://[::1", "ftp://example.com/", "http:///path", "not a url", "http://2130706433/", ""],
)
async def test_invalid_url_is_a_result_not_an_exception(url: str) -> None:
    async with fetcher() as f:
        result = await f.fetch(url)
    assert result.error == "invalid-url"
    assert result.status is None
    assert result.url == url


# --- DNS ---------------------------------------------------------------------------------


async def test_resolve_override_wildcard(site: tuple[str, set[object]]) -> None:
    base, _ = site
    port = base.rsplit(":", 1)[1]
    async with fetcher(resolve=("*.test=127.0.0.1",)) as f:
        result = await f.fetch(f"http://anything.test:{port}/headers")
        again = await f.fetch(f"http://other.anything.test:{port}/")
        resolver = f.resolver
        assert isinstance(resolver, CachingResolver)
        assert resolver.stats().overrides == 2
    assert result.ok
    assert b'"Host": "anything.test:' in result.body
    assert again.body == PAGE


class FailingResolver(AbstractResolver):
    """A real resolver stand-in that knows no names."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        pass


async def test_dns_failure_is_a_result() -> None:
    resolver = CachingResolver(FailingResolver())
    async with Fetcher(FetchConfig(**FAST), resolver=resolver) as f:  # type: ignore[arg-type]
        first = await f.fetch("http://nowhere.example/")
        second = await f.fetch("http://nowhere.example/")
    assert first.error == second.error == "dns"
    assert resolver.stats().failures == 1
    assert resolver.stats().hits == 1


class SlowResolver(AbstractResolver):
    """Takes ``delay`` seconds to answer 127.0.0.1."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        await asyncio.sleep(self.delay)
        return [
            ResolveResult(
                hostname=host, host="127.0.0.1", port=port, family=socket.AF_INET, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        pass


async def test_started_at_is_taken_when_the_request_is_sent(
    site: tuple[str, set[object]],
) -> None:
    base, _ = site
    port = base.rsplit(":", 1)[1]
    config = FetchConfig(**FAST)  # type: ignore[arg-type]
    async with Fetcher(config, resolver=SlowResolver(0.2)) as f:
        begin = time.monotonic()
        result = await f.fetch(f"http://slow-dns.example:{port}/")
    assert result.ok
    assert result.started_at - begin >= 0.19  # after DNS and connect, not at the call
    assert result.elapsed < 0.19


async def test_injected_clock_stamps_started_at_and_elapsed(
    site: tuple[str, set[object]],
) -> None:
    base, _ = site
    now = [100.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    async with Fetcher(FetchConfig(**FAST), clock=clock) as f:  # type: ignore[arg-type]
        result = await f.fetch(base + "/")
        refused = await f.fetch("ftp://x/")
    assert result.started_at > 100.0
    assert result.elapsed == float(int(result.elapsed)) >= 1.0
    assert refused.elapsed == 1.0
    # Politeness spaces from a time the request had surely been sent by: its answer's start,
    # or the end of a fetch that got none.
    assert result.answered_at is not None
    assert result.started_at < result.sent_by == result.answered_at
    assert result.sent_by <= result.started_at + result.elapsed
    assert refused.answered_at is None
    assert refused.sent_by == refused.started_at + refused.elapsed


# --- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"resolve": ("nope",)},
        {"resolve": ("a.test=1.2.3",)},
        {"read_timeout": 0},
        {"max_body_bytes": 0},
        {"concurrency": 0},
    ],
)
def test_bad_config_raises(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        FetchConfig(**kwargs)  # type: ignore[arg-type]


def test_result_is_frozen() -> None:
    result = FetchResult(
        url="http://x/",
        status=200,
        headers={},
        body=b"",
        content_type=None,
        charset=None,
        truncated=False,
        error=None,
        started_at=0.0,
        fetched_at=0.0,
        elapsed=0.0,
        wire_bytes=0,
        retry_after=None,
        location=None,
    )
    assert result.ok
    with pytest.raises(AttributeError):
        result.status = 404  # type: ignore[misc]


@pytest.mark.parametrize("coding", ["gzip-multi", "deflate-lookalike", "gzip-trailing"])
def test_decoding_does_not_depend_on_chunk_boundaries(coding: str) -> None:
    encoded = _bodies()[coding]
    whole = Body("gzip", 10 * len(encoded), 10 * len(PAGE))
    whole.feed(encoded)
    whole.finish()
    bytewise = Body("gzip", 10 * len(encoded), 10 * len(PAGE))
    for index in range(len(encoded)):
        if not bytewise.feed(encoded[index : index + 1]):
            break
    bytewise.finish()
    assert bytewise.value() == whole.value() == PAGE
    assert bytewise.flags == whole.flags
    assert not bytewise.truncated and not whole.truncated


def _big_stream_then(tail: bytes) -> bytes:
    """A gzip stream of some 60 kB of text (many times the decoder's slice) and ``tail``."""
    text = b"".join(b"line %d of a long page, %x\n" % (i, i * 7919) for i in range(2500))
    return gzip.compress(text, 1) + tail


@pytest.mark.parametrize(
    "tail",
    [
        b"",
        gzip.compress(b"second member") + gzip.compress(PAGE),
        gzip.compress(b"x") + b"garbage after the streams" * 400,
        gzip.compress(b"") * 12_000,
    ],
    ids=["one-stream", "members", "trailing-garbage", "members-cut"],
)
@pytest.mark.parametrize("chunk", [1000, 4096, 1 << 20])
def test_a_big_first_stream_read_whole_decodes_as_in_small_chunks(tail: bytes, chunk: int) -> None:
    # the first stream reads a chunk whole; what follows its end is fed in slices
    encoded = _big_stream_then(tail)
    bodies = []
    for size in (chunk, 97):
        body = Body("gzip", 10 * len(encoded), 1 << 22)
        for start in range(0, len(encoded), size):
            if not body.feed(encoded[start : start + size]):
                break
        body.finish()
        bodies.append(body)
    chunked, small = bodies
    assert chunked.value() == small.value()
    assert (chunked.flags, chunked.truncated) == (small.flags, small.truncated)


def test_decoded_cap_spans_gzip_members() -> None:
    body = Body("gzip", 1 << 20, len(PAGE) // 2)
    assert not body.feed(payloads.gzip_members(PAGE, 4))
    assert body.truncated and body.value() == PAGE[: len(PAGE) // 2]


def test_a_body_of_countless_gzip_members_is_cut_in_linear_time() -> None:
    """500,000 empty gzip members (10 MB): at most ``MAX_MEMBERS`` are decoded, the body is
    flagged, and it takes far less than the quadratic copying of the rest after each member."""
    member = gzip.compress(b"")
    data = member * (10_000_000 // len(member))
    body = Body("gzip", 20 << 20, 20 << 20)
    started = time.perf_counter()
    for start in range(0, len(data), 1 << 20):
        if not body.feed(data[start : start + (1 << 20)]):
            break
    assert time.perf_counter() - started < 2.0
    assert body.truncated and "gzip-members-cut" in body.flags

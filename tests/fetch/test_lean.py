"""The lean HTTP/1.1 client against hostile and careless servers (real asyncio servers on
127.0.0.1): every answer ends in a recorded reason, in bounded time and memory; kept
connections are reused only when clean, and one the server closed is replaced once."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable

from tests.tls_certs import TlsFiles

from gossamer.fetch import FetchConfig, Fetcher, FetchResult

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serve(
    handler: Handler, context: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, list[int]]]:
    """A server on 127.0.0.1 running ``handler`` per connection; yields its base URL and a
    list that grows by one per connection accepted."""
    accepted: list[int] = []
    writers: list[asyncio.StreamWriter] = []
    tasks: list[asyncio.Task[None]] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        tasks.append(task)
        try:
            # a write to an aborted connection: RuntimeError on uvloop, ignored on asyncio's
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, RuntimeError):
                await handler(reader, writer)
        finally:
            writer.transport.abort()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if context else 'http'}://127.0.0.1:{port}", accepted
    finally:
        server.close()
        for writer in writers:  # a handler still writing or reading ends on a closed socket
            writer.transport.abort()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        await server.wait_closed()


async def fetch(url: str, **config: object) -> tuple[FetchResult, float]:
    """``url`` fetched by a lean fetcher, and the seconds it took."""
    settings = {"read_timeout": 5.0, "total_timeout": 10.0, **config}
    started = time.monotonic()
    async with Fetcher(FetchConfig(**settings)) as fetcher:  # type: ignore[arg-type]
        result = await asyncio.wait_for(fetcher.fetch(url), 20)
    return result, time.monotonic() - started


async def _request(reader: asyncio.StreamReader) -> None:
    await reader.readuntil(b"\r\n\r\n")


async def test_slow_loris_head_ends_at_the_total_timeout() -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(400):  # a byte every 10 ms: the read timeout never fires
            writer.write(b"X")
            await writer.drain()
            await asyncio.sleep(0.01)

    async with serve(drip) as (base, _):
        result, took = await fetch(base + "/", read_timeout=1.0, total_timeout=0.5)
    assert result.error == "timeout"
    assert result.status is None
    assert took < 3


async def test_endless_headers_end_at_the_header_count_cap() -> None:
    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        block = b"".join(b"X-Filler-%04d: yes\r\n" % i for i in range(1000))
        for _ in range(10_000):  # 240 MB of headers at most: more than socket buffers hold
            writer.write(block)
            sent[0] += len(block)
            await writer.drain()

    async with serve(endless) as (base, _):
        result, took = await fetch(base + "/")
    assert result.error == "protocol-error"
    assert result.status is None
    assert took < 5
    assert sent[0] < 64 * 1024 * 1024  # the client hung up early


async def test_one_endless_header_line_is_too_long() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Long: ")
        for _ in range(10_000):  # 40 MB at most
            writer.write(b"a" * 4096)
            await writer.drain()

    async with serve(endless) as (base, _):
        result, took = await fetch(base + "/")
    assert result.error == "headers-too-long"
    assert took < 5


async def test_a_long_status_line_is_too_long() -> None:
    async def long_status(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 " + b"O" * 9000 + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with serve(long_status) as (base, _):
        result, _took = await fetch(base + "/")
    assert result.error == "headers-too-long"


async def test_a_one_gigabyte_chunk_is_cut_at_the_body_cap() -> None:
    sent = [0]

    async def huge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40000000\r\n")
        block = b"z" * 65536
        for _ in range(16384):  # the whole gigabyte, if the client read it all
            writer.write(block)
            sent[0] += len(block)
            await writer.drain()

    async with serve(huge) as (base, _):
        result, took = await fetch(base + "/", max_body_bytes=256 * 1024)
    assert result.truncated
    assert result.status == 200
    assert 0 < len(result.body) <= 256 * 1024
    assert took < 10
    assert sent[0] < 64 * 1024 * 1024


async def test_invalid_chunk_framing_is_a_protocol_error() -> None:
    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        writer.write(b"zz\r\nmore\r\n0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with serve(broken) as (base, _):
        result, took = await fetch(base + "/")
    assert result.error == "protocol-error"
    assert result.truncated
    assert result.body == b"hello"
    assert took < 5


async def test_an_answer_without_a_status_line_is_a_protocol_error() -> None:
    async def headless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"Content-Type: text/html\r\nContent-Length: 2\r\n\r\nhi")
        await writer.drain()
        await reader.read()

    async with serve(headless) as (base, _):
        result, took = await fetch(base + "/")
    assert result.error == "protocol-error"
    assert result.status is None
    assert took < 5


async def test_a_kept_connection_closed_by_the_server_is_replaced_once() -> None:
    async def one_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)  # answers keep-alive, then closes without a word
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        with contextlib.suppress(asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")

    async with serve(one_answer) as (base, accepted):
        config = FetchConfig(read_timeout=5.0, total_timeout=10.0)
        async with Fetcher(config) as fetcher:
            first = await fetcher.fetch(base + "/a")
            second = await fetcher.fetch(base + "/b")
    assert (first.status, first.body) == (200, b"ok")
    assert (second.status, second.body, second.error) == (200, b"ok", None)
    assert len(accepted) == 2


async def test_a_connection_whose_body_was_cut_is_never_reused() -> None:
    async def big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n")
            writer.write(b"b" * 200_000)
            await writer.drain()

    async with serve(big) as (base, accepted):
        config = FetchConfig(max_body_bytes=4096, read_timeout=5.0, total_timeout=10.0)
        async with Fetcher(config) as fetcher:
            first = await fetcher.fetch(base + "/a")
            second = await fetcher.fetch(base + "/b")
    assert first.truncated and second.truncated
    assert len(accepted) == 2


async def test_a_304_with_a_body_leaves_the_next_answer_alone() -> None:
    async def careless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nstale")
        await writer.drain()
        with contextlib.suppress(asyncio.IncompleteReadError):
            await _request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwrong")
            await writer.drain()

    async with serve(careless) as (base, accepted):
        config = FetchConfig(read_timeout=5.0, total_timeout=10.0)
        async with Fetcher(config) as fetcher:
            first = await fetcher.fetch(base + "/a")
            second = await fetcher.fetch(base + "/b")
    assert (first.status, first.error) == (304, None)
    assert second.status == 304  # a new connection, answered as the first
    assert len(accepted) == 2


async def test_aiohttp_serves_every_request_when_set() -> None:
    async def plain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()

    async with serve(plain) as (base, _):
        config = FetchConfig(http_client="aiohttp", keep_wire=True)
        async with Fetcher(config) as fetcher:
            result = await fetcher.fetch(base + "/")
    assert (result.status, result.body) == (200, b"ok")
    assert fetcher._lean is None and result.exchange is not None


async def test_tls_is_verified_and_may_be_waived(tls_files: TlsFiles) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls_files.server_cert, tls_files.server_key)

    async def plain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            await writer.drain()

    async with serve(plain, context) as (base, accepted):
        refused, _ = await fetch(base + "/")  # the test CA is not the system's
        config = FetchConfig(verify_tls=False, read_timeout=5.0, total_timeout=10.0)
        async with Fetcher(config) as fetcher:
            first = await fetcher.fetch(base + "/a")
            second = await fetcher.fetch(base + "/b")
    assert (refused.status, refused.error) == (None, "tls")
    assert (first.status, first.body, second.body) == (200, b"secret", b"secret")
    assert len(accepted) == 1  # one kept connection (the refused handshake never got here)


async def test_a_body_faster_than_its_reader_is_held_back_at_the_socket() -> None:
    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n")
        block = b"f" * 65536
        for _ in range(16384):
            writer.write(block)
            await writer.drain()

    async with serve(flood) as (base, _):
        tracemalloc.start()
        try:  # the reader waits for the bandwidth cap: 2 MB at 2 MB/s
            result, took = await fetch(
                base + "/", max_body_bytes=2 * 1024 * 1024, max_bandwidth=2 * 1024 * 1024
            )
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert result.truncated and len(result.body) == 2 * 1024 * 1024
    assert took < 10
    assert peak < 12 * 1024 * 1024, peak

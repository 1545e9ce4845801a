"""The lean HTTP/1.1 client against servers that attack it after the head: trailers, chunk
lines without end, a protocol switch, forged answers queued behind a body (real asyncio
servers on 127.0.0.1). Where aiohttp answers the same, both clients are run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tracemalloc

import pytest
from tests.fetch.test_lean import Handler, fetch, serve

from gossamer.fetch import FetchConfig, Fetcher

_CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/html\r\n\r\n"


async def _request(reader: asyncio.StreamReader) -> None:
    await reader.readuntil(b"\r\n\r\n")


def _answering(answer: bytes) -> Handler:
    """A handler that reads the request, sends ``answer`` and waits for the client to go."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()

    return handler


@pytest.mark.parametrize(
    ("head", "outcome"),
    [
        # llhttp holds a trailer line whole until its end: unbounded, it grew to 127 MB
        (b"5\r\nhello\r\n0\r\nX-Trailer: ", (200, "headers-too-long", b"hello")),
        (b"5;ext=", (200, "protocol-error", b"")),  # a chunk extension that never ends
    ],
    ids=["trailer-line", "chunk-extension"],
)
async def test_an_endless_line_after_the_head_is_cut(
    head: bytes, outcome: tuple[int, str, bytes]
) -> None:
    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_CHUNKED + head)
        for _ in range(100_000):  # 400 MB at most
            writer.write(b"a" * 4096)
            sent[0] += 4096
            await writer.drain()

    async with serve(endless) as (base, _):
        result, took = await fetch(base + "/")
    assert (result.status, result.error, result.body) == outcome
    assert took < 5
    assert sent[0] < 16 * 1024 * 1024  # the client hung up early


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_trailers_never_become_headers(client: str) -> None:
    trailers = b"Content-Type: image/png\r\nX-Trailer: 1\r\nLocation: /elsewhere\r\n\r\n"
    trailing = _CHUNKED + b"5\r\nhello\r\n0\r\n" + trailers
    async with serve(_answering(trailing)) as (base, _):
        result, _took = await fetch(base + "/", http_client=client)
    assert (result.status, result.error, result.body) == (200, None, b"hello")
    assert result.headers.get("content-type") == "text/html"
    assert "x-trailer" not in result.headers and "location" not in result.headers


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_endless_trailers_are_cut(client: str) -> None:
    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_CHUNKED + b"5\r\nhello\r\n0\r\n")
        for i in range(10_000):  # 10 million fields at most
            writer.write(b"".join(b"X-T%d-%d: v\r\n" % (i, j) for j in range(1000)))
            sent[0] += 1
            await writer.drain()

    async with serve(endless) as (base, _):
        result, took = await fetch(base + "/", http_client=client)
    assert result.error == "protocol-error"
    assert took < 5
    assert sent[0] < 1000


async def test_an_unasked_protocol_switch_is_a_protocol_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 101 to a plain GET: llhttp's upgrade signal is no parse error (aiohttp takes it as
    a 101 answer with no body; the lean client refuses it)."""

    switch = b"HTTP/1.1 101 Switching\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nhi"
    async with serve(_answering(switch)) as (base, _):
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            result, took = await fetch(base + "/")
    assert (result.status, result.error) == (None, "protocol-error")
    assert took < 5
    assert not [r for r in caplog.records if r.name == "asyncio"]


@pytest.mark.parametrize(
    "first",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ],
    ids=["length", "no-content", "chunked"],
)
async def test_a_forged_answer_queued_behind_a_body_answers_no_request(first: bytes) -> None:
    """Pool poisoning: a second answer sent with the first must not answer the next
    request; the connection is dropped and the next request gets a new one."""

    async def forging(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(first + b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
        await writer.drain()
        with contextlib.suppress(asyncio.IncompleteReadError):
            await _request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal")
            await writer.drain()
            await reader.read()

    async with serve(forging) as (base, accepted):
        config = FetchConfig(read_timeout=5.0, total_timeout=10.0)
        async with Fetcher(config) as fetcher:
            await fetcher.fetch(base + "/a")
            second = await fetcher.fetch(base + "/b")
    assert second.body != b"forged"
    assert len(accepted) == 2


async def _heads_sent(client: str, settings: dict[str, object], headers: dict[str, str]) -> bytes:
    """The request head ``client`` sends for ``headers``."""
    heads: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()

    async with serve(record) as (base, _):
        config = FetchConfig(http_client=client, read_timeout=5.0, total_timeout=10.0, **settings)  # type: ignore[arg-type]
        async with Fetcher(config) as fetcher:
            result = await fetcher.fetch(base + "/", headers=headers)
    assert (result.status, result.error) == (200, None)
    return heads[0].replace(base.partition("//")[2].encode(), b"HOST")


@pytest.mark.parametrize(
    ("settings", "headers"),
    [({}, {"host": "other.example"}), ({"headers": {"Host": "other.example"}}, {})],
    ids=["per-request", "default"],
)
async def test_a_host_header_given_replaces_the_urls(
    settings: dict[str, object], headers: dict[str, str]
) -> None:
    """Two Host lines let a server or a proxy on the way pick either: one, as aiohttp."""
    lean = await _heads_sent("lean", settings, headers)
    assert lean.lower().count(b"\r\nhost:") == 1
    line = lean.split(b"\r\n")[1]
    assert line.lower() == b"host: other.example"
    assert line == (await _heads_sent("aiohttp", settings, headers)).split(b"\r\n")[1]


@pytest.mark.parametrize(
    ("settings", "headers"),
    [
        ({"headers": {"X-A": "1"}}, {}),
        ({"headers": {"X-A": "1"}}, {"accept": "text/plain"}),
        ({}, {"Accept-Encoding": "gzip"}),
    ],
    ids=["session", "per-request-accept", "per-request-coding"],
)
async def test_headers_without_accept_go_out_as_aiohttp_sends_them(
    settings: dict[str, object], headers: dict[str, str]
) -> None:
    """Headers that name no ``Accept`` or ``Accept-Encoding``: both clients send the same
    head (aiohttp adds its own two)."""
    lean = await _heads_sent("lean", settings, headers)
    assert lean == await _heads_sent("aiohttp", settings, headers)


async def test_a_nul_in_a_header_sent_is_refused() -> None:
    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    config = FetchConfig(read_timeout=5.0, total_timeout=10.0)
    async with serve(never) as (base, accepted), Fetcher(config) as fetcher:
        result = await fetcher.fetch(base + "/", headers={"If-None-Match": '"a\x00b"'})
    assert (result.status, result.error) == (None, "client-error")
    assert not accepted


async def test_kept_connections_are_never_shared_between_host_names() -> None:
    """Two names of one server: each has its own connections, its own Host line, and the
    credentials of one URL go with that request only."""
    heads: list[tuple[int, bytes]] = []

    async def keep(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(10):
            head = await reader.readuntil(b"\r\n\r\n")
            heads.append((id(writer), head))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    async with serve(keep) as (base, accepted):
        port = base.rpartition(":")[2]
        config = FetchConfig(
            resolve=("a.test=127.0.0.1", "b.test=127.0.0.1"), read_timeout=5.0, total_timeout=10.0
        )
        async with Fetcher(config) as fetcher:
            for url in ("a.test/1", "b.test/2", "u:p@a.test/3", "a.test/4", "b.test/5"):
                name, _, path = url.partition("/")
                result = await fetcher.fetch(f"http://{name}:{port}/{path}")
                assert (result.status, result.error) == (200, None)
    assert len(accepted) == 2
    by_name: dict[bytes, set[int]] = {}
    for conn, head in heads:
        host = head.split(b"\r\n")[1]
        by_name.setdefault(host, set()).add(conn)
        assert (b"Authorization:" in head) == head.startswith(b"GET /3 ")
    assert sorted(by_name) == [f"Host: {n}.test:{port}".encode() for n in "ab"]
    assert by_name[b"Host: a.test:" + port.encode()].isdisjoint(
        by_name[b"Host: b.test:" + port.encode()]
    )


async def test_a_body_in_one_byte_chunks_is_read_in_pieces() -> None:
    """One-byte chunks: each held and handed on alone cost 70 MB and the whole total
    timeout for a 1 MB body; read as aiohttp reads them, all that came at once."""

    async def tiny(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        block = b"1\r\na\r\n" * 10_000
        for _ in range(2000):  # 20 MB of body at most
            writer.write(block)
            await writer.drain()

    async with serve(tiny) as (base, _):
        tracemalloc.start()
        try:  # the reader waits for the bandwidth cap: 512 kB at 1 MB/s
            result, took = await fetch(
                base + "/", max_body_bytes=512 * 1024, max_bandwidth=1024 * 1024
            )
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (result.status, result.error, result.truncated) == (200, None, True)
    assert result.body == b"a" * 512 * 1024
    assert peak < 16 * 1024 * 1024, peak
    assert took < 5


_AWKWARD_HEADS = {
    "spaces-after-values": b"X-A: 1 \r\nX-B:\t2\t \r\nContent-Type: text/html \r\n",
    "repeated-names": b"X-A: 1\r\nx-a: 2\r\nSet-Cookie: a=1\r\nSET-COOKIE: b=2\r\n"
    b"X-Robots-Tag: noindex\r\nX-Robots-Tag: nofollow\r\n",
    "bytes-not-ascii": b"X-A: caf\xc3\xa9\r\nX-B: \xff\xfe \r\nX-A: \xe9 \r\n",
    "empty-values": b"X-A:\r\nX-B: \r\nX-C: 3\r\n",
    "last-value-spaced": b"X-A: 1\r\nX-Z: last \t",
}


@pytest.mark.parametrize("head", list(_AWKWARD_HEADS.values()), ids=list(_AWKWARD_HEADS))
async def test_both_clients_read_an_awkward_head_alike(head: bytes) -> None:
    """Header names repeated or cased, values not ASCII, with spaces after them or empty:
    the lean client's map is aiohttp's, and the raw headers it keeps for the WARC lose the
    spaces after values as llhttp's own parse loses those before."""

    awkward = b"HTTP/1.1 200 OK\r\n" + head.rstrip(b"\r\n") + b"\r\nContent-Length: 2\r\n\r\nhi"
    results = {}
    async with serve(_answering(awkward)) as (base, _):
        for client in ("lean", "aiohttp"):
            results[client], _took = await fetch(base + "/", http_client=client, keep_wire=True)
    lean, other = results["lean"], results["aiohttp"]
    assert (lean.status, lean.error, lean.body) == (200, None, b"hi")
    assert dict(lean.headers) == dict(other.headers)
    assert lean.exchange is not None
    for _, value in lean.exchange.response_headers:
        assert value == value.rstrip(b" \t")


async def test_a_nul_byte_in_a_header_received_is_a_protocol_error() -> None:
    nul = b"HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B: a\x00b\r\nContent-Length: 2\r\n\r\nhi"
    async with serve(_answering(nul)) as (base, _):
        result, _took = await fetch(base + "/")
    assert result.error == "protocol-error"

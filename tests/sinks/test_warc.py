"""WARC output: real fetches from a raw local server, written with FastWARC and read back with
warcio (an independent reader) and FastWARC, digests checked by both."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import hashlib
import os
import random
import socket
import struct
import uuid
import zlib
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from tests.warc_check import seek
from warcio.archiveiterator import ArchiveIterator

from gossamer.fetch import FetchConfig, Fetcher, FetchResult
from gossamer.fetch.exchange import Exchange
from gossamer.sinks.warc import (
    WarcLocation,
    WarcWriter,
    _base32,
    _new_id,
    _response_head,
    _stored_member,
    _warc_date,
    request_block,
)

PAGE = b"<html><title>t</title><body>" + b"<p>gossamer</p>" * 200 + b"</body></html>"
GZ = gzip.compress(PAGE)
FAST = {"connect_timeout": 2.0, "read_timeout": 2.0, "total_timeout": 5.0}


ODD_STATUS = b"HTTP/1.1 200 \xff\xfe caf\xc3\xa9 \xe9t\xe9 \x01weird reason"
"""A status line whose reason phrase is not UTF-8 (and holds a control byte)."""


def _head(status: str, *headers: str) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n").encode()


RESPONSES = {
    "/plain": _head(
        "200 Fine Thanks",
        "X-Zeta: 1",
        "content-TYPE: text/html",
        "X-Alpha: 2",
        "X-Alpha: 3",
        f"Content-Length: {len(PAGE)}",
        "Connection: close",
    )
    + PAGE,
    "/gz": _head(
        "200 OK",
        "Content-Type: text/html",
        "Content-Encoding: gzip",
        f"Content-Length: {len(GZ)}",
        "Connection: close",
    )
    + GZ,
    "/chunked": _head("200 OK", "Transfer-Encoding: chunked", "Connection: close")
    + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    "/big": _head("200 OK", "Content-Length: 200000", "Connection: close") + b"x" * 200_000,
    "/large": _head("200 OK", "Content-Length: 700000", "Connection: close") + b"z" * 700_000,
    "/moved": _head("301 Moved", "Location: /plain", "Content-Length: 0", "Connection: close"),
    "/odd-reason": ODD_STATUS + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
}


@contextlib.asynccontextmanager
async def wire_server() -> AsyncIterator[str]:
    """Answers each path of `RESPONSES` with exactly those bytes; ``/reset`` sends part of a
    body, then a TCP RST."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ")[1].decode()
            if path == "/reset":
                writer.write(_head("200 OK", "Content-Length: 100000") + b"y" * 1000)
                await writer.drain()
                await asyncio.sleep(0.05)
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            writer.write(RESPONSES[path])
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def fetch_all(base: str, paths: list[str], **config: Any) -> list[FetchResult]:
    async with Fetcher(FetchConfig(**{**FAST, **config})) as fetcher:
        return [await fetcher.fetch(base + path) for path in paths]


def read_warcio(path: Path) -> list[Any]:
    """Every record of ``path`` through warcio, digests checked (a bad one raises)."""
    records = []
    with path.open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            record.body = record.raw_stream.read()  # the payload as stored (not decoded)
            records.append(record)
    return records


def tear(path: Path) -> None:
    """Append 7 bytes of a gzip member cut short, as a crash mid-write leaves."""
    with path.open("ab") as handle:
        handle.write(b"\x1f\x8b torn")


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def at(directory: Path, location: WarcLocation) -> Any:
    """The one record found by seeking to ``location`` and reading only its bytes."""
    where = {"warc_file": location.file, "warc_offset": location.offset}
    return seek(directory, where | {"warc_length": location.length})


async def test_fetch_without_keep_wire_carries_no_exchange() -> None:
    async with wire_server() as base:
        [result] = await fetch_all(base, ["/plain"])
    assert result.ok
    assert result.exchange is None


async def test_exchange_is_stored_as_received_and_read_back(tmp_path: Path) -> None:
    paths = ["/plain", "/gz", "/chunked", "/moved", "/big", "/reset"]
    async with wire_server() as base:
        results = await fetch_all(base, paths, keep_wire=True, max_body_bytes=50_000)
    writer = WarcWriter(tmp_path, max_bytes=1 << 30)
    locations = [await writer.write(result) for result in results]
    writer.close()
    [name] = writer.files
    assert name.startswith("gossamer-") and name.endswith("-00001.warc.gz")
    records = read_warcio(tmp_path / name)

    info, *pairs = records
    assert info.rec_type == "warcinfo"
    assert info.rec_headers.get_header("WARC-Filename") == name
    assert b"software: gossamer/" in info.body
    assert [r.rec_type for r in pairs] == ["response", "request"] * len(paths)
    for (response, request), result, location in zip(
        zip(pairs[::2], pairs[1::2], strict=True), results, locations, strict=True
    ):
        assert location is not None and location.file == name
        url = base + paths[results.index(result)]
        assert response.rec_headers.get_header("WARC-Target-URI") == url
        assert request.rec_headers.get_header("WARC-Target-URI") == url
        assert request.rec_headers.get_header("WARC-Concurrent-To") == (
            response.rec_headers.get_header("WARC-Record-ID")
        )
        assert response.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
        assert response.rec_headers.get_header("WARC-Payload-Digest") == sha1(response.body)
        assert response.http_headers.get_statuscode() == str(result.status)
        assert request.http_headers.protocol == "GET"
        assert request.http_headers.get_header("User-Agent") == "gossamer/0.1"
        seeked = at(tmp_path, location)
        assert seeked.rec_headers.get_header("WARC-Record-ID") == (
            response.rec_headers.get_header("WARC-Record-ID")
        )

    plain, gz, chunked, moved, big, cut = pairs[::2]
    # the head as received: reason, header names' case and order, repeated headers
    assert plain.http_headers.statusline == "200 Fine Thanks"
    assert plain.http_headers.headers[:4] == [
        ("X-Zeta", "1"),
        ("content-TYPE", "text/html"),
        ("X-Alpha", "2"),
        ("X-Alpha", "3"),
    ]
    assert plain.body == PAGE
    # compressed bodies are kept compressed, their digest over the bytes received
    assert gz.http_headers.get_header("Content-Encoding") == "gzip"
    assert gz.body == GZ
    assert gz.rec_headers.get_header("WARC-Payload-Digest") == sha1(GZ)
    assert results[1].body == PAGE  # while the crawler saw the decoded page
    # aiohttp hands over the body de-chunked: the header is renamed so no reader de-chunks it
    assert chunked.http_headers.get_header("Transfer-Encoding") is None
    assert chunked.http_headers.get_header("X-Crawler-Transfer-Encoding") == "chunked"
    assert chunked.body == b"hello world"
    assert moved.http_headers.get_header("Location") == "/plain"
    # bodies cut short are flagged, with why
    assert big.rec_headers.get_header("WARC-Truncated") == "length"
    assert big.body == b"x" * 50_000
    assert cut.rec_headers.get_header("WARC-Truncated") == "disconnect"
    assert cut.body == b"y" * 1000
    for whole in (plain, gz, chunked, moved):
        assert whole.rec_headers.get_header("WARC-Truncated") is None


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_a_reason_phrase_is_stored_as_received(tmp_path: Path, client: str) -> None:
    async with wire_server() as base:
        [result] = await fetch_all(base, ["/odd-reason"], keep_wire=True, http_client=client)
    assert (result.status, result.body) == (200, b"ok")
    writer = WarcWriter(tmp_path)
    await writer.write(result)
    writer.close()
    path = tmp_path / writer.files[0]
    [response] = [r for r in read_warcio(path) if r.rec_type == "response"]  # digests checked
    assert response.http_headers.get_statuscode() == "200"
    assert response.body == b"ok"
    with path.open("rb") as handle:
        [block] = [
            r.reader.read()
            for r in FastIterator(handle, record_types=WarcRecordType.response, parse_http=False)
        ]
    assert block.startswith(ODD_STATUS + b"\r\nContent-Length: 2\r\n")


async def test_fastwarc_reads_the_file_and_checks_both_digests(tmp_path: Path) -> None:
    async with wire_server() as base:
        results = await fetch_all(base, ["/plain", "/gz", "/chunked"], keep_wire=True)
    writer = WarcWriter(tmp_path)
    for result in results:
        await writer.write(result)
    writer.close()
    path = tmp_path / writer.files[0]
    with path.open("rb") as handle:
        blocks = [
            (r.record_type, r.verify_block_digest()) for r in FastIterator(handle, parse_http=False)
        ]
    kinds = [WarcRecordType.warcinfo] + [WarcRecordType.response, WarcRecordType.request] * 3
    assert blocks == [(kind, True) for kind in kinds]
    http = WarcRecordType.response | WarcRecordType.request
    with path.open("rb") as handle:
        checks = [r.verify_payload_digest() for r in FastIterator(handle, record_types=http)]
    assert checks == [True] * 6


async def test_a_body_compressed_on_the_wire_is_stored_not_deflated_again(
    tmp_path: Path,
) -> None:
    async with wire_server() as base:
        results = await fetch_all(base, ["/gz", "/plain"], keep_wire=True)
    writer = WarcWriter(tmp_path)
    gz, plain = [await writer.write(result) for result in results]
    writer.close()
    assert gz is not None and plain is not None
    data = (tmp_path / writer.files[0]).read_bytes()
    gz_member = data[gz.offset : gz.offset + gz.length]
    plain_member = data[plain.offset : plain.offset + plain.length]
    assert len(gz_member) > len(gzip.decompress(gz_member))  # stored blocks: nothing deflated
    assert len(plain_member) < len(gzip.decompress(plain_member)) / 4
    assert at(tmp_path, gz).body == GZ
    bodies = {
        r.rec_headers.get_header("WARC-Target-URI"): r.body
        for r in read_warcio(tmp_path / writer.files[0])
        if r.rec_type == "response"
    }
    assert bodies == {base + "/gz": GZ, base + "/plain": PAGE}


async def test_a_large_body_is_compressed_off_the_loop_and_kept_whole(tmp_path: Path) -> None:
    async with wire_server() as base:
        results = await fetch_all(base, ["/large", "/plain"], keep_wire=True)
    writer = WarcWriter(tmp_path)
    large, plain = await asyncio.gather(*(writer.write(result) for result in results))
    writer.close()
    assert large is not None and plain is not None
    assert plain.offset < large.offset  # appended once compressed, in the order they finish
    record = at(tmp_path, large)
    assert record.body == b"z" * 700_000
    assert record.rec_headers.get_header("WARC-Truncated") is None


async def test_files_rotate_at_max_bytes_each_with_its_warcinfo(tmp_path: Path) -> None:
    async with wire_server() as base:
        results = await fetch_all(base, ["/plain"] * 6, keep_wire=True)
    writer = WarcWriter(tmp_path, max_bytes=1024)
    locations = [await writer.write(result) for result in results]
    writer.close()
    assert len(writer.files) == 6  # every pair overflows 1 KB: one file each
    assert names(tmp_path) == sorted(writer.files)
    assert [int(name[-13:-8]) for name in writer.files] == [1, 2, 3, 4, 5, 6]
    for name, location in zip(writer.files, locations, strict=True):
        records = read_warcio(tmp_path / name)
        assert [r.rec_type for r in records] == ["warcinfo", "response", "request"]
        assert location == WarcLocation(name, location.offset, location.length)
        assert at(tmp_path, location).rec_type == "response"


async def test_a_new_writer_starts_a_new_file_and_leaves_old_ones_alone(tmp_path: Path) -> None:
    async with wire_server() as base:
        [result] = await fetch_all(base, ["/plain"], keep_wire=True)
    first = WarcWriter(tmp_path)
    await first.write(result)
    first.flush()  # a crash now: the file is left as it is
    size = (tmp_path / first.files[0]).stat().st_size
    tear(tmp_path / first.files[0])
    second = WarcWriter(tmp_path)
    location = await second.write(result)
    second.close()
    first.close()
    assert location is not None
    assert location.file.endswith("-00002.warc.gz") and location.file != first.files[0]
    assert location.offset > 0  # after the new file's warcinfo
    assert (tmp_path / first.files[0]).stat().st_size == size + 7
    assert at(tmp_path, location).rec_headers.get_header("WARC-Target-URI") == result.url


async def test_a_fetch_without_response_writes_nothing(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path / "warc")
    failed = FetchResult(
        url="http://a.test/",
        status=None,
        headers={},
        body=b"",
        content_type=None,
        charset=None,
        truncated=False,
        error="dns",
        started_at=0.0,
        fetched_at=0.0,
        elapsed=0.0,
        wire_bytes=0,
        retry_after=None,
        location=None,
    )
    assert await writer.write(failed) is None
    writer.close()
    assert writer.files == []
    assert list((tmp_path / "warc").iterdir()) == []


@pytest.mark.parametrize(
    ("error", "truncated", "reason"),
    [
        ("read-timeout", True, "time"),
        ("timeout", True, "time"),
        ("connection-reset", True, "disconnect"),
        ("incomplete-body", True, "disconnect"),
        (None, True, "length"),
        ("decompression-bomb", True, "length"),
        ("decode-error", True, "unspecified"),
        ("protocol-error", True, "unspecified"),
    ],
)
def test_truncation_reasons(error: str | None, truncated: bool, reason: str) -> None:
    from gossamer.fetch.exchange import cut_by

    assert cut_by(error, truncated) == reason


@pytest.mark.parametrize("size", [0, 1, 0xFFFF, 0xFFFF + 1, 200_001])
def test_a_stored_member_is_one_whole_gzip_member_of_any_size(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    member = _stored_member(data)
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert inflate.decompress(member) == data
    assert inflate.eof and not inflate.unused_data
    assert gzip.decompress(member) == data


@pytest.mark.parametrize("sizes", [(0, 0), (300, 0, 12), (300, 0xFFFF - 302, 2), (300, 70_000, 4)])
def test_a_record_in_parts_is_stored_as_the_member_of_its_bytes(sizes: tuple[int, ...]) -> None:
    """A record's header, HTTP head and body are written as they are, not joined first."""
    parts = [bytes([i + 1]) * size for i, size in enumerate(sizes)]
    member = _stored_member(*parts)
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert inflate.decompress(member) == b"".join(parts)
    assert inflate.eof and not inflate.unused_data


def test_record_ids_are_random_uuids_and_a_forked_child_draws_its_own() -> None:
    ids = [_new_id() for _ in range(600)]  # past one pool of random bytes
    assert len(set(ids)) == len(ids)
    for record_id in ids:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        parsed = uuid.UUID(record_id[10:-1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == record_id[10:-1]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, " ".join(_new_id() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode().split()
    os.waitpid(pid, 0)
    mine = [_new_id() for _ in range(4)]
    assert len(child) == 4 and not set(child) & set(mine)


def test_a_digest_in_base32_is_the_standard_library_s() -> None:
    digests = [bytes(20), b"\xff" * 20, bytes(range(20))]
    digests += [hashlib.sha1(os.urandom(8)).digest() for _ in range(2000)]
    for digest in digests:
        assert _base32(digest) == base64.b32encode(digest).decode()


def test_a_warc_date_is_the_utc_time_to_the_microsecond() -> None:
    rng = random.Random(7)
    moments = [0.0, 1.0, 1795975931.0, 1795975931.211, 1795975931.9999995, 4102444799.999999]
    moments += [rng.uniform(0, 4e9) for _ in range(2000)]
    moments += [round(rng.uniform(1.7e9, 1.9e9), 3) for _ in range(2000)]
    for when in moments:
        expected = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert _warc_date(when) == expected


def _old_response_head(exchange: Exchange) -> bytes:
    """The response head as written header by header, each cleaned on its own."""
    lines = [
        f"{exchange.version} {exchange.status} {exchange.reason}".encode(errors="surrogateescape")
    ]
    for name, value in exchange.response_headers:
        if name.lower() == b"transfer-encoding":
            name = b"X-Crawler-Transfer-Encoding"
        clean = name.replace(b"\r", b" ").replace(b"\n", b" ")
        lines.append(clean + b": " + value.replace(b"\r", b" ").replace(b"\n", b" "))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _old_request_block(exchange: Exchange) -> bytes:
    lines = [f"{exchange.method} {exchange.target} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in exchange.request_headers]
    text = "".join(line.replace("\r", " ").replace("\n", " ") + "\r\n" for line in lines)
    return (text + "\r\n").encode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    "bad",
    [
        ("", b""),
        ("\r", b"\r"),
        ("\n", b"\n"),
        ("\r\n", b"\r\n"),
        ("x\ry", b"x\n\ny"),
        ("\udcff", b"\xff\r"),
    ],
)
def test_heads_with_line_breaks_inside_headers_are_written_one_line_a_header(
    bad: tuple[str, bytes],
) -> None:
    text, raw = bad
    headers = ((b"Content-Type", b"text/html"), (b"Transfer-" + raw + b"Encoding", raw))
    exchange = Exchange(
        method="GET",
        target="/a" + text,
        request_headers=(("User-Agent", "g" + text), ("Accept", text)),
        version="HTTP/1.1",
        status=200,
        reason="OK",
        response_headers=(*headers, (b"transfer-ENCODING", b"chunked" + raw)),
        body=b"",
        peer=None,
    )
    assert _response_head(exchange) == _old_response_head(exchange)
    assert request_block(exchange) == _old_request_block(exchange)
    for empty in (replace(exchange, response_headers=()), replace(exchange, request_headers=())):
        assert _response_head(empty) == _old_response_head(empty)
        assert request_block(empty) == _old_request_block(empty)

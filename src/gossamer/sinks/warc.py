"""WARC output (``--warc``): every fetch as a ``request`` and a ``response`` record.

Files are gzip-compressed WARC/1.1, named ``PREFIX-TIMESTAMP-SERIAL.warc.gz``, each opening with
a ``warcinfo`` record; a file is closed and the next one opened once it reaches ``max_bytes``.
Every record is its own gzip member, so the offset and length `WarcWriter.write` returns for a
response can be read on their own (``seek``, then decompress ``length`` bytes).

The response record holds the exchange as received (`gossamer.fetch.exchange.Exchange`): the
status line, the headers as they came (names, case and order kept) and the body before
content decoding, so ``Content-Encoding: gzip`` bodies stay compressed and
``WARC-Payload-Digest`` is taken over those bytes. aiohttp removes the chunked transfer coding
before the body reaches us, so a ``Transfer-Encoding`` header is stored renamed to
``X-Crawler-Transfer-Encoding`` (as Nutch and StormCrawler do): readers must not de-chunk the
body again. A body cut short (size cap, timeout, reset) carries ``WARC-Truncated``.

A fetch's response and request records are serialised here (their block and payload digests
taken over the parts, the body never joined to its head before the one copy into the
member; FastWARC's record cost a third of a fetch's 0.12 ms, and the fetch now costs 0.06 ms
on the real pages), the ``warcinfo`` and ``revisit`` records by FastWARC; each record is then
compressed on its own into one gzip member by ISA-L (``isal.isal_zlib``) at its default
level 2. On the 2,707 pages of the real-pages benchmark sent whole (no
``Content-Encoding``), writing a fetch (both records) took 0.20 ms instead of 0.51 with
zlib's level 6 (wget's and warcio's) through FastWARC's gzip stream, for files 14% larger.
A response whose body came compressed (``Content-Encoding``, as most sites send HTML) goes
into a member of stored deflate blocks instead, written here (a copy and a CRC-32):
deflating gzip again gains only on the record's own headers (0.09 ms a fetch on those pages
as nginx gzips them). The file is buffered: `WarcWriter.flush` (at each
checkpoint, before crawl.db commits) hands it to the OS.
A record's ``WARC-Target-URI`` is the URI requested, without the user name and password a
seed URL may carry: those went in the ``Authorization`` header, stored as ``***`` like every
credential header of the request record.
A new writer always starts a new file (the next serial), so ``--resume`` never appends to a
file a crash may have torn.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import re
import socket
import struct
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from fastwarc.warc import WarcRecord, WarcRecordType
from isal import isal_zlib

from gossamer import __version__
from gossamer.errors import named
from gossamer.fetch.exchange import Exchange
from gossamer.redact import strip_userinfo
from gossamer.sinks.base import IDENTICAL_PAYLOAD, Archivable, Revisit, WarcLocation

__all__ = ["WarcLocation", "WarcWriter", "request_block", "response_block"]

log = logging.getLogger(__name__)
_SERIAL = re.compile(r"-(\d{5,})\.warc\.gz$")
_BUFFER = 1 << 20
_COMPRESS_IN_THREAD_BYTES = 512 * 1024
_GZIP_LEVEL = isal_zlib.ISAL_DEFAULT_COMPRESSION
_STORED = -1
"""The level of a member whose body is compressed already: deflate's stored blocks."""
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
"""A gzip member's header: deflate, no flags, no time, unknown system (as zlib writes it)."""
_STORED_BLOCK = 0xFFFF
_IDENTITY = frozenset({b"", b"identity"})
_RENAMED = {b"transfer-encoding": b"X-Crawler-Transfer-Encoding"}


class WarcWriter:
    """Writes fetches to rotating ``.warc.gz`` files in ``directory`` (created if needed).

    ``info`` adds fields to every file's ``warcinfo`` record. ``clock`` (unix time) names
    the files. Not thread-safe: one event loop writes.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = 1 << 30,
        prefix: str = "gossamer",
        info: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self._max_bytes = max_bytes
        self._prefix = prefix
        self._info = dict(info or {})
        self._clock = clock
        directory.mkdir(parents=True, exist_ok=True)
        self._serial = _last_serial(directory)
        self._file: BinaryIO | None = None
        self._name = ""
        self._size = 0
        self._compressor = _Compressor()
        self._stored = _Compressor(_STORED)
        self.files: list[str] = []
        """The files this writer opened, in order."""

    async def write(self, result: Archivable) -> WarcLocation | None:
        """Append the fetch's response and request records; where the response lies, or None
        for a fetch that got no response (nothing to archive). A large body is compressed in
        a worker thread (10 MB take 0.15 s), so the event loop keeps running meanwhile."""
        exchange = result.exchange
        if exchange is None:
            return None
        if isinstance(result, Revisit):
            return self._write_members(*_revisit_members(result, exchange, self._compressor))
        url, fetched_at = result.url, result.fetched_at
        if len(exchange.body) < _COMPRESS_IN_THREAD_BYTES:
            response, request = _members(url, fetched_at, exchange, self._compressor, self._stored)
        else:
            response, request = await asyncio.to_thread(
                _members, url, fetched_at, exchange, self._compressor, self._stored
            )
        return self._write_members(response, request)

    def _write_members(self, response: bytes, request: bytes) -> WarcLocation:
        """Append a response (or revisit) member and its request's; where the first lies."""
        if self._file is None or self._size >= self._max_bytes:
            self._rotate()
        location = WarcLocation(self._name, self._size, len(response))
        self._append(response)
        self._append(request)
        return location

    def flush(self) -> None:
        """Hand what is buffered to the OS (a killed process loses nothing written)."""
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                raise named(exc, self.directory / self._name) from exc

    def close(self) -> None:
        """Flush and close the current file."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                raise named(exc, self.directory / self._name) from exc

    def _rotate(self) -> None:
        self.close()
        self._serial += 1
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        self._name = f"{self._prefix}-{stamp}-{self._serial:05d}.warc.gz"
        self._file = (self.directory / self._name).open("xb", buffering=_BUFFER)
        self._size = 0
        self.files.append(self._name)
        log.info("writing WARC file %s", self.directory / self._name)
        info = WarcRecord()
        info.init_headers(record_type=WarcRecordType.warcinfo)
        info.headers["WARC-Filename"] = self._name
        info.headers["Content-Type"] = "application/warc-fields"
        fields = {
            "software": f"gossamer/{__version__}",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/",
            "hostname": socket.gethostname(),
            **self._info,
        }
        info.set_bytes_content(
            "".join(f"{k}: {_one_line(v)}\r\n" for k, v in fields.items()).encode()
        )
        self._append(self._compressor.member(info, None))

    def _append(self, member: bytes) -> None:
        """Write one gzip member."""
        assert self._file is not None
        try:
            self._file.write(member)
        except OSError as exc:
            raise named(exc, self.directory / self._name) from exc
        self._size += len(member)


def _members(
    url: str, fetched_at: float, exchange: Exchange, compressor: _Compressor, stored: _Compressor
) -> tuple[bytes, bytes]:
    """The response and request records of ``exchange``, each a gzip member; the response's
    by ``stored`` when its body came compressed. Serialised here, not by FastWARC: its
    record's fixed cost was most of a fetch's (a third of the 0.12 ms); each record's header
    is one template filled in, not a line made for each field."""
    target = _one_line(strip_userinfo(url))  # the credentials: redacted headers
    response_id, request_id = _new_id(), _new_id()
    common = f"WARC-Date: {_warc_date(fetched_at)}\r\nWARC-Target-URI: {target}\r\n"
    if exchange.peer is not None:
        common += f"WARC-IP-Address: {_one_line(exchange.peer)}\r\n"
    cut = "" if exchange.cut is None else f"WARC-Truncated: {exchange.cut}\r\n"
    response = _serialise(
        f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {response_id}\r\n{common}"
        f"Content-Type: application/http; msgtype=response\r\n{cut}"
        f"WARC-Payload-Digest: {_digest(exchange.body)}\r\n",
        _response_head(exchange),
        exchange.body,
    )
    request = _serialise(
        f"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: {request_id}\r\n{common}"
        f"Content-Type: application/http; msgtype=request\r\n"
        f"WARC-Concurrent-To: {response_id}\r\nWARC-Payload-Digest: {_EMPTY_DIGEST}\r\n",
        request_block(exchange),
        b"",
    )
    packer = stored if _encoded(exchange) else compressor
    return packer.pack(response), compressor.pack(request)


def _serialise(fields: str, head: bytes, body: bytes) -> list[bytes]:
    """A WARC/1.1 record of the header lines ``fields`` (its version line first) and the
    block ``head`` + ``body`` (its digest and length added), as the parts to write one after
    the other (the body is not copied)."""
    digest = hashlib.sha1(head)
    digest.update(body)
    header = (
        f"{fields}WARC-Block-Digest: sha1:{_base32(digest.digest())}\r\n"
        f"Content-Length: {len(head) + len(body)}\r\n\r\n"
    )
    return [header.encode("utf-8", "replace"), head, body, b"\r\n\r\n"]


class _RandomIds:
    """Record ids: random (version 4) UUIDs, their bytes read from the OS 4 KB at a time
    (``uuid.uuid4`` asks the OS for each and builds an object: 10 us an id, a twentieth of
    writing a fetch's two records); the pool is dropped in a forked child, so no two
    processes hand out the same ids."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        self._pool, self._at = b"", 0

    def next(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = os.urandom(_ID_POOL), 0
        self._at = at + 16
        h = self._pool[at : at + 16].hex()
        # the version (4) and the variant (binary 10) in their places, as RFC 9562 asks
        variant = "89ab"[int(h[16], 16) & 3]
        return f"<urn:uuid:{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}>"


_ID_POOL = 4096
_IDS = _RandomIds()


def _new_id() -> str:
    return _IDS.next()


def _digest(data: bytes) -> str:
    return "sha1:" + _base32(hashlib.sha1(data).digest())


def _spread(slot: int, width: int, count: int) -> tuple[int, int]:
    """The masks of the low and the high ``width`` bits of ``count`` slots of ``slot`` bits."""
    low = sum(((1 << width) - 1) << (slot * i) for i in range(count))
    return low, low << width


_BASE32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".ljust(256, b"\0")
_HALF = (1 << 80) - 1
_SPREADS = (
    (*_spread(128, 40, 2), 24),
    (*_spread(64, 20, 4), 12),
    (*_spread(32, 10, 8), 6),
    (*_spread(16, 5, 16), 3),
)


def _base32(digest: bytes) -> str:
    """``base64.b32encode`` of a 20-byte SHA-1 digest, a third of its time (Python's walks
    the digest five bytes at a time): the 32 five-bit groups moved apart, one a byte, in
    five steps of whole-integer masks and shifts, then named by one ``translate``."""
    bits = int.from_bytes(digest)
    bits = (bits & _HALF) | ((bits >> 80) << 128)
    for low, high, shift in _SPREADS:
        bits = (bits & low) | ((bits & high) << shift)
    return bits.to_bytes(32).translate(_BASE32).decode("ascii")


_EMPTY_DIGEST = _digest(b"")


def _encoded(exchange: Exchange) -> bool:
    """Whether the body came with a content coding (gzip, br, ...): deflate gains nothing."""
    return any(
        name.lower() == b"content-encoding" and value.strip().lower() not in _IDENTITY
        for name, value in exchange.response_headers
    )


def _revisit_members(
    result: Revisit, exchange: Exchange, compressor: _Compressor
) -> tuple[bytes, bytes]:
    """A ``revisit`` record (its profile, the capture it refers to, the response's headers
    and no body) and its request record, each a gzip member."""
    date = _warc_date(result.fetched_at)
    revisit = _record(WarcRecordType.revisit, result.url, date, exchange.peer)
    revisit.headers["Content-Type"] = "application/http; msgtype=response"
    revisit.headers["WARC-Profile"] = result.profile
    revisit.headers["WARC-Refers-To-Target-URI"] = strip_userinfo(result.url)
    revisit.headers["WARC-Refers-To-Date"] = _warc_date(result.refers_to_date)
    payload = None
    if result.profile == IDENTICAL_PAYLOAD:
        payload = _sha1(exchange.body)
    revisit.set_bytes_content(response_block(replace(exchange, body=b"")))
    request = _record(WarcRecordType.request, result.url, date, exchange.peer)
    request.headers["Content-Type"] = "application/http; msgtype=request"
    request.headers["WARC-Concurrent-To"] = _record_id(revisit)
    request.set_bytes_content(request_block(exchange))
    return compressor.member(revisit, payload), compressor.member(request, _sha1(b""))


def _record(kind: WarcRecordType, url: str, date: str, peer: str | None) -> WarcRecord:
    record = WarcRecord()
    record.init_headers(record_type=kind)
    record.headers["WARC-Date"] = date
    record.headers["WARC-Target-URI"] = strip_userinfo(url)  # the credentials: redacted headers
    if peer is not None:
        record.headers["WARC-IP-Address"] = peer
    return record


class _Compressor:
    """Serialises records (block digest added) as gzip members, each compressed on its own
    at ``level`` (`_STORED`: stored deflate blocks). Thread-safe: it keeps no state."""

    def __init__(self, level: int = _GZIP_LEVEL) -> None:
        self._level = level

    def member(self, record: WarcRecord, payload_digest: bytes | None) -> bytes:
        """``record`` (serialised by FastWARC) as one gzip member."""
        buffer = io.BytesIO()
        record.write(buffer, checksum_data=True, payload_digest=payload_digest)
        return self.pack([buffer.getvalue()])

    def pack(self, parts: list[bytes]) -> bytes:
        """The record whose bytes are ``parts``, one after the other, as one gzip member."""
        if self._level == _STORED:
            return _stored_member(*parts)
        return isal_zlib.compress(b"".join(parts), self._level, wbits=_GZIP_WBITS)


def _stored_member(*parts: bytes) -> bytes:
    """The bytes of ``parts`` as a gzip member of stored deflate blocks (RFC 1951 §3.2.4:
    each block a byte of BFINAL and type 00, its length and the length's complement, then the
    bytes), copied once."""
    size = sum(len(part) for part in parts)
    crc = 0
    for part in parts:
        crc = isal_zlib.crc32(part, crc)  # zlib's CRC-32, a ninth of its time
    data = parts[0] if len(parts) == 1 else None
    out: list[bytes | memoryview] = [_GZIP_HEADER]
    if data is None and size <= _STORED_BLOCK:  # one block: its parts as they are
        out += (struct.pack("<BHH", 1, size, size ^ 0xFFFF), *parts)
    else:
        view = memoryview(data if data is not None else b"".join(parts))
        start = 0
        while True:  # an empty record still needs its one final block
            block = view[start : start + _STORED_BLOCK]
            start += _STORED_BLOCK
            final = start >= size
            out += (struct.pack("<BHH", final, len(block), len(block) ^ 0xFFFF), block)
            if final:
                break
    out.append(struct.pack("<II", crc, size & 0xFFFFFFFF))
    return b"".join(out)


def response_block(exchange: Exchange) -> bytes:
    """The HTTP response as received: status line, raw headers, wire body."""
    return _response_head(exchange) + exchange.body


def _response_head(exchange: Exchange) -> bytes:
    """The status line and raw headers of the response, and the blank line after them."""
    status = f"{exchange.version} {exchange.status} {exchange.reason}".encode(
        errors="surrogateescape"  # the reason phrase's bytes as received (`Exchange.reason`)
    )
    if not exchange.response_headers:
        return status + b"\r\n\r\n"
    lines = [
        _RENAMED.get(name.lower(), name) + b": " + value
        for name, value in exchange.response_headers
    ]
    head = b"\r\n".join(lines)
    breaks = len(lines) - 1
    if head.count(b"\r") != breaks or head.count(b"\n") != breaks:  # a header holds one
        head = b"\r\n".join(_clean(line) for line in lines)
    return status + b"\r\n" + head + b"\r\n\r\n"


def request_block(exchange: Exchange) -> bytes:
    """The HTTP request head as sent (a GET has no body)."""
    lines = [f"{exchange.method} {exchange.target} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in exchange.request_headers]
    text = "\r\n".join(lines)
    breaks = len(lines) - 1
    if text.count("\r") != breaks or text.count("\n") != breaks:  # a line holds one
        text = "\r\n".join(_one_line(line) for line in lines)
    return (text + "\r\n\r\n").encode("utf-8", "surrogateescape")


def _clean(data: bytes) -> bytes:
    """No header line may carry a line break of its own (a record would not parse)."""
    return data.replace(b"\r", b" ").replace(b"\n", b" ")


def _record_id(record: WarcRecord) -> str:
    record_id = record.record_id
    assert record_id is not None  # init_headers gives every record one
    return record_id


def _one_line(value: str) -> str:
    return value.replace("\r", " ").replace("\n", " ")


def _sha1(data: bytes) -> bytes:
    return hashlib.sha1(data).digest()


def _warc_date(when: float) -> str:
    """``when`` as a WARC date to the microsecond (``isoformat``: two thirds of ``strftime``'s
    time; the same text from year 1000 on, and ``+00:00`` is always its last six letters)."""
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def _last_serial(directory: Path) -> int:
    serials = [int(m.group(1)) for p in directory.iterdir() if (m := _SERIAL.search(p.name))]
    return max(serials, default=0)

"""Content decoding under caps: gzip, x-gzip, deflate (zlib or raw), br and zstd, streamed.

Decoding stops once ``decoded_cap`` bytes are produced, so a decompression bomb never
allocates much more than the cap; at most ``wire_cap`` bytes are taken from the wire.

As curl and browsers do, every member of a multi-member gzip body is decoded, in turn, under
the same caps. Bytes after the end of the compressed data that are not another gzip member
stop the reading: what was decoded is kept and `Body.flags` says ``trailing-garbage``. Whatever
the coding's name, the first bytes choose between gzip, zlib-wrapped and raw deflate; a raw
deflate stream whose first two bytes happen to pass the zlib header check fails as zlib before
any output, and is then read again as raw deflate (``deflate-raw-fallback``).

zstd (RFC 8878) is read the same way: every frame of the body in turn (skippable frames
too), under the same caps and the same bomb ratio, bytes after a frame that start no other
frame are ``trailing-garbage``, and past `MAX_MEMBERS` frames the body is cut
(``zstd-frames-cut``). A frame asking for a window over `ZSTD_WINDOW_LOG_MAX` (8 MiB, the
limit RFC 8878 §3.1.1.1.2 sets for the content coding, which browsers apply too) is a
``decode-error`` before it allocates it: the window is memory a hostile frame could ask for.

Stacked codings (``Content-Encoding: zstd, gzip``: zstd applied first) are undone in reverse
order (RFC 9110 §8.4.1), up to `MAX_CODINGS`, every layer under the decoded cap and the whole
under the bomb ratio; a coding not supported anywhere in the list is
``unsupported-encoding`` (the raw body is kept, and not read as the page).

gzip and deflate are inflated by ISA-L (``isal.isal_zlib``, the zlib interface over Intel's
ISA-L): the same streams, the same ``max_length`` bound on each call, half of zlib's CPU on
gzip-compressed HTML (0.120 against 0.060 ms a page of Debian's documentation sets).
"""

from __future__ import annotations

import functools
import sys
import zlib
from collections.abc import Callable
from typing import Protocol, cast
from urllib.parse import urlsplit

import brotli
from isal import isal_zlib

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # the same module, for the Pythons before it came into the standard library
    from backports import zstd

__all__ = ["BOMB_RATIO", "ROBOTS_TXT_BYTES", "Body", "body_caps"]

_BROTLI_STEP = 64 * 1024

#: A capped decode is a ``decompression-bomb`` when decoded/consumed compressed bytes exceed this.
BOMB_RATIO = 100


ROBOTS_TXT_BYTES = 500 * 1024
"""How much of a robots.txt is read (RFC 9309 §2.5: crawlers must parse at least 500 KiB),
whatever the page caps: a larger file is cut there, never read whole, and a smaller page cap
does not cut its rules short."""


def body_caps(url: str, wire_cap: int, decoded_cap: int) -> tuple[int, int]:
    """The wire and decoded caps of ``url``'s body: a robots.txt (a ``/robots.txt`` path, as
    RFC 9309 places it) is read up to `ROBOTS_TXT_BYTES`, any other body up to the caps."""
    if "/robots.txt" in url and urlsplit(url).path == "/robots.txt":
        return ROBOTS_TXT_BYTES, ROBOTS_TXT_BYTES
    return wire_cap, decoded_cap


class _Decoder(Protocol):
    capped: bool
    consumed: int
    flags: list[str]

    def feed(self, data: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def stopped(self) -> bool: ...


class _ZlibDecoder:
    """gzip, x-gzip and deflate (zlib-wrapped or raw, told apart by the first two bytes)."""

    def __init__(self, cap: int) -> None:
        self._room = cap
        self._obj: isal_zlib.Decompress | None = None
        self._wbits = 0
        self._head = b""  # the first bytes of a stream, until its format can be told
        self._kept = b""  # a stream's input until it yields output, to read it again
        self._produced = False
        self._members = 0
        self._stopped = False
        self._fallback_pending = False
        self.capped = False
        self.consumed = 0
        self.flags: list[str] = []

    def feed(self, data: bytes) -> bytes:
        if len(data) <= _SLICE or not self._members:
            return self._feed(data)
        # A stream ends with its remaining input copied (``unused_data``): fed in slices, a
        # body of many tiny gzip members costs linear time, not quadratic. The first stream
        # reads a chunk whole (most bodies are one stream), and what follows its end goes in
        # slices (`_feed`).
        return b"".join(self._feed(data[i : i + _SLICE]) for i in range(0, len(data), _SLICE))

    def _feed(self, data: bytes) -> bytes:
        parts: list[bytes] = []
        while data and not self._stopped and not self.capped:
            if self._obj is None:
                data = self._head + data
                if len(data) < 2:
                    self._head = data
                    break
                self._head = b""
                if not self._open(data):
                    break
            data = self._decompress(data, parts)
            if len(data) > _SLICE:  # a stream ended early in a whole chunk: the rest in slices
                parts.append(self.feed(data))
                break
        return b"".join(parts)

    @property
    def complete(self) -> bool:
        """The data so far ends at the end of a stream (or stopped at trailing garbage)."""
        if self._stopped:
            return True
        return self._members > 0 and self._obj is None and not self._head

    @property
    def stopped(self) -> bool:
        """Trailing garbage was met: the rest of the body is not worth reading."""
        return self._stopped

    def _open(self, head: bytes) -> bool:
        """Start the next stream; False (and stop) if ``head`` cannot start one."""
        wbits = _wbits(head)
        if self._members and (wbits != _GZIP or self._wbits != _GZIP):
            self._stopped = True
            self.flags.append("trailing-garbage")
            return False
        self._obj = isal_zlib.decompressobj(wbits)
        self._wbits = wbits
        self._kept = b""
        self._produced = False
        return True

    def _decompress(self, data: bytes, parts: list[bytes]) -> bytes:
        """Feed ``data`` to the current stream; returns what follows the stream's end."""
        obj = self._obj
        assert obj is not None
        try:
            # asking for one byte more than the room tells "exactly full" from "overflowing"
            out = obj.decompress(data, self._room + 1)
        except _INFLATE_ERRORS:
            if self._produced or self._wbits != _ZLIB or self._members:
                raise
            if len(self._kept) >= _RETRY_LIMIT:
                raise
            data, self._kept = self._kept + data, b""
            self._obj = isal_zlib.decompressobj(_RAW)
            self._wbits = _RAW
            self._fallback_pending = True
            return data
        if not self._produced and len(self._kept) < _RETRY_LIMIT:
            self._kept += data
        self.consumed += len(data) - len(obj.unconsumed_tail) - len(obj.unused_data)
        if out:
            self._produced = True
            self._kept = b""
            if self._fallback_pending:
                self._fallback_pending = False
                self.flags.append("deflate-raw-fallback")
        if len(out) > self._room:
            out = out[: self._room]
            self.capped = True
        self._room -= len(out)
        parts.append(out)
        if not obj.eof:
            return b""
        self._members += 1
        self._obj = None
        if self._members >= MAX_MEMBERS and obj.unused_data:
            self.capped = True  # the body is cut here: flagged truncated
            self.flags.append("gzip-members-cut")
            return b""
        return obj.unused_data


_GZIP = 16 + zlib.MAX_WBITS
_ZLIB = zlib.MAX_WBITS
_RAW = -zlib.MAX_WBITS
_RETRY_LIMIT = 64 * 1024
# isal's stub types its ``error`` as an instance; it is the exception class inflating raises
_INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, cast(type[Exception], isal_zlib.error))
_SLICE = 4096
MAX_MEMBERS = 10_000
"""gzip members decoded in one body; a body of more is cut there (``gzip-members-cut``)."""


def _wbits(head: bytes) -> int:
    if head[0] == 0x1F and head[1] == 0x8B:
        return _GZIP
    if head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0:
        return _ZLIB
    return _RAW


class _BrotliDecoder:
    """br. Brotli may overshoot output_buffer_limit up to ~2x, so output is asked for in
    steps of at most `_BROTLI_STEP` bytes: memory stays within the cap plus one step."""

    def __init__(self, cap: int) -> None:
        self._room = cap
        self._obj = brotli.Decompressor()
        self.capped = False
        self.consumed = 0
        self.flags: list[str] = []

    def feed(self, data: bytes) -> bytes:
        self.consumed += len(data)  # an upper bound: brotli may still hold some of it
        parts = []
        while True:
            limit = min(self._room + 1, _BROTLI_STEP)
            out: bytes = self._obj.process(data, output_buffer_limit=limit)
            if len(out) > self._room:
                out = out[: self._room]
                self.capped = True
            self._room -= len(out)
            parts.append(out)
            # after a limited call, brotli takes only empty input until it can accept more
            if self.capped or not out or self._obj.can_accept_more_data():
                return b"".join(parts)
            data = b""

    @property
    def complete(self) -> bool:
        return bool(self._obj.is_finished())

    @property
    def stopped(self) -> bool:
        return False


ZSTD_WINDOW_LOG_MAX = 23
"""The largest window a zstd frame may ask for: 2**23 bytes (8 MiB, RFC 8878 §3.1.1.1.2)."""
_ZSTD_OPTIONS: dict[int, int] = {zstd.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50


def _starts_frame(head: bytes) -> bool:
    """Whether four bytes open a zstd frame or a skippable frame."""
    magic = int.from_bytes(head[:4], "little")
    return head[:4] == _ZSTD_MAGIC or magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC


class _ZstdDecoder:
    """zstd: frame after frame, output asked for in steps of at most `_BROTLI_STEP` bytes
    (the decompressor keeps the input it has not used yet, so memory stays within the cap
    plus one step)."""

    def __init__(self, cap: int) -> None:
        self._room = cap
        self._obj: zstd.ZstdDecompressor | None = None
        self._head = b""  # the first bytes of a frame, until its magic number can be told
        self._frames = 0
        self._stopped = False
        self.capped = False
        self.consumed = 0
        self.flags: list[str] = []

    def feed(self, data: bytes) -> bytes:
        # slices, as for gzip: the bytes after each frame are copied (``unused_data``)
        return b"".join(self._feed(data[i : i + _SLICE]) for i in range(0, len(data), _SLICE))

    def _feed(self, data: bytes) -> bytes:
        self.consumed += len(data)  # an upper bound: the decompressor may still hold some
        parts: list[bytes] = []
        while data and not self._stopped and not self.capped:
            if self._obj is None:
                data = self._head + data
                if len(data) < 4:
                    self._head = data
                    break
                self._head = b""
                if not self._open(data):
                    break
            data = self._drain(data, parts)
        return b"".join(parts)

    def _open(self, head: bytes) -> bool:
        """Start the next frame; False (and stop) if ``head`` cannot start one."""
        if self._frames and not _starts_frame(head):
            self._stopped = True
            self.flags.append("trailing-garbage")
            return False
        self._obj = zstd.ZstdDecompressor(options=_ZSTD_OPTIONS)
        return True

    def _drain(self, data: bytes, parts: list[bytes]) -> bytes:
        """Feed ``data`` to the current frame and take its output under the cap; returns
        what follows the frame's end."""
        obj = self._obj
        assert obj is not None
        while True:
            out = obj.decompress(data, min(self._room + 1, _BROTLI_STEP))
            data = b""
            if len(out) > self._room:
                out = out[: self._room]
                self.capped = True
            self._room -= len(out)
            parts.append(out)
            if self.capped or obj.eof or obj.needs_input or not out:
                break
        if not obj.eof:
            return b""
        self._frames += 1
        self._obj = None
        if self._frames >= MAX_MEMBERS and obj.unused_data:
            self.capped = True
            self.flags.append("zstd-frames-cut")
            return b""
        return obj.unused_data

    @property
    def complete(self) -> bool:
        if self._stopped:
            return True
        return self._frames > 0 and self._obj is None and not self._head

    @property
    def stopped(self) -> bool:
        return self._stopped


_DECODERS: dict[str, Callable[[int], _Decoder]] = {
    "gzip": _ZlibDecoder,
    "x-gzip": _ZlibDecoder,
    "deflate": _ZlibDecoder,
    "br": _BrotliDecoder,
    "zstd": _ZstdDecoder,
}


MAX_CODINGS = 3
"""Content codings undone for one body (``Content-Encoding: gzip, br``); more are
``unsupported-encoding``."""


class _StackedDecoder:
    """Several codings, applied by the server in the order named (``Content-Encoding: zstd,
    gzip``: zstd first), undone in reverse (RFC 9110 §8.4.1): each layer's output is the next
    one's input. Every layer stops at the decoded cap, so memory stays bounded whatever each
    layer's ratio; ``consumed`` is the wire bytes, for the bomb ratio of the whole."""

    def __init__(self, layers: list[_Decoder]) -> None:
        self._layers = layers  # in decoding order: the last coding applied first
        self.capped = False
        self.consumed = 0
        self.flags: list[str] = []

    def feed(self, data: bytes) -> bytes:
        for layer in self._layers:
            if not data:
                break
            data = layer.feed(data)
        self.capped = any(layer.capped for layer in self._layers)
        self.consumed = self._layers[0].consumed
        self.flags = [flag for layer in self._layers for flag in layer.flags]
        return data

    @property
    def complete(self) -> bool:
        return all(layer.complete for layer in self._layers)

    @property
    def stopped(self) -> bool:
        return any(layer.stopped for layer in self._layers)


@functools.lru_cache(maxsize=256)
def _codings(encoding: str) -> tuple[str, ...]:
    """The codings of a ``Content-Encoding`` value in the order to undo them (identity left
    out); raises KeyError for more than `MAX_CODINGS` (a crawl meets few distinct values:
    the last ones are remembered)."""
    codings = [c.strip().lower() for c in encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > MAX_CODINGS:
        raise KeyError(encoding)
    return tuple(reversed(codings))


def _decoder(encoding: str | None, cap: int) -> _Decoder | None:
    """The decoder of a ``Content-Encoding`` value (None: identity); raises KeyError for a
    coding not supported (or too many)."""
    if not encoding:
        return None
    codings = _codings(encoding) if len(encoding) <= 256 else _codings.__wrapped__(encoding)
    layers = [_DECODERS[coding](cap) for coding in codings]
    if len(layers) <= 1:
        return layers[0] if layers else None
    return _StackedDecoder(layers)


class Body:
    """Accumulates one response body under the wire cap and the decoded cap."""

    __slots__ = (
        "_chunks",
        "_decoder",
        "_raw",
        "_wire_cap",
        "decoded",
        "error",
        "truncated",
        "wire",
    )

    def __init__(
        self, encoding: str | None, wire_cap: int, decoded_cap: int, *, keep_raw: bool = False
    ) -> None:
        self._chunks: list[bytes] = []
        self._raw: list[bytes] | None = [] if keep_raw else None
        self._decoder: _Decoder | None = None
        self._wire_cap = wire_cap
        self.decoded = 0
        self.wire = 0
        self.truncated = False
        self.error: str | None = None
        try:
            self._decoder = _decoder(encoding, decoded_cap)
        except KeyError:
            self.error = "unsupported-encoding"
        else:
            if self._decoder is None:
                self._wire_cap = min(wire_cap, decoded_cap)

    def feed(self, chunk: bytes) -> bool:
        """Take one chunk from the wire; False means stop reading (cap reached or bad data)."""
        self.wire += len(chunk)
        over = self.wire - self._wire_cap
        if over > 0:
            chunk = chunk[: len(chunk) - over]
            self.truncated = True
        if self._raw is not None:
            self._raw.append(chunk)
        if self._decoder is not None:
            try:
                chunk = self._decoder.feed(chunk)
            except (*_INFLATE_ERRORS, brotli.error, zstd.ZstdError):
                self.error = "decode-error"
                self.truncated = True
                return False
            if self._decoder.capped:
                self.truncated = True
                if self.decoded + len(chunk) > BOMB_RATIO * self._decoder.consumed:
                    self.error = "decompression-bomb"
        self._chunks.append(chunk)
        self.decoded += len(chunk)
        if self._decoder is not None and self._decoder.stopped:
            return False
        return not self.truncated

    def finish(self) -> None:
        """Mark a compressed stream that ended early as truncated."""
        if self._decoder is not None and self.wire and not self._decoder.complete:
            self.truncated = True

    @property
    def flags(self) -> tuple[str, ...]:
        """Decoding fallbacks taken: ``deflate-raw-fallback`` (a deflate body that looked
        zlib-wrapped was raw), ``trailing-garbage`` (bytes after the compressed data, neither
        empty nor a gzip member or zstd frame, were left unread)."""
        return () if self._decoder is None else tuple(self._decoder.flags)

    def raw(self) -> bytes | None:
        """The body as taken from the wire (before decoding, up to the wire cap), if kept."""
        return None if self._raw is None else b"".join(self._raw)

    def value(self) -> bytes:
        """The body decoded so far."""
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

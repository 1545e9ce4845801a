"""Content decoding under caps: gzip, x-gzip, deflate (zlib or raw) and br, streamed.

Decoding stops once ``decoded_cap`` bytes are produced, so a decompression bomb never
allocates much more than the cap; at most ``wire_cap`` bytes are taken from the wire.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Protocol

import brotli

__all__ = ["BOMB_RATIO", "Body"]

_BROTLI_STEP = 64 * 1024

#: A capped decode is a ``decompression-bomb`` when decoded/consumed compressed bytes exceed this.
BOMB_RATIO = 100


class _Decoder(Protocol):
    capped: bool
    consumed: int

    def feed(self, data: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...


class _ZlibDecoder:
    """gzip, x-gzip and deflate (zlib-wrapped or raw, told apart by the first two bytes)."""

    def __init__(self, cap: int) -> None:
        self._room = cap
        self._obj: zlib._Decompress | None = None
        self._head = b""
        self.capped = False
        self.consumed = 0

    def feed(self, data: bytes) -> bytes:
        if self._obj is None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            self._obj = zlib.decompressobj(_wbits(data))
        # asking for one byte more than the room tells "exactly full" from "overflowing"
        out = self._obj.decompress(data, self._room + 1)
        self.consumed += len(data) - len(self._obj.unconsumed_tail)
        if len(out) > self._room:
            out = out[: self._room]
            self.capped = True
        self._room -= len(out)
        return out

    @property
    def complete(self) -> bool:
        return self._obj is not None and self._obj.eof


def _wbits(head: bytes) -> int:
    if head[0] == 0x1F and head[1] == 0x8B:
        return 16 + zlib.MAX_WBITS
    if head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS


class _BrotliDecoder:
    """br. Brotli may overshoot output_buffer_limit up to ~2x, so output is asked for in
    steps of at most `_BROTLI_STEP` bytes: memory stays within the cap plus one step."""

    def __init__(self, cap: int) -> None:
        self._room = cap
        self._obj = brotli.Decompressor()
        self.capped = False
        self.consumed = 0

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


_DECODERS: dict[str, Callable[[int], _Decoder]] = {
    "gzip": _ZlibDecoder,
    "x-gzip": _ZlibDecoder,
    "deflate": _ZlibDecoder,
    "br": _BrotliDecoder,
}


class Body:
    """Accumulates one response body under the wire cap and the decoded cap."""

    __slots__ = ("_chunks", "_decoder", "_wire_cap", "decoded", "error", "truncated", "wire")

    def __init__(self, encoding: str | None, wire_cap: int, decoded_cap: int) -> None:
        self._chunks: list[bytes] = []
        self._decoder: _Decoder | None = None
        self._wire_cap = wire_cap
        self.decoded = 0
        self.wire = 0
        self.truncated = False
        self.error: str | None = None
        coding = (encoding or "identity").strip().lower()
        if coding in _DECODERS:
            self._decoder = _DECODERS[coding](decoded_cap)
        elif coding == "identity":
            self._wire_cap = min(wire_cap, decoded_cap)
        else:
            self.error = "unsupported-encoding"

    def feed(self, chunk: bytes) -> bool:
        """Take one chunk from the wire; False means stop reading (cap reached or bad data)."""
        self.wire += len(chunk)
        over = self.wire - self._wire_cap
        if over > 0:
            chunk = chunk[: len(chunk) - over]
            self.truncated = True
        if self._decoder is not None:
            try:
                chunk = self._decoder.feed(chunk)
            except (zlib.error, brotli.error):
                self.error = "decode-error"
                self.truncated = True
                return False
            if self._decoder.capped:
                self.truncated = True
                if self.decoded + len(chunk) > BOMB_RATIO * self._decoder.consumed:
                    self.error = "decompression-bomb"
        self._chunks.append(chunk)
        self.decoded += len(chunk)
        return not self.truncated

    def finish(self) -> None:
        """Mark a compressed stream that ended early as truncated."""
        if self._decoder is not None and self.wire and not self._decoder.complete:
            self.truncated = True

    def value(self) -> bytes:
        """The body decoded so far."""
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

"""One sitemap or feed file, read as its bytes arrive: gzip told by its magic bytes, the
format by the content, the protocol's limits held.

A :class:`SitemapReader` takes the file's chunks (``feed``) and gives back the entries each
completes; ``done`` turns true once a limit cut the file, so the caller stops receiving.
Whatever the input, the reader holds at most one decompressed slice (``SLICE_BYTES``), one
parser block and one record: a gzip bomb stops at ``Limits.max_bytes`` inflated, a
ten-million-entry sitemap at ``Limits.max_urls`` entries. One call reads at most one slice
(uncompressed): what a chunk holds beyond it is read by ``more`` while ``backlog`` says so,
so a caller on an event loop gives the loop a turn between slices (a 300 KB gzip of 50,000
entries read in one call held a crawl's loop for seconds).
"""

from __future__ import annotations

import zlib
from typing import Protocol

from gossamer.discover.model import Flag, Format, Item, Limits
from gossamer.discover.text import TextReader
from gossamer.discover.xmlfeed import XmlReader

__all__ = ["GZIP_MAGIC", "SLICE_BYTES", "SitemapReader", "read_file"]

GZIP_MAGIC = b"\x1f\x8b"
SLICE_BYTES = 64 * 1024
"""Most bytes read (inflated from gzip, or as they came) in one call."""

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_STARTS = (b"\xff\xfe", b"\xfe\xff", b"\x00<", b"<\x00")
_SPACE = b" \t\r\n\x0b\x0c"


class _Format(Protocol):
    format: Format
    flags: list[Flag]
    count: int
    stopped: bool

    def feed(self, data: bytes) -> None: ...
    def close(self, *, cut: bool = False) -> None: ...


class SitemapReader:
    """Reads one sitemap or feed (XML, gzip, plain text, RSS, Atom) fed in chunks."""

    def __init__(self, url: str, limits: Limits | None = None) -> None:
        self.url = url
        self._limits = limits or Limits()
        self._out: list[Item] = []
        self._flags: list[Flag] = []
        self._received = 0
        self.bytes_read = 0
        """Uncompressed bytes handed to the parser."""
        self._head = bytearray()  # the first bytes, until the format is told
        self._tail = b""  # bytes received, not read yet
        self._over = False  # more than the limit received: cut once the tail is read
        self._gzip: zlib._Decompress | None = None
        self._inflating = False  # the last inflate filled its slice: more may come out
        self._told_gzip = False
        self._started = False  # a BOM was looked for
        self._format: _Format | None = None
        self._cut = False

    @property
    def done(self) -> bool:
        """Nothing more will be read (a limit cut the file, or it was closed)."""
        return self._cut or (self._format is not None and self._format.stopped)

    @property
    def format(self) -> Format:
        """What the file turned out to be (``unknown`` until its first bytes are read)."""
        return self._format.format if self._format is not None else Format.UNKNOWN

    @property
    def count(self) -> int:
        """Entries (or child sitemaps) read so far."""
        return self._format.count if self._format is not None else 0

    @property
    def flags(self) -> tuple[Flag, ...]:
        """What went wrong so far, in the order seen."""
        inner = self._format.flags if self._format is not None else []
        return tuple(dict.fromkeys([*self._flags, *inner]))

    @property
    def backlog(self) -> bool:
        """Bytes received are left to read (by :meth:`more`)."""
        return self._told_gzip and not self.done and (bool(self._tail) or self._inflating)

    def feed(self, chunk: bytes) -> list[Item]:
        """Takes the file's next bytes and reads a slice of them (:meth:`more` the rest);
        returns the entries read."""
        if not self.done and chunk and not self._over:
            self._received += len(chunk)
            over = self._received - self._limits.max_bytes
            if over > 0:
                chunk = chunk[: len(chunk) - over]
                self._over = True
            self._tail += chunk
            self._step()
        return self._take()

    def more(self) -> list[Item]:
        """Reads the next slice of the bytes received; returns the entries read."""
        if self.backlog:
            self._step()
        return self._take()

    def close(self) -> list[Item]:
        """Reads what is left at the end of the file; returns the entries it completed."""
        while self.backlog:
            self._step()
        if not self._told_gzip and self._tail:
            self._told_gzip = True
            self._plain(self._tail, final=True)
        elif self._gzip is not None and not self._gzip.eof and not self._cut:
            self._flag(Flag.BROKEN_GZIP)
        if self._format is None and self._head and not self._cut:
            self._choose(final=True)
        if self._format is not None:
            self._format.close(cut=self._cut)
        self._cut = True
        return self._take()

    def cut(self, flag: Flag) -> None:
        """Read no more of the file (its caller needs none of the rest), flagged ``flag``."""
        self._cut_off(flag)

    def _take(self) -> list[Item]:
        items = self._out.copy()  # the format reader keeps appending to this list
        self._out.clear()
        return items

    def _flag(self, flag: Flag) -> None:
        if flag not in self._flags:
            self._flags.append(flag)

    def _cut_off(self, flag: Flag) -> None:
        self._flag(flag)
        self._cut = True

    def _step(self) -> None:
        """Reads one slice of the tail (gzip told by its first bytes)."""
        if not self._told_gzip:
            if len(self._tail) < len(GZIP_MAGIC):
                return
            self._told_gzip = True
            if self._tail.startswith(GZIP_MAGIC):
                self._gzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self._gzip is None:
            data, self._tail = self._tail[:SLICE_BYTES], self._tail[SLICE_BYTES:]
            self._plain(data, final=False)
        else:
            self._inflate(self._gzip)
        if self._over and not self.backlog and not self._cut:
            self._cut_off(Flag.TOO_LARGE)

    def _inflate(self, gzip: zlib._Decompress) -> None:
        try:
            out = gzip.decompress(self._tail, SLICE_BYTES)
        except zlib.error:
            self._tail = b""
            self._cut_off(Flag.BROKEN_GZIP)
            return
        self._tail = gzip.unconsumed_tail
        self._inflating = len(out) >= SLICE_BYTES
        if gzip.eof:
            self._inflating = False
            rest = gzip.unused_data
            self._tail = rest if rest.startswith(GZIP_MAGIC) else b""
            if self._tail:  # the next member of a multi-member file
                self._gzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._plain(out, final=False)

    def _plain(self, data: bytes, *, final: bool) -> None:
        room = self._limits.max_bytes - self.bytes_read
        if len(data) > room:
            data = data[:room]
            bomb = self._gzip is not None and self.bytes_read > (
                self._limits.bomb_ratio * max(self._received, 1)
            )
            self._flag(Flag.GZIP_BOMB if bomb else Flag.TOO_LARGE)
            self._cut = True
        self.bytes_read += len(data)
        if self._format is None:
            self._head += data
            self._choose(final=final)
        elif data:
            self._format.feed(data)

    def _choose(self, *, final: bool) -> None:
        """Tells the format from the first bytes past a BOM and white space."""
        if not self._started:
            if len(self._head) < 4 and not (final or self._cut):
                return
            self._started = True
            if self._head.startswith(_UTF8_BOM):
                del self._head[: len(_UTF8_BOM)]
            elif self._head.startswith(_UTF16_STARTS):
                self._start(XmlReader(self.url, self._limits, self._out))
                return
        head = bytes(self._head).lstrip(_SPACE)
        self._head.clear()
        if head:
            reader: _Format
            if head.startswith(b"<"):
                reader = XmlReader(self.url, self._limits, self._out)
            else:
                reader = TextReader(self.url, self._limits, self._out)
            self._format = reader
            reader.feed(head)

    def _start(self, reader: _Format) -> None:
        self._format = reader
        reader.feed(bytes(self._head))
        self._head.clear()


def read_file(
    url: str, body: bytes, limits: Limits | None = None
) -> tuple[list[Item], SitemapReader]:
    """Reads a whole file at once (tests, small bodies): its entries and the reader, whose
    ``format``, ``count`` and ``flags`` tell the rest."""
    reader = SitemapReader(url, limits)
    items = reader.feed(body)
    items += reader.close()
    return items, reader

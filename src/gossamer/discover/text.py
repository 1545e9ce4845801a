"""The reader of plain-text sitemaps: one URL per line (UTF-8), nothing else.

Lines are read as they arrive; a line longer than ``max_url_chars`` is skipped to its end
without being kept, so no buffer grows past that whatever the input.
"""

from __future__ import annotations

from gossamer.discover.model import Entry, Flag, Format, Item, Limits

__all__ = ["TextReader"]


class TextReader:
    """Reads one plain-text sitemap fed in chunks; entries go to ``out`` line by line."""

    def __init__(self, source: str, limits: Limits, out: list[Item]) -> None:
        self.source = source
        self.format = Format.TEXT
        self.flags: list[Flag] = []
        self.count = 0
        self.stopped = False
        self._limits = limits
        self._out = out
        self._line = bytearray()
        self._skipping = False  # inside a line already too long

    def feed(self, data: bytes) -> None:
        """Reads ``data``, the file's next bytes."""
        start = 0
        while not self.stopped:
            end = data.find(b"\n", start)
            if end < 0:
                self._keep(data[start:])
                return
            self._keep(data[start:end])
            self._line_end()
            start = end + 1

    def close(self, *, cut: bool = False) -> None:
        """Reads the last line (unless the file was ``cut`` short: it may be half a URL)."""
        if not cut and not self.stopped:
            self._line_end()
        self.stopped = True

    def _keep(self, piece: bytes) -> None:
        if self._skipping:
            return
        if len(self._line) + len(piece) > self._limits.max_url_chars:
            self._skipping = True
            self._line.clear()
            if Flag.LONG_URL not in self.flags:
                self.flags.append(Flag.LONG_URL)
            return
        self._line += piece

    def _line_end(self) -> None:
        line = self._line.decode("utf-8", "replace").strip()
        self._line.clear()
        self._skipping = False
        if not line.startswith(("http://", "https://")):
            return
        if self.count >= self._limits.max_urls:
            self.stopped = True
            self.flags.append(Flag.TOO_MANY_URLS)
            return
        self.count += 1
        self._out.append(Entry(line, None, None, None, self.source))

"""pages.jsonl: one JSON object per finished URL, and items.jsonl: one per item a rule read,
appended after each checkpoint commit.

Each file mirrors a crawl.db table line for line (``pages``, ``items``), so after a crash the
lines it lacks are the rows past its line count (see ``crawl.open_stages``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gossamer.errors import named
from gossamer.safe import json_lines
from gossamer.sinks.base import Item, PageRecord

_WRITE_BYTES = 1 << 20
"""Bytes of JSON lines encoded and handed to the file at a time."""


class JsonlSink:
    """Appends records to a JSON-lines file, line for line in crawl.db's order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("ab")

    async def write(self, records: list[PageRecord]) -> None:
        """Append and flush to the OS (a killed process loses nothing written here).

        Written a megabyte at a time: a checkpoint after a slow commit holds thousands of
        records, and their lines encoded at once would cost the process that much memory
        (twice, with a line break to escape)."""
        if not records:
            return
        lines = bytearray()
        try:
            for record in records:
                record.json_into(lines)
                lines += b"\n"
                if len(lines) >= _WRITE_BYTES:
                    self._file.write(json_lines(lines))
                    lines = bytearray()
            if lines:
                self._file.write(json_lines(lines))
            self._file.flush()
        except OSError as exc:
            raise named(exc, self.path) from exc

    def close(self) -> None:
        """Flush and close."""
        try:
            self._file.close()
        except OSError as exc:
            raise named(exc, self.path) from exc


class ItemJsonlSink:
    """Appends the items records carry (``found``) to items.jsonl, in crawl.db's order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("ab")

    async def write(self, records: list[PageRecord]) -> None:
        """Append the records' items and flush to the OS."""
        self.write_items(item for record in records for item in record.found)

    def write_items(self, items: Iterable[Item]) -> None:
        """Append items (the catch-up after a crash) and flush to the OS."""
        lines = "".join(item.to_json() + "\n" for item in items)
        if lines:
            try:
                self._file.write(lines.encode("utf-8"))
                self._file.flush()
            except OSError as exc:
                raise named(exc, self.path) from exc

    def close(self) -> None:
        """Flush and close."""
        try:
            self._file.close()
        except OSError as exc:
            raise named(exc, self.path) from exc


def repair_jsonl(path: Path, chunk: int = 1 << 20) -> int:
    """Cut a torn last line left by a crash; return the number of complete lines."""
    if not path.exists():
        return 0
    lines = 0
    end = 0
    with path.open("rb+") as handle:
        offset = 0
        while block := handle.read(chunk):
            count = block.count(b"\n")
            if count:
                lines += count
                end = offset + block.rfind(b"\n") + 1
            offset += len(block)
        if end != offset:
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
    return lines

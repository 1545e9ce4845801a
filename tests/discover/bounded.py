"""Helpers of the bounded-time tests: time and peak memory of a block, lazy hostile input."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from gossamer.discover import Entry, SitemapReader
from gossamer.discover.model import Child

MIB = 1024 * 1024


@dataclass
class Cost:
    seconds: float = 0.0
    peak_bytes: int = 0


@contextmanager
def bounded(seconds: float, mib: float) -> Iterator[Cost]:
    """Asserts the block ran within ``seconds`` and its allocations (Python's, expat's and
    zlib's: all go through Python's allocators, which tracemalloc sees) peaked under
    ``mib``."""
    cost = Cost()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        yield cost
    finally:
        cost.seconds = time.perf_counter() - started
        cost.peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert cost.seconds < seconds, cost
    assert cost.peak_bytes < mib * MIB, cost


@dataclass
class Fed:
    """What feeding a reader until it was done came to."""

    items: list[Entry | Child]
    consumed: int
    """Bytes taken from the input before the reader said it was done."""


def feed_until_done(reader: SitemapReader, chunks: Iterable[bytes]) -> Fed:
    """Feeds ``chunks`` as a caller streaming a body does: stops once ``reader.done``.
    Only a count of entries is kept, so the test's own memory stays small."""
    consumed = 0
    items: list[Entry | Child] = []
    for chunk in chunks:
        consumed += len(chunk)
        got = reader.feed(chunk)
        items.extend(got[:10])
        while reader.backlog:
            items.extend(reader.more()[:10])
        if reader.done:
            break
    items.extend(reader.close()[:10])
    return Fed(items, consumed)


def repeat(head: bytes, body: bytes, times: int, tail: bytes = b"") -> Iterator[bytes]:
    """``head``, then ``body`` ``times`` times in chunks of about 64 KiB, then ``tail``:
    generated lazily, never held whole."""
    yield head
    per_chunk = max(1, 65536 // len(body))
    block = body * per_chunk
    for _ in range(times // per_chunk):
        yield block
    yield body * (times % per_chunk)
    yield tail

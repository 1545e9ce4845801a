"""The embedded crawl's content digests: an index in memory (:class:`NearIndex`), its first
URLs staged into crawl.db's ``digests`` table so ``--resume`` keeps them (:class:`LocalDigests`).
"""

from __future__ import annotations

from collections import Counter

from gossamer.crawldb import CrawlDB
from gossamer.digests.base import (
    DEFAULT_THRESHOLD,
    MAX_BUCKET,
    MAX_THRESHOLD,
    Digest,
    DigestStats,
    Match,
    bands,
)

__all__ = ["LocalDigests", "NearIndex"]

_MASK = (1 << 64) - 1


class NearIndex:
    """First URLs by exact hash and by SimHash (banded), in memory; synchronous."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        if not 0 <= threshold <= MAX_THRESHOLD:
            raise ValueError(f"threshold must be 0..{MAX_THRESHOLD}, not {threshold}")
        self.threshold = threshold
        self._exact: dict[int, str] = {}
        self._near: dict[int, str] = {}
        self._buckets: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self._exact)

    def find(self, digest: Digest) -> Match | None:
        """The first URL of this content or of one within the threshold, or None."""
        first = self._exact.get(digest.exact)
        if first is not None:
            return Match("exact", first)
        if digest.near is None:
            return None
        best: tuple[int, str] | None = None
        for band in bands(digest.near, self.threshold):
            for other in self._buckets.get(band, ()):
                distance = (other ^ digest.near).bit_count()
                if distance <= self.threshold and (best is None or distance < best[0]):
                    best = (distance, self._near[other])
        return None if best is None else Match("near", best[1], best[0])

    def insert(self, url: str, digest: Digest) -> bool:
        """Remember ``url`` as the first of its content; False if the exact hash was known."""
        if digest.exact in self._exact:
            return False
        self._exact[digest.exact] = url
        if digest.near is not None and digest.near not in self._near:
            self._near[digest.near] = url
            for band in bands(digest.near, self.threshold):
                bucket = self._buckets.setdefault(band, [])
                if len(bucket) < MAX_BUCKET:
                    bucket.append(digest.near)
        return True


_DIGEST_ROW = "INSERT OR IGNORE INTO digests (exact, near, url) VALUES (?, ?, ?)"
_COUNTS_META = "digest_counts"


class LocalDigests:
    """The embedded crawl's index: in memory, each first URL staged into crawl.db's
    ``digests`` table (committed with the crawl's next checkpoint) when ``db`` is given."""

    def __init__(self, db: CrawlDB | None = None, threshold: int = DEFAULT_THRESHOLD) -> None:
        self._index = NearIndex(threshold)
        self._db = db
        self._counts: Counter[str] = Counter()

    def restore(self) -> None:
        """Load the digests and counts a previous run stored (``--resume``)."""
        if self._db is None:
            return
        rows = self._db.iterate("SELECT exact, near, url FROM digests ORDER BY rowid")
        for exact, near, url in rows:
            self._index.insert(
                str(url), Digest(exact & _MASK, None if near is None else near & _MASK)
            )
        stored = self._db.get_meta(_COUNTS_META)
        if stored:
            values = [int(v) for v in stored.split()[:2] if v.isdigit()]
            self._counts.update(dict(zip(("exact", "near"), values, strict=False)))

    async def check(self, url: str, digest: Digest) -> Match | None:
        """As :meth:`gossamer.digests.base.DigestIndex.check`."""
        return self.check_now(url, digest)

    def check_now(self, url: str, digest: Digest) -> Match | None:
        """:meth:`check` without the event loop."""
        self._counts["digested"] += 1
        match = self._index.find(digest)
        if match is not None and match.first != url:
            self._counts[match.kind] += 1
            self._save_counts()
            return match
        if match is None and self._index.insert(url, digest) and self._db is not None:
            near = None if digest.near is None else _signed(digest.near)
            self._db.stage(_DIGEST_ROW, [(_signed(digest.exact), near, url)])
        return None

    def stats(self) -> DigestStats:
        return DigestStats(self._counts["digested"], self._counts["exact"], self._counts["near"])

    def _save_counts(self) -> None:
        if self._db is not None:
            counts = self._counts
            self._db.set_meta(_COUNTS_META, f"{counts['exact']} {counts['near']}")


def _signed(value: int) -> int:
    """An unsigned 64-bit integer as SQLite's signed one."""
    return value - (1 << 64) if value >= 1 << 63 else value

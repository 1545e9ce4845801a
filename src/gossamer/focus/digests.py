"""Content digests: which page's main text another page already had (P3's shared digests).

A page's digest has two parts, both from its main text (what the extractor kept, so the
template around it does not count):

- ``exact``: xxh3_64 of the text as the extractor normalised it (whitespace collapsed,
  paragraphs one blank line apart): the same article behind another URL (session ids,
  tracking parameters, mirrors). About 20 microseconds for a 5,000-word text;
- ``near`` (when asked for): a 64-bit SimHash of the 16-letter shingles of the text's letters
  and digits (ASCII in lower case, spaces and punctuation left out; about three words a
  shingle; each shingle hashed, one vote per bit, the majority kept): a print version, a copy
  with a line changed or in other case. All in numpy, but still 0.3-1 ms for a 5,000-word
  text, which is why it is not the default. Two texts are near duplicates when their
  SimHashes differ in at most ``threshold`` bits (3 by default, chosen with
  ``benchmarks/bench_digests.py``).

A :class:`DigestIndex` answers, for a URL and its digest, which URL had that content first
(:class:`Match`) and remembers the digest when none did, in one step. The index of an
embedded crawl is :class:`LocalDigests` (memory, its first-seen rows in crawl.db so
``--resume`` keeps them); a cluster job's is :class:`gossamer.focus.digests_redis.RedisDigests`.

Near duplicates are found through bands: the 64 bits are cut into ``threshold + 1`` bands,
and two hashes within ``threshold`` bits agree on at least one band whole (pigeonhole), so a
hash is compared only with those sharing one of its band values. A band value holds at most
:data:`MAX_BUCKET` hashes: a flood of pages alike in one band costs a bounded scan.

Texts of fewer than :data:`MIN_WORDS` words get no digest: short texts (a hub page whose main
text is a heading) are alike without being the same page, and a duplicate's links are not
followed. The SimHash (:mod:`gossamer.focus.simhash`) reads a bounded prefix of the text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal, Protocol

import xxhash

from gossamer.crawldb import CrawlDB

MIN_WORDS = 16
"""Texts with fewer words get no digest (never a duplicate, never a first)."""
MAX_TEXT_CHARS = 1_000_000
"""Characters of a text digested (a record keeps no more by default)."""
DEFAULT_THRESHOLD = 3
"""Bits two SimHashes may differ in and still be near duplicates."""
MAX_THRESHOLD = 7
MAX_BUCKET = 256
"""Hashes kept per band value; past it new hashes are still found by their other bands."""
_MASK = (1 << 64) - 1


Kind = Literal["exact", "near"]


@dataclass(frozen=True, slots=True)
class Digest:
    """A text's exact hash and SimHash (unsigned 64-bit integers; no SimHash when only exact
    duplicates are looked for)."""

    exact: int
    near: int | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """The URL that had the content first, and how alike the two are."""

    kind: Kind
    first: str
    distance: int = 0
    """Bits the SimHashes differ in (0 for an exact duplicate)."""


@dataclass(frozen=True, slots=True)
class DigestStats:
    """What an index has seen: texts checked by this process, duplicates found (the embedded
    index's over ``--resume`` runs)."""

    digested: int = 0
    exact: int = 0
    near: int = 0


class DigestIndex(Protocol):
    """Where digests are shared: the embedded crawl's memory or the job's Redis."""

    async def check(self, url: str, digest: Digest) -> Match | None:
        """The URL that had this content first (never ``url`` itself), or None, after which
        ``url`` is the content's first. Atomic: two callers with one content agree."""
        ...

    def stats(self) -> DigestStats: ...


def digest(text: str, near: bool = True) -> Digest | None:
    """The digest of a main text (with its SimHash if ``near``), or None when the text has
    fewer than :data:`MIN_WORDS` words."""
    if len(text.split(maxsplit=MIN_WORDS)) < MIN_WORDS:
        return None
    encoded = text[:MAX_TEXT_CHARS].encode("utf-8", "surrogatepass")
    exact = xxhash.xxh3_64_intdigest(encoded)
    if not near:
        return Digest(exact)
    from gossamer.focus.simhash import text_simhash  # numpy: only when near ones are asked for

    return Digest(exact, text_simhash(encoded))


def bands(near: int, threshold: int) -> list[int]:
    """The ``threshold + 1`` band values of a SimHash, each tagged with its band's number."""
    count = threshold + 1
    values = []
    start = 0
    for i in range(count):
        width = 64 // count + (1 if i < 64 % count else 0)
        values.append((i << 64) | ((near >> start) & ((1 << width) - 1)))
        start += width
    return values


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
        """As :meth:`DigestIndex.check`."""
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


def hamming(a: int, b: int) -> int:
    """Bits two 64-bit hashes differ in."""
    return (a ^ b).bit_count()

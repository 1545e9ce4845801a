"""The content digests' contract: which page's main text another page already had.

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
embedded crawl is :class:`gossamer.digests.local.LocalDigests` (memory, its first-seen rows
in crawl.db so ``--resume`` keeps them); a cluster job's is
:class:`gossamer.digests.redis.RedisDigests`.

Near duplicates are found through bands: the 64 bits are cut into ``threshold + 1`` bands,
and two hashes within ``threshold`` bits agree on at least one band whole (pigeonhole), so a
hash is compared only with those sharing one of its band values. A band value holds at most
:data:`MAX_BUCKET` hashes: a flood of pages alike in one band costs a bounded scan.

Texts of fewer than :data:`MIN_WORDS` words get no digest: short texts (a hub page whose main
text is a heading) are alike without being the same page, and a duplicate's links are not
followed, except those of a list of links (`list_of_links`: its text is often the site's
footer alone). The page's title is digested with its text, for the same reason. The SimHash
(:mod:`gossamer.digests.simhash`) reads a bounded prefix of the text.
"""

from __future__ import annotations

from typing import Literal, Protocol

import msgspec
import xxhash

from gossamer.digests.simhash import text_simhash, text_utf8

MIN_WORDS = 16
"""Texts with fewer words get no digest (never a duplicate, never a first)."""
WORDS_PER_LINK = 4
"""A page with fewer words of main text than this per link it holds is a list of links."""
MAX_TEXT_CHARS = 1_000_000
"""Characters of a text digested (a record keeps no more by default)."""
DEFAULT_THRESHOLD = 3
"""Bits two SimHashes may differ in and still be near duplicates."""
MAX_THRESHOLD = 7
MAX_BUCKET = 256
"""Hashes kept per band value; past it new hashes are still found by their other bands."""


Kind = Literal["exact", "near"]


class Digest(msgspec.Struct, frozen=True):
    """A text's exact hash and SimHash (unsigned 64-bit integers; no SimHash when only exact
    duplicates are looked for)."""

    exact: int
    near: int | None = None


class Match(msgspec.Struct, frozen=True):
    """The URL that had the content first, and how alike the two are."""

    kind: Kind
    first: str
    distance: int = 0
    """Bits the SimHashes differ in (0 for an exact duplicate)."""


class DigestStats(msgspec.Struct, frozen=True):
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


def digest(text: str, near: bool = True, title: str | None = None) -> Digest | None:
    """The digest of a main text and the page's ``title`` (with its SimHash if ``near``), or
    None when the text has fewer than :data:`MIN_WORDS` words. The title counts because two
    pages whose main text is the same boilerplate (lists of links whose extractor dropped the
    list, leaving the site's footer: python3-doc's ``genindex.html`` and
    ``using/index.html``) are different pages; copies of one page keep its title."""
    if len(text.split(maxsplit=MIN_WORDS)) < MIN_WORDS:
        return None
    if len(text) + (len(title) + 1 if title else 0) <= MAX_TEXT_CHARS:
        # the text's own UTF-8 (kept with it for the record's writers), the title's before it
        body = text_utf8(text)
        encoded = b"".join((title.encode("utf-8", "surrogatepass"), b"\n", body)) if title else body
    else:
        document = f"{title}\n{text}" if title else text
        encoded = document[:MAX_TEXT_CHARS].encode("utf-8", "surrogatepass")
    exact = xxhash.xxh3_64_intdigest(encoded)
    if not near:
        return Digest(exact)
    return Digest(exact, text_simhash(encoded))


def list_of_links(text: str, links: int) -> bool:
    """Whether a page of main text ``text`` and ``links`` links is a list of links (fewer
    than :data:`WORDS_PER_LINK` words per link): its text, often the site's footer alone
    (python3-doc's ``genindex.html``, ``faq/index.html``), says little of what it links to,
    so even as a duplicate its links are followed."""
    least = WORDS_PER_LINK * links
    return len(text.split(maxsplit=least)) < least


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


def hamming(a: int, b: int) -> int:
    """Bits two 64-bit hashes differ in."""
    return (a ^ b).bit_count()

"""What the sitemap stage (:mod:`gossamer.crawl.sitemaps`) is handed, and what it leaves
behind: its collaborators' protocols, its figures, and the crawl.db rows and the record of
each file it reads."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import msgspec

from gossamer.crawldb import CrawlDB
from gossamer.discover import Entry, FileResult, Flag
from gossamer.fetch.http import FetchResult
from gossamer.frontier.base import Candidate, Frontier
from gossamer.redact import redact_url
from gossamer.sinks.base import PageRecord, WarcLocation
from gossamer.urls import InvalidURL, canonicalize, credentials_of, fingerprint

__all__ = [
    "ENTRY_DEPTH",
    "ENTRY_SQL",
    "NOT_FLAGGED",
    "OWNED_ELSEWHERE",
    "READ_SQL",
    "Answer",
    "Claims",
    "Counts",
    "Dated",
    "Fetch",
    "FileScope",
    "SitemapStats",
    "admit",
    "entry_rows",
    "file_record",
    "finish_claim",
    "release_claim",
]

log = logging.getLogger(__name__)

ENTRY_DEPTH = 1
"""The depth of a sitemap's entries (see the :mod:`~gossamer.crawl.sitemaps` doc)."""
NOT_FLAGGED = frozenset({Flag.OUT_OF_SCOPE})
"""Flags that leave a file unflagged: entries of other sites are dropped as a rule."""
OWNED_ELSEWHERE = "owned-elsewhere"
"""The error of a file not fetched: a cluster worker's, of a host another worker owns."""
READ_SQL = "INSERT OR IGNORE INTO sitemap_reads (origin, url) VALUES (?, ?)"
"""A sitemap read to its end, for an origin that named it."""
ENTRY_SQL = (
    "INSERT INTO sitemap_entries (fp, url, lastmod, changefreq, priority, source)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (fp) DO UPDATE SET"
    " lastmod = COALESCE(MAX(excluded.lastmod, lastmod), excluded.lastmod, lastmod),"
    " changefreq = COALESCE(excluded.changefreq, changefreq),"
    " priority = COALESCE(excluded.priority, priority), source = excluded.source"
)
"""What a sitemap says of a URL (a row of :func:`entry_rows`), the newest ``lastmod`` kept."""


class Claims(Protocol):
    """One read of each sitemap per cluster job (`gossamer.cluster.sitemaps.SitemapClaims`)."""

    async def claim(self, url: str) -> bool: ...
    def later(self, url: str) -> float | None: ...
    async def finish(self, url: str) -> None: ...
    async def release(self, url: str) -> None: ...


Dated = Callable[[Sequence[tuple[str, float]]], Awaitable[int]]
"""Takes URLs with their ``lastmod`` (see ``SitemapStage.use_lastmod``)."""


class Fetch(Protocol):
    """The fetcher behind the host gate (`gossamer.fetch.gated.GatedFetch`)."""

    async def fetch(self, url: str) -> Any: ...


class Counts(msgspec.Struct):
    """The stage's running tallies (:class:`SitemapStats` is their snapshot)."""

    files: int = 0
    entries: int = 0
    admitted: int = 0
    flagged: int = 0
    blocked: int = 0
    offscope: int = 0
    invalid: int = 0
    budget: int = 0

    def snapshot(self, reading: int, waiting: int) -> SitemapStats:
        """The tallies with the reads under way and waiting (a frozen snapshot)."""
        return SitemapStats(
            self.files,
            self.entries,
            self.admitted,
            self.flagged,
            self.blocked,
            reading,
            waiting,
            self.offscope,
            self.invalid,
            self.budget,
        )


class SitemapStats(msgspec.Struct, frozen=True):
    """What the stage did: files read (children and feeds included), entries they listed in
    scope, entries admission took (new URLs queued), files flagged, sitemaps robots.txt
    blocked, hosts whose sitemaps are being read, sitemaps waiting, sitemap files not fetched
    as out of the crawl's scope (a ``Sitemap:`` line's, an index's child, a redirect's
    target: by host, port or trap guard, as a link), ``Sitemap:`` URLs that are no valid
    http(s) URL (a port out of 1-65535 too), entries of hosts whose page budget was spent
    (turned away: neither queued nor kept in crawl.db, nor counted as entries)."""

    files_total: int = 0
    entries_total: int = 0
    admitted_total: int = 0
    flagged_total: int = 0
    blocked_total: int = 0
    reading: int = 0
    waiting: int = 0
    offscope_total: int = 0
    invalid_total: int = 0
    budget_total: int = 0

    def as_json(self) -> dict[str, int]:
        """The figures by name (stats.json's ``sitemaps``)."""
        return {name: getattr(self, name) for name in self.__struct_fields__}


class Answer(msgspec.Struct, frozen=True):
    """What the fetch of one file left for its record."""

    result: FetchResult | None
    archived: WarcLocation | None = None
    error: str | None = None
    """Why it was not fetched, robots.txt aside (`OWNED_ELSEWHERE`)."""


class FileScope:
    """Which sitemap files the crawl may fetch: those it may visit, by the one rule a link and
    a page's redirect obey (``refusal``, the crawl's scope: host, port, trap guards; None:
    every URL), whoever names them (a robots.txt, ``--sitemap``, an index, a redirect). The
    address guard holds at connect time as for a page. One refused is counted (``offscope``,
    ``invalid`` in ``counts``) and logged, never fetched. ``given``: the origin of a
    ``--sitemap`` URL, whose refusal is a warning (the user asked for it)."""

    def __init__(
        self, refusal: Callable[[str], str | None] | None, counts: Counts, given: str
    ) -> None:
        self._refusal = refusal
        self._counts = counts
        self._given = given

    def visits(self, url: str) -> bool:
        """Whether the crawl may visit ``url`` (no count, no log)."""
        return self._refusal is None or self._refusal(url) is None

    def canonical(self, url: str, origin: str) -> str | None:
        """A sitemap URL ``origin`` named (its robots.txt, or `given`), canonical; None (counted
        ``invalid``, as an invalid link is) if it is no valid http(s) URL."""
        try:
            return canonicalize(url.strip())
        except InvalidURL as exc:
            self._counts.invalid += 1
            log.debug("sitemap named by %s dropped: %s", self._named(origin), redact_url(str(exc)))
            return None

    def allows(self, url: str, origin: str | None = None) -> bool:
        """Whether the sitemap file at canonical ``url`` may be fetched (``origin`` named it;
        None: an index or a redirect did); one refused is counted ``offscope``, logged. Only a
        ``--sitemap`` URL may carry credentials: one a site named with a user name in it is
        refused (``userinfo``), as a link is, never sent nor kept."""
        reason = None if self._refusal is None else self._refusal(url)
        if reason is None and origin != self._given and credentials_of(url) is not None:
            reason = "userinfo"  # credentials only the user gives (--sitemap), as for links
        if reason is None:
            return True
        self._counts.offscope += 1
        level = logging.WARNING if origin == self._given else logging.DEBUG
        named = self._named(origin)
        log.log(level, "sitemap %s not fetched: %s, named by %s", redact_url(url), reason, named)
        return False

    def walks(self, given: str | None, url: str) -> bool:
        """Whether a walk from ``given`` (a ``--sitemap`` URL, the user's own, credentials
        and all; None for one a site named) may fetch ``url`` (`allows`)."""
        return url == given or self.allows(url)

    def _named(self, origin: str | None) -> str:
        if origin is None:
            return "an index or a redirect"
        return "--sitemap" if origin == self._given else f"{origin}/robots.txt"


def entry_rows(entries: Sequence[Entry], hide: Callable[[str], str]) -> list[tuple[object, ...]]:
    """The ``sitemap_entries`` rows of ``entries``: their sitemap's URL as ``hide`` shows it
    (`gossamer.crawldb.CrawlDB.hide`: its password masked, kept in one place only)."""
    return [
        (fingerprint(e.url), e.url, e.lastmod, e.changefreq, e.priority, hide(e.source))
        for e in entries
    ]


async def admit(
    frontier: Frontier,
    db: CrawlDB,
    entries: list[Entry],
    dated: tuple[Dated | None, Dated | None],
    counts: Counts,
) -> None:
    """Hand a read's ``entries`` to ``frontier``'s admission at `ENTRY_DEPTH`, stage what
    they say of each URL in ``db``, and give those with a ``lastmod`` to the stage's
    ``dated`` ones (``sooner``, ``vouch``: see ``SitemapStage.use_lastmod``)."""
    added = await frontier.add([Candidate(e.url, ENTRY_DEPTH) for e in entries])
    db.stage(ENTRY_SQL, entry_rows(entries, db.hide))
    sooner, vouch = dated
    if sooner is not None:
        await sooner([(e.url, e.lastmod) for e in entries if e.lastmod is not None])
    if vouch is not None:
        await vouch(
            [(e.url, e.lastmod) for e in entries if e.lastmod is not None and not e.published]
        )
    counts.entries += len(entries)
    counts.admitted += added.added


def file_record(
    file: FileResult, answer: Answer, robots: bool, counts: Counts, error: str | None = None
) -> PageRecord:
    """The record of one sitemap or feed file (kind ``sitemap``), counted in ``counts``;
    ``robots``: robots.txt was asked before each fetch (a file it forbade was not fetched);
    ``error``: what went wrong reading it, if anything did (else its fetch's error)."""
    blocked = (
        robots and answer.result is None and answer.error is None and Flag.HTTP_ERROR in file.flags
    )
    flags = tuple(f for f in file.flags if not (blocked and f is Flag.HTTP_ERROR))
    counts.files += 1
    counts.blocked += blocked
    counts.flagged += bool(set(flags) - NOT_FLAGGED)
    result = answer.result
    if not error:
        error = "robots" if blocked else (result.error if result is not None else answer.error)
    return PageRecord(
        file.url,
        file.status,
        file.depth,
        content_type=result.content_type if result is not None else None,
        bytes=len(result.body) if result is not None else 0,
        fetched_at=result.fetched_at if result is not None else None,
        elapsed_ms=round(result.elapsed * 1000, 1) if result is not None else None,
        outlinks=file.count,
        redirect_to=result.location if result is not None else None,
        error=error,
        truncated=result.truncated if result is not None else False,
        flags=flags,
        proxy=result.proxy if result is not None else None,
        extra={"format": str(file.format), "entries": file.count, "dropped": file.dropped},
        kind="sitemap",
    )


async def finish_claim(claims: Claims, url: str) -> None:
    """Mark ``url``'s read done once its records are in every sink; if Redis cannot be told,
    the claim expires and another worker reads the sitemap again."""
    try:
        await claims.finish(url)
    except Exception:
        log.warning("sitemap %s read, not marked done: may be read again", redact_url(url))


async def release_claim(claims: Claims | None, url: str) -> None:
    """A stopped or failed read gives its claim back, so another worker may read the sitemap
    now (None: no claims, a crawl of its own)."""
    if claims is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(claims.release(url), 2.0)

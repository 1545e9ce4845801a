"""The revisit state of a continuous crawl (``--recrawl``) in crawl.db, and the URLs due now.

Every page a continuous crawl fetched has a row of ``revisits`` (see :mod:`gossamer.crawldb`):
its validators (``ETag``, ``Last-Modified``), the digests of its payload and main text, when it
was fetched, when its content was last archived in full and when a sitemap's ``lastmod`` last
vouched for it (work-conserving revisits only: :meth:`Revisits.vouch`), its interval and its
due time (unix seconds; null once it is no longer revisited), and its counts (checks, changes,
answers that it is gone). Nothing of it stays in memory for every URL: the embedded frontier asks
:meth:`Revisits.due` for the URLs whose time has come, read by the index on due times a batch
at a time (at most `MAX_LOADED` at once, `PER_HOST` of a host), and queues them in the host
scheduler like discovered URLs, so one pace per host holds for both. While one is out, its row
is kept here (:meth:`state`) for the conditional request and for the comparison of its
answer; :meth:`observed` stages its new row with the frontier's ack, in the same commit. A read
of what is due that ran while a URL's lease ended loads nothing of that URL: the row it read
may be the one from before the answer (:meth:`Revisits._read`).

A row's due time is only rewritten when its URL is fetched again: a crash (``kill -9``) loses
no due revisit, since every row still due is read again by the next run.
"""

from __future__ import annotations

import hashlib
import logging
import math
import operator
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec.structs import replace

from gossamer.crawldb import CrawlDB
from gossamer.frontier.hostqueue import Queued
from gossamer.frontier.revisit import Bounds
from gossamer.urls import fingerprint, host_key

log = logging.getLogger(__name__)
MAX_LOADED = 10_000
"""Revisits out of crawl.db at once (queued in the scheduler, leased)."""
PER_HOST = 256
"""Revisits of one host out at once: a slow host does not keep the others' waiting."""
REVISIT_PRIORITY = 0.0
"""A revisit's priority: the default, as a link's (a negative one switched the frontier to best
first, whose slack then held every revisit back behind nothing)."""
RESULTS = ("changed", "unchanged", "not-modified", "gone")
"""What a revisit found (``unchanged`` a 2xx answer; ``not-modified`` a 304)."""
_BATCH = 1000
_SWEEP_EVERY = 1.0
"""Seconds before what is due is read again from its start when rows were passed over for a
full host."""

_COLUMNS = (
    "fp, etag, last_modified, payload, text, fetched_at, captured_at, interval, due, "
    "checks, changes, gone, observed, size, content_type, checked_at"
)
_UPSERT = f"INSERT OR REPLACE INTO revisits ({_COLUMNS}) VALUES ({', '.join('?' * 16)})"
_READ_DUE = (
    f"SELECT u.url, u.depth, r.{_COLUMNS.replace(', ', ', r.')} FROM revisits r "
    "JOIN urls u ON u.fp = r.fp WHERE r.due <= ? AND (r.due > ? OR (r.due = ? AND r.fp > ?)) "
    "ORDER BY r.due, r.fp LIMIT ?"
)
_ADOPT = _UPSERT.replace("INSERT OR REPLACE", "INSERT OR IGNORE")
_LAST_PAGES = (
    "SELECT url, text, fetched_at, content_type FROM pages "
    "WHERE id IN (SELECT MAX(id) FROM pages WHERE id > ? GROUP BY url) "
    "AND status BETWEEN 200 AND 299"
)
_ADOPT_PAGES = (
    "INSERT OR IGNORE INTO revisits (fp, text, fetched_at, captured_at, interval, due, "
    "content_type) SELECT gossamer_fp(url), gossamer_text_digest(text), COALESCE(fetched_at, 0), "
    "COALESCE(fetched_at, 0), gossamer_initial(url, content_type), COALESCE(fetched_at, 0) + "
    f"gossamer_initial(url, content_type), content_type FROM ({_LAST_PAGES})"
)
ADOPTED_META = "revisits-adopted"
"""Journal meta: the last page id :meth:`Revisits.adopt` went through (the next looks past it
only)."""
_ANNOUNCED = "UPDATE revisits SET due = ?1 WHERE fp = ?2 AND due > ?1 AND fetched_at < ?3"
_EARLIEST = "SELECT MIN(due) FROM revisits WHERE due > ?"
_BACKLOG = "SELECT COUNT(*) FROM revisits WHERE due <= ?"
_HOST_INDEX = "CREATE INDEX IF NOT EXISTS urls_host ON urls (host)"
_SINCE = "(?2 - MAX(r.fetched_at, COALESCE(r.checked_at, r.fetched_at)))"
_RATE = "((r.changes + 0.5) / (r.observed + r.interval))"
_READ_SPARE = (  # the host's page of the greatest r**0.75 * (seconds unconfirmed), to the 4th
    f"SELECT u.url, u.depth, r.{_COLUMNS.replace(', ', ', r.')} FROM urls u "
    "JOIN revisits r ON r.fp = u.fp WHERE u.host = ?1 AND r.due > ?2 AND r.fetched_at <= ?3 "
    f"ORDER BY {_RATE} * {_RATE} * {_RATE} * {_SINCE} * {_SINCE} * {_SINCE} * {_SINCE} DESC "
    "LIMIT 1"
)
_CHECKED = (
    "UPDATE revisits SET checked_at = ?1 WHERE fp = ?2 AND fetched_at >= ?3 AND due IS NOT NULL"
)
SPARE_BOUND = 4.0
"""With ``--revisit-spare 1``, the intervals after its fetch a page is due at the latest (a
share below 1, proportionally fewer; :meth:`Revisits.wait`)."""
SPARE_HOSTS = 64
"""Idle hosts given a spare revisit per look (the next look serves the others)."""
_STORED_HOSTS = (  # a skip scan of the index on hosts: one seek a host, whatever its URLs
    "WITH RECURSIVE h(host) AS (SELECT MIN(host) FROM urls WHERE host > ?1 UNION ALL "
    "SELECT (SELECT MIN(host) FROM urls WHERE host > h.host) FROM h WHERE h.host IS NOT NULL "
    "LIMIT ?2) SELECT host FROM h WHERE host IS NOT NULL"
)


def resolution(lastmod: float) -> float:
    """Seconds a ``lastmod`` (epoch seconds) may lie before the change it stands for: its unit,
    guessed from its value (a date-time to the second: a second; a whole minute: a minute;
    midnight UTC: a day; the first of a month: a month; January the first: a year), so a page
    fetched within that of its ``lastmod`` is not taken as unchanged since."""
    if lastmod % 60:
        return 1.0
    if lastmod % 86_400:
        return 60.0
    day = datetime.fromtimestamp(lastmod, UTC)
    if day.day != 1:
        return 86_400.0
    return 366 * 86_400.0 if day.month == 1 else 31 * 86_400.0


def content_digest(data: bytes) -> int:
    """A 64-bit digest of ``data`` as a signed integer (an SQLite integer)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


def _text_digest(text: str | None) -> int | None:
    return None if not text else content_digest(text.encode("utf-8", "replace"))


class RevisitState(msgspec.Struct, frozen=True):
    """A URL's row of ``revisits``."""

    fp: int
    etag: str | None = None
    last_modified: str | None = None
    payload: int | None = None
    """A 64-bit digest of the decoded body."""
    text: int | None = None
    """A 64-bit digest of the main text (None without text extraction)."""
    fetched_at: float = 0.0
    captured_at: float = 0.0
    """When the content last changed as far as the crawl saw: the fetch an archive holds in
    full (a WARC revisit record refers to it)."""
    interval: float = 0.0
    due: float | None = None
    checks: int = 0
    changes: int = 0
    gone: int = 0
    observed: float = 0.0
    """Seconds the checks covered (their intervals summed)."""
    size: int = 0
    """Bytes of the body last fetched in full (what a 304 saves)."""
    content_type: str | None = None
    checked_at: float | None = None
    """When a sitemap or feed last said the page had not changed since its fetch (its
    ``lastmod`` not newer): a confirmation without a request, which work-conserving revisits
    count from (None: none since the fetch)."""

    def row(self) -> tuple[object, ...]:
        """The values of the row, in ``_COLUMNS`` order."""
        return _row(self)


_row = operator.attrgetter(*_COLUMNS.split(", "))


BoundsOf = Callable[[str, str | None], Bounds]
"""The revisit bounds of a URL with a content type (None when not known yet)."""


class RevisitStats(msgspec.Struct, frozen=True):
    """Revisits by result (``changed``, ``unchanged``, ``not-modified``, ``gone``), the bytes
    304 answers saved (the size of the body last fetched in full), the revisits due and not
    fetched yet (at the last read), those out of crawl.db now, and those sent early."""

    results: dict[str, int]
    bytes_saved: int
    backlog: int
    loaded: int
    spared: int = 0
    """Revisits sent early into a free slot of their host (``--revisit-spare``)."""


class RevisitBook:
    """What the page stage asks of a continuous crawl's revisit state, whichever frontier
    keeps it (crawl.db here, Redis in :mod:`gossamer.frontier.redis.revisits`): each URL's
    bounds, the row of a revisit out (:meth:`state`, :meth:`validators`), the new row of a URL
    judged (:meth:`observed`), and the counts by result."""

    def __init__(self, bounds: BoundsOf, *, max_gone: int = 3) -> None:
        """``max_gone``: answers of gone (404, 410, a redirect away) after which a URL is no
        longer revisited."""
        self.bounds = bounds
        self.max_gone = max_gone
        self._loaded: dict[str, RevisitState | None] = {}
        """The rows of the revisits out, by URL (None once judged)."""
        self.results: Counter[str] = Counter()
        self.bytes_saved = 0
        self._backlog = 0
        self.spared = 0
        """Revisits sent early, into a slot their host left free."""

    def state(self, url: str) -> RevisitState | None:
        """The row of ``url`` while it is out as a revisit; None for a URL fetched first."""
        return self._loaded.get(url)

    def validators(self, url: str) -> dict[str, str] | None:
        """The conditional request headers of a revisit of ``url`` (None: none to send)."""
        state = self._loaded.get(url)
        if state is None or (state.etag is None and state.last_modified is None):
            return None
        headers = {}
        if state.etag is not None:
            headers["If-None-Match"] = state.etag
        if state.last_modified is not None:
            headers["If-Modified-Since"] = state.last_modified
        return headers

    def observed(self, url: str, state: RevisitState) -> None:
        """Keep the new row of ``url``, written with the ack that follows."""
        raise NotImplementedError

    def wait(self, interval: float) -> float:
        """Seconds from a fetch to the URL's due time, for a revisit interval of ``interval``
        (the interval itself; longer with work-conserving revisits: :meth:`Revisits.wait`)."""
        return interval

    def json_stats(self) -> dict[str, Any]:
        """:meth:`stats` as stats.json shows it."""
        return msgspec.structs.asdict(self.stats())

    def metrics(self) -> dict[str, int]:
        """:meth:`stats` flat, as ``/metrics`` shows it (``gossamer_revisits_<name>``)."""
        results = self.results
        counters = {f"{name.replace('-', '_')}_total": results[name] for name in RESULTS}
        return counters | {
            "bytes_saved_total": self.bytes_saved,
            "backlog": self._backlog,
            "loaded": len(self._loaded),
            "spared_total": self.spared,
        }

    def stats(self) -> RevisitStats:
        """A frozen snapshot."""
        return RevisitStats(
            dict(self.results), self.bytes_saved, self._backlog, len(self._loaded), self.spared
        )


class Revisits(RevisitBook):
    """The ``revisits`` table, the URLs due now and the rows of those out (module doc)."""

    def __init__(
        self,
        db: CrawlDB,
        bounds: BoundsOf,
        *,
        max_gone: int = 3,
        clock: Callable[[], float] = time.time,
        spare: float = 0.0,
    ) -> None:
        """``max_gone``: answers of gone (404, 410, a redirect away) after which a URL is no
        longer revisited. ``clock``: unix time (due times outlive the process). ``spare``:
        the share of an idle host's free slots early revisits may fill (0: none;
        :meth:`spare_for`)."""
        super().__init__(bounds, max_gone=max_gone)
        self._db = db
        self.clock = clock
        self.spare = spare
        if spare > 0:
            db.query(_HOST_INDEX)  # a host's rows by index, not a scan of every URL
        self._per_host: Counter[str] = Counter()
        self._cursor: tuple[float, int] = (-math.inf, -1)
        self._host_cursor = ""
        """The last host :meth:`stored_hosts` gave (the next look goes on after it)."""
        self._earliest: float | None = -math.inf
        """The earliest due time not read yet (-inf: not known, read at the next lease)."""
        self.results: Counter[str] = Counter()
        self.bytes_saved = 0
        self._backlog = 0
        self._counted = -math.inf
        """When the backlog was last counted (``clock``)."""
        self._reads = 0
        """Reads of rows to load running (off the event loop)."""
        self._ended: set[str] = set()
        """URLs whose lease ended while a read of rows to load ran (emptied once none runs):
        that read may hold a row of theirs from before their answer's row was committed."""

    def adopt(self) -> int:
        """Give each page of a previous run that has no revisit row one (``--resume
        --recrawl`` of a crawl that ended, or ran without ``--recrawl``, which keeps no
        revisit state): due one initial interval after its fetch, its main-text digest taken
        from its record (no validators or payload digest were kept, so its first revisit is
        a plain fetch, compared by main text). Pages a previous adoption went through are not
        read again (``ADOPTED_META``). Returns how many pages it went through; the rows are
        made inside SQLite by one statement staged for the next commit, so a crawl of
        millions of pages adopts them in bounded memory."""
        through = int(self._db.get_meta(ADOPTED_META) or 0)
        last = self._db.query("SELECT MAX(id) FROM pages")[0][0] or 0
        count = int(self._db.query(f"SELECT COUNT(*) FROM ({_LAST_PAGES})", (through,))[0][0])
        self._db.function("gossamer_fp", 1, fingerprint)
        self._db.function("gossamer_text_digest", 1, _text_digest)
        self._db.function("gossamer_initial", 2, self._initial)
        self._db.stage(_ADOPT_PAGES, [(through,)])  # a page with a row keeps it
        self._db.set_meta(ADOPTED_META, str(last))
        log.info(
            "continuing %d fetched page(s) as revisits",
            count,
            extra={"event": "revisits-adopted", "pages": count},
        )
        return count

    def wait(self, interval: float) -> float:
        """``interval`` stretched by ``1 + (SPARE_BOUND - 1) spare``: with spare revisits on,
        a host's free slots bring a page back when it is the host's likeliest stale one
        (:meth:`spare_for`), before or after its interval, so the due time only bounds its
        wait, for a host with no slot to spare (discovery fills it): four intervals with
        ``spare`` 1. A revisit due at its interval would take a slot the index gives to a
        page staler in expectation (and the pages of a first pass, fetched together, would
        come due together)."""
        return interval * (1.0 + (SPARE_BOUND - 1.0) * self.spare)

    def _initial(self, url: str, content_type: str | None) -> float:
        return self.bounds(url, content_type).initial

    def observed(self, url: str, state: RevisitState) -> None:
        """Stage the new row of ``url`` (committed with the ack that follows)."""
        self._db.stage(_UPSERT, [state.row()])
        if url in self._loaded:
            self._loaded[url] = None  # judged: finished() has nothing more to do
        if state.due is not None and self._earliest is not None:
            self._earliest = min(self._earliest, state.due)
        elif state.due is not None:
            self._earliest = state.due

    def announced(self, lastmods: Iterable[tuple[int, float]]) -> None:
        """A sitemap or feed says when pages last changed (``(fingerprint, lastmod)`` pairs,
        unix seconds): those fetched before their ``lastmod`` are due now (staged for the
        next commit, which the next read of what is due makes). A URL no longer revisited
        (gone) stays so."""
        now = self.clock()
        rows = [(now, fp, lastmod) for fp, lastmod in lastmods]
        if rows:
            self._db.stage(_ANNOUNCED, rows)
            self._earliest = now if self._earliest is None else min(self._earliest, now)

    def finished(self, url: str, *, again: bool = True) -> None:
        """The lease of ``url`` ended for good: its row is no longer kept here. A revisit
        that ended without an answer judged (robots.txt now forbids it, its host's robots.txt
        stayed unreachable, an internal error) is due again one interval later; unless not
        ``again`` (its host's page budget is spent: it would never be fetched), when it is no
        longer revisited (its ``budget`` record is its last)."""
        if url not in self._loaded:
            return
        state = self._loaded.pop(url)
        if self._reads:
            self._ended.add(url)
        key = host_key(url)
        self._per_host[key] -= 1
        if self._per_host[key] <= 0:
            del self._per_host[key]  # a host with no revisit out costs nothing here
        if state is not None:
            due = self.clock() + max(state.interval, 1.0) if again else None
            self._db.stage(_UPSERT, [replace(state, due=due).row()])

    def next_due(self) -> float | None:
        """Seconds until the next revisit not yet read is due (0: now); None when none is,
        or when no more may be out now (an ended lease makes room, and wakes the crawl)."""
        if self._earliest is None or len(self._loaded) >= MAX_LOADED:
            return None
        return max(self._earliest - self.clock(), 0.0)

    async def due(self) -> list[tuple[str, Queued]]:
        """The URLs due now not out yet, with their host keys, as many as there is room for."""
        now = self.clock()
        if self._earliest is None or self._earliest > now or len(self._loaded) >= MAX_LOADED:
            return []
        after, fp = self._cursor
        limit = min(_BATCH, MAX_LOADED - len(self._loaded))
        rows, ended = await self._read(_READ_DUE, (now, after, after, fp, limit))
        out = [entry for row in rows if (entry := self._load(row, ended)) is not None]
        if len(rows) < limit:  # all that is due now was read: the next read starts over
            self._cursor = (-math.inf, -1)
            await self._next_earliest(now)
        else:
            self._cursor = (rows[-1][10], rows[-1][2])
            if now - self._counted >= _SWEEP_EVERY:  # more due than a read takes: count it
                await self._count_backlog(now)
        return out

    async def spare_for(self, keys: Sequence[str]) -> list[tuple[str, Queued]]:
        """Work-conserving revisits: for each host of ``keys`` (hosts whose politeness slot
        is free with nothing queued) that has no revisit out, its page of the greatest
        ``r**0.75 * t`` before its due time, ``t`` the seconds since its last fetch or since a
        sitemap's ``lastmod`` last said it had not changed (``checked_at``), with
        ``r = (changes + 0.5) / (observed + interval)``, a change rate that is never 0 (so a
        page not seen changing yet still gets its turn, behind those that changed). Taking a
        page when its index reaches a host's threshold revisits it every ``c / r**0.75``
        seconds: between ``1 / r`` (ranking by ``r t``, the changes expected, which spends the
        budget on the fastest pages) and ``1 / sqrt(r)``, which minimises the mean wait of a
        change with true rates but, as this ``r`` underestimates the fast pages, leaves their
        changes the long waits (:func:`~gossamer.frontier.revisit.spare_index`). A page is not
        fetched again within a second of its last fetch (the least revisit interval).
        One indexed read a host, at most `SPARE_HOSTS` hosts a call; the host's pace holds,
        as the URLs go through its queue like any other."""
        if self.spare <= 0 or len(self._loaded) >= MAX_LOADED:
            return []
        now = self.clock()
        out = []
        for key in [key for key in keys if not self._per_host[key]][:SPARE_HOSTS]:
            rows, ended = await self._read(_READ_SPARE, (key, now, now - 1.0))
            if rows and (entry := self._load(rows[0], ended)) is not None:
                out.append(entry)
        self.spared += len(out)
        return out

    async def stored_hosts(self, known: Callable[[str], bool]) -> list[str]:
        """Up to `SPARE_HOSTS` hosts of crawl.db the host scheduler does not know (``known``
        False: nothing of theirs queued or out, as after a ``--resume`` with nothing queued),
        for :meth:`spare_for`: with no slot taken, such a host is idle. Successive calls go on
        in host order from where the last one ended, starting over at the end, so every host
        gets its turn; each reads at most `SPARE_HOSTS` hosts, a seek of the index on hosts
        each (a host with no page to revisit then costs :meth:`spare_for` one empty read)."""
        if self.spare <= 0:
            return []
        rows = await self._db.read(_STORED_HOSTS, (self._host_cursor, SPARE_HOSTS))
        hosts = [str(row[0]) for row in rows]
        self._host_cursor = hosts[-1] if len(hosts) >= SPARE_HOSTS else ""
        return [key for key in hosts if not known(key)]

    async def sooner(self, listed: Sequence[tuple[str, float]]) -> int:
        """A sitemap or feed says when pages last changed or were published (``(url,
        lastmod)`` pairs, unix seconds): those fetched before their ``lastmod`` are due now
        (staged for the next commit, which the next read of what is due makes; a URL no
        longer revisited, gone, stays so). Returns how many were listed."""
        now = self.clock()
        rows = [(now, fingerprint(url), lastmod) for url, lastmod in listed]
        if rows:
            self._db.stage(_ANNOUNCED, rows)
            self._earliest = now if self._earliest is None else min(self._earliest, now)
        return len(rows)

    async def vouch(self, listed: Sequence[tuple[str, float]]) -> int:
        """A sitemap says when pages last changed (``(url, lastmod)`` pairs, unix seconds):
        with spare revisits on, those fetched after their ``lastmod`` (by more than its unit,
        :func:`resolution`) are marked unchanged as of now (``checked_at``), so a spare slot
        goes to a page no such read vouches for. Only a date of the last change vouches: a
        feed's date of publication says nothing of the edits since (a page marked unchanged
        at every read of its feed would never get a spare slot, however often it changes).
        Returns how many were listed."""
        if self.spare > 0 and listed:
            now = self.clock()
            rows = [(now, fingerprint(url), at + resolution(at)) for url, at in listed]
            self._db.stage(_CHECKED, rows)
        return len(listed)

    async def _count_backlog(self, now: float) -> None:
        backlog = await self._db.read(_BACKLOG, (now,))
        self._backlog = max(int(backlog[0][0]) - len(self._loaded), 0)
        self._counted = now

    async def _read(
        self, sql: str, params: tuple[object, ...]
    ) -> tuple[list[tuple[Any, ...]], set[str]]:
        """The rows of a read of rows to load, and the URLs not to load from them: those whose
        lease ended while it ran. Their answer's row was staged then, after the read had
        committed what was staged: the read may have their row from before it (due still, one
        check fewer), and loading that would fetch the URL again and judge it against it (a
        gone page checked once more than ``max_gone``). The next read commits their new row
        first."""
        self._reads += 1
        try:
            rows = await self._db.read(sql, params)
        finally:
            self._reads -= 1
        ended = self._ended
        if not self._reads:
            self._ended = set()
        return rows, ended

    def _load(self, row: tuple[object, ...], ended: set[str]) -> tuple[str, Queued] | None:
        url, depth, *values = row
        assert isinstance(url, str) and isinstance(depth, int)
        url = self._db.reveal(url)
        key = host_key(url)
        if url in self._loaded or url in ended or self._per_host[key] >= PER_HOST:
            return None
        state = RevisitState(*values)  # type: ignore[arg-type]
        self._loaded[url] = state
        self._per_host[key] += 1
        return key, Queued(url, state.fp, depth, 0, priority=REVISIT_PRIORITY)

    async def _next_earliest(self, now: float) -> None:
        rows = await self._db.read(_EARLIEST, (now,))
        earliest = rows[0][0] if rows else None
        await self._count_backlog(now)
        if self._backlog > 0:  # passed over for a full host: read again at the next sweep
            earliest = now + _SWEEP_EVERY
        self._earliest = None if earliest is None else float(earliest)


__all__ = [
    "ADOPTED_META",
    "MAX_LOADED",
    "PER_HOST",
    "RESULTS",
    "REVISIT_PRIORITY",
    "SPARE_BOUND",
    "SPARE_HOSTS",
    "BoundsOf",
    "RevisitBook",
    "RevisitState",
    "RevisitStats",
    "Revisits",
    "content_digest",
    "resolution",
]

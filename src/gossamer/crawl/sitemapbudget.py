"""What reading a site's sitemaps may cost: files and entries a round, and time of the event
loop.

Files (:class:`SiteBudgets`): a walk from one sitemap URL reads at most ``Limits.max_files``
files; without a bound across walks, a robots.txt of 500 KiB naming 20,000 sitemaps (each an
index of a thousand files) would keep a crawl reading one site's sitemaps for months, and its
hosts busy. So the walks of the sitemaps a site's robots.txt names share one budget of
``SITE_FILES`` files: a walk gets what is left (:meth:`SiteBudgets.left`), spends what it read
(:meth:`~SiteBudgets.spend`), and a sitemap that finds nothing left is recorded flagged, not
fetched. A continuous crawl gives a sitemap's files back when it reads it again
(:meth:`~SiteBudgets.refund`), so the budget holds per round of reads. ``--sitemap`` URLs
(``GIVEN``) are the user's: their walks keep their own bound only.

How much of the event loop a read takes (:class:`LoopShare`): reading, parsing and admitting
entries is CPU with few awaits that yield, and a feed announcing 50,000 new URLs at each
read, read again every few seconds, left the crawl's other hosts a few pages a minute. After
each batch a read pauses as long as the batch took (``MOST_PAUSE`` at most), so it takes half
of the loop at most, whatever comes in.

Entries of a host whose page budget is spent (:class:`Intake`; ``--max-pages-per-host``,
``host_page_budgets``: :mod:`gossamer.frontier.budgets`) would never be fetched: they are
turned away before admission, neither queued nor staged in crawl.db's ``sitemap_entries``,
nor counted toward ``SITE_ENTRIES``, and counted (``budget_total`` of the stage's figures).
Nor do they go to the ``lastmod`` bookkeeping (``SitemapStage.use_lastmod``): a spent host's
revisits take its budget too (each is a first attempt), so none of its pages is fetched
again. Before, each was staged: a spent host's two sitemaps of 50,000 entries left 100,000
rows, 9.5 MB of crawl.db; now none, 0.1 MB (``benchmarks/bench_sitemap_budget_db.py``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable

from gossamer.discover import Entry, FileResult, Flag, Format
from gossamer.urls import host_key

__all__ = [
    "BATCH",
    "MOST_PAUSE",
    "SITE_ENTRIES",
    "SITE_FILES",
    "Intake",
    "LoopShare",
    "SiteBudgets",
    "skipped",
]

BATCH = 500
"""Entries a read handed to admission (and staged in crawl.db) at once, or turned away,
between two pauses."""

MOST_PAUSE = 1.0
"""Longest pause of a read after a batch of entries, seconds."""

SITE_FILES = 1000
"""Files a round the walks of the sitemaps one robots.txt names take together (as many as
one walk may: ``Limits.max_files``)."""
SITE_ENTRIES = 1_000_000
"""Entries a round the walks of the sitemaps one robots.txt names hand to admission
together: 1,000 files of 50,000 would queue 50 million URLs of one site (some 18 GB of
crawl.db and 4.5 GB of memory); a site of a million pages fits. Past it, the walk stops
and the sitemaps left are recorded ``too-many-urls``, not fetched. Entries of hosts whose
page budget is spent are turned away uncounted (see :mod:`gossamer.crawl.sitemaps`)."""


_UNBOUNDED = 1 << 62


def _unspent(key: str) -> bool:
    return False


class SiteBudgets:
    """Files and entries left per naming origin, ``per_site`` files and `SITE_ENTRIES`
    entries a round (see the module doc); ``given``: the origin of the sitemaps the user
    gave, which no budget bounds."""

    def __init__(self, given: str, per_site: int | None = None) -> None:
        self._per_site = SITE_FILES if per_site is None else per_site
        self._entries = SITE_ENTRIES
        self._given = given
        self._spent: Counter[str] = Counter()
        self._listed: Counter[str] = Counter()
        self._charged: dict[str, tuple[int, int, frozenset[str]]] = {}
        """Sitemap URL -> the files and entries its last read took, and from which origins."""
        self.spent: Callable[[str], bool] = _unspent
        """Whether a host's page budget is spent, by host key (the frontier's, once known)."""

    def intake(self, origins: Iterable[str]) -> Intake:
        """How a read of a sitemap named by ``origins`` takes its entries."""
        return Intake(self.entries_left(origins), self.spent)

    def left(self, origins: Iterable[str]) -> int:
        """Files a read of a sitemap named by ``origins`` may take: the most any of them has
        left, as each named it (none for one whose entries are spent)."""
        return max((self._files_left(o) for o in origins), default=self._per_site)

    def entries_left(self, origins: Iterable[str]) -> int:
        """Entries a read of a sitemap named by ``origins`` may hand to admission: the most
        any of them has left (``--sitemap`` URLs, the user's, are not bounded)."""
        return max(
            (_UNBOUNDED if o == self._given else self._entries - self._listed[o] for o in origins),
            default=_UNBOUNDED,
        )

    def _files_left(self, origin: str) -> int:
        if origin == self._given:
            return self._per_site
        if self._listed[origin] >= self._entries:  # its entries are spent
            return 0
        return self._per_site - self._spent[origin]

    def spent_flag(self, origins: Iterable[str]) -> Flag:
        """What a sitemap named by ``origins`` that finds nothing `left` is recorded with."""
        return Flag.TOO_MANY_URLS if self.entries_left(origins) <= 0 else Flag.TOO_MANY_FILES

    def spend(self, url: str, origins: Iterable[str], files: int, entries: int = 0) -> None:
        """The read of ``url`` took ``files`` files and listed ``entries``, charged to each
        origin that named it."""
        charged = frozenset(o for o in origins if o != self._given)
        for origin in charged:
            self._spent[origin] += files
            self._listed[origin] += entries
        spent, listed, before = self._charged.get(url, (0, 0, frozenset()))
        self._charged[url] = (spent + files, listed + entries, before | charged)

    def refund(self, url: str) -> None:
        """``url`` is read again (a continuous crawl): its last read's files and entries are
        given back."""
        files, entries, origins = self._charged.pop(url, (0, 0, frozenset()))
        for origin in origins:
            self._spent[origin] = max(self._spent[origin] - files, 0)
            self._listed[origin] = max(self._listed[origin] - entries, 0)


class Intake:
    """Where each entry of one read goes (see the module doc): turned away if its host's page
    budget is spent (``spent``, by host key), else counted against the ``room`` of entries
    its sitemap's origins have left; the read pauses (`LoopShare`) every `BATCH` entries."""

    def __init__(self, room: int, spent: Callable[[str], bool]) -> None:
        self.listed = 0
        """Entries counted against the room."""
        self.turned = 0
        """Entries turned away, their host's page budget spent."""
        self._room = room
        self._spent = spent
        self._since = 0
        self._share = LoopShare()

    def take(self, entry: Entry) -> bool | None:
        """Whether ``entry`` goes to admission (False: turned away); None: the room is
        spent, the read stops."""
        self._since += 1
        if self._spent(host_key(entry.url)):
            self.turned += 1
            return False
        if self.listed >= self._room:
            return None
        self.listed += 1
        return True

    def batched(self) -> bool:
        """Whether `BATCH` entries were taken since it last said so: time to hand them on,
        then to `pause`."""
        if self._since < BATCH:
            return False
        self._since = 0
        return True

    async def pause(self) -> None:
        """Let the rest of the crawl run as long as the read ran since the last pause."""
        await self._share.pause()


def skipped(url: str, flag: Flag) -> FileResult:
    """The result of a sitemap file not read (``flag`` says why)."""
    return FileResult(url, None, Format.UNKNOWN, 0, flags=(flag,))


class LoopShare:
    """Pauses of one read (see the module doc), on the running loop's clock."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._mark = self._loop.time()

    async def pause(self) -> None:
        """Let the rest of the crawl run as long as the read ran since the last pause."""
        await asyncio.sleep(min(self._loop.time() - self._mark, MOST_PAUSE))
        self._mark = self._loop.time()

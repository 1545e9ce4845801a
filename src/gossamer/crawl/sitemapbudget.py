"""What reading a site's sitemaps may cost: files a round, and time of the event loop.

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
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable

__all__ = ["MOST_PAUSE", "SITE_FILES", "LoopShare", "SiteBudgets"]

MOST_PAUSE = 1.0
"""Longest pause of a read after a batch of entries, seconds."""

SITE_FILES = 1000
"""Files a round the walks of the sitemaps one robots.txt names take together (as many as
one walk may: ``Limits.max_files``)."""


class SiteBudgets:
    """Files left per naming origin, ``per_site`` a round (see the module doc); ``given``:
    the origin of the sitemaps the user gave, which no budget bounds."""

    def __init__(self, given: str, per_site: int | None = None) -> None:
        self._per_site = SITE_FILES if per_site is None else per_site
        self._given = given
        self._spent: Counter[str] = Counter()
        self._charged: dict[str, tuple[int, frozenset[str]]] = {}
        """Sitemap URL -> the files its last read took, and from which origins."""

    def left(self, origins: Iterable[str]) -> int:
        """Files a read of a sitemap named by ``origins`` may take: the most any of them has
        left, as each named it."""
        return max(
            (
                self._per_site if o == self._given else self._per_site - self._spent[o]
                for o in origins
            ),
            default=self._per_site,
        )

    def spend(self, url: str, origins: Iterable[str], files: int) -> None:
        """The read of ``url`` took ``files`` files, charged to each origin that named it."""
        charged = frozenset(o for o in origins if o != self._given)
        for origin in charged:
            self._spent[origin] += files
        previous, before = self._charged.get(url, (0, frozenset()))
        self._charged[url] = (previous + files, before | charged)

    def refund(self, url: str) -> None:
        """``url`` is read again (a continuous crawl): its last read's files are given back."""
        files, origins = self._charged.pop(url, (0, frozenset()))
        for origin in origins:
            self._spent[origin] = max(self._spent[origin] - files, 0)


class LoopShare:
    """Pauses of one read (see the module doc), on the running loop's clock."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._mark = self._loop.time()

    async def pause(self) -> None:
        """Let the rest of the crawl run as long as the read ran since the last pause."""
        await asyncio.sleep(min(self._loop.time() - self._mark, MOST_PAUSE))
        self._mark = self._loop.time()

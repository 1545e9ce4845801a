"""When a continuous crawl (``--recrawl``) reads each sitemap again (for
:mod:`gossamer.crawl.sitemaps`): ``reread`` seconds after the start of a read that got its
answer (the sitemap URL's initial revisit interval: ``[[revisit]]`` tables set a feed's), and
after a bounded backoff when the read failed, as a failed fetch is tried again: no answer
(a timeout, a refused connection), an answer a fetch would retry (429, 5xx), or an error of
the read itself. The ``n``-th failure in a row waits ``FAILED_BACKOFF * 2 ** (n - 1)``
seconds, never more than the interval; a read that gets its answer resets the count."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gossamer.fetch.http import FetchResult
from gossamer.outcomes import Action, classify

__all__ = ["FAILED_BACKOFF", "Rereads", "failed"]

FAILED_BACKOFF = 1.0
"""Seconds before the first new read of a sitemap whose read failed (doubled at each failure
in a row, up to the sitemap's interval)."""

Again = Callable[[str, set[str]], None]
"""Reads a sitemap again, for the origins its last read granted."""


def failed(result: FetchResult | None) -> bool:
    """Whether a sitemap's fetch failed as a page's fetch is retried (None: not fetched,
    robots.txt said no: no failure)."""
    return result is not None and classify(result.status, result.error, None) is Action.RETRY


class Rereads:
    """The timers of the next reads (see the module doc). ``interval`` is a sitemap URL's
    (None: a crawl that ends, no sitemap is read again); ``again`` reads one again."""

    def __init__(self, interval: Callable[[str], float] | None, again: Again) -> None:
        self._interval = interval
        self._again = again
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._failures: dict[str, int] = {}
        """Failed reads in a row, by sitemap URL."""

    @property
    def on(self) -> bool:
        """Whether sitemaps are read again (a continuous crawl)."""
        return self._interval is not None

    def read(self, url: str, origins: set[str], began: float) -> None:
        """``url`` got its answer in a read that began at ``began`` (the loop's clock): read
        again one interval after that start, as a page's interval runs from its fetch."""
        self._failures.pop(url, None)
        if self._interval is not None:
            self.at(url, origins, began + self._interval(url))

    def failure(self, url: str, origins: set[str]) -> float | None:
        """``url``'s read failed: read again after the backoff (returned; None: a crawl
        that ends, not read again)."""
        if self._interval is None:
            return None
        n = self._failures[url] = self._failures.get(url, 0) + 1
        wait = min(self._interval(url), FAILED_BACKOFF * 2.0 ** min(n - 1, 30))
        self.at(url, origins, asyncio.get_running_loop().time() + wait)
        return wait

    def later(self, url: str, origins: set[str], wait: float) -> None:
        """Read ``url`` again in ``wait`` seconds (a cluster job's: when its claim says)."""
        self.at(url, origins, asyncio.get_running_loop().time() + wait)

    def at(self, url: str, origins: set[str], when: float) -> None:
        """Read ``url`` again at ``when`` (the loop's clock), instead of any time set before."""
        if (timer := self._timers.pop(url, None)) is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._timers[url] = loop.call_at(when, self._fire, url, origins)

    def _fire(self, url: str, origins: set[str]) -> None:
        self._timers.pop(url, None)
        self._again(url, origins)

    def close(self) -> None:
        """Cancel every timer (the crawl stops)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

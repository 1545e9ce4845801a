"""How long until a URL is fetched again (``--recrawl``): a pure function of what its past
fetches saw, so its tests need no clock.

The policy estimates each URL's rate of change from its checks with Cho and Garcia-Molina's
estimator for pages checked at intervals ("Estimating frequency of change", 2003): after ``n``
checks ``I`` seconds apart on average of which ``X`` saw a change,
``r = -log((n - X + 0.5) / (n + 0.5)) / I`` changes a second (the ``0.5`` terms keep it finite
and nearly unbiased when every check saw a change; the naive ``X / (n I)`` underestimates a page
that changes more than once between checks). The next interval is ``1 / r``, the expected time
to the next change, within the URL's bounds; a URL that has not changed yet is checked at most
twice as late as the last time, so one quiet check does not send a page straight to the
maximum (Nutch's AdaptiveFetchSchedule moves by a fixed factor instead, one observation at a
time: a page that changed once in fifty checks is rushed back as one that changes every time).
"""

from __future__ import annotations

import math

import msgspec

GROWTH = 2.0
"""The most an interval grows from one check to the next."""


class Bounds(msgspec.Struct, frozen=True):
    """A URL's revisit intervals in seconds: the first, and the least and most."""

    initial: float
    least: float
    most: float

    def clamp(self, seconds: float) -> float:
        """``seconds`` within the bounds."""
        return min(max(seconds, self.least), self.most)


class History(msgspec.Struct, frozen=True):
    """What a URL's revisits saw: checks made (fetches after the first), how many of them saw
    a change, the seconds they covered and the last interval."""

    checks: int = 0
    changes: int = 0
    observed: float = 0.0
    interval: float = 0.0


def change_rate(history: History) -> float | None:
    """Changes a second (Cho and Garcia-Molina's estimator); None before any check."""
    n, changes = history.checks, history.changes
    if n <= 0 or history.observed <= 0:
        return None
    mean = history.observed / n
    return -math.log((n - changes + 0.5) / (n + 0.5)) / mean


def next_interval(history: History, bounds: Bounds) -> float:
    """Seconds until the URL's next fetch, given what its checks saw so far."""
    rate = change_rate(history)
    if rate is None:
        return bounds.clamp(bounds.initial)
    target = math.inf if rate <= 0 else 1.0 / rate
    last = history.interval if history.interval > 0 else bounds.initial
    return bounds.clamp(min(target, last * GROWTH))


def observe(history: History, changed: bool, waited: float) -> History:
    """``history`` with one more check, ``waited`` seconds after the previous fetch."""
    return History(
        checks=history.checks + 1,
        changes=history.changes + int(changed),
        observed=history.observed + max(waited, 0.0),
        interval=history.interval,
    )


SPARE_EXPONENT = 0.75
"""The power of a URL's rate in its spare index (:func:`spare_index`)."""


def spare_index(history: History, since: float) -> float:
    """The index of a spare revisit's candidates (``--revisit-spare``; crawl.db's
    ``_READ_SPARE`` orders by its fourth power, ``r**3 * since**4``, plain arithmetic):
    ``r**0.75 * since``, ``since`` the seconds since the URL's last fetch, ``r = (changes +
    0.5) / (observed + interval)`` a rate never 0, so a URL not seen changing yet still gets a
    turn, after those that changed. Taking a host's page of the greatest index spaces its
    revisits by ``r**-0.75``. With true rates ``sqrt(r)`` would keep changes waiting least on
    average, but this ``r`` underestimates a fast page (one checked once an interval and
    changed every time reads as about one change an interval, whatever its rate), so its
    changes are the ones that wait long; the higher power gives those pages back their share
    and lowers the 90th percentile of the wait without raising its mean (simulated on
    ``bench_freshness.py``'s web, ``benchmarks/bench_revisit_slots.py``: 0.34x to 0.31x of
    repeated full crawls' over 600 s, seeds 27, 5 and 11)."""
    rate = (history.changes + 0.5) / max(history.observed + history.interval, 1e-9)
    return math.pow(rate, SPARE_EXPONENT) * max(since, 0.0)


__all__ = [
    "GROWTH",
    "SPARE_EXPONENT",
    "Bounds",
    "History",
    "change_rate",
    "next_interval",
    "observe",
    "spare_index",
]

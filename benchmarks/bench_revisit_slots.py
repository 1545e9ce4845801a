"""Revisit policies simulated on ``bench_freshness.py``'s web, slot by slot (no network): what
order of revisits within each host's politeness pace keeps changes waiting least, and how
close an estimate of the pages' rates comes to knowing them.

Each host of :func:`freshweb.draw`'s schedule (same seed, shape and clock as the bench: 6 hosts
of 60 pages, rates over 1,000x, 30% never changing, ``--delay 0.2``, sitemaps and feeds read
every 5 s, revisits 1 to 60 s starting at 5 s) has one slot every ``delay``: a sitemap or feed
read when due, else a page never fetched (the first pass, new pages listed), else what the
policy picks (or nothing). A sitemap's ``lastmod`` newer than a page's last fetch makes it due
at once (every policy but the full crawls). Policies:

* ``full``: full crawls one after the other (a pause between two for the process start);
* ``due``: gossamer's interval policy alone (``--revisit-spare 0``), the earliest due first;
* ``spare r t``: the due revisits first, a free slot to the greatest ``r t`` (the earlier
  ``--revisit-spare 1``);
* ``spare sqrt``: due four intervals after a fetch at the latest, a free slot to the greatest
  ``sqrt(r) t``, ``t`` since the fetch or since a ``lastmod`` that said the page had not
  changed (the ``--revisit-spare 1`` before this one);
* ``spare r^3/4``: gossamer's ``--revisit-spare 1``: as ``spare sqrt`` with ``r**0.75 t``;
* ``index``: as ``spare r^3/4`` with no due time but a ``lastmod``'s (the bound never binds);
* ``oracle``: ``index`` knowing each page's true rate: what a perfect rate estimate reaches.

``r`` is ``(changes + 0.5) / (observed + interval)`` for all but the oracle. Printed: fetches,
staleness per stale spell (the bench's: the first change after a fetch to the next fetch) and
per change (every change to the next fetch), mean and 90th percentile, and their ratios to the
full crawls'.

Usage: ``.venv/bin/python benchmarks/bench_revisit_slots.py [--seed 27] [--seconds 600]``
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from bench_freshness import change_waits, staleness
from freshweb import PageSpec, WebShape, draw
from gossamer.frontier.revisit import Bounds, History, next_interval, observe

FLOOR = 1.0
"""The least seconds between two fetches of a page (the bench's ``--revisit-min``)."""
PROCESS_START = 2.0
"""Seconds a full crawl loses between two runs (process start, robots.txt, its sitemap)."""


@dataclass
class Copy:
    """What the crawler knows of one page."""

    spec: PageSpec
    fetched: float
    version: int
    history: History = field(default_factory=History)
    interval: float = 0.0
    due: float | None = None
    checked: float = 0.0
    """When the page was last known unchanged: its fetch, or a ``lastmod`` read since."""

    def rate(self) -> float:
        """Changes a second, never 0 (the spare index's)."""
        return (self.history.changes + 0.5) / (self.history.observed + self.interval)


@dataclass(frozen=True)
class Policy:
    """How a free slot is used and when a page is due."""

    name: str
    bound: float | None
    """Due this many intervals after a fetch (None: only when a ``lastmod`` says so)."""
    index: Callable[[Copy, float], float] | None
    """The spare index of a page at a time (None: free slots stay free)."""


def _r_t(copy: Copy, now: float) -> float:
    return copy.rate() * (now - copy.fetched)


def _sqrt_r_t(copy: Copy, now: float) -> float:
    return math.sqrt(copy.rate()) * (now - copy.checked)


def _r34_t(copy: Copy, now: float) -> float:
    return copy.rate() ** 0.75 * (now - copy.checked)


def _oracle(copy: Copy, now: float) -> float:
    return copy.spec.rate**0.75 * (now - copy.checked)


POLICIES = (
    Policy("due", 1.0, None),
    Policy("spare r t", 1.0, _r_t),
    Policy("spare sqrt", 4.0, _sqrt_r_t),
    Policy("spare r^3/4", 4.0, _r34_t),
    Policy("index", None, _r34_t),
    Policy("oracle", None, _oracle),
)


@dataclass
class Host:
    """One host's slots under one policy."""

    pages: list[PageSpec]
    sitemap: bool
    policy: Policy
    opts: argparse.Namespace
    bounds: Bounds
    copies: dict[int, Copy] = field(default_factory=dict)
    fetched: dict[int, list[float]] = field(default_factory=dict)

    def run(self) -> dict[int, list[float]]:
        """Fetch times by page index (into ``pages``) until the end."""
        new = [i for i, p in enumerate(self.pages) if p.born == 0]
        read_at, now = -math.inf, 1.0
        while now < self.opts.seconds:
            if now - read_at >= self.opts.feed_interval:
                read_at = now
                new += self._read(now, new)
            elif new or (pick := self._pick(now)) is not None:
                self._fetch(new.pop(0) if new else pick, now)
            else:
                now += 0.01  # nothing to send: look again shortly
                continue
            now += self.opts.delay
        return self.fetched

    def _read(self, now: float, queued: list[int]) -> list[int]:
        """A sitemap or feed read: new pages listed; ``lastmod`` (sitemaps only) makes a page
        changed since its fetch due now and vouches for the others. A feed's ``pubDate`` is
        the page's publication, which vouches for nothing, as in the crawl
        (``Entry.published``)."""
        listed = [
            i
            for i, p in enumerate(self.pages)
            if 0 < p.born <= now
            and i not in self.copies
            and i not in queued
            and (p.gone_at is None or p.gone_at > now)
        ]
        if self.sitemap:  # lastmod to the second
            for copy in self.copies.values():
                lastmod = math.floor(copy.spec.last_change(now))
                if lastmod > copy.fetched:
                    copy.due = now if copy.due is None else min(copy.due, now)
                elif lastmod + 1 <= copy.fetched:
                    copy.checked = now
        return listed

    def _pick(self, now: float) -> int | None:
        policy, best, value = self.policy, None, -math.inf
        ready = [(i, c) for i, c in self.copies.items() if c.fetched <= now - FLOOR]
        due = [(c.due, i) for i, c in ready if c.due is not None and c.due <= now]
        if due:
            return min(due)[1]
        if policy.index is None:
            return None
        for i, copy in ready:
            if (score := policy.index(copy, now)) > value:
                best, value = i, score
        return best

    def _fetch(self, i: int, now: float) -> None:
        spec = self.pages[i]
        if spec.gone_at is not None and now >= spec.gone_at:
            self.copies.pop(i, None)
            return
        self.fetched.setdefault(i, []).append(now)
        version = spec.version(now)
        copy = self.copies.get(i)
        if copy is None:
            copy = Copy(spec, now, version, interval=self.bounds.initial)
            self.copies[i] = copy
        else:
            last = copy.history
            copy.history = observe(
                History(last.checks, last.changes, last.observed, copy.interval),
                version != copy.version,
                now - copy.fetched,
            )
            copy.interval = next_interval(copy.history, self.bounds)
            copy.fetched, copy.version = now, version
        copy.checked = now
        bound = self.policy.bound
        copy.due = None if bound is None else now + bound * copy.interval


def full_crawls(pages: list[PageSpec], opts: argparse.Namespace) -> dict[int, list[float]]:
    """One host's pages fetched in order, again and again (robots.txt, home page and sitemap
    first, a pause between two crawls)."""
    fetched: dict[int, list[float]] = {}
    now = 1.0
    while now < opts.seconds:
        now += 3 * opts.delay
        for i, page in enumerate(pages):
            if page.born > now or (page.gone_at is not None and page.gone_at <= now):
                continue
            if now >= opts.seconds:
                break
            fetched.setdefault(i, []).append(now)
            now += opts.delay
        now += PROCESS_START
    return fetched


def waits(
    pages: list[PageSpec], fetched: dict[int, list[float]], end: float
) -> tuple[list[float], list[float]]:
    """Staleness per stale spell and per change, as the bench counts them."""
    return staleness(pages, fetched, end), change_waits(pages, fetched, end)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def main() -> None:
    """Simulate every policy on the bench's schedule; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--feed-interval", type=float, default=5.0)
    opts = parser.parse_args()
    shape = WebShape(horizon=opts.seconds + 60)
    pages = draw(shape, opts.seed)
    bounds = Bounds(initial=5.0, least=FLOOR, most=60.0)
    by_host = [[p for p in pages if p.host == h] for h in range(shape.hosts)]
    runs: dict[str, list[tuple[list[PageSpec], dict[int, list[float]]]]] = {
        "full": [(own, full_crawls(own, opts)) for own in by_host]
    }
    for policy in POLICIES:
        runs[policy.name] = [
            (own, Host(own, h not in shape.feeds, policy, opts, bounds).run())
            for h, own in enumerate(by_host)
        ]
    base: tuple[float, float, float, float] | None = None
    print(f"seed {opts.seed}: staleness per stale spell | per change (mean / p90, ratio)")
    for name, hosts in runs.items():
        spells, every = [], []
        for own, fetched in hosts:
            one, all_ = waits(own, fetched, opts.seconds)
            spells += one
            every += all_
        figures = (statistics.fmean(spells), _p90(spells), statistics.fmean(every), _p90(every))
        base = base or figures
        ratios = [f / b for f, b in zip(figures, base, strict=True)]
        fetches = sum(len(t) for _, fetched in hosts for t in fetched.values())
        print(
            f"{name:11} {fetches:5} fetches  {figures[0]:5.2f} s / {figures[1]:5.2f} s "
            f"({ratios[0]:.2f}x / {ratios[1]:.2f}x) | {figures[2]:5.2f} s / {figures[3]:5.2f} s "
            f"({ratios[2]:.2f}x / {ratios[3]:.2f}x)"
        )


if __name__ == "__main__":
    main()

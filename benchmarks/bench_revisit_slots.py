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
* ``host prior`` (``--host-prior``): ``spare r^3/4`` with each page's rate shrunk toward its
  host's, pooled from the checks of all its pages (Cho and Garcia-Molina's estimator over the
  host's checks), weighted by the page's own checks: ``(changes + R b) / (observed + b)``,
  ``R`` the host's rate, ``b`` the host's mean check interval times ``--prior-weight``; a page
  with no check of its own takes the host's rate (empirical Bayes, the prior of a gamma);
* ``due, host prior`` (``--host-prior``): ``due`` with the interval ``1 / r``, ``r`` the
  page's Cho estimate shrunk the same way (``(n r + w R) / (n + w)``, ``n`` its checks, ``w``
  the weight), the first one ``1 / R``.

``r`` is ``(changes + 0.5) / (observed + interval)`` for all but the oracle. Printed: fetches,
staleness per stale spell (the bench's: the first change after a fetch to the next fetch) and
per change (every change to the next fetch), mean and 90th percentile, and their ratios to the
full crawls'.

``--apart`` draws a web whose hosts differ: even hosts' pages change up to 0.5 times a second,
odd hosts' up to 0.01, each over 10x (where a host's rate says most about a new page).

Usage: ``.venv/bin/python benchmarks/bench_revisit_slots.py [--seed 27] [--seconds 600]
[--host-prior] [--prior-weight 1] [--apart]``
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bench_freshness import change_waits, staleness
from freshweb import PageSpec, WebShape, draw
from gossamer.frontier.revisit import Bounds, History, change_rate, next_interval, observe

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
    prior: bool = False
    """Rates shrunk toward the host's (``host prior``, ``due, host prior``)."""


def _r_t(copy: Copy, now: float) -> float:
    return copy.rate() * (now - copy.fetched)


def _sqrt_r_t(copy: Copy, now: float) -> float:
    return math.sqrt(copy.rate()) * (now - copy.checked)


def _r34_t(copy: Copy, now: float) -> float:
    return copy.rate() ** 0.75 * (now - copy.checked)


def _oracle(copy: Copy, now: float) -> float:
    return copy.spec.rate**0.75 * (now - copy.checked)


def _prior_rate(copy: Copy, pooled: tuple[float, float] | None, weight: float) -> float:
    """The spare index's rate shrunk toward the host's (``pooled``: its rate and mean check
    interval)."""
    if pooled is None:
        return copy.rate()
    rate, mean = pooled
    b = weight * mean
    return max((copy.history.changes + rate * b) / (copy.history.observed + b), 1e-9)


POLICIES = (
    Policy("due", 1.0, None),
    Policy("spare r t", 1.0, _r_t),
    Policy("spare sqrt", 4.0, _sqrt_r_t),
    Policy("spare r^3/4", 4.0, _r34_t),
    Policy("index", None, _r34_t),
    Policy("oracle", None, _oracle),
)
PRIOR_POLICIES = (
    Policy("host prior", 4.0, _r34_t, prior=True),
    Policy("due, host prior", 1.0, None, prior=True),
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
        pooled = self._pooled() if policy.prior else None
        for i, copy in ready:
            if policy.prior:
                since = now - copy.checked
                score = _prior_rate(copy, pooled, self.opts.prior_weight) ** 0.75 * since
            else:
                score = policy.index(copy, now)
            if score > value:
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
            copy.interval = self._interval(copy)
        else:
            last = copy.history
            copy.history = observe(
                History(last.checks, last.changes, last.observed, copy.interval),
                version != copy.version,
                now - copy.fetched,
            )
            copy.interval = self._interval(copy)
            copy.fetched, copy.version = now, version
        copy.checked = now
        bound = self.policy.bound
        copy.due = None if bound is None else now + bound * copy.interval

    def _pooled(self) -> tuple[float, float] | None:
        """The host's change rate from all its pages' checks and its mean check interval."""
        n = sum(c.history.checks for c in self.copies.values())
        seconds = sum(c.history.observed for c in self.copies.values())
        if n <= 0 or seconds <= 0:
            return None
        changes = sum(c.history.changes for c in self.copies.values())
        return change_rate(History(n, changes, seconds)) or 0.0, seconds / n

    def _interval(self, copy: Copy) -> float:
        """The page's next interval: the policy's (``due, host prior``: its shrunk rate's)."""
        pooled = self._pooled() if self.policy.prior and self.policy.index is None else None
        if pooled is None:
            return next_interval(copy.history, self.bounds)
        weight, n = self.opts.prior_weight, copy.history.checks
        own = change_rate(copy.history)
        rate = pooled[0] if own is None else (n * own + weight * pooled[0]) / (n + weight)
        target = math.inf if rate <= 0 else 1.0 / rate
        if n == 0:
            return self.bounds.clamp(target)
        return self.bounds.clamp(min(target, copy.interval * 2.0))


def _apart(shape: WebShape, seed: int) -> list[PageSpec]:
    """``--apart``'s web: even hosts' pages change up to 0.5 a second, odd hosts' up to 0.01,
    each over 10x."""
    pages = []
    for host in range(shape.hosts):
        fastest = 0.5 if host % 2 == 0 else 0.01
        own = replace(shape, fastest=fastest, spread=10.0)
        pages += [p for p in draw(own, seed + host) if p.host == host]
    return pages


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
    parser.add_argument("--host-prior", action="store_true", help="add the host prior policies")
    parser.add_argument("--prior-weight", type=float, default=1.0, help="the prior's checks")
    parser.add_argument("--apart", action="store_true", help="hosts whose rates differ")
    opts = parser.parse_args()
    shape = WebShape(horizon=opts.seconds + 60)
    pages = _apart(shape, opts.seed) if opts.apart else draw(shape, opts.seed)
    bounds = Bounds(initial=5.0, least=FLOOR, most=60.0)
    by_host = [[p for p in pages if p.host == h] for h in range(shape.hosts)]
    runs: dict[str, list[tuple[list[PageSpec], dict[int, list[float]]]]] = {
        "full": [(own, full_crawls(own, opts)) for own in by_host]
    }
    for policy in POLICIES + (PRIOR_POLICIES if opts.host_prior else ()):
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
            f"{name:15} {fetches:5} fetches  {figures[0]:5.2f} s / {figures[1]:5.2f} s "
            f"({ratios[0]:.2f}x / {ratios[1]:.2f}x) | {figures[2]:5.2f} s / {figures[3]:5.2f} s "
            f"({ratios[2]:.2f}x / {ratios[3]:.2f}x)"
        )


if __name__ == "__main__":
    main()

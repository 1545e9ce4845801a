"""The revisit interval policy against Nutch's AdaptiveFetchSchedule, simulated (no network).

Pages change as Poisson processes with rates spread log-uniformly over 1,000x (a tenth of them
never change). Each policy revisits every page when due, within the same bounds, for the same
simulated time; the benchmark prints the fetches made, the mean and 90th percentile staleness
of the changes captured (time from a change to the fetch that saw it), and the share of
changes a page went through unseen before the next one (missed). Both policies are pure
functions, so a run takes seconds and its figures are exact for a seed.

Usage: ``.venv/bin/python benchmarks/bench_revisit_policy.py [--pages N] [--days D] [--seed S]``
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from gossamer.frontier.revisit import Bounds, History, next_interval, observe

DAY = 86_400.0
BOUNDS = Bounds(initial=DAY, least=3_600.0, most=30 * DAY)
Policy = Callable[[History, bool], float]


def estimator(history: History, changed: bool) -> float:
    """gossamer's: Cho and Garcia-Molina's change-rate estimate, bounded growth."""
    return next_interval(history, BOUNDS)


def nutch(history: History, changed: bool) -> float:
    """Nutch's AdaptiveFetchSchedule: x(1 - 0.2) when changed, x(1 + 0.4) when not."""
    factor = 0.8 if changed else 1.4
    return BOUNDS.clamp(history.interval * factor)


def simulate(policy: Policy, rates: list[float], horizon: float, rng: random.Random) -> dict:
    fetches = captured = missed = 0
    stale: list[float] = []
    for rate in rates:
        changes = _changes(rate, horizon, rng)
        history, at, interval, seen = History(), 0.0, BOUNDS.initial, 0
        while at + interval <= horizon:
            at += interval
            fetches += 1
            new = [c for c in changes[seen:] if c <= at]
            seen += len(new)
            if new:
                captured += 1
                missed += len(new) - 1
                stale.append(at - new[0])
            history = observe(
                History(history.checks, history.changes, history.observed, interval),
                bool(new),
                interval,
            )
            interval = policy(history, bool(new))
    stale.sort()
    p90 = stale[int(0.9 * (len(stale) - 1))] if stale else 0.0
    total = captured + missed
    return {
        "fetches": fetches,
        "mean_staleness_h": statistics.fmean(stale) / 3600 if stale else 0.0,
        "p90_staleness_h": p90 / 3600,
        "missed": missed / total if total else 0.0,
    }


def _changes(rate: float, horizon: float, rng: random.Random) -> list[float]:
    out, at = [], 0.0
    while rate > 0:
        at += rng.expovariate(rate)
        if at > horizon:
            break
        out.append(at)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--days", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # a change every 2 hours to every 83 days, log-uniform; a tenth never change
    rates = [
        0.0 if rng.random() < 0.1 else 1 / (7200 * math.exp(rng.uniform(0, math.log(1000))))
        for _ in range(args.pages)
    ]
    for name, policy in (("estimator", estimator), ("nutch", nutch)):
        found = simulate(policy, rates, args.days * DAY, random.Random(args.seed))
        print(
            f"{name:10} fetches {found['fetches']:>8}  staleness mean "
            f"{found['mean_staleness_h']:6.1f} h  p90 {found['p90_staleness_h']:6.1f} h  "
            f"missed {found['missed']:.0%}"
        )


if __name__ == "__main__":
    main()

"""The revisit interval policy: Cho and Garcia-Molina's change-rate estimate, bounded."""

import math

import pytest

from gossamer.frontier.revisit import GROWTH, Bounds, History, change_rate, next_interval, observe

BOUNDS = Bounds(initial=100.0, least=10.0, most=10_000.0)


def test_first_interval_is_the_initial_one() -> None:
    assert change_rate(History()) is None
    assert next_interval(History(), BOUNDS) == 100.0
    assert next_interval(History(), Bounds(5.0, 10.0, 20.0)) == 10.0  # clamped


def test_estimator_matches_the_formula() -> None:
    history = History(checks=10, changes=4, observed=1000.0, interval=200.0)
    expected = -math.log((10 - 4 + 0.5) / (10 + 0.5)) / 100.0
    assert change_rate(history) == pytest.approx(expected)
    assert next_interval(history, BOUNDS) == pytest.approx(1 / expected)


def test_a_quiet_page_backs_off_at_most_by_growth_up_to_the_maximum() -> None:
    history, interval = History(), BOUNDS.initial
    seen = []
    for _ in range(12):
        history = observe(
            History(history.checks, history.changes, history.observed, interval),
            changed=False,
            waited=interval,
        )
        interval = next_interval(history, BOUNDS)
        seen.append(interval)
    assert seen[0] == 100.0 * GROWTH
    assert all(b <= a * GROWTH for a, b in zip([100.0, *seen], seen, strict=False))
    assert seen[-1] == BOUNDS.most


def test_a_page_changing_every_time_comes_down_to_the_minimum() -> None:
    history, interval = History(), BOUNDS.initial
    for _ in range(40):
        history = observe(
            History(history.checks, history.changes, history.observed, interval),
            changed=True,
            waited=interval,
        )
        interval = next_interval(history, BOUNDS)
    assert interval == BOUNDS.least


def test_a_rare_change_does_not_rush_a_stable_page_back() -> None:
    stable = History(checks=50, changes=0, observed=50 * 1000.0, interval=1000.0)
    changed = observe(stable, changed=True, waited=1000.0)
    # one change in 51 checks: still about 50 intervals per change, so no shorter interval
    # (a fixed-factor schedule as Nutch's would cut it by a third)
    assert next_interval(changed, BOUNDS) == 2000.0

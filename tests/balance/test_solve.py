"""P1's PSO against the exact and greedy solvers on small cases; the default is best by makespan."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from gossamer.balance.solve import (
    DEFAULT_SOLVER,
    SOLVERS,
    Floats,
    Ints,
    Solution,
    exact,
    greedy,
    pso,
)

TimeFn = Callable[[Ints], Floats]


def _linear(rate: float, overhead: float) -> TimeFn:
    """n URLs at ``rate`` per second plus a start-up cost (none for no URLs)."""

    def time(n: Ints) -> Floats:
        counts = np.asarray(n, dtype=np.float64)
        return np.where(counts > 0, counts / rate + overhead, 0.0)

    return time


def _convex(rate: float, crowding: float) -> TimeFn:
    """Slower per URL as the share grows (a crowded worker)."""

    def time(n: Ints) -> Floats:
        counts = np.asarray(n, dtype=np.float64)
        return counts / rate + crowding * (counts / 50.0) ** 2

    return time


def _cases() -> list[tuple[list[TimeFn], int]]:
    rng = np.random.default_rng(5)
    cases = []
    for i in range(10):
        workers = int(rng.integers(2, 5))
        total = 30 if workers == 4 else int(rng.integers(20, 60))
        if i % 2:
            times = [_linear(rng.uniform(0.5, 4), rng.uniform(0, 3)) for _ in range(workers)]
        else:
            times = [_convex(rng.uniform(0.5, 4), rng.uniform(0, 2)) for _ in range(workers)]
        cases.append((times, total))
    return cases


def test_pso_close_to_exact_and_greedy_best_by_makespan() -> None:
    rows = []
    for times, total in _cases():
        best_var = exact(times, total, "variance")
        best_span = exact(times, total, "makespan")
        swarm, fill = pso(times, total), greedy(times, total)
        for solution in (best_var, best_span, swarm, fill):
            assert sum(solution.shares) == total
            assert min(solution.shares) >= 0
        rows.append((len(times), total, best_var, best_span, swarm, fill))
        # PSO optimises P1's objective: within a few % of the exact optimum's makespan, and
        # its variance no more than 0.05 s^2 above the exact minimum.
        assert swarm.makespan <= best_span.makespan * 1.05
        assert swarm.variance <= best_var.variance + 0.05
        # Water-filling one URL at a time is makespan-optimal for non-decreasing times.
        assert fill.makespan == pytest.approx(best_span.makespan)
        assert fill.makespan <= swarm.makespan + 1e-9
    print("\n  M   N | exact-var var/makespan | exact-makespan | pso | greedy")
    for m, n, *solutions in rows:
        cells = " | ".join(f"{s.variance:6.3f}/{s.makespan:6.2f}" for s in solutions)
        print(f"  {m} {n:3d} | {cells}")
    assert DEFAULT_SOLVER == "greedy"


def test_p1_example_shape() -> None:
    """Five unequal workers, 500 URLs (P1's setting): balanced beats the equal split."""
    times = [_linear(rate, 2.0) for rate in (1.3, 0.55, 0.95, 0.3, 0.85)]
    equal = max(float(t(np.array([100]))[0]) for t in times)
    for solver in SOLVERS.values():
        solution = solver(times, 500)
        print(f"{solution.solver}: {solution.shares} makespan {solution.makespan:.0f}s")
        assert sum(solution.shares) == 500
        assert solution.makespan < 0.6 * equal


def test_pso_is_seeded_and_bounded() -> None:
    times = [_linear(rate, 1.0) for rate in (1.0, 2.0, 3.0)]
    assert pso(times, 90) == pso(times, 90)


@pytest.mark.parametrize("solve", [pso, greedy, exact])
def test_degenerate_inputs(solve: Callable[[list[TimeFn], int], Solution]) -> None:
    assert solve([], 10).shares == ()
    assert solve([_linear(1.0, 0.0)], 7).shares == (7,)
    assert solve([_linear(1.0, 0.0), _linear(1.0, 0.0)], 0).shares == (0, 0)


def test_exact_refuses_big_cases() -> None:
    with pytest.raises(ValueError, match="too many"):
        exact([_linear(1.0, 0.0)] * 8, 500)


def test_greedy_scales() -> None:
    times = [_linear(float(r), 1.0) for r in np.random.default_rng(1).uniform(1, 10, 50)]
    solution = greedy(times, 100_000)
    assert sum(solution.shares) == 100_000
    assert solution.makespan < 1.01 * min(solution.finish) + 2

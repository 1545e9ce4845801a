"""Integer shares of N URLs over M workers from their predicted-time functions.

Every solver takes ``times`` (one function per worker: an array of URL counts -> predicted
seconds, 0 for 0 URLs, vectorised) and ``total`` and returns a :class:`Solution`:

- :func:`pso` is the integer particle swarm (30 particles, w 0.8, c1 = c2 = 2, ``X += ceil(V)``,
  fitness = variance of finish times + the two penalty terms), minimising the variance of the
  predicted finish times;
- :func:`exact` enumerates every composition of ``total`` (small cases only), for either
  objective;
- :func:`greedy` water-fills: each next batch of URLs goes to the worker that would finish it
  soonest. With non-decreasing time functions and batches of one URL it minimises the makespan
  (the slowest worker's time, which is what the user waits for).

Variance and makespan differ: a variance-optimal split can leave everyone equally late. The
allocator uses :data:`DEFAULT_SOLVER`, the one the comparison in
``tests/balance/test_solve.py`` found best by makespan.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
TimeFn = Callable[[Ints], Floats]
"""URL counts -> predicted seconds for one worker (elementwise; 0 URLs take 0 s)."""
Objective = Literal["variance", "makespan"]


@dataclass(frozen=True, slots=True)
class Solution:
    """Shares and their predicted finish times."""

    shares: tuple[int, ...]
    finish: tuple[float, ...]
    solver: str

    @property
    def variance(self) -> float:
        """The objective: the variance of the predicted finish times."""
        return float(np.var(self.finish)) if self.finish else 0.0

    @property
    def makespan(self) -> float:
        """The slowest worker's predicted finish time."""
        return max(self.finish, default=0.0)


def evaluate(times: Sequence[TimeFn], shares: Sequence[int], solver: str) -> Solution:
    """The :class:`Solution` of ``shares`` under ``times``."""
    finish = [
        float(t(np.array([n], dtype=np.int64))[0]) for t, n in zip(times, shares, strict=True)
    ]
    return Solution(tuple(int(n) for n in shares), tuple(finish), solver)


def _finish_matrix(times: Sequence[TimeFn], shares: Ints) -> Floats:
    """Finish times of many candidate share vectors (rows) at once."""
    columns = [t(np.maximum(shares[:, i], 0)) for i, t in enumerate(times)]
    return np.stack(columns, axis=1) if columns else np.zeros((len(shares), 0))


def even_split(total: int, workers: int) -> list[int]:
    """``total`` split as evenly as integers allow (the first ``total % workers`` get one more)."""
    base, extra = divmod(total, workers)
    return [base + (1 if i < extra else 0) for i in range(workers)]


# -- the particle swarm ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SwarmSettings:
    """The swarm's parameters, plus the bounds every loop needs."""

    particles: int = 30
    inertia: float = 0.8
    c1: float = 2.0
    c2: float = 2.0
    iterations: int = 1000
    patience: int = 200
    """Stop after this many iterations without a better global best."""
    seed: int = 0


def pso(times: Sequence[TimeFn], total: int, settings: SwarmSettings | None = None) -> Solution:
    """The integer particle swarm minimising the variance of predicted finish times.

    One particle starts at the even split (``N/M`` each); the others start at random
    compositions of ``total``, or every particle would sit still. Velocities are clamped to
    ``±total``. The global best is repaired at the end (negative shares to 0, the sum to
    ``total``, by :func:`_repair`) since the penalties only discourage a wrong sum.
    """
    opts = settings or SwarmSettings()
    workers = len(times)
    if workers == 0:
        return Solution((), (), "pso")
    rng = np.random.default_rng(opts.seed)
    x = rng.multinomial(total, np.full(workers, 1.0 / workers), size=opts.particles)
    x[0] = even_split(total, workers)
    v = np.zeros(x.shape)
    fit = _fitness(times, x, total)
    best_x, best_fit = x.copy(), fit.copy()
    g = int(np.argmin(fit))
    since = 0
    for _ in range(opts.iterations):
        r1, r2 = rng.random(x.shape), rng.random(x.shape)
        v = opts.inertia * v + opts.c1 * r1 * (best_x - x) + opts.c2 * r2 * (best_x[g] - x)
        v = np.clip(v, -total, total)
        x = x + np.ceil(v).astype(np.int64)
        fit = _fitness(times, x, total)
        better = fit < best_fit
        best_x[better], best_fit[better] = x[better], fit[better]
        new_g = int(np.argmin(best_fit))
        since = 0 if best_fit[new_g] < best_fit[g] else since + 1
        g = new_g
        if since >= opts.patience:
            break
    return evaluate(times, _repair(times, best_x[g], total), "pso")


def _fitness(times: Sequence[TimeFn], x: Ints, total: int) -> Floats:
    """The swarm's fitness: variance + (sum n_i - N)^2 + (sum(|n_i| - n_i))^2, per particle."""
    spread = np.var(_finish_matrix(times, x), axis=1)
    wrong_sum = (x.sum(axis=1) - total).astype(np.float64) ** 2
    negative = (np.abs(x) - x).sum(axis=1).astype(np.float64) ** 2
    return np.asarray(spread + wrong_sum + negative, dtype=np.float64)


def _repair(times: Sequence[TimeFn], shares: Ints, total: int) -> list[int]:
    """Shares made valid: negatives to 0, then URLs taken from the slowest / given to the
    worker that would finish soonest, one at a time, until they sum to ``total``."""
    out = [max(int(n), 0) for n in shares]
    while sum(out) > total:
        pairs = zip(times, out, strict=True)
        finish = [float(t(np.array([n]))[0]) if n > 0 else -1.0 for t, n in pairs]
        out[int(np.argmax(finish))] -= 1
    while sum(out) < total:
        nxt = [float(t(np.array([n + 1]))[0]) for t, n in zip(times, out, strict=True)]
        out[int(np.argmin(nxt))] += 1
    return out


# -- exact and greedy ---------------------------------------------------------------------------

EXACT_LIMIT = 200_000
"""The most compositions :func:`exact` enumerates."""


def exact(times: Sequence[TimeFn], total: int, objective: Objective = "makespan") -> Solution:
    """The best shares by ``objective`` over every composition of ``total`` (small cases).

    ValueError if there are more than :data:`EXACT_LIMIT` compositions.
    """
    workers = len(times)
    if workers == 0:
        return Solution((), (), f"exact-{objective}")
    count = math.comb(total + workers - 1, workers - 1)
    if count > EXACT_LIMIT:
        raise ValueError(f"{count} compositions: too many for the exact solver")
    bars = np.array(list(itertools.combinations(range(total + workers - 1), workers - 1)))
    bars = bars.reshape(count, workers - 1)
    edges = np.hstack([np.full((count, 1), -1), bars, np.full((count, 1), total + workers - 1)])
    candidates = (np.diff(edges, axis=1) - 1).astype(np.int64)
    finish = _finish_matrix(times, candidates)
    scores = finish.max(axis=1) if objective == "makespan" else np.var(finish, axis=1)
    best = candidates[int(np.argmin(scores))]
    return evaluate(times, best.tolist(), f"exact-{objective}")


def greedy(times: Sequence[TimeFn], total: int, steps: int = 64) -> Solution:
    """Water-filling: each next batch goes to the worker that would finish it soonest.

    Batches are ``total / (steps * M)`` URLs (at least one), so the work is about ``steps``
    batches per worker whatever ``total`` is; the last ``M`` batches' worth goes in batches
    eight times smaller, and so on down to one URL, to even out the finish times. With batches
    of one URL and non-decreasing time functions the makespan is optimal.
    """
    workers = len(times)
    shares = [0] * workers
    left = total
    step = max(1, total // (steps * max(workers, 1)))
    while True:
        finer = max(1, step // 8)
        keep = workers * step if step > 1 else 0
        heap = [(_after(times[i], shares[i] + step), i) for i in range(workers)]
        heapq.heapify(heap)
        while heap and left - step >= keep:
            _, i = heapq.heappop(heap)
            shares[i] += step
            left -= step
            heapq.heappush(heap, (_after(times[i], shares[i] + step), i))
        if step == 1:
            return evaluate(times, shares, "greedy")
        step = finer


def _after(time: TimeFn, count: int) -> float:
    return float(time(np.array([count], dtype=np.int64))[0])


SOLVERS: dict[str, Callable[[Sequence[TimeFn], int], Solution]] = {"greedy": greedy, "pso": pso}
DEFAULT_SOLVER = "greedy"
"""Best by makespan in the PSO / exact / greedy comparison (see the module docstring)."""

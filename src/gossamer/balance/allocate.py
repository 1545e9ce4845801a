"""The allocators: which worker owns which of the partitions ``0..P-1``.

:func:`allocate` is the one entry point. Each kind first decides every worker's share of the
queued URLs:

- ``equal``: the baseline, the same share for every worker (by queued URLs; the cluster
  re-plans it only when workers join or leave);
- ``weighted``: shares proportional to measured throughput (live pages/s, else what the
  bandwidth and concurrency allow, :func:`~gossamer.balance.model.nominal_rate`);
- ``bpnn-pso``: the runtime model's predicted times, shares from a solver of
  :mod:`gossamer.balance.solve` (by default the one best by makespan);
- ``first-fit``: partitions as tasks (a demand per queued URL, :data:`URL_DEMAND`) placed
  by first-fit preferring busy workers, round after round while the job exceeds one period's
  capacity; a worker first-fit leaves idle gets nothing;
- ``least-loaded``: each partition, biggest first, goes to the worker with the least load,
  which starts at the URLs it reported waiting in its memory at its last heartbeat (work
  claimed and not yet done) and grows by each partition it is given; a worker still busy with
  what it holds gets no new work.

:func:`assign_partitions` then turns shares into partitions. Partitions are the unit of
ownership (a host's URLs all live in one), so moving a partition never splits a host. A worker
without capacity (:func:`throughput` 0) gets nothing, unless no worker has any: then ``equal``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from gossamer.balance.capability import Capability, WorkerState
from gossamer.balance.firstfit import Resources, first_fit_rounds
from gossamer.balance.model import PAGE_BYTES, LinearRuntimeModel, RuntimeModel, nominal_rate
from gossamer.balance.solve import DEFAULT_SOLVER, SOLVERS, Floats, Ints, TimeFn

Kind = Literal["equal", "weighted", "bpnn-pso", "first-fit", "least-loaded"]
KINDS: tuple[Kind, ...] = ("equal", "weighted", "bpnn-pso", "first-fit", "least-loaded")

TOLERANCE = 0.1
"""Nothing moves while every worker is within this fraction of its targets."""
HORIZON = 60.0
"""Seconds of work one first-fit round plans (a worker's capacity per round)."""
URL_DEMAND = Resources(cpu=0.005 / HORIZON, memory=0.002, bandwidth=PAGE_BYTES / HORIZON)
"""What one queued URL asks of a worker in a round: 5 ms of one core, 2 KB held in memory
(MB), one page of bandwidth (bytes/s), in the units of :func:`capacity`."""


def allocate(
    kind: Kind,
    workers: Sequence[WorkerState],
    queued: Mapping[int, int],
    partitions: int,
    previous: Mapping[str, Iterable[int]] | None = None,
    model: RuntimeModel | None = None,
    *,
    tolerance: float = TOLERANCE,
    solver: str = DEFAULT_SOLVER,
) -> dict[str, frozenset[int]]:
    """Every partition ``0..partitions-1`` owned by exactly one worker (none without workers).

    ``queued`` maps a partition to its queued URLs (missing: empty). ``previous`` is the
    current assignment: kept as it is while every worker is within ``tolerance`` of its
    targets, otherwise changed moving as few URLs as possible. ``model`` is the runtime model
    for ``bpnn-pso`` (default: the unfitted :class:`LinearRuntimeModel`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown allocator {kind!r}; one of {', '.join(KINDS)}")
    states = {w.name: w for w in sorted(workers, key=lambda w: w.name)}
    able = [w for w in states.values() if throughput(w) > 0]
    if not states:
        return {}
    if kind == "equal" or not able:
        names = [w.name for w in able] or list(states)
        shares = dict.fromkeys(names, 1.0 / len(names))
        return assign_partitions(shares, queued, partitions, previous, tolerance)
    total = sum(max(queued.get(p, 0), 0) for p in range(partitions))
    if kind == "weighted":
        targets = weighted_shares(able)
    elif kind == "bpnn-pso":
        targets = solver_shares(able, total or partitions, model, solver)
    elif kind == "least-loaded":
        targets = least_loaded_shares(able, queued, partitions)
    else:
        targets = first_fit_shares(able, queued, partitions)
    return assign_partitions(targets, queued, partitions, previous, tolerance)


# -- shares -----------------------------------------------------------------------------------


def throughput(worker: WorkerState) -> float:
    """Pages per second: measured if the worker has reported any, else from its figures."""
    if worker.capability.concurrency <= 0 or worker.capability.cores <= 0:
        return 0.0
    if worker.live.pages_per_second > 0:
        return worker.live.pages_per_second
    return nominal_rate(worker.capability)


def weighted_shares(workers: Sequence[WorkerState]) -> dict[str, float]:
    """Fractions proportional to :func:`throughput`."""
    rates = {w.name: throughput(w) for w in workers}
    whole = sum(rates.values())
    return {name: rate / whole for name, rate in rates.items()}


def solver_shares(
    workers: Sequence[WorkerState], total: int, model: RuntimeModel | None, solver: str
) -> dict[str, float]:
    """Fractions from a solver of ``total`` URLs over the model's predicted times."""
    runtime: RuntimeModel = model or LinearRuntimeModel()
    times = [_time_fn(runtime, w.capability) for w in workers]
    solution = SOLVERS[solver](times, total)
    return {w.name: n / total for w, n in zip(workers, solution.shares, strict=True)}


def _time_fn(runtime: RuntimeModel, capability: Capability) -> TimeFn:
    def predict(n: Ints) -> Floats:
        return runtime.predict(capability, n)

    return predict


def capacity(worker: WorkerState) -> Resources:
    """A worker's first-fit capacity: cores, memory in MB (unknown: unlimited) and the bytes
    per second its :func:`throughput` moves."""
    memory = worker.capability.memory_mb or math.inf
    return Resources(worker.capability.cores, memory, throughput(worker) * PAGE_BYTES)


def first_fit_shares(
    workers: Sequence[WorkerState], queued: Mapping[int, int], partitions: int
) -> dict[str, float]:
    """Fractions of the URLs first-fit places on each worker (throughput if none queued)."""
    tasks = [p for p in range(partitions) if queued.get(p, 0) > 0]
    if not tasks:
        return weighted_shares(workers)
    demands = [URL_DEMAND.scaled(queued[p]) for p in tasks]
    nodes = first_fit_rounds(demands, [capacity(w) for w in workers])
    urls = np.zeros(len(workers))
    for task, node in zip(tasks, nodes, strict=True):
        urls[node] += queued[task]
    return {w.name: float(u / urls.sum()) for w, u in zip(workers, urls, strict=True)}


def least_loaded_shares(
    workers: Sequence[WorkerState], queued: Mapping[int, int], partitions: int
) -> dict[str, float]:
    """Fractions of the queued URLs the least-loaded rule gives each worker: partitions,
    biggest first, each to the worker whose reported backlog (``live.queue_depth``) plus the
    URLs given so far is least (ties by name). Equal shares when nothing is queued."""
    load = {w.name: float(max(w.live.queue_depth, 0)) for w in workers}
    given = dict.fromkeys(load, 0.0)
    busy = sorted((p for p in range(partitions) if queued.get(p, 0) > 0), key=lambda p: -queued[p])
    for part in busy:
        name = min(load, key=lambda n: (load[n], n))
        load[name] += queued[part]
        given[name] += queued[part]
    total = sum(given.values())
    if total <= 0:
        return dict.fromkeys(given, 1.0 / len(given))
    return {name: urls / total for name, urls in given.items()}


# -- shares -> partitions ---------------------------------------------------------------------


def assign_partitions(
    targets: Mapping[str, float],
    queued: Mapping[int, int],
    partitions: int,
    previous: Mapping[str, Iterable[int]] | None = None,
    tolerance: float = TOLERANCE,
) -> dict[str, frozenset[int]]:
    """Partitions for workers whose URL shares are ``targets`` (fractions summing to 1).

    A worker's targets are its fraction of the queued URLs and of the empty partitions (new
    URLs land there). ``previous`` stands unchanged when it covers every partition with
    workers that have a share and either each is within ``tolerance`` of its targets or a
    fresh plan would be no closer. Otherwise each worker keeps its previous partitions, biggest
    first, while keeping one brings it closer to its target; the rest go, biggest first, to the
    worker furthest below its target, and empty partitions by quota.
    """
    names = sorted(name for name, share in targets.items() if share > 0)
    if not names:
        return {}
    sizes = {p: max(queued.get(p, 0), 0) for p in range(partitions)}
    owner = _owners(names, partitions, previous or {})
    want, pinned = _wants(names, targets, sizes, owner)
    empty = [p for p in range(partitions) if sizes[p] == 0]
    quota = _quotas({name: targets[name] for name in names}, len(empty))
    fresh = _fill(names, sizes, owner, want, pinned, empty, quota)
    if len(owner) == partitions:
        kept = _by_worker(names, owner)
        before = _deviation(kept, sizes, want, quota)
        # a worker left with nothing though it has a quota (one that joined) is never kept so
        if all(kept[n] or not quota[n] for n in names) and (
            before <= tolerance or _deviation(fresh, sizes, want, quota) >= before
        ):
            return kept
    return fresh


def _wants(
    names: Sequence[str],
    targets: Mapping[str, float],
    sizes: Mapping[int, int],
    owner: Mapping[int, str],
) -> tuple[dict[str, float], dict[int, str]]:
    """Each worker's target in queued URLs, with partitions that cannot be split counted whole.

    A partition bigger than every remaining worker's target (one busy host among few, when
    partitioned by host) goes whole to one of the workers whose share is within
    :data:`TOLERANCE` of the largest: its previous owner if that is one of them, else the one
    holding the fewest queued URLs. That worker's target becomes the partition, and the others
    share what is left. Without this, one such partition would leave every plan as far off as
    the current one, and a worker that joins would be given nothing. Also returns those
    pinned partitions and their workers.
    """
    want: dict[str, float] = {}
    pinned: dict[int, str] = {}
    pool = {name: targets[name] for name in names}
    rest = sum(sizes.values())
    held = dict.fromkeys(names, 0)
    for part, name in owner.items():
        held[name] += sizes[part]
    for part in sorted((p for p in sizes if sizes[p] > 0), key=lambda p: (-sizes[p], p)):
        if not pool:
            break
        largest = max(pool.values())
        if sizes[part] <= rest * largest / sum(pool.values()):
            break
        # among the workers with the largest share (near enough), its previous owner, else
        # the one holding the fewest URLs now: the fewest move
        able = [n for n in pool if pool[n] >= (1 - TOLERANCE) * largest]
        previous = owner.get(part)
        name = previous if previous in able else min(able, key=lambda n: (held[n], -pool[n], n))
        want[name] = sizes[part]
        pinned[part] = name
        rest -= sizes[part]
        del pool[name]
    whole = sum(pool.values())
    return want | {name: share * rest / whole for name, share in pool.items()}, pinned


def _owners(
    names: Sequence[str], partitions: int, previous: Mapping[str, Iterable[int]]
) -> dict[int, str]:
    """Partition -> previous owner, for owners still in ``names`` (the first by name wins)."""
    owner: dict[int, str] = {}
    for name in names:
        for part in previous.get(name, ()):
            if 0 <= part < partitions:
                owner.setdefault(part, name)
    return owner


def _quotas(shares: Mapping[str, float], count: int) -> dict[str, int]:
    """``count`` items split by ``shares`` (largest remainders; ties by name)."""
    whole = sum(shares.values())
    exact = {name: count * share / whole for name, share in shares.items()}
    out = {name: math.floor(value) for name, value in exact.items()}
    rest = sorted(exact, key=lambda name: (out[name] - exact[name], name))
    for name in rest[: count - sum(out.values())]:
        out[name] += 1
    return out


def _fill(
    names: Sequence[str],
    sizes: Mapping[int, int],
    owner: Mapping[int, str],
    want: Mapping[str, float],
    pinned: Mapping[int, str],
    empty: Sequence[int],
    quota: Mapping[str, int],
) -> dict[str, frozenset[int]]:
    owned: dict[str, list[int]] = {name: [] for name in names}
    have = dict.fromkeys(names, 0)
    for part, name in pinned.items():
        owned[name].append(part)
        have[name] += sizes[part]
    previous = _by_worker(names, owner)
    free: list[int] = []
    placed = set(empty) | pinned.keys()  # empty ones go by quota below, pinned ones are placed
    for name in names:
        for part in sorted(previous[name] - placed, key=lambda p: (-sizes[p], p)):
            if have[name] + sizes[part] / 2 <= want[name]:
                owned[name].append(part)
                have[name] += sizes[part]
            else:
                free.append(part)
    free += [p for p in sizes if sizes[p] > 0 and p not in owner and p not in pinned]
    for part in sorted(free, key=lambda p: (-sizes[p], p)):
        name = max(names, key=lambda n: (want[n] - have[n], n))
        owned[name].append(part)
        have[name] += sizes[part]
    _fill_empty(names, owned, previous, empty, quota)
    return {name: frozenset(parts) for name, parts in owned.items()}


def _fill_empty(
    names: Sequence[str],
    owned: dict[str, list[int]],
    previous: Mapping[str, frozenset[int]],
    empty: Sequence[int],
    quota: Mapping[str, int],
) -> None:
    """Empty partitions by quota, each worker keeping its previous ones first."""
    taken: set[int] = set()
    count = dict.fromkeys(names, 0)
    for name in names:
        kept = [p for p in empty if p in previous[name]][: quota[name]]
        owned[name] += kept
        taken.update(kept)
        count[name] = len(kept)
    spare = iter(p for p in empty if p not in taken)
    for name in names:
        owned[name].extend(next(spare) for _ in range(quota[name] - count[name]))


def _by_worker(names: Sequence[str], owner: Mapping[int, str]) -> dict[str, frozenset[int]]:
    parts: dict[str, set[int]] = {name: set() for name in names}
    for part, name in owner.items():
        parts[name].add(part)
    return {name: frozenset(p) for name, p in parts.items()}


def _deviation(
    assignment: Mapping[str, frozenset[int]],
    sizes: Mapping[int, int],
    want: Mapping[str, float],
    quota: Mapping[str, int],
) -> float:
    """The largest relative miss of any worker's URL target or empty-partition quota."""
    worst = 0.0
    for name, parts in assignment.items():
        urls = sum(sizes[p] for p in parts)
        empties = sum(1 for p in parts if sizes[p] == 0)
        worst = max(worst, abs(urls - want[name]) / max(want[name], 1.0))
        worst = max(worst, abs(empties - quota[name]) / max(quota[name], 1))
    return worst

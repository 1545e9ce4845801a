"""The allocators behind ``allocate``: shares, partitions, bad input and re-planning."""

from __future__ import annotations

import pytest

from gossamer.balance.allocate import KINDS, Kind, allocate, assign_partitions
from gossamer.balance.capability import Capability, Live, WorkerState
from gossamer.balance.model import LinearRuntimeModel

P = 512
QUEUED = {p: (p * 7) % 23 for p in range(P)}  # some partitions empty, the rest 1..22 URLs
TOTAL = sum(QUEUED.values())


def worker(name: str, pages: float = 0.0, **capability: float) -> WorkerState:
    figures = {"concurrency": 64, "bandwidth_bps": 1e6, **capability}
    return WorkerState(name, Capability(**figures), Live(pages_per_second=pages))  # type: ignore[arg-type]


def urls(parts: frozenset[int]) -> int:
    return sum(QUEUED[p] for p in parts)


def check_complete(assignment: dict[str, frozenset[int]]) -> None:
    owned = [p for parts in assignment.values() for p in parts]
    assert sorted(owned) == list(range(P)), "every partition has exactly one owner"


def moved(before: dict[str, frozenset[int]], after: dict[str, frozenset[int]]) -> int:
    return sum(len(parts - after.get(name, frozenset())) for name, parts in before.items())


def test_equal_gives_every_worker_the_same_queued_urls() -> None:
    """Whatever their speeds: equal shares of the queued URLs and of the empty partitions."""
    workers = [worker("c", pages=1.0), worker("a", pages=50.0), worker("b")]
    first = allocate("equal", workers, QUEUED, P)
    check_complete(first)
    empty = {p for p in range(P) if not QUEUED[p]}
    for parts in first.values():
        assert abs(urls(parts) - TOTAL / 3) <= 22  # within one partition's URLs
        assert abs(len(parts & empty) - len(empty) / 3) < 1
    joined = allocate("equal", [*workers, worker("d")], QUEUED, P, first)
    check_complete(joined)
    assert all(abs(urls(parts) - TOTAL / 4) <= 22 for parts in joined.values())
    # the newcomer's share comes from the others; they keep the rest
    assert moved(first, joined) == len(joined["d"])


def test_weighted_follows_throughput() -> None:
    workers = [worker("a", pages=10), worker("b", pages=30)]
    split = allocate("weighted", workers, QUEUED, P)
    check_complete(split)
    assert urls(split["b"]) == pytest.approx(0.75 * TOTAL, rel=0.02)
    # without live figures: bandwidth (and concurrency) decide
    slow, fast = worker("a", bandwidth_bps=5e5), worker("b", bandwidth_bps=1.5e6)
    split = allocate("weighted", [slow, fast], QUEUED, P)
    assert urls(split["b"]) == pytest.approx(0.75 * TOTAL, rel=0.02)


def test_bpnn_pso_gives_the_faster_worker_more() -> None:
    workers = [worker("a", bandwidth_bps=5e5), worker("b", bandwidth_bps=1.5e6)]
    for solver in ("greedy", "pso"):
        split = allocate("bpnn-pso", workers, QUEUED, P, model=LinearRuntimeModel(), solver=solver)
        check_complete(split)
        assert urls(split["b"]) == pytest.approx(0.75 * TOTAL, rel=0.03)


def test_first_fit_packs_busy_workers_first() -> None:
    # a small job fits the first worker alone (P2: few nodes in use)
    small = {p: 1 for p in range(10)}
    workers = [worker("a", pages=50), worker("b", pages=50)]
    split = allocate("first-fit", workers, small, P)
    check_complete(split)
    assert split["a"] >= set(range(10)) and not split.get("b")
    # a job bigger than the cluster's capacity per round: everything assigned, both busy
    big = {p: 400 for p in range(P)}
    split = allocate("first-fit", workers, big, P)
    check_complete(split)
    assert sum(big[p] for p in split["b"]) > 0.3 * 400 * P


@pytest.mark.parametrize("kind", KINDS)
def test_bad_input(kind: Kind) -> None:
    assert allocate(kind, [], QUEUED, P) == {}
    dead = worker("dead", concurrency=0)
    split = allocate(kind, [worker("a"), dead, worker("b")], QUEUED, P)
    check_complete(split)
    assert not split.get("dead")
    only_dead = allocate(kind, [dead, worker("zero", cores=0)], QUEUED, P)
    assert only_dead == allocate("equal", [dead, worker("zero", cores=0)], QUEUED, P)  # all zero
    huge = {p: 10**6 for p in range(P)}  # far beyond what the cluster does in any horizon
    check_complete(allocate(kind, [worker("a"), worker("b")], huge, P))
    check_complete(allocate(kind, [worker("a")], {}, P))  # nothing queued yet
    with pytest.raises(ValueError):
        allocate("random", [worker("a")], QUEUED, P)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["weighted", "bpnn-pso", "first-fit"])
def test_hysteresis(kind: Kind) -> None:
    figures = {"a": 1e6, "b": 2e6, "c": 3e6}
    workers = [worker(n, bandwidth_bps=bw) for n, bw in figures.items()]
    first = allocate(kind, workers, QUEUED, P)
    check_complete(first)
    nudged = [worker(n, bandwidth_bps=bw * 1.04) for n, bw in figures.items() if n != "c"]
    nudged.append(worker("c", bandwidth_bps=3e6 * 0.97))
    assert allocate(kind, nudged, QUEUED, P, first) == first  # small change: nothing moves
    changed = [worker("a", bandwidth_bps=6e6), *workers[1:]]
    second = allocate(kind, changed, QUEUED, P, first)
    check_complete(second)
    assert urls(second["a"]) > 1.5 * urls(first["a"])
    if kind != "first-fit":  # first-fit packs the whole job onto a: everything moves there
        # moving the fewest URLs: a's gain is about a third of the URLs, and little else moves
        assert sum(urls(first[n] - second[n]) for n in first) < 0.4 * TOTAL
    gone = allocate(kind, changed[1:], QUEUED, P, second)  # a leaves
    check_complete(gone)
    assert all(second.get(n, frozenset()) <= gone[n] for n in ("b", "c"))  # survivors keep


def test_assign_partitions_keeps_previous_and_cleans_it() -> None:
    targets = {"a": 0.5, "b": 0.5}
    first = assign_partitions(targets, QUEUED, P)
    check_complete(first)
    assert assign_partitions(targets, QUEUED, P, first) == first
    # a partition claimed twice and one out of range: cleaned, still complete
    messy = {"a": first["a"] | {next(iter(first["b"])), P + 5}, "b": first["b"]}
    check_complete(assign_partitions(targets, QUEUED, P, messy))
    assert assign_partitions({"a": 0.0}, QUEUED, P) == {}


@pytest.mark.parametrize("newcomer", ["0", "z"])  # sorted before and after the others
def test_a_partition_too_big_to_share_stays_whole_and_a_newcomer_gets_the_rest(
    newcomer: str,
) -> None:
    """Partitioned by host with few hosts: one busy host's partition is more than any worker's
    share. Its owner keeps it, the others share what is left, and a worker that joins gets
    work and its quota of the empty partitions (not nothing: every plan then missed the big
    partition's share as far as the current one did, so the current one stood)."""
    sizes = {0: 80, 1: 5, 2: 5}
    before = {"a": frozenset({0, 3, 4, 5, 6}), "b": frozenset({1, 2, 7, 8, 9})}
    after = assign_partitions(dict.fromkeys(["a", "b", newcomer], 1 / 3), sizes, 10, before)
    assert sorted(p for parts in after.values() for p in parts) == list(range(10))
    assert 0 in after["a"]  # the big partition does not move
    assert [len(after[n] & {1, 2}) for n in ("a", "b", newcomer)] == [0, 1, 1]
    assert sorted(len(parts - {0, 1, 2}) for parts in after.values()) == [2, 2, 3]
    # no previous owner: the big partition goes whole to one worker, the others split the rest
    fresh = assign_partitions({"a": 0.5, "b": 0.5}, sizes, 10)
    assert sorted(sum(sizes.get(p, 0) for p in parts) for parts in fresh.values()) == [10, 80]
    # its owner left: it goes to the worker holding less, and nothing else moves
    orphan = assign_partitions({"a": 0.5, "b": 0.5}, {0: 100, 1: 200}, 2, {"b": {0}, "x": {1}})
    assert orphan == {"a": frozenset({1}), "b": frozenset({0})}
    # a slow owner (a quarter of the speed) gives it to the fast worker
    slow = assign_partitions({"a": 0.75, "b": 0.25}, sizes, 3, {"a": {1, 2}, "b": {0}})
    assert slow == {"a": frozenset({0}), "b": frozenset({1, 2})}


def test_a_newcomer_gets_its_empty_partitions_even_when_no_plan_is_closer() -> None:
    """Two busy partitions that fit a's share either way: the current plan is as close as
    any, but b, which just joined, still gets its quota of the empty ones (new URLs land
    there)."""
    after = assign_partitions({"a": 0.8, "b": 0.2}, {0: 872, 4: 701}, 5, {"a": {0, 1, 2, 3, 4}})
    assert after["a"] >= {0, 4} and len(after["b"]) == 1


def loaded(name: str, backlog: int) -> WorkerState:
    """A worker that reported ``backlog`` URLs waiting in its memory."""
    capability = Capability(concurrency=64, bandwidth_bps=1e6)
    return WorkerState(name, capability, Live(pages_per_second=10, queue_depth=backlog))


def test_least_loaded_gives_new_work_to_the_least_loaded() -> None:
    # equally loaded: the queued URLs split evenly (biggest partitions first, by turns)
    split = allocate("least-loaded", [loaded("a", 0), loaded("b", 0)], QUEUED, P)
    check_complete(split)
    assert abs(urls(split["a"]) - TOTAL / 2) <= 22
    # b still holds 1,000 URLs of work: a gets the first 1,000 new ones, then they alternate
    split = allocate("least-loaded", [loaded("a", 0), loaded("b", 1000)], QUEUED, P)
    check_complete(split)
    assert urls(split["a"]) - urls(split["b"]) == pytest.approx(1000, abs=22)
    # a backlog beyond the whole job: every partition goes to the other worker
    split = allocate("least-loaded", [loaded("a", 0), loaded("b", 10 * TOTAL)], QUEUED, P)
    check_complete(split)
    assert not split.get("b")
    # nothing queued: the empty partitions by equal quotas
    split = allocate("least-loaded", [loaded("a", 0), loaded("b", 500)], {}, P)
    check_complete(split)
    assert len(split["a"]) == len(split["b"]) == P // 2


def test_least_loaded_keeps_the_plan_while_loads_stay_close() -> None:
    first = allocate("least-loaded", [loaded("a", 100), loaded("b", 120)], QUEUED, P)
    again = allocate("least-loaded", [loaded("a", 130), loaded("b", 90)], QUEUED, P, first)
    assert again == first  # within the tolerance: nothing moves
    busy = allocate("least-loaded", [loaded("a", 3000), loaded("b", 0)], QUEUED, P, first)
    check_complete(busy)
    assert urls(busy["b"]) > urls(first["b"]) + 1000
    assert not busy["a"] - first["a"]  # a takes nothing new; it only gives

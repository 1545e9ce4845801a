"""The equal plan of partitions over workers, on an empty queue, and its range encoding."""

from __future__ import annotations

from gossamer.balance.allocate import allocate
from gossamer.balance.capability import Capability, Live, WorkerState
from gossamer.cluster.control import format_ranges, parse_ranges


def equal(partitions: int, names: list[str], previous: object = None) -> dict[str, frozenset[int]]:
    workers = [WorkerState(name, Capability(), Live()) for name in names]
    return allocate("equal", workers, {}, partitions, previous)  # type: ignore[arg-type]


def test_split_is_equal_and_complete() -> None:
    split = equal(10, ["c", "a", "b"])
    assert sorted(len(p) for p in split.values()) == [3, 3, 4]
    assert len(split["a"]) == 4  # the first by name gets the remainder
    assert frozenset().union(*split.values()) == frozenset(range(10))


def test_split_moves_little_on_join_and_leave() -> None:
    before = equal(64, ["a", "b"])
    after = equal(64, ["a", "b", "c"], before)
    moved = sum(len(before[n] - after[n]) for n in before)
    assert moved == len(after["c"]) == 21
    back = equal(64, ["a", "b"], after)
    assert sum(len(after[n] - back[n]) for n in ("a", "b")) == 0
    assert frozenset().union(*back.values()) == frozenset(range(64))


def test_ranges_round_trip() -> None:
    parts = {0, 1, 2, 7, 9, 10}
    assert format_ranges(parts) == "0-2,7,9-10"
    assert parse_ranges(format_ranges(parts)) == parts
    assert parse_ranges("") == frozenset()

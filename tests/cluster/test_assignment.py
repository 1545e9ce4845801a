"""The equal split of partitions over workers and its range encoding."""

from __future__ import annotations

from gossamer.balance.allocate import equal_split
from gossamer.cluster.control import format_ranges, parse_ranges


def test_split_is_equal_and_complete() -> None:
    split = equal_split(10, ["c", "a", "b"])
    assert sorted(len(p) for p in split.values()) == [3, 3, 4]
    assert len(split["a"]) == 4  # the first by name gets the remainder
    assert frozenset().union(*split.values()) == frozenset(range(10))


def test_split_moves_little_on_join_and_leave() -> None:
    before = equal_split(64, ["a", "b"])
    after = equal_split(64, ["a", "b", "c"], before)
    moved = sum(len(before[n] - after[n]) for n in before)
    assert moved == len(after["c"]) == 21
    back = equal_split(64, ["a", "b"], after)
    assert sum(len(after[n] - back[n]) for n in ("a", "b")) == 0
    assert frozenset().union(*back.values()) == frozenset(range(64))


def test_ranges_round_trip() -> None:
    parts = {0, 1, 2, 7, 9, 10}
    assert format_ranges(parts) == "0-2,7,9-10"
    assert parse_ranges(format_ranges(parts)) == parts
    assert parse_ranges("") == frozenset()

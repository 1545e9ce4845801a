"""The URL-seen set: exact, like a Python set, across merges, skew and bulk loads."""

import dataclasses
import random

import numpy as np
import pytest

from gossamer.frontier import dedup
from gossamer.frontier.dedup import INT64_MAX, INT64_MIN, SeenSet

EXTREMES = [INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny buffers and chunks, so a few thousand keys cross every merge and chunk boundary."""
    monkeypatch.setattr(dedup, "_MIN_BUFFER", 64)
    monkeypatch.setattr(dedup, "_MERGE_CHUNK", 50)
    monkeypatch.setattr(dedup, "_FILTER_CHUNK", 30)
    monkeypatch.setattr(dedup, "_DIR_SLICE", 4)


def random_batch(rng: random.Random, pool: list[int], size: int) -> list[int]:
    """Fresh fingerprints, earlier ones, in-batch repeats and extreme values, mixed."""
    batch: list[int] = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.3 and pool:
            batch.append(rng.choice(pool))
        elif roll < 0.4 and batch:
            batch.append(rng.choice(batch))
        elif roll < 0.42:
            batch.append(rng.choice(EXTREMES))
        else:
            batch.append(rng.randrange(INT64_MIN, INT64_MAX + 1))
    return batch


def expected(ref: set[int], batch: list[int]) -> list[bool]:
    """What ``add_many`` must answer, computed with a Python set (which it then updates)."""
    out = []
    for fp in batch:
        out.append(fp not in ref)
        ref.add(fp)
    return out


def check_stream(seen: SeenSet, ref: set[int], rng: random.Random, batches: int) -> None:
    pool = list(ref)
    for _ in range(batches):
        batch = random_batch(rng, pool, rng.randrange(0, 200))
        roll = rng.random()
        if roll < 0.1:
            got = [seen.add(fp) for fp in batch]
        elif roll < 0.2:  # any sequence of ints, not only a list
            got = seen.add_many(np.array(batch, dtype=np.int64))
        else:
            got = seen.add_many(batch)
        assert got == expected(ref, batch)
        pool.extend(batch[:20])
        assert len(seen) == len(ref)
    probes = rng.sample(pool, min(len(pool), 300))
    probes += [rng.randrange(INT64_MIN, INT64_MAX + 1) for _ in range(300)] + EXTREMES
    assert [fp in seen for fp in probes] == [fp in ref for fp in probes]


def test_add_reports_new_once() -> None:
    seen = SeenSet()
    assert seen.add(42) and not seen.add(42)
    assert 42 in seen and 43 not in seen
    assert len(seen) == 1


def test_batch_repeats_are_new_at_first_occurrence_only() -> None:
    seen = SeenSet()
    assert seen.add_many([5, 5, 7, 5, INT64_MIN, INT64_MIN]) == [
        True,
        False,
        True,
        False,
        True,
        False,
    ]
    assert seen.add_many([7, 8, 8]) == [False, True, False]
    assert seen.add_many([]) == []
    assert len(seen) == 4


@pytest.mark.parametrize("seed", range(4))
def test_matches_a_python_set(seed: int, small_chunks: None) -> None:
    check_stream(SeenSet(), set(), random.Random(seed), batches=150)


def test_matches_a_python_set_with_default_sizes() -> None:
    check_stream(SeenSet(), set(), random.Random(99), batches=300)


def test_skewed_keys_fall_back_to_binary_search(small_chunks: None) -> None:
    """Small integers all share one bucket, far wider than the lookup window."""
    seen, ref = SeenSet(), set[int]()
    rng = random.Random(7)
    for _ in range(60):
        batch = [rng.randrange(-3000, 3000) for _ in range(100)]
        assert seen.add_many(batch) == expected(ref, batch)
    assert seen._widest > dedup._WINDOW
    assert [fp in seen for fp in range(-3100, 3100)] == [fp in ref for fp in range(-3100, 3100)]


def test_bulk_load_then_adds(small_chunks: None) -> None:
    rng = random.Random(3)
    loaded = [rng.randrange(INT64_MIN, INT64_MAX + 1) for _ in range(3000)]
    loaded += loaded[:500] + EXTREMES
    seen = SeenSet.from_fingerprints(iter(loaded))
    ref = set(loaded)
    assert len(seen) == len(ref)
    check_stream(seen, ref, rng, batches=60)


def test_update_from_merges_with_buffered_and_merged_keys(small_chunks: None) -> None:
    rng = random.Random(5)
    seen, ref = SeenSet(), set[int]()
    check_stream(seen, ref, rng, batches=30)
    more = [rng.randrange(INT64_MIN, INT64_MAX + 1) for _ in range(2000)] + rng.sample(
        sorted(ref), 500
    )
    assert seen.update_from(np.array(more, dtype=np.int64)) == len(set(more) - ref)
    ref.update(more)
    check_stream(seen, ref, rng, batches=30)
    assert seen.update_from([]) == 0


def test_out_of_range_values() -> None:
    seen = SeenSet()
    with pytest.raises(OverflowError):
        seen.add(INT64_MAX + 1)
    with pytest.raises(OverflowError):
        seen.add_many([1, INT64_MIN - 1])
    assert INT64_MAX + 1 not in seen
    assert "a url" not in seen
    assert len(seen) == 0


def test_stats_are_a_frozen_snapshot() -> None:
    seen = SeenSet()
    assert seen.stats().bytes_per_entry == 0.0
    seen.add_many(list(range(10)))
    stats = seen.stats()
    assert stats.entries == 10
    assert stats.nbytes == seen.nbytes
    assert stats.bytes_per_entry == stats.nbytes / 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.entries = 0  # type: ignore[misc]


def test_memory_per_entry() -> None:
    rng = np.random.default_rng(11)
    fps = rng.integers(INT64_MIN, INT64_MAX, 400_000, dtype=np.int64, endpoint=True)
    seen = SeenSet.from_fingerprints(fps)
    assert seen.stats().bytes_per_entry < 9.5  # 8 for the key, the rest for the directory
    for start in range(0, 100_000, 1_000):
        seen.add_many(fps[start : start + 1_000].tolist())
    more = rng.integers(INT64_MIN, INT64_MAX, 100_000, dtype=np.int64, endpoint=True)
    for start in range(0, len(more), 100):
        seen.add_many(more[start : start + 100].tolist())
    assert len(seen) == 500_000
    assert seen.stats().bytes_per_entry < 16

"""The URL-seen set: exact, like a Python set, across merges, skew and bulk loads."""

import random

import numpy as np
import pytest

from gossamer.frontier import dedup, packed
from gossamer.frontier.dedup import INT64_MAX, INT64_MIN, SeenSet
from gossamer.frontier.packed import PackedSet

Seen = SeenSet | PackedSet

EXTREMES = [INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX]


@pytest.fixture(params=["seen", "packed"])
def make(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[Seen]:
    """Each test runs on the seen set (its Python-set stage kept small, so the streams cross
    into the packed form) and on the packed set alone."""
    monkeypatch.setattr(dedup, "SMALL_LIMIT", 700)
    return SeenSet if request.param == "seen" else PackedSet


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny buffers and chunks, so a few thousand keys cross every merge and chunk boundary."""
    monkeypatch.setattr(packed, "_MIN_BUFFER", 64)
    monkeypatch.setattr(packed, "_MERGE_CHUNK", 50)
    monkeypatch.setattr(packed, "_FILTER_CHUNK", 30)
    monkeypatch.setattr(packed, "_DIR_SLICE", 4)


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


def check_stream(seen: Seen, ref: set[int], rng: random.Random, batches: int) -> None:
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


def test_add_reports_new_once(make: type[Seen]) -> None:
    seen = make()
    assert seen.add(42) and not seen.add(42)
    assert 42 in seen and 43 not in seen
    assert len(seen) == 1


def test_batch_repeats_are_new_at_first_occurrence_only(make: type[Seen]) -> None:
    seen = make()
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
def test_matches_a_python_set(make: type[Seen], seed: int, small_chunks: None) -> None:
    check_stream(make(), set(), random.Random(seed), batches=150)


def test_matches_a_python_set_with_default_sizes(make: type[Seen]) -> None:
    check_stream(make(), set(), random.Random(99), batches=300)


def test_skewed_keys_fall_back_to_binary_search(make: type[Seen], small_chunks: None) -> None:
    """Small integers all share one bucket, far wider than the lookup window."""
    seen, ref = make(), set[int]()
    rng = random.Random(7)
    for _ in range(60):
        batch = [rng.randrange(-3000, 3000) for _ in range(100)]
        assert seen.add_many(batch) == expected(ref, batch)
    widest = seen._widest if isinstance(seen, PackedSet) else seen._packed_set()._widest
    assert widest > packed._WINDOW
    assert [fp in seen for fp in range(-3100, 3100)] == [fp in ref for fp in range(-3100, 3100)]


def test_bulk_load_then_adds(make: type[Seen], small_chunks: None) -> None:
    rng = random.Random(3)
    loaded = [rng.randrange(INT64_MIN, INT64_MAX + 1) for _ in range(3000)]
    loaded += loaded[:500] + EXTREMES
    seen = make.from_fingerprints(iter(loaded))
    ref = set(loaded)
    assert len(seen) == len(ref)
    check_stream(seen, ref, rng, batches=60)


def test_update_from_merges_with_buffered_and_merged_keys(
    make: type[Seen], small_chunks: None
) -> None:
    rng = random.Random(5)
    seen, ref = make(), set[int]()
    check_stream(seen, ref, rng, batches=30)
    more = [rng.randrange(INT64_MIN, INT64_MAX + 1) for _ in range(2000)] + rng.sample(
        sorted(ref), 500
    )
    assert seen.update_from(np.array(more, dtype=np.int64)) == len(set(more) - ref)
    ref.update(more)
    check_stream(seen, ref, rng, batches=30)
    assert seen.update_from([]) == 0


def test_out_of_range_values(make: type[Seen]) -> None:
    seen = make()
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
    with pytest.raises(AttributeError):  # frozen
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


def test_a_small_crawl_never_packs_and_a_large_one_packs_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dedup, "SMALL_LIMIT", 100)
    seen = SeenSet()
    assert seen.add_many(list(range(100))) == [True] * 100
    assert seen._packed is None
    assert seen.add_many([99, 100, 101]) == [False, True, True]
    assert seen._small is None and len(seen) == 102
    assert all(fp in seen for fp in range(102)) and 102 not in seen
    resumed = SeenSet.from_fingerprints(iter(range(50)))
    assert resumed._packed is None and resumed.update_from(range(40, 140)) == 90
    assert resumed._small is None and len(resumed) == 140

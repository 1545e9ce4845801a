"""Cheaper ways the focus computes what it computed before give the same answers: the
stemmer trying only the suffixes that end in a word's last letter, the heaviest terms of a
centroid found by numpy's partition, a rebuild's arrays read once for two selections, and the
scorer's batch step joining its links' indices once."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from gossamer.focus import text, topic
from gossamer.focus.calibration import PRIOR, Calibration
from gossamer.focus.learner import OnlineLogistic
from gossamer.focus.lists import ListEvidence
from gossamer.focus.paths import PathEvidence, place_keys


def _strip_trying_all(word: str) -> str:
    """``text._strip`` as it was: every suffix tried in turn."""
    if len(word) <= 3:
        return word
    for suffix, replacement in text._SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "sses")):
                return word[:-1]
            stem = word[: len(word) - len(suffix)] + replacement
            if not replacement and len(stem) > 3 and stem[-1] == stem[-2] not in "lsz":
                stem = stem[:-1]
            return stem
    return word


def test_the_stemmer_by_last_letter_strips_as_trying_every_suffix() -> None:
    rng = random.Random(11)
    words = {
        "".join(rng.choices("aeioustnlgdyrcmhzx", k=rng.randrange(1, 13))) for _ in range(30_000)
    }
    stems = ("", "a", "ab", "abc", "lock", "pass", "fizz", "tree", "run", "focus")
    for (suffix, _), stem in itertools.product(text._SUFFIXES, stems):
        words.update({stem + suffix, stem + suffix + "s", stem + suffix + "es"})
    for word in words:
        assert text._strip(word) == _strip_trying_all(word), word


def test_the_heaviest_by_partition_equal_those_of_sorting_all() -> None:
    rng = np.random.default_rng(4)
    for size in (1, 5, 59, 60, 61, 240, 1_000):
        names = [f"t{i}" for i in range(size)]
        weights = rng.integers(-5, 6, size=size) / 4.0  # many ties, broken by the names
        expected = sorted(zip(weights.tolist(), names, strict=True), reverse=True)
        for n in (1, 60, 240):
            assert topic._top(weights, names, n) == expected[:n]


def test_a_sums_arrays_read_once_select_as_the_sums_read_each_time() -> None:
    rng = random.Random(8)
    total = {f"t{i}": rng.random() for i in range(500)}
    sums = {f"t{i}": rng.random() for i in range(0, 900, 2)}
    arrays = topic._arrays(total, sums)
    for share, n in ((0.3, 60), (0.2, 240), (0.0, 240)):
        plain = sorted(((w - share * sums.get(t, 0.0), t) for t, w in total.items()), reverse=True)
        assert topic._largest(total, share, sums, n, arrays) == plain[:n]
        assert topic._largest(total, share, sums, n) == plain[:n]


def _step_many(model: OnlineLogistic, batch: list[np.ndarray], labels: list[float]) -> None:
    """``OnlineLogistic.update_many`` as it was: the links predicted, then the step."""
    errors = model.predict_many(batch) - np.asarray(labels)
    flat = np.concatenate(batch)
    gradient = errors.repeat(list(map(len, batch))).astype(np.float32)
    np.add.at(model._squares, flat, gradient * gradient)
    step = model._rate / np.sqrt(model._squares[flat])
    np.subtract.at(model.weights, flat, step * gradient)
    model.weights[flat] *= 1.0 - model._decay
    model.bias -= 0.05 * float(errors.sum())
    model.updates += len(batch)


def test_the_batch_step_equals_predicting_then_stepping() -> None:
    rng = np.random.default_rng(6)
    fast, plain = OnlineLogistic(), OnlineLogistic()
    for _ in range(200):
        batch = [
            rng.integers(0, 2_000, size=rng.integers(0 if rng.random() < 0.1 else 1, 40)).astype(
                np.int32
            )
            for _ in range(rng.integers(1, 20))
        ]
        labels = [float(rng.random() < 0.3) for _ in batch]
        fast.update_many(batch, labels)  # a link without features included, now and then
        _step_many(plain, batch, labels)
    assert np.array_equal(fast.weights, plain.weights)
    assert np.array_equal(fast._squares, plain._squares)
    assert fast.bias == plain.bias
    assert fast.updates == plain.updates


def test_a_batch_ending_with_links_without_features_is_predicted_link_by_link() -> None:
    model = OnlineLogistic()
    model.weights[:10] = np.arange(10, dtype=np.float32) / 10
    batch = [np.array(f, dtype=np.int32) for f in ([1, 2], [], [3], [], [])]
    # float32 sums, as the links with features alone are scored
    assert model.predict_many(batch).tolist() == pytest.approx([model.predict(f) for f in batch])
    empty = [np.array([], dtype=np.int32)] * 2
    assert model.predict_many(empty).tolist() == [0.5, 0.5]


def _calibrated_by_numpy(relevant: np.ndarray, judged: np.ndarray, value: float) -> float:
    """``Calibration.score`` as it was: its counts in numpy arrays, read as numpy scalars."""
    if value < 0.1:
        return 0.0
    level = min(int(value * 10), 9)
    return float((relevant[level] + PRIOR * value) / (judged[level] + PRIOR))


def test_a_calibration_counted_in_python_floats_scores_as_in_numpy_arrays() -> None:
    rng = random.Random(5)
    calibration = Calibration()
    relevant, judged = np.zeros(10), np.zeros(10)
    values = [0.0, 0.05, 0.1, 0.99, 1.0] + [rng.random() for _ in range(2_000)]
    for value in values:
        outcome = rng.random() < 0.3
        calibration.outcome(value, outcome)
        if value >= 0.1:
            level = min(int(value * 10), 9)
            judged[level] += 1
            relevant[level] += outcome
        assert calibration.score(value) == _calibrated_by_numpy(relevant, judged, value)
    many = calibration.scores(np.array(values))
    assert many.tolist() == [_calibrated_by_numpy(relevant, judged, v) for v in values]


def test_a_url_in_no_list_scores_0_and_one_in_lists_its_best_share() -> None:
    lists = ListEvidence()
    members = [tuple(f"http://a.test/{g}/{i}" for i in range(4 + g)) for g in range(3)]
    lists.add(members, lambda key: None)
    for url in ("http://a.test/0/0", "http://a.test/0/1", "http://a.test/1/0"):
        lists.judged(url, True)
    assert lists.score("http://a.test/elsewhere") == 0.0
    for group in members:
        for url in group:
            best = max(e.share() for e in lists._lists if url in e.members)
            assert lists.score(url) == best


def test_places_scored_at_once_score_as_one_at_a_time() -> None:
    rng = random.Random(3)
    paths = PathEvidence()
    urls = [
        f"http://s{rng.randrange(3)}.test/" + "/".join(str(rng.randrange(4)) for _ in range(d))
        for d in (rng.randrange(0, 5) for _ in range(3_000))
    ]
    for url in urls[:1_500]:
        paths.add(url, rng.random() < 0.4)
    places = [place_keys(*url[7:].partition("/")[::2]) for url in urls]
    for keys in places[1_500:]:
        paths.linked(keys)
    assert any(0 < score < 1 for score in paths.scores_keys(places))
    assert paths.scores_keys(places) == [paths.score_keys(keys) for keys in places]

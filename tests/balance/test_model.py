"""P1's runtime model: the network learns a synthetic ground truth the linear fallback cannot."""

from __future__ import annotations

import numpy as np
import pytest

from gossamer.balance.capability import Capability
from gossamer.balance.model import (
    BpnnRuntimeModel,
    LinearRuntimeModel,
    Observation,
    fit_runtime_model,
    mape,
    model_from_json,
    model_to_json,
)

HELD_OUT_BOUND = 0.12
"""The network's held-out MAPE must stay below this (noise alone is ~2.4%)."""


def _truth(c: Capability, n: int) -> float:
    """Seconds for n URLs: bandwidth- or concurrency-bound, slower on slow CPUs and disks."""
    rate = min(c.bandwidth_bps / 80_000, c.concurrency / 0.3) * (c.freq_mhz / 3000) ** 0.5
    return n / rate + 0.2 * n / c.disk_mb_s + 1.0


def _observations(count: int, seed: int) -> list[Observation]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        c = Capability(
            cores=int(rng.integers(1, 9)),
            freq_mhz=float(rng.uniform(1500, 4000)),
            memory_mb=float(rng.uniform(1000, 16000)),
            disk_mb_s=float(rng.uniform(50, 500)),
            bandwidth_bps=float(rng.uniform(2e5, 5e6)),
            concurrency=int(rng.integers(4, 64)),
        )
        n = int(rng.integers(20, 500))
        out.append(Observation(c, n, _truth(c, n) * float(rng.normal(1.0, 0.03))))
    return out


def test_bpnn_fits_ground_truth_and_beats_linear() -> None:
    report = fit_runtime_model(_observations(300, seed=1))
    print(report.summary())
    assert report.model.kind == "bpnn"
    assert report.bpnn_error is not None
    assert report.bpnn_error < HELD_OUT_BOUND
    assert report.bpnn_error < report.linear_error
    fresh = _observations(200, seed=2)
    fresh_error = mape(report.model, fresh)
    linear_error = mape(LinearRuntimeModel.fit(_observations(300, seed=1)), fresh)
    print(f"fresh data: bpnn MAPE {fresh_error:.1%}, linear {linear_error:.1%}")
    assert fresh_error < HELD_OUT_BOUND < linear_error


def test_few_observations_keep_linear() -> None:
    report = fit_runtime_model(_observations(10, seed=3))
    assert report.model.kind == "linear"
    assert report.bpnn_error is None
    empty = fit_runtime_model([])
    assert empty.model == LinearRuntimeModel()


def test_predictions_shape_zero_and_beyond_the_trained_range() -> None:
    model = fit_runtime_model(_observations(200, seed=4)).model
    c = _observations(1, seed=5)[0].capability
    times = model.predict(c, np.array([0, 100, 1000, 10_000]))
    assert times.shape == (4,)
    assert times[0] == 0.0
    assert 0 < times[1] < times[2] < times[3]
    assert times[3] == pytest.approx(10 * times[2])  # linear beyond the largest batch seen
    assert float(model.predict(c, 100)) == pytest.approx(times[1])


def test_json_round_trip() -> None:
    fitted = fit_runtime_model(_observations(200, seed=6)).model
    assert isinstance(fitted, BpnnRuntimeModel)
    for model in (fitted, LinearRuntimeModel(1.5, 0.01)):
        back = model_from_json(model_to_json(model))
        assert back == model
        c = Capability(cores=2, freq_mhz=2500, bandwidth_bps=1e6, concurrency=16)
        np.testing.assert_allclose(back.predict(c, [10, 300]), model.predict(c, [10, 300]))
    with pytest.raises(ValueError, match="not a runtime model"):
        model_from_json('{"kind": "svm"}')
    with pytest.raises(ValueError, match="not a runtime model"):
        model_from_json("not json")


def test_linear_fallback_without_capacity_and_observation_json() -> None:
    model = LinearRuntimeModel()
    assert float(model.predict(Capability(concurrency=0), 5)) == float("inf")
    assert float(model.predict(Capability(concurrency=0), 0)) == 0.0
    obs = _observations(1, seed=7)[0]
    assert Observation.from_json(obs.to_json()) == obs

"""The runtime model: how long a worker with given figures takes to finish ``n`` URLs.

The cluster records :class:`Observation` s (a batch of ``n`` URLs finished in ``seconds`` by a
worker with the figures it reported at the time). :func:`fit_runtime_model` trains a small
back-propagation network (:class:`BpnnRuntimeModel`: min-max normalised inputs, one tanh hidden
layer, linear output, squared error) once there are enough of them and it beats the
:class:`LinearRuntimeModel` fallback on held-out observations. Either model serialises to one
JSON string (:func:`model_to_json` / :func:`model_from_json`) so the leader can keep it in
Redis and a new leader inherits it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from gossamer.balance.capability import Capability

Floats = npt.NDArray[np.float64]

PAGE_BYTES = 50_000.0
"""Bytes of a typical page, to turn a bandwidth into pages per second."""
LATENCY = 0.5
"""Seconds a typical request takes, to turn a concurrency into pages per second."""
FEATURES = ("cores", "freq_mhz", "memory_mb", "bandwidth_bps", "disk_mb_s", "concurrency")
"""The capability figures the network reads (CPU cores and frequency, memory, bandwidth,
disk I/O, plus the concurrency), then ``n``."""


def nominal_rate(capability: Capability) -> float:
    """Pages per second a worker should manage, from its figures alone (0: no capacity).

    The lesser of what its bandwidth carries (:data:`PAGE_BYTES` a page) and what its
    concurrency completes (:data:`LATENCY` a request). An unknown bandwidth does not limit.
    """
    if capability.concurrency <= 0 or capability.cores <= 0:
        return 0.0
    rate = capability.concurrency / LATENCY
    bandwidth = capability.bandwidth_bps or float(capability.max_bandwidth or 0)
    if bandwidth > 0:
        rate = min(rate, bandwidth / PAGE_BYTES)
    return rate


@dataclass(frozen=True, slots=True)
class Observation:
    """A batch of ``n`` URLs a worker with ``capability`` finished in ``seconds``."""

    capability: Capability
    n: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"capability": self.capability.to_json(), "n": self.n, "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        """ValueError (or KeyError, TypeError) unless ``data`` is one (it comes from Redis)."""
        n, seconds = data["n"], float(data["seconds"])
        if not isinstance(n, int) or n < 1 or not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"not an observation: n={n!r}, seconds={seconds!r}")
        return cls(Capability.from_json(data["capability"]), n, seconds)


class RuntimeModel(Protocol):
    """Predicted seconds for a worker to finish ``n`` URLs (0 for ``n == 0``)."""

    @property
    def kind(self) -> str:
        """``"bpnn"`` or ``"linear"``."""
        ...

    def predict(self, capability: Capability, n: npt.ArrayLike) -> Floats:
        """Predicted seconds for each count in ``n`` (an int or an array of ints)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The model's parameters as JSON-ready data, with its ``kind``."""
        ...


def features(capability: Capability) -> Floats:
    """The capability part of a network input row, in :data:`FEATURES` order."""
    return np.array([float(getattr(capability, name)) for name in FEATURES])


def _counts(n: npt.ArrayLike) -> Floats:
    return np.maximum(np.asarray(n, dtype=np.float64), 0.0)


# -- the linear fallback ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinearRuntimeModel:
    """``seconds = a * n / nominal_rate + b * n`` fitted by least squares (a=1, b=0 unfitted).

    ``nominal_rate`` is :func:`nominal_rate` of the worker's figures; a worker without
    capacity is predicted to take forever (``inf``) for any ``n > 0``.
    """

    a: float = 1.0
    b: float = 0.0
    kind: str = "linear"

    def predict(self, capability: Capability, n: npt.ArrayLike) -> Floats:
        counts = _counts(n)
        rate = nominal_rate(capability)
        per_url = self.a / rate + self.b if rate > 0 else math.inf
        with np.errstate(invalid="ignore"):
            out = np.where(counts > 0, counts * max(per_url, 1e-9), 0.0)
        return np.asarray(out, dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "a": self.a, "b": self.b}

    @classmethod
    def fit(cls, observations: Sequence[Observation]) -> LinearRuntimeModel:
        """Least squares over the observations whose worker has capacity; defaults if none."""
        rows = [o for o in observations if nominal_rate(o.capability) > 0 and o.n > 0]
        if not rows:
            return cls()
        design = np.array([[o.n / nominal_rate(o.capability), o.n] for o in rows])
        target = np.array([o.seconds for o in rows])
        (a, b), *_ = np.linalg.lstsq(design, target, rcond=None)
        return cls(float(a), float(b))


# -- the back-propagation network -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BpnnRuntimeModel:
    """The runtime network: :data:`FEATURES` + ``n`` min-max normalised, tanh hidden, linear out.

    Inputs and seconds are log-scaled (``log1p``, ``log``) before the min-max normalisation:
    times span orders of magnitude, and a squared error on log seconds is a relative error, so
    a fast worker's batches count as much as a slow one's. ``x_min``/``x_max``/``y_min``/
    ``y_max`` are in that log space; capability figures are clipped to the trained range.
    Between the smallest and largest ``n`` trained on the network
    answers; outside it the time scales linearly through the origin from the nearest end, so
    a share far larger than any batch seen still gets a sensible prediction.
    """

    x_min: tuple[float, ...]
    x_max: tuple[float, ...]
    y_min: float
    y_max: float
    w1: tuple[tuple[float, ...], ...]
    """Input -> hidden weights, one row per input."""
    b1: tuple[float, ...]
    w2: tuple[float, ...]
    b2: float
    kind: str = "bpnn"

    def predict(self, capability: Capability, n: npt.ArrayLike) -> Floats:
        counts = _counts(n)
        n_low = max(math.expm1(self.x_min[-1]), 1.0)
        n_high = max(math.expm1(self.x_max[-1]), n_low)
        anchor = np.clip(counts, n_low, n_high)
        rows = np.empty((anchor.size, len(self.x_min)))
        rows[:, :-1] = features(capability)
        rows[:, -1] = anchor.ravel()
        seconds = np.exp(self._forward(np.log1p(rows))).reshape(counts.shape) * counts / anchor
        return np.asarray(np.where(counts > 0, seconds, 0.0), dtype=np.float64)

    def _forward(self, rows: Floats) -> Floats:
        low, high = np.array(self.x_min), np.array(self.x_max)
        x = _normalise(rows, low, high)
        x[:, :-1] = np.clip(x[:, :-1], 0.0, 1.0)
        hidden = np.tanh(x @ np.array(self.w1) + np.array(self.b1))
        y = hidden @ np.array(self.w2) + self.b2
        return np.asarray(self.y_min + y * (self.y_max - self.y_min), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "x_min": self.x_min,
            "x_max": self.x_max,
            "y_min": self.y_min,
            "y_max": self.y_max,
            "w1": self.w1,
            "b1": self.b1,
            "w2": self.w2,
            "b2": self.b2,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BpnnRuntimeModel:
        return cls(
            tuple(map(float, data["x_min"])),
            tuple(map(float, data["x_max"])),
            float(data["y_min"]),
            float(data["y_max"]),
            tuple(tuple(map(float, row)) for row in data["w1"]),
            tuple(map(float, data["b1"])),
            tuple(map(float, data["w2"])),
            float(data["b2"]),
        )


@dataclass(frozen=True, slots=True)
class TrainSettings:
    """How :func:`train_bpnn` trains (full-batch Adam on the squared error)."""

    hidden: int = 8
    epochs: int = 4000
    learning_rate: float = 0.01
    patience: int = 300
    """Stop after this many epochs without a 0.1% better loss."""
    target_loss: float = 1e-5
    """Stop once the mean squared error (on normalised seconds) is below this."""
    seed: int = 0


def _normalise(rows: Floats, low: Floats, high: Floats) -> Floats:
    span = np.where(high > low, high - low, 1.0)
    return np.asarray((rows - low) / span, dtype=np.float64)


def train_bpnn(
    observations: Sequence[Observation], settings: TrainSettings | None = None
) -> BpnnRuntimeModel:
    """Train the runtime network on ``observations`` (seeded, bounded epochs, early stop)."""
    opts = settings or TrainSettings()
    if not observations:
        raise ValueError("no observations to train on")
    rows = np.log1p(np.array([[*features(o.capability), float(o.n)] for o in observations]))
    seconds = np.log(np.array([o.seconds for o in observations]))
    low, high = rows.min(axis=0), rows.max(axis=0)
    y_min, y_max = float(seconds.min()), float(seconds.max())
    x = _normalise(rows, low, high)
    y = (seconds - y_min) / (y_max - y_min if y_max > y_min else 1.0)
    params = _adam(x, y, opts)
    w1, b1, w2, b2 = params
    return BpnnRuntimeModel(
        tuple(map(float, low)),
        tuple(map(float, high)),
        y_min,
        y_max if y_max > y_min else y_min + 1.0,
        tuple(tuple(map(float, row)) for row in w1),
        tuple(map(float, b1)),
        tuple(map(float, w2)),
        float(b2[0]),
    )


def _adam(x: Floats, y: Floats, opts: TrainSettings) -> list[Floats]:
    """Full-batch Adam on the mean squared error; the parameters with the lowest loss."""
    rng = np.random.default_rng(opts.seed)
    inputs = x.shape[1]
    params = [
        rng.normal(0.0, 1.0 / math.sqrt(inputs), (inputs, opts.hidden)),
        np.zeros(opts.hidden),
        rng.normal(0.0, 1.0 / math.sqrt(opts.hidden), opts.hidden),
        np.zeros(1),
    ]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    best, best_params, since = math.inf, [p.copy() for p in params], 0
    for epoch in range(1, opts.epochs + 1):
        loss, grads = _loss_and_grads(x, y, params)
        if loss < best * 0.999:
            best, best_params, since = loss, [p.copy() for p in params], 0
        else:
            since += 1
        if loss < opts.target_loss or since > opts.patience:
            break
        for p, g, m, v in zip(params, grads, moments, squares, strict=True):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            m_hat = m / (1 - 0.9**epoch)
            v_hat = v / (1 - 0.999**epoch)
            p -= opts.learning_rate * m_hat / (np.sqrt(v_hat) + 1e-8)
    return best_params


def _loss_and_grads(x: Floats, y: Floats, params: list[Floats]) -> tuple[float, list[Floats]]:
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1 + b1)
    error = hidden @ w2 + b2[0] - y
    loss = float(np.mean(error**2))
    d_out = 2.0 * error / len(y)
    d_hidden = np.outer(d_out, w2) * (1.0 - hidden**2)
    grads = [x.T @ d_hidden, d_hidden.sum(axis=0), hidden.T @ d_out, np.array([d_out.sum()])]
    return loss, grads


# -- choosing a model -------------------------------------------------------------------------


def mape(model: RuntimeModel, observations: Sequence[Observation]) -> float:
    """Mean absolute percentage error of ``model`` on ``observations`` (0.05 = 5%)."""
    errors = [
        abs(float(model.predict(o.capability, o.n)) - o.seconds) / o.seconds
        for o in observations
        if o.seconds > 0
    ]
    return float(np.mean(errors)) if errors else math.nan


@dataclass(frozen=True, slots=True)
class FitReport:
    """The model :func:`fit_runtime_model` chose and the held-out errors behind the choice."""

    model: RuntimeModel
    trained: int
    held_out: int
    linear_error: float
    """MAPE of the linear model on the held-out observations (nan when none are held out)."""
    bpnn_error: float | None
    """MAPE of the network there; None when there were too few observations to train it."""

    def summary(self) -> str:
        bpnn = "-" if self.bpnn_error is None else f"{self.bpnn_error:.1%}"
        return (
            f"runtime model: {self.model.kind} ({self.trained} observations, "
            f"{self.held_out} held out; held-out MAPE linear {self.linear_error:.1%}, "
            f"bpnn {bpnn})"
        )


MIN_OBSERVATIONS = 40
"""Fewer observations than this keep the linear fallback."""


def fit_runtime_model(
    observations: Sequence[Observation],
    *,
    min_observations: int = MIN_OBSERVATIONS,
    held_out: float = 0.2,
    settings: TrainSettings | None = None,
) -> FitReport:
    """The better of the network and the linear fallback on a held-out split, refitted on all.

    The network is only tried with at least ``min_observations``; it is kept only if its
    held-out MAPE beats the linear model's. The split is seeded (``settings.seed``).
    """
    usable = [o for o in observations if o.n > 0 and o.seconds > 0]
    opts = settings or TrainSettings()
    order = np.random.default_rng(opts.seed).permutation(len(usable))
    cut = len(usable) - round(len(usable) * held_out)
    train = [usable[i] for i in order[:cut]]
    test = [usable[i] for i in order[cut:]]
    linear_error = mape(LinearRuntimeModel.fit(train), test)
    if len(usable) < min_observations or not test:
        return FitReport(LinearRuntimeModel.fit(usable), len(usable), len(test), linear_error, None)
    bpnn_error = mape(train_bpnn(train, opts), test)
    model: RuntimeModel
    if bpnn_error < linear_error:
        model = train_bpnn(usable, opts)
    else:
        model = LinearRuntimeModel.fit(usable)
    return FitReport(model, len(usable), len(test), linear_error, bpnn_error)


def model_to_json(model: RuntimeModel) -> str:
    """One JSON string holding ``model`` (for a Redis key)."""
    return json.dumps(model.to_dict(), sort_keys=True)


def model_from_json(text: str) -> RuntimeModel:
    """The model :func:`model_to_json` wrote; ValueError if ``text`` is not one."""
    try:
        data = json.loads(text)
        if data.get("kind") == "bpnn":
            return BpnnRuntimeModel.from_dict(data)
        if data.get("kind") == "linear":
            return LinearRuntimeModel(float(data["a"]), float(data["b"]))
    except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a runtime model: {exc}") from None
    raise ValueError("not a runtime model: unknown kind")

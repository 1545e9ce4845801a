"""The online link scorer: logistic regression on hashed features, trained as pages are
judged (did the link lead to a relevant page?).

Features of a link are strings (``a:lock`` for an anchor word, ``u:wiki`` a URL word,
``h:docs.example`` its host, ``p:3`` a bucket of its parent's relevance...) hashed into
``2**18`` weights. Each update is one stochastic gradient step with L2 decay, so a page costs
O(its link's features) and memory is fixed (1 MiB of weights).
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

DIMENSIONS = 1 << 18
Features = npt.NDArray[np.int32]


def hash_features(names: Iterable[str]) -> Features:
    """The distinct weight indices of feature names (CRC-32: the same in every process);
    give at least one name (a bias feature)."""
    return np.unique(
        np.fromiter(
            (zlib.crc32(name.encode("utf-8", "replace")) & (DIMENSIONS - 1) for name in names),
            dtype=np.int32,
        )
    )


def hash_union(a: Features, b: Features) -> Features:
    """The distinct indices of two feature sets, sorted (``np.union1d``'s answer: a link's
    few dozen indices are merged by a set, not numpy's sort and masks)."""
    return np.array(sorted({*a.tolist(), *b.tolist()}), dtype=np.int32)


class OnlineLogistic:
    """Logistic regression learnt one example at a time (SGD, AdaGrad step sizes)."""

    def __init__(self, *, rate: float = 0.5, decay: float = 1e-5) -> None:
        self.weights = np.zeros(DIMENSIONS, dtype=np.float32)
        self._squares = np.full(DIMENSIONS, 1e-2, dtype=np.float32)
        self.bias = 0.0
        self.updates = 0
        self._rate = rate
        self._decay = decay

    def predict(self, features: Features) -> float:
        """The probability that a link with these features leads to a relevant page."""
        # the ufunc's reduction, not ``ndarray.sum``'s Python wrapper: the same float
        z = float(np.add.reduce(self.weights[features])) + self.bias
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    def predict_many(self, batch: list[Features]) -> npt.NDArray[np.float64]:
        """``predict`` of many links at once."""
        if not batch:
            return np.zeros(0)
        counts = list(map(len, batch))
        if all(counts):  # every link has features (a page's always do): no mask needed
            return self._logistic(np.concatenate(batch), counts)
        lengths = np.fromiter(counts, dtype=np.int64, count=len(batch))
        # a zero after the links' weights: a link without features last starts past them
        values = np.append(self.weights[np.concatenate(batch)], np.float32(0.0))
        sums = np.add.reduceat(values, np.cumsum(lengths) - lengths)
        sums = np.where(lengths > 0, sums, 0.0) + self.bias
        # np.clip's bounds as two ufuncs: the same floats without its Python wrapper
        bounded: npt.NDArray[np.float64] = np.minimum(np.maximum(sums, -30.0), 30.0)
        return 1.0 / (1.0 + np.exp(-bounded))

    def _logistic(self, flat: Features, counts: list[int]) -> npt.NDArray[np.float64]:
        """The probabilities of links whose indices are ``flat`` joined (``counts`` each, none
        empty): the same floats as with a mask (the identity then), the starts summed in Python
        and the logistic taken in place, half the numpy calls (each costs more than a page's
        few links)."""
        starts = list(itertools.accumulate(counts[:-1], initial=0))
        sums = np.add.reduceat(self.weights[flat], starts)
        sums += self.bias
        np.maximum(sums, -30.0, out=sums)
        np.minimum(sums, 30.0, out=sums)
        np.negative(sums, out=sums)
        np.exp(sums, out=sums)
        sums += 1.0
        np.divide(1.0, sums, out=sums)
        return sums

    def update(self, features: Features, label: float) -> None:
        """One step towards ``label`` (1 relevant, 0 not; values between allowed)."""
        error = self.predict(features) - label
        if len(features):
            # each array read and written once (the same floats as in place, twice: an
            # index given twice gets the same value at both places)
            squares = self._squares[features] + error * error
            self._squares[features] = squares
            weights = self.weights[features] - self._rate / np.sqrt(squares) * error
            self.weights[features] = weights * (1.0 - self._decay)
        self.bias -= 0.05 * error
        self.updates += 1

    def update_many(self, batch: list[Features], labels: list[float]) -> None:
        """One step towards each label, all predicted before any step is taken (a page's
        links at once: one pass over the weights instead of one per link)."""
        if not batch:
            return
        lengths = list(map(len, batch))
        flat = np.concatenate(batch)
        # the links' indices joined once, for the prediction and the step
        predicted = self._logistic(flat, lengths) if all(lengths) else self.predict_many(batch)
        errors = predicted - np.asarray(labels)
        gradient = errors.repeat(lengths).astype(np.float32)
        np.add.at(self._squares, flat, gradient * gradient)
        step = self._rate / np.sqrt(self._squares[flat])
        np.subtract.at(self.weights, flat, step * gradient)
        self.weights[flat] *= 1.0 - self._decay
        self.bias -= 0.05 * float(errors.sum())
        self.updates += len(batch)

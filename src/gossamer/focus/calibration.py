"""An evidence score (0..1) calibrated on the crawl's own outcomes.

What a link's place on its site (:mod:`gossamer.focus.paths`) or the lists holding it
(:mod:`gossamer.focus.lists`) say of it is a share of on-topic pages among those judged beside
it; how much such a share predicts depends on the web (a documentation site keeps a chapter's
pages together, a generated web or a blog mixes them). So each kind of evidence keeps, per
tenth of its score, how many of the URLs fetched while their score was there turned out
on-topic, and a score is that share, starting from (with ``PRIOR`` pages' weight) the raw
score itself. A score below the first tenth says nothing and stays 0. A raw score from
``trusted`` up is never lowered (a list most of whose judged members are on-topic: see
:mod:`gossamer.focus.policy`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

PRIOR = 3.0
"""Pages' weight of the raw score while a tenth has few outcomes."""
_LEVELS = 10


class Calibration:
    """One kind of evidence's calibration (see the module docstring)."""

    __slots__ = ("_judged", "_relevant", "_trusted")

    def __init__(self, trusted: float = math.inf) -> None:
        self._trusted = trusted
        """Raw scores from this up stand when calibrating would lower them."""
        self._relevant = [0.0] * _LEVELS
        self._judged = [0.0] * _LEVELS
        """Python floats: one score a link reads two of them (numpy's scalars cost more)."""

    def score(self, value: float) -> float:
        """The calibrated score of a raw ``value``."""
        if value < 1 / _LEVELS:
            return 0.0
        level = min(int(value * _LEVELS), _LEVELS - 1)
        found = (self._relevant[level] + PRIOR * value) / (self._judged[level] + PRIOR)
        return max(found, value) if value >= self._trusted else found

    def scores(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``score`` of many raw values at once."""
        levels = np.minimum((values * _LEVELS).astype(np.int64), _LEVELS - 1)
        relevant = np.asarray(self._relevant)[levels]
        found = (relevant + PRIOR * values) / (np.asarray(self._judged)[levels] + PRIOR)
        if self._trusted < math.inf:
            found = np.where(values >= self._trusted, np.maximum(found, values), found)
        return np.where(values >= 1 / _LEVELS, found, 0.0)

    def outcome(self, value: float, relevant: bool) -> None:
        """A URL fetched while its raw score was ``value`` was judged."""
        if value >= 1 / _LEVELS:
            level = min(int(value * _LEVELS), _LEVELS - 1)
            self._judged[level] += 1
            self._relevant[level] += relevant

"""What the judged pages linking to a waiting URL say of it (co-citation), calibrated on the
crawl's own outcomes.

A URL that several on-topic pages link to is often on the topic itself, or a hub of it (a
chapter's table of contents, linked from each of its sections: Diligenti's context graphs'
first layer). How often depends on the web: documentation sites link a chapter's pages to one
another, other webs link on-topic pages to anything "related". So the evidence is calibrated
as the crawl goes: the URLs fetched while ``k`` on-topic pages cited them (``k`` their summed
relevance, rounded: 2, 3, 4, 5 or more) count, per ``k``, how many turned out on-topic, and a
URL's score is that share, starting from (with ``PRIOR`` pages' weight) the raw share of its
citing pages that are on-topic. Below two on-topic citations a URL scores 0: every page of a
site links to its navigation.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FROM = 1.5
"""Summed relevance of the citing pages from which citations count."""
PRIOR = 2.0
"""Pages' weight of the raw share while a level has few outcomes."""
_LEVELS = 5


class Citations:
    """The calibration of co-citation evidence (see the module docstring)."""

    __slots__ = ("_judged", "_relevant")

    def __init__(self) -> None:
        self._relevant = [0] * (_LEVELS + 1)
        self._judged = [0] * (_LEVELS + 1)

    def score(self, cited: float, citers: int) -> float:
        """A URL's score, 0..1, from the summed relevance of the judged pages linking to it
        and their number."""
        if cited < FROM:
            return 0.0
        level = _level(cited)
        raw = cited / (citers + 1)
        return (self._relevant[level] + PRIOR * raw) / (self._judged[level] + PRIOR)

    def scores(
        self, cited: npt.NDArray[np.float64], citers: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``score`` of many URLs at once."""
        levels = np.minimum((cited + 0.5).astype(np.int64), _LEVELS)
        relevant = np.asarray(self._relevant, dtype=np.float64)[levels]
        judged = np.asarray(self._judged, dtype=np.float64)[levels]
        found = (relevant + PRIOR * cited / (citers + 1)) / (judged + PRIOR)
        return np.where(cited >= FROM, found, 0.0)

    def outcome(self, cited: float, relevant: bool) -> None:
        """A URL fetched while its citing pages summed ``cited`` was judged."""
        if cited >= FROM:
            level = _level(cited)
            self._judged[level] += 1
            self._relevant[level] += relevant


def _level(cited: float) -> int:
    return min(int(cited + 0.5), _LEVELS)

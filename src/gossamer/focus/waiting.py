"""A queued URL's evidence while it waits, and how a priority is made of it."""

from __future__ import annotations

from gossamer.focus.calibration import Calibration
from gossamer.focus.citations import Citations
from gossamer.focus.learner import Features


class Waiting:
    """What is known of a waiting URL: its features, prior, the priority last sent and
    the evidence pointing at it (see :mod:`gossamer.focus.policy`)."""

    __slots__ = (
        "cited",
        "citers",
        "explore",
        "features",
        "hub",
        "listed",
        "near",
        "place",
        "prior",
        "section",
        "sent",
        "streak",
    )

    def __init__(
        self,
        features: Features,
        prior: float,
        sent: float,
        streak: int,
        place: tuple[int, int] | None,
        section: str,
        cited: float,
    ) -> None:
        self.place = place
        """The keys of its place (:func:`gossamer.focus.paths.place_keys`)."""
        self.section = section
        self.explore = False
        """Sent first by exploration: re-scoring leaves it first."""
        self.features = features
        self.prior = prior
        self.sent = sent
        self.streak = streak
        self.cited = cited
        """The sum of the relevance of the judged pages that link to it."""
        self.citers = 1
        """The judged pages that link to it."""
        self.listed = 0.0
        """The on-topic share of the lists holding it (:mod:`gossamer.focus.lists`)."""
        self.hub = 0.0
        """The on-topic share of the targets of the judged pages linking to it, as lists
        (:mod:`gossamer.focus.lists`): how good a hub each of its parents proved."""
        self.near = 0.0
        """Its raw score as a page the examples link to (0 when none does)."""

    def evidence(self, citations: Citations, lists: Calibration) -> float:
        """What the pages linking to it say of it (:mod:`gossamer.focus.citations`) or, when
        higher, the lists holding it (calibrated)."""
        return max(citations.score(self.cited, self.citers), lists.score(self.listed))


def priority_of(prior: float, learnt: float, share: float, place: float) -> float:
    """A link's priority: its prior and the scorer's probability blended (the scorer's
    ``share`` grows as it learns), or its place when stronger."""
    return round(max((1 - share) * prior + share * learnt, place), 4)


def section_of(host: str, path: str) -> str:
    """A site's section: its host and its path's first segment (a root page's: the host)."""
    first, _, rest = path.lstrip("/").partition("/")
    return f"{host}/{first}" if rest else host

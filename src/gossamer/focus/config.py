"""A focused crawl's settings (`FocusConfig`) and its statistics' frozen snapshot (`FocusStats`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gossamer.focus.shared import SharedLearning

__all__ = ["FocusConfig", "FocusMode", "FocusStats", "sharing_stats"]

FocusMode = Literal["soft", "hard"]


@dataclass(frozen=True, slots=True)
class FocusConfig:
    threshold: float = 0.5
    mode: FocusMode = "soft"
    tolerance: int = 1
    """Irrelevant pages in a row whose links ``hard`` mode still follows."""
    max_waiting: int = 50_000
    rescore_every: int = 50
    explore_share: float = 0.05
    """Of the pages judged, the share at most that exploration may add: the waiting URL
    thought best in a section of a site (host and first path segment) where no page was
    judged yet goes first at a re-scoring, so one dead end cannot hold the crawl; and, within
    half as much again, the best link of a hub (an off-topic page) none of whose links was
    tried (:mod:`gossamer.focus.explore`)."""
    window: int = 100
    """Pages the recent harvest rate is measured over."""
    share_every: int = 5
    """In a cluster, judged pages between two exchanges of what was learnt."""


@dataclass(frozen=True, slots=True)
class FocusStats:
    """Frozen snapshot of a focused crawl."""

    mode: str
    threshold: float
    judged: int
    """2xx HTML pages judged."""
    relevant: int
    """Judged pages at or above the threshold."""
    harvest_rate: float
    """relevant / judged."""
    recent_harvest_rate: float
    """The same over the last ``window`` judged pages."""
    window: int
    links_dropped: int
    """Outlinks ``hard`` mode left out."""
    model_updates: int
    explorations: int
    """Waiting URLs exploration sent first."""
    rescores: int
    reprioritized: int
    """Waiting URLs whose priority a re-scoring changed in the frontier."""
    waiting: int
    """Queued URLs whose features are kept for re-scoring."""
    cpu_seconds: float
    """CPU time (this thread's) spent judging pages, learning and scoring links: the cost of
    the focus on top of the crawl (fetching, parsing and main text are not counted, nor the
    reading of the link texts of a page the parse sandbox read: its worker's)."""
    shared_sent: int = 0
    """In a cluster: examples and judged pages sent to the other workers."""
    shared_received: int = 0
    """In a cluster: examples and judged pages received from the other workers."""
    shared_bad: int = 0
    """In a cluster: malformed entries of the shared stream skipped."""


def sharing_stats(shared: SharedLearning | None) -> dict[str, int]:
    """The cluster's sharing counts of ``shared`` as `FocusStats` fields (none alone)."""
    if shared is None:
        return {}
    stats = shared.stats()
    return {"shared_sent": stats.sent, "shared_received": stats.received, "shared_bad": stats.bad}

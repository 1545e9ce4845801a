"""Per-host politeness slots: how many requests in flight, and when the next may start.

The delay between two request starts on one host is the largest of the configured delay, the
host's robots.txt Crawl-delay, and an adaptive delay that grows while the host fails or slows
down and decays while it answers well. A Retry-After pauses the whole host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gossamer.frontier.base import Feedback

_EWMA_ALPHA = 0.3
_FAILURE_DELAY = 1.0
"""Adaptive delay after a first failure; it doubles with each further failure."""
_DECAY = 0.5
_NEGLIGIBLE = 0.01


@dataclass(slots=True)
class HostSlot:
    """Politeness state of one host (scheme://host:port)."""

    active: int = 0
    next_start: float = 0.0
    crawl_delay: float = 0.0
    adaptive_delay: float = 0.0
    latency: float | None = None
    """Exponentially weighted mean response time, seconds."""
    requests: int = 0
    failures: int = 0


@dataclass(frozen=True, slots=True)
class PolitenessPolicy:
    """The rules every slot follows."""

    per_host: int = 2
    delay: float = 0.0
    slow_latency: float = 2.0
    """Mean latency above which the host gets one request per latency period."""
    max_delay: float = 60.0

    def delay_of(self, slot: HostSlot) -> float:
        """Current spacing of request starts on the host."""
        latency_delay = 0.0
        if slot.latency is not None and slot.latency > self.slow_latency:
            latency_delay = slot.latency
        adaptive = min(max(slot.adaptive_delay, latency_delay), self.max_delay)
        return max(self.delay, slot.crawl_delay, adaptive)

    def ready_at(self, slot: HostSlot) -> float:
        """When the host may start its next request (infinity while it is full)."""
        if slot.active >= self.per_host:
            return math.inf
        return slot.next_start

    def on_lease(self, slot: HostSlot, now: float) -> None:
        """A request is about to start on the host."""
        slot.active += 1
        slot.next_start = max(slot.next_start, now) + self.delay_of(slot)

    def on_finish(self, slot: HostSlot, feedback: Feedback | None, now: float) -> None:
        """A leased request ended; learn from what it told about the host."""
        slot.active = max(0, slot.active - 1)
        if feedback is None:
            return
        if feedback.crawl_delay is not None:
            slot.crawl_delay = feedback.crawl_delay
        if feedback.started_at is not None:
            self._learn(slot, feedback)
            slot.next_start = max(slot.next_start, feedback.started_at + self.delay_of(slot))
        if feedback.retry_after is not None:
            slot.next_start = max(slot.next_start, now + feedback.retry_after)

    def _learn(self, slot: HostSlot, feedback: Feedback) -> None:
        slot.requests += 1
        if feedback.failed:
            slot.failures += 1
            slot.adaptive_delay = min(max(_FAILURE_DELAY, slot.adaptive_delay * 2), self.max_delay)
        else:
            slot.adaptive_delay *= _DECAY
            if slot.adaptive_delay < _NEGLIGIBLE:
                slot.adaptive_delay = 0.0
            if slot.latency is None:
                slot.latency = feedback.elapsed
            else:
                slot.latency += _EWMA_ALPHA * (feedback.elapsed - slot.latency)

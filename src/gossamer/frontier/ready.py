"""The ready heap of :class:`~gossamer.frontier.hosts.HostScheduler`: the working set's hosts
with queued URLs and a free slot, by the time their slot is next free.

A host is due when its politeness slot says so (:mod:`gossamer.frontier.politeness`), but not
before its ``not_before`` (the Redis frontier's shared limiter refused it a slot), and never
while a request outside the leases waits for its slot (``claims``) or its ``robots`` lease is
out, nor while its registrable domain has all its ``per_domain`` requests in flight
(:mod:`gossamer.frontier.domains`: it waits parked on its domain, out of the heap, until one
of them ends). The heap is updated lazily: a host's item carries the time it was pushed with
(``Host.heap_time``) and is dropped when it comes to the top superseded.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Generic

from gossamer.frontier.base import HeldBack
from gossamer.frontier.domains import DomainShare
from gossamer.frontier.hostqueue import E, Host
from gossamer.frontier.politeness import PolitenessPolicy

__all__ = ["ReadyHeap"]


class ReadyHeap(Generic[E]):
    """Hosts by the time they may next be leased; see the module docstring. ``hosts`` is the
    scheduler's table of hosts (read only), ``reschedule`` what it does with a host that
    came to the top before its time (or whose domain has room again)."""

    __slots__ = ("_heap", "_hosts", "_policy", "_reschedule", "domains")

    def __init__(
        self,
        hosts: dict[str, Host[E]],
        policy: PolitenessPolicy,
        reschedule: Callable[[str, Host[E]], None],
    ) -> None:
        self._hosts = hosts
        self._policy = policy
        self._reschedule = reschedule
        self._heap: list[tuple[float, str]] = []
        self.domains: DomainShare[E] | None = None
        """The registrable domains' share of the slots (None: ``per_domain`` not capped)."""
        if policy.per_domain is not None:
            self.domains = DomainShare(policy.per_domain, hosts, reschedule)

    def ready_at(self, key: str, host: Host[E]) -> float:
        """When host ``key`` may next be leased (infinity while it may not)."""
        if host.claims:
            return math.inf
        if self.domains is not None and self.domains.full(key, host.slot):
            return math.inf
        when = self._policy.ready_at(host.slot)
        return when if when >= host.not_before else host.not_before

    def offer(self, key: str, host: Host[E]) -> None:
        """Make sure host ``key`` (of the working set, with queued URLs) has an item for the
        time it may next be leased, if it may be at all."""
        if host.robots_out:
            return
        if host.claims:  # ready_at, inline: this runs after every lease and every ack
            return
        when = self._policy.ready_at(host.slot)
        if when < host.not_before:
            when = host.not_before
        if when == math.inf:
            return
        if host.heap_time is not None and host.heap_time <= when:
            return
        if self.domains is not None and self.domains.parks(key, host):
            return  # scheduled again when its domain has room
        host.heap_time = when
        heapq.heappush(self._heap, (when, key))

    def pop_due(self, now: float) -> tuple[float, str, Host[E]] | None:
        """The next host whose time has come and that may be leased now, with its heap time
        (stale items dropped, hosts not yet due rescheduled); None when there is none."""
        ready, hosts = self._heap, self._hosts
        while ready and ready[0][0] <= now:
            when, key = heapq.heappop(ready)
            host = hosts.get(key)
            if host is None or host.heap_time != when:
                continue
            host.heap_time = None
            if host.robots_out:
                continue
            if self.ready_at(key, host) > now:
                self._reschedule(key, host)
                continue
            return when, key, host
        return None

    def first(self) -> float | None:
        """The earliest time of a live item; None when there is none."""
        ready = self._heap
        while ready and self._stale(*ready[0]):
            heapq.heappop(ready)
        return ready[0][0] if ready else None

    def held_back(self, now: float, most: int | None) -> list[HeldBack]:
        """Up to ``most`` hosts that politeness holds back at ``now``, the longest wait first.
        One pass over the heap: for a status snapshot, not for the hot path."""
        found: dict[str, HeldBack] = {}
        for when, key in self._heap:
            if key in found or self._stale(when, key):
                continue
            host = self._hosts[key]
            ready = self.ready_at(key, host)
            if ready <= now or math.isinf(ready):
                continue
            reason = "limiter" if host.not_before > now else self._policy.why_waiting(host.slot)
            queued = len(host.queue or ()) + host.stored
            found[key] = HeldBack(key, reason, round(ready - now, 3), queued, host.slot.active)
        return sorted(found.values(), key=lambda h: (-h.wait, -h.queued))[:most]

    def _stale(self, when: float, key: str) -> bool:
        """An item superseded by a later one, or of a host dropped since."""
        host = self._hosts.get(key)
        return host is None or host.heap_time != when

"""The host slots requests outside the leases take (:mod:`gossamer.frontier.gate`), held by
:class:`~gossamer.frontier.hosts.HostScheduler` beside its leases: :meth:`SlotClaims.claim`
takes a host's slot when the host is due, :meth:`SlotClaims.unclaim` gives it back with the
request's feedback, and while one waits (:meth:`SlotClaims.hold`) none of the host's URLs is
leased.

A request *set aside* for the host's pages (``aside``: a sitemap's or a feed's fetch) takes
turns with them instead: once one has had the slot, the next slot goes to a page of the host
if one is queued (:meth:`SlotClaims.yields`), and the aside request waits meanwhile without
holding the host. So a host's seed and the pages found on it go out between the files of
its sitemaps, one slot each in turn, instead of after every file of them. A page's turn
lapses `TURN_GRACE` seconds after the host was next due, so an aside request whose host's
pages cannot be leased (the crawl's concurrency is all in use, best first ranks them low)
still goes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic

from gossamer.frontier.base import Feedback
from gossamer.frontier.domains import DomainShare
from gossamer.frontier.hostqueue import E, Host, HostQueues
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robotstage import RobotsStage

__all__ = ["TURN_GRACE", "SlotClaims"]

TURN_GRACE = 2.0
"""Seconds a page's turn is kept after its host was next due (the crawl loop looks at the
frontier at least once a second)."""
_ASIDE_POLL = 0.05
"""Seconds between looks of an aside request waiting for a page to take its turn."""


class SlotClaims(Generic[E]):
    """The slots of ``queues``' hosts under ``policy`` for requests outside the leases
    (a :class:`~gossamer.frontier.gate.SlotKeeper`); ``robots`` knows their Crawl-delays,
    ``schedule`` puts a host whose slot was given back where it waits its turn,
    ``clock`` is the scheduler's, and ``domains`` its domains' share, if capped (a request
    here counts on its host's domain but never waits for it: see :mod:`.domains`)."""

    def __init__(
        self,
        queues: HostQueues[E],
        robots: RobotsStage[E],
        policy: PolitenessPolicy,
        schedule: Callable[[str, Host[E]], None],
        clock: Callable[[], float],
        domains: DomainShare[E] | None = None,
    ) -> None:
        self._queues = queues
        self._domains = domains
        self._hosts = queues.hosts
        self._robots = robots
        self._policy = policy
        self._schedule = schedule
        self._clock = clock

    def claim(self, key: str, *, room: bool = True, aside: bool = False) -> float:
        """Take a slot of host ``key`` for a request outside any lease
        (:class:`~gossamer.frontier.gate.HostGate`): 0.0 when taken, else the seconds until it
        may be (infinity while ``room`` is asked for and its connections are all in use).
        The host's robots.txt Crawl-delay, when known, counts as for its URLs. An ``aside``
        request waits while a page of the host has the turn (see the module doc)."""
        slot = self._queues.host(key).slot
        self._robots.pace(key, slot)
        if self._domains is not None:
            self._domains.attach(key, slot)
        now = self._clock()
        if aside and self.yields(key):
            return max(_ASIDE_POLL, min(slot.next_start, slot.owed_until) - now)
        wait = self._policy.claim(slot, now, room)
        if aside and wait == 0.0:
            slot.pages_owed = True
            slot.owed_until = 0.0
        return wait

    def yields(self, key: str) -> bool:
        """Whether an aside request for host ``key`` leaves the next slot to one of the host's
        pages now: one is queued, none has started since the last aside request did, and the
        turn has not lapsed."""
        host = self._hosts.get(key)
        if host is None or not host.waiting or not host.slot.pages_owed:
            return False
        slot, now = host.slot, self._clock()
        if not slot.owed_until:
            slot.owed_until = max(slot.next_start, now) + TURN_GRACE
        return now < slot.owed_until

    def unclaim(self, key: str, feedback: Feedback | None) -> None:
        """A request of :meth:`claim` ended; its host's slot learns from ``feedback`` (the
        slot it left with, when the host was forgotten meanwhile: its partition given away)."""
        host = self._hosts.get(key)
        if host is not None:
            self._policy.on_finish(host.slot, feedback, self._clock(), key)
            self._schedule(key, host)
        elif (slot := self._queues.left.get(key)) is not None:
            self._policy.on_finish(slot, feedback, self._clock(), key)

    def note(self, key: str, started_at: float) -> None:
        """A leased request to host ``key`` started at ``started_at``: its next start is
        spaced from that (a rendered page's subrequests go out while its lease is held)."""
        host = self._hosts.get(key)
        slot = host.slot if host is not None else self._queues.left.get(key)
        if slot is not None:
            self._policy.started(slot, started_at)

    def hold(self, key: str, waiting: bool) -> None:
        """A request outside the leases starts (``waiting``) or stops waiting for host
        ``key``'s slot: while any waits, the host's URLs are not leased."""
        if waiting:
            self._queues.host(key).claims += 1
            return
        host = self._hosts.get(key)  # None: dropped meanwhile (its partition moved away)
        if host is not None and host.claims:
            host.claims -= 1
            if not host.claims:
                self._schedule(key, host)

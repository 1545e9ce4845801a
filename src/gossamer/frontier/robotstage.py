"""The robots.txt stage of :class:`~gossamer.frontier.hosts.HostScheduler`: what a due host's
URLs go out as, by the rules of a ``rules`` lookup (the robots.txt cache, by host key).

A due host's rules are looked up before any of its URLs goes out:

* not known: its next slot goes to one ``robots`` lease, and its URLs wait. The backend ends
  that lease with :meth:`HostScheduler.rules`; the rules reported are used at the next look
  at the host even if the cache has let them go meanwhile (an unreachable verdict cached for
  less than the host's delay would otherwise be fetched forever, nothing else going out);
* known: URLs the rules forbid go out as ``blocked`` leases (no slot), and the host's
  Crawl-delay goes to its slot;
* ``unreachable``: its queued URLs go out as ``unreachable`` leases (no slot); when the
  cache's verdict lapses the next look asks for robots.txt again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic

import msgspec

from gossamer.frontier.base import Lease, Rules
from gossamer.frontier.hostqueue import E, Host, HostQueues
from gossamer.frontier.leases import LeaseTable
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy

__all__ = ["ROBOTS_FIRST", "RobotsStage", "RulesLookup"]

RulesLookup = Callable[[str], Rules | None]
"""The robots.txt rules cached for a host key (``scheme://host[:port]``), None when not known;
no I/O (:meth:`~gossamer.frontier.robots.RobotsCache.known`)."""


class _Verdict(msgspec.Struct, frozen=True):
    """Rules of the stage's own: one answer for every URL."""

    status: str
    allows: bool
    crawl_delay: float | None = None

    def allowed(self, url: str) -> bool:
        return self.allows


_ANYTHING = _Verdict("ignored", allows=True)
"""The rules of a crawl that ignores robots.txt."""
ROBOTS_FIRST: Rules = _Verdict("unknown", allows=False)
"""What :meth:`RobotsStage.look` returns when robots.txt must come first."""


class RobotsStage(Generic[E]):
    """Looks up a due host's rules and leases its robots.txt; see the module docstring.
    ``lookup`` None ignores robots.txt."""

    __slots__ = ("_leases", "_lookup", "_policy", "_queues")

    def __init__(
        self,
        lookup: RulesLookup | None,
        policy: PolitenessPolicy,
        queues: HostQueues[E],
        leases: LeaseTable[E],
    ) -> None:
        self._lookup = lookup
        self._policy = policy
        self._queues = queues
        self._leases = leases

    def look(self, key: str, host: Host[E], now: float, out: list[Lease]) -> Rules | None:
        """The rules the URLs of a due host (with URLs queued in memory) go out by, or
        `ROBOTS_FIRST` when its robots.txt must be fetched first; None when its URLs went to
        ``out`` as ``unreachable`` leases."""
        if self._lookup is None:
            return _ANYTHING
        reported, host.reported = host.reported, None
        rules = self._lookup(key) or reported
        if rules is None:
            return ROBOTS_FIRST
        self._policy.set_crawl_delay(host.slot, rules.crawl_delay, key)
        if rules.status == "unreachable":
            queues, leases = self._queues, self._leases
            while host.queue:
                out.append(leases.open(key, host, queues.pop(host), now, "unreachable"))
            return None
        return rules

    def lease(self, key: str, host: Host[E], now: float) -> Lease:
        """Host ``key``'s ``robots`` lease: it takes a slot, and nothing else of the host is
        scheduled until it ends."""
        host.robots_out = True
        self._policy.on_lease(host.slot, now)
        return self._leases.open(key, host, None, now, "robots")

    def report(self, lease: Lease, rules: Rules | None) -> bool:
        """The rules a ``robots`` lease brought, for the next look at its host; False when
        the lease had ended already."""
        host = self._leases.host_of(lease.token)
        if host is None or lease.kind != "robots":
            return False
        host.reported = rules
        return True

    def pace(self, key: str, slot: HostSlot) -> None:
        """Host ``key``'s Crawl-delay, when its rules are known, to its ``slot``."""
        if self._lookup is not None and (rules := self._lookup(key)) is not None:
            self._policy.set_crawl_delay(slot, rules.crawl_delay, key)

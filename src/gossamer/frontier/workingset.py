"""The working set of :class:`~gossamer.frontier.hosts.HostScheduler` (``max_active``; None
schedules every host at once).

Only a working set of at most ``max_active`` hosts is scheduled; the others wait in line, in
the order their first URL arrived, and join the set only when the set's hosts cannot fill a
lease (none is due), so the set grows just as far as politeness makes it necessary to keep the
crawl busy. A host leaves the set when it has nothing queued or leased; a URL coming back from
a lease puts its host at the front of the line. Without this, a crawl starting on 200,000
hosts would fetch every host's robots.txt before the first page (new hosts are due at once, a
host whose robots.txt just came is due only after its delay), and a robots.txt cache smaller
than the hosts in play would forget rules before they were used.

**A registrable domain's share of the set.** With ``per_domain`` capped
(:mod:`gossamer.frontier.domains`), the hosts of one registrable domain hold at most
``share`` places of the set: ``_SHARE_PER_SLOT`` (4) times ``per_domain``, but no more than
half the set unless ``per_domain`` itself is more (never fewer than ``per_domain``: a host
with a crawl delay leases one URL at a time, so the domain needs ``per_domain`` hosts to use
its ``per_domain`` slots at all, and four times that keeps them busy while each host waits
out a delay up to three times its response time). More would add nothing the domain may use
at once. Without it, host names costing nothing to make (wildcard DNS: h1.evil.test,
h2.evil.test, ...), ``max_active`` hosts of one domain queued ahead of another site filled
the set, and the other site waited in line until the flood drained (hours, with hosts that
hang), though the domain could use only ``per_domain`` slots meanwhile.

A host that comes to join while its domain holds its share does not join: it waits on its
domain (``DomainSlot.joining``, first come first, still ``Host.pending`` so a new URL does
not put it in the line again), and the line goes on to the next host. When one of the
domain's hosts leaves the set (or is dropped), the one waiting longest takes its place at
once (:meth:`WorkingSet.leave` returns it for the scheduler to schedule), ahead of every host
still in line. Each host is counted on the ``DomainSlot`` its politeness slot points at (a
domain with hosts in the set or waiting is never swept), named once when it joins by the
domain share's naming (the Public Suffix List read lazily). A host in line costs nothing
more, and a join or a leave a counter and a deque operation, amortized O(1). Measured
(callgrind, ``PYTHONHASHSEED=0``, ``benchmarks/bench_scheduler.py --hosts 20000 --urls
100000 --max-active 5000 --per-domain 16 --repeat 1``, every host its own domain): 7,667 M
instructions for the whole run, 7,626 M before the share (+0.5%, some 2,000 a host that
joins). ``benchmarks/bench_seeds.py --seeds 100000 --hosts 20000 --run 20``, one run each on
a loaded 2-core machine: first page after 3.4 s (2.5 s before), 4,137 pages (3,821), peak
RSS 114 MB (113 MB).

In a cluster, each worker's scheduler is its own: the Redis frontier schedules every host
it owns at once (no ``max_active``, so no line and no share), and the share, like
``per_domain``, would be counted per worker.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Generic

from gossamer.frontier.domains import DomainShare
from gossamer.frontier.hostqueue import E, Host
from gossamer.frontier.politeness import DomainSlot

__all__ = ["WorkingSet"]

log = logging.getLogger(__name__)

_SHARE_PER_SLOT = 4
"""Places of the set a domain holds per request it may have in flight (module docstring)."""


class WorkingSet(Generic[E]):
    """Which hosts are scheduled (``Host.active``) and the line of those waiting to be
    (``Host.pending``); ``hosts`` is the scheduler's table (read only), ``domains`` the
    domains' share of the slots, whose domains share the set too (None: not capped). See the
    module docstring."""

    __slots__ = ("_domains", "_hosts", "_line", "_most", "_share", "active")

    def __init__(
        self, most: int | None, hosts: dict[str, Host[E]], domains: DomainShare[E] | None = None
    ) -> None:
        self._most = most
        self._hosts = hosts
        self._line: deque[str] = deque()
        """Keys of hosts with queued URLs waiting to join, oldest first."""
        self._domains = domains if most is not None else None
        self._share = 0
        """Places of the set one domain's hosts hold at most (with ``_domains``)."""
        if most is not None and domains is not None:
            per_domain = domains.most
            self._share = min(_SHARE_PER_SLOT * per_domain, max(per_domain, most // 2))
        self.active = 0
        """Hosts in the set."""

    def has_room(self) -> bool:
        """Another host may join."""
        return self._most is None or self.active < self._most

    @property
    def can_join(self) -> bool:
        """A host waits in line and the set has room for it."""
        return bool(self._line) and self.has_room()

    def enter(self, key: str, host: Host[E], front: bool) -> bool:
        """A host with something queued, out of the set, asks to be scheduled: it joins at
        once when the set has no bound (True), else it waits in line (at the ``front`` for a
        URL coming back from a lease)."""
        if self._most is None:
            host.active = True
            self.active += 1
            return True
        if not host.pending:
            host.pending = True
            if front:
                self._line.appendleft(key)
            else:
                self._line.append(key)
        return False

    def leave(self, host: Host[E]) -> tuple[str, Host[E]] | None:
        """A host with nothing queued or leased leaves the set; returns the host of its
        domain that takes its place, if one waits (the caller schedules it)."""
        host.active = False
        self.active -= 1
        return self._vacated(host)

    def forget(self, host: Host[E]) -> tuple[str, Host[E]] | None:
        """A host dropped from the scheduler (its partition moved away); returns the host of
        its domain that takes its place in the set, if one waits."""
        if not host.active:
            return None
        self.active -= 1
        return self._vacated(host)

    def join(self) -> tuple[str, Host[E]] | None:
        """The next host of the line, joining the set if it has room (hosts with nothing
        queued any more, or dropped, leave the line; those whose domain holds its share wait
        on it); None when none joins."""
        line, hosts = self._line, self._hosts
        while line and (self._most is None or self.active < self._most):
            key = line.popleft()
            host = hosts.get(key)
            if host is None:
                continue
            host.pending = False
            if not host.waiting or host.active:
                continue
            if self._domains is not None and not self._counted(key, host, self._domains):
                continue
            host.active = True
            self.active += 1
            return key, host
        return None

    def _counted(self, key: str, host: Host[E], domains: DomainShare[E]) -> bool:
        """Count host ``key`` on its domain if the domain has a place left in the set; else
        it waits on the domain (False)."""
        domain = domains.of(key, host.slot_made)
        if domain.members < self._share:
            domain.members += 1
            host.slot.domain = domain
            return True
        if domain.joining is None:
            domain.joining = deque()
            log.info(
                "%s has %d hosts in the working set (its share); its other hosts wait for "
                "one of them to leave it",
                domain.name,
                domain.members,
                extra={
                    "event": "domain-share-full",
                    "domain": domain.name,
                    "hosts": domain.members,
                },
            )
        domain.joining.append(key)
        host.pending = True
        return False

    def _vacated(self, host: Host[E]) -> tuple[str, Host[E]] | None:
        """``host`` (counted on its domain) left the set: the host of its domain waiting
        longest, if any, joins in its place."""
        if self._domains is None:
            return None
        domain: DomainSlot | None = host.slot.domain
        assert domain is not None
        domain.members -= 1
        joining, hosts = domain.joining, self._hosts
        while joining:
            key = joining.popleft()
            heir = hosts.get(key)
            if heir is None or heir.active:
                continue
            heir.pending = False
            if not heir.waiting:
                continue
            domain.members += 1
            heir.slot.domain = domain
            heir.active = True
            self.active += 1
            return key, heir
        return None

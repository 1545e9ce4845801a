"""The lease table of :class:`~gossamer.frontier.hosts.HostScheduler`: every lease out, with
its entry and host, until it ends.

A lease carries a token (its key here) and a deadline (``timeout`` seconds after it went
out); :meth:`LeaseTable.expired` lists those past it for the backend to release. A host counts
its leases out (``Host.leased``): a host with one out stays in the working set.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Generic

from gossamer.frontier.base import Lease, LeaseKind
from gossamer.frontier.hostqueue import E, Host, Queued

__all__ = ["LeaseTable"]


class LeaseTable(Generic[E]):
    """The leases out, by token."""

    __slots__ = ("_held", "_next_reclaim", "_timeout", "_tokens")

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._held: dict[int, tuple[Lease, E | None, Host[E]]] = {}
        self._tokens = itertools.count(1)
        self._next_reclaim = -math.inf

    def __len__(self) -> int:
        return len(self._held)

    def open(self, key: str, host: Host[E], entry: E | None, now: float, kind: LeaseKind) -> Lease:
        """A lease of ``entry`` of host ``key`` (None: of its robots.txt), held until it
        ends."""
        what = entry if entry is not None else Queued(key + "/robots.txt", 0, 0, 0)
        lease = Lease(
            url=what.url,
            fp=what.fp,
            host=key,
            depth=what.depth,
            hops=what.hops,
            attempts=what.attempts,
            deadline=now + self._timeout,
            token=next(self._tokens),
            kind=kind,
        )
        self._held[lease.token] = (lease, entry, host)
        host.leased += 1
        if kind == "page":  # the turn a sitemap's fetch left to the host's pages is taken
            host.slot.pages_owed = False
            host.slot.owed_until = 0.0
        return lease

    def close(self, token: int) -> tuple[Lease, E | None, Host[E]] | None:
        """End the lease ``token``: it, its entry and its host; None when it had ended
        already."""
        held = self._held.pop(token, None)
        if held is not None:
            held[2].leased -= 1
        return held

    def host_of(self, token: int) -> Host[E] | None:
        """The host of lease ``token`` while it is out."""
        held = self._held.get(token)
        return None if held is None else held[2]

    def expired(self, now: float) -> list[Lease]:
        """Leases past their deadline (looked for at most once a second, or a tenth of the
        lease timeout: an empty list between)."""
        if now < self._next_reclaim or not self._held:
            return []
        self._next_reclaim = now + min(1.0, self._timeout / 10)
        return [lease for lease, _, _ in self._held.values() if lease.deadline <= now]

    def out(self) -> Iterator[tuple[Lease, E | None]]:
        """The leases out, each with its entry (None for a ``robots`` lease)."""
        return ((lease, entry) for lease, entry, _ in self._held.values())

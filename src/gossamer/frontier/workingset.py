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
"""

from __future__ import annotations

from collections import deque
from typing import Generic

from gossamer.frontier.hostqueue import E, Host

__all__ = ["WorkingSet"]


class WorkingSet(Generic[E]):
    """Which hosts are scheduled (``Host.active``) and the line of those waiting to be
    (``Host.pending``); see the module docstring."""

    __slots__ = ("_line", "_most", "active")

    def __init__(self, most: int | None) -> None:
        self._most = most
        self._line: deque[str] = deque()
        """Keys of hosts with queued URLs waiting to join, oldest first."""
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

    def leave(self, host: Host[E]) -> None:
        """A host with nothing queued or leased leaves the set."""
        host.active = False
        self.active -= 1

    def forget(self, host: Host[E]) -> None:
        """A host dropped from the scheduler (its partition moved away)."""
        if host.active:
            self.active -= 1

    def join(self, hosts: dict[str, Host[E]]) -> tuple[str, Host[E]] | None:
        """The next host of the line, joining the set if it has room (hosts with nothing
        queued any more, or dropped, leave the line); None when none joins."""
        line = self._line
        while line and (self._most is None or self.active < self._most):
            key = line.popleft()
            host = hosts.get(key)
            if host is None:
                continue
            host.pending = False
            if not host.waiting or host.active:
                continue
            host.active = True
            self.active += 1
            return key, host
        return None

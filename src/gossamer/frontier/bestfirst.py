"""Best first across hosts (``slack``): the order due hosts go out in once priorities count.

While every queued URL has priority 0 (a breadth-first crawl) the scheduler hands out due
hosts in the order they became due and has no :class:`BestFirst` at all, so nothing here costs
anything. Once an entry with another priority arrives it makes one, and from then on a due host
is one of a heap ranked by the priority of its next URL: the due host whose next URL is best
goes first (earlier due first among equals). When the best queued URL waits (its host's delay,
Crawl-delay, connection limit or robots.txt lease), a due host is leased only if its next
URL's priority is at least the best one's less the ``slack``; otherwise nothing goes out until
the best host is due, so a page budget is not spent on far worse URLs. ``slack=inf`` never
holds back (best first among due hosts only); ``slack=0`` holds back everything worse than
the best.

From even odds up (a best priority of :data:`EVEN`, 0.5 or more: a focus's priorities are the
odds that a page is on topic) the slack is a share of the best priority, not a difference: a
URL goes meanwhile if its priority is at least ``1 - slack`` times the best one's. A fixed
difference of 0.5 let 0.2s through behind a 0.7 (when waiting for the 0.7 was worth most) and
held nothing back behind a 0.5 or less. Below even odds the best URL is a guess among guesses
(the crawl is still looking for its topic) and a share of a small number would hold the crawl
to one host over differences of noise: there the slack stays a difference.

Politeness is untouched: only hosts due by their slot are ever leased. Both heaps are updated
lazily (a host's items carry the rank they were pushed with and are checked against it when
they come to the top).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Generic

from gossamer.frontier.hostqueue import E, Host
from gossamer.frontier.ready import ReadyHeap
from gossamer.settings.models import DEFAULT_SLACK

__all__ = ["DEFAULT_SLACK", "EVEN", "BestFirst"]

EVEN = 0.5
"""The priority (a focus's odds that a URL's page is on topic) from which the slack is a share
of the best one's, not a difference."""


class BestFirst(Generic[E]):
    """The due hosts by the rank of their next URL, and the best rank queued; see the module
    docstring. ``hosts`` is the scheduler's table of hosts, read only."""

    __slots__ = ("_best", "_clock", "_due", "_hosts", "_slack")

    def __init__(self, hosts: dict[str, Host[E]], slack: float, clock: Callable[[], float]) -> None:
        self._hosts = hosts
        self._slack = slack
        self._clock = clock
        self._due: list[tuple[float, float, str]] = []
        """Due hosts as (-rank, due since, key), lazily updated."""
        self._best: list[tuple[float, str]] = []
        """Hosts of the working set with queued URLs as (-rank, key), lazily updated."""
        for key, host in hosts.items():
            if host.active and host.queue is not None:
                self.note(key, host)

    def note(self, key: str, host: Host[E]) -> None:
        """A host of the working set may have a new next URL: keep its ranks up to date."""
        if host.queue is None:
            return
        rank = host.queue.peek().priority
        if rank != host.best_rank:
            host.best_rank = rank
            best = self._best
            if len(best) > 2 * len(self._hosts) + 64:  # stale items of hosts gone or changed
                best[:] = [(-_rank(h), k) for k, h in self._hosts.items() if _live(h)]
                heapq.heapify(best)
            heapq.heappush(best, (-rank, key))
        if host.due_rank is not None and rank > host.due_rank:
            host.due_rank = rank
            heapq.heappush(self._due, (-rank, self._clock(), key))

    def take_due(self, ready: ReadyHeap[E], now: float) -> None:
        """The hosts of ``ready`` whose time has come, ranked among the due."""
        due = self._due
        while (item := ready.pop_due(now)) is not None:
            when, key, host = item
            host.due_rank = rank = _rank(host)
            heapq.heappush(due, (-rank, when, key))

    def floor(self) -> float:
        """The lowest rank a due host may have to be leased now: the best queued URL's
        priority (its host due or not) less the slack (a share of it from even odds up);
        -infinity when nothing is queued."""
        best, hosts = self._best, self._hosts
        while best:
            rank, key = best[0]
            host = hosts.get(key)
            if host is not None and host.best_rank == -rank and _live(host):
                return _floor(-rank, self._slack)
            heapq.heappop(best)
        return -math.inf

    def top(self) -> float | None:
        """The rank of the best due host (stale items dropped or re-ranked), None if none."""
        due, hosts = self._due, self._hosts
        while due:
            rank, when, key = due[0]
            host = hosts.get(key)
            if host is None or host.due_rank != -rank:
                heapq.heappop(due)
                continue
            now_rank = _rank(host)
            if now_rank != -rank:
                host.due_rank = now_rank
                heapq.heapreplace(due, (-now_rank, when, key))
                continue
            return -rank
        return None

    def may_go(self) -> bool | None:
        """Whether the best due host is within the slack of the best queued URL; None when no
        host is due."""
        top = self.top()
        return None if top is None else top >= self.floor()

    def pop(self) -> tuple[str, Host[E]]:
        """Take the best due host (after :meth:`top` found one)."""
        _, _, key = heapq.heappop(self._due)
        host = self._hosts[key]
        host.due_rank = None
        return key, host


def _floor(best: float, slack: float) -> float:
    """The lowest priority that goes while a URL of priority ``best`` waits (see the module
    docstring): from even odds up, ``best`` less ``slack`` times it; below, ``best`` less
    ``slack``."""
    if best == math.inf:
        return best
    if slack == math.inf:
        return -math.inf
    return best - slack * best if best >= EVEN else best - slack


def _rank(host: Host[E]) -> float:
    """The priority of a host's next URL; infinity for a host whose URLs are all in storage
    (it is looked at first: reading them back uses no slot)."""
    return host.queue.peek().priority if host.queue is not None else math.inf


def _live(host: Host[E]) -> bool:
    """Its item in the best heap is current."""
    queue = host.queue
    return (
        host.active
        and queue is not None
        and host.best_rank is not None
        and queue.peek().priority == host.best_rank
    )

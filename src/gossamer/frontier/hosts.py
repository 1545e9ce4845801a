"""The host scheduler both frontier backends share: which URL goes out next, and when.

It is synchronous, does no I/O and reads time from an injected clock. The backends keep their
storage around it: the embedded frontier its crawl.db staging, spill and refill; the Redis
frontier its claims, acks, renewals, partitions and shared host limiter. They hand it the
entries they hold in memory and take leases from it.

Each host (``scheme://host[:port]``) has

* a queue of URLs, the highest ``priority`` first and in arrival order among equals (all 0 by
  default, which is breadth first inside the host, as URLs arrive in depth order); a URL
  coming back from a lease (released, reclaimed, due after a retry's delay) goes to the front
  of its priority;
* a politeness slot (:mod:`gossamer.frontier.politeness`): how many of its requests are out
  and when the next may start;
* a count of its URLs held in storage only (``stored``: the embedded frontier's spill). A due
  host whose queue in memory is empty is handed back as ``dry`` for the backend to read more
  (:meth:`HostScheduler.refill`);
* the state of its robots.txt rules (below).

Hosts with queued URLs and a free slot wait in a ready heap keyed by the time their slot is
next free, or later when :meth:`HostScheduler.defer` says so (the Redis frontier's shared
limiter refused a slot).

**Best first** (``slack``). While every queued URL has priority 0 (a breadth-first crawl)
due hosts go out in the order they became due, and nothing else costs anything. Once an entry
with another priority arrives, a due host is one of a second heap ranked by the priority of
its next URL: the due host whose next URL is best goes first (earlier due first among equals).
When the best queued URL waits (its host's delay, Crawl-delay, connection limit or robots.txt
lease), a due host is leased only if its next URL's priority is at least the best one's less
``slack``; otherwise nothing goes out until the best host is due, so a page budget is not
spent on far worse URLs. ``slack=inf`` never holds back (best first among due hosts only);
``slack=0`` holds back everything worse than the best. Politeness is untouched: only hosts
due by their slot are ever leased. Both heaps are updated lazily (a host's items carry the
rank they were pushed with and are checked against it when they come to the top).

**Working set** (``max_active``; None schedules every host at once). Only a working set of at
most ``max_active`` hosts is scheduled; the others wait in line, in the order their first URL
arrived, and join the set only when the set's hosts cannot fill a lease (none is due), so the
set grows just as far as politeness makes it necessary to keep the crawl busy. A host leaves
the set when it has nothing queued or leased; a URL coming back from a lease puts its host at
the front of the line. Without this, a crawl starting on 200,000 hosts would fetch every
host's robots.txt before the first page (new hosts are due at once, a host whose robots.txt
just came is due only after its delay), and a robots.txt cache smaller than the hosts in play
would forget rules before they were used.

**robots.txt** (with a ``rules`` lookup: the robots.txt cache, by host key). A due host's
rules are looked up before any of its URLs goes out:

* not known: its next slot goes to one ``robots`` lease, and its URLs wait. The backend ends
  that lease with :meth:`HostScheduler.rules`; the rules reported are used at the next look
  at the host even if the cache has let them go meanwhile (an unreachable verdict cached for
  less than the host's delay would otherwise be fetched forever, nothing else going out);
* known: URLs the rules forbid go out as ``blocked`` leases (no slot), and the host's
  Crawl-delay goes to its slot;
* ``unreachable``: its queued URLs go out as ``unreachable`` leases (no slot); when the
  cache's verdict lapses the next look asks for robots.txt again.

**Requests outside the leases** (proxy checks, focus examples, rendered pages' subrequests,
logins: :mod:`gossamer.frontier.gate`) take the same slots: :meth:`HostScheduler.claim` takes
one when the host is due, :meth:`HostScheduler.unclaim` gives it back with the request's
feedback, and while one waits (:meth:`HostScheduler.hold`) none of the host's URLs is leased.

**Leases** carry a token and a deadline; :meth:`HostScheduler.expired` lists those past it for
the backend to release. :meth:`HostScheduler.lease` hands out leases in one step. The Redis
frontier by URL asks its shared limiter between two: :meth:`HostScheduler.due` names the due
hosts and how many slots each could use, :meth:`HostScheduler.take` leases what the limiter
granted, and :meth:`HostScheduler.defer` holds back a host it refused.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from gossamer.frontier.base import Feedback, HeldBack, Lease, LeaseKind, Rules
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.settings.models import DEFAULT_SLACK

__all__ = [
    "DEFAULT_SLACK",
    "Batch",
    "Host",
    "HostQueue",
    "HostScheduler",
    "Queued",
    "Round",
    "RulesLookup",
    "Want",
]

RulesLookup = Callable[[str], Rules | None]
"""The robots.txt rules cached for a host key (``scheme://host[:port]``), None when not known;
no I/O (:meth:`~gossamer.frontier.robots.RobotsCache.known`)."""


@dataclass(slots=True)
class Queued:
    """A queued URL as the scheduler reads it; a backend's entries add their storage fields."""

    url: str
    fp: int
    depth: int
    hops: int
    attempts: int = 0
    priority: float = 0.0
    """Order inside its host: higher first, arrival order among equals."""


E = TypeVar("E", bound=Queued)

_order = itertools.count()
"""Arrival order inside a priority, shared by every queue (only its order matters)."""
_SHORT = 16
"""Longest queue kept in a list: taking its first entry moves the others, a few pointers."""


class HostQueue(Generic[E]):
    """One host's queued entries: the highest priority first, arrival order among equals.

    While every entry has the default priority 0 (the common case) a list, or a deque once
    it holds more than `_SHORT` (a deque costs 600 bytes however short, and most hosts
    hold a few URLs); a heap of ``(-priority, order, entry)`` once one has another priority.
    """

    __slots__ = ("_fifo", "_heap")

    def __init__(self) -> None:
        self._fifo: list[E] | deque[E] | None = []
        self._heap: list[tuple[float, int, E]] | None = None

    def __len__(self) -> int:
        return len(self._fifo) if self._fifo is not None else len(self._items())

    def push(self, entry: E, *, front: bool = False) -> None:
        """Queue ``entry`` after those of its priority (before them with ``front``)."""
        fifo = self._fifo
        if fifo is not None:
            if entry.priority:
                self._to_heap()
            else:
                if len(fifo) >= _SHORT and isinstance(fifo, list):
                    fifo = self._fifo = deque(fifo)
                if not front:
                    fifo.append(entry)
                elif isinstance(fifo, list):
                    fifo.insert(0, entry)
                else:
                    fifo.appendleft(entry)
                return
        order = next(_order)
        heapq.heappush(self._items(), (-entry.priority, -order if front else order, entry))

    def peek(self) -> E:
        """The next entry (the queue must not be empty)."""
        return self._fifo[0] if self._fifo is not None else self._items()[0][2]

    def pop(self) -> E:
        """Take the next entry (the queue must not be empty)."""
        fifo = self._fifo
        if fifo is None:
            return heapq.heappop(self._items())[2]
        return fifo.pop(0) if isinstance(fifo, list) else fifo.popleft()

    def remove(self, drop: Callable[[E], bool]) -> list[E]:
        """Take out the entries ``drop`` selects, in queue order for a list or deque."""
        if self._fifo is not None:
            gone = [entry for entry in self._fifo if drop(entry)]
            if gone:
                kept = [entry for entry in self._fifo if not drop(entry)]
                self._fifo = kept if len(kept) <= _SHORT else deque(kept)
            return gone
        heap = self._items()
        gone = [entry for _, _, entry in sorted(heap) if drop(entry)]
        if gone:
            self._heap = [item for item in heap if not drop(item[2])]
            heapq.heapify(self._heap)
        return gone

    def rerank(self, priorities: dict[int, float]) -> list[E]:
        """Give the entries whose fingerprint ``priorities`` names that priority, their arrival
        order kept; returns those whose priority changed."""
        entries = self._fifo if self._fifo is not None else [e for _, _, e in self._items()]
        changed = [e for e in entries if priorities.get(e.fp, e.priority) != e.priority]
        if not changed:
            return changed
        for entry in changed:
            entry.priority = priorities[entry.fp]
        if self._fifo is not None:
            self._to_heap()
        else:
            self._heap = [(-e.priority, order, e) for _, order, e in self._items()]
            heapq.heapify(self._heap)
        return changed

    def _items(self) -> list[tuple[float, int, E]]:
        assert self._heap is not None
        return self._heap

    def _to_heap(self) -> None:
        assert self._fifo is not None
        self._heap = [(-entry.priority, next(_order), entry) for entry in self._fifo]
        heapq.heapify(self._heap)
        self._fifo = None


@dataclass(slots=True, eq=False)
class Host(Generic[E]):
    """The scheduling state of one host."""

    queue: HostQueue[E] | None = None
    """Queued URLs in memory; None when there are none (most of a big crawl's hosts have their
    URLs in storage only, and an empty queue costs memory)."""
    stored: int = 0
    """Queued URLs of this host held in storage only."""
    heap_time: float | None = None
    """The time of this host's live entry in the ready heap, if any."""
    leased: int = 0
    claims: int = 0
    """Requests outside any lease waiting for its slot (:mod:`gossamer.frontier.gate`): while
    there are some, none of its URLs is leased, so a busy host cannot starve them."""
    active: bool = False
    """In the working set: its URLs are scheduled."""
    pending: bool = False
    """In the line of hosts waiting to join the working set."""
    not_before: float = -math.inf
    """Not due before this time whatever its slot says (a limiter's refusal)."""
    robots_out: bool = False
    """Its ``robots`` lease is out: nothing of it is scheduled until that ends."""
    reported: Rules | None = None
    """Rules its last ``robots`` lease brought, until the next look at the host."""
    due_rank: float | None = None
    """Best first (see :class:`HostScheduler`): the rank of its live entry among the due
    hosts, None when it has none."""
    best_rank: float | None = None
    """Best first: the rank of its live entry among the hosts with queued URLs."""
    _slot: HostSlot | None = None

    @property
    def slot(self) -> HostSlot:
        """Its politeness slot, made when first asked for (most of a big crawl's hosts wait
        in line, never scheduled yet)."""
        if self._slot is None:
            self._slot = HostSlot()
        return self._slot

    @property
    def waiting(self) -> bool:
        """Something of it is queued, in memory or in storage."""
        return bool(self.queue) or self.stored > 0


@dataclass(slots=True)
class Batch:
    """What :meth:`HostScheduler.lease` handed out."""

    leases: list[Lease]
    dry: list[str]
    """Due hosts whose queued URLs are all in storage: refill them."""


@dataclass(slots=True)
class Want(Generic[E]):
    """A due host and how many slots it could use now (:meth:`HostScheduler.due`)."""

    key: str
    host: Host[E]
    count: int
    rules: Rules | None
    """The rules its URLs go out by; None when the slot is for its ``robots`` lease."""


@dataclass(slots=True)
class Round(Generic[E]):
    """What :meth:`HostScheduler.due` found."""

    leases: list[Lease]
    """Leases that need no slot (``blocked``, ``unreachable``), handed out already."""
    wants: list[Want[E]]
    dry: list[str]


@dataclass(frozen=True, slots=True)
class _Verdict:
    """Rules of the scheduler's own: one answer for every URL."""

    status: str
    allows: bool
    crawl_delay: float | None = None

    def allowed(self, url: str) -> bool:
        return self.allows


_ANYTHING = _Verdict("ignored", allows=True)
"""The rules of a crawl that ignores robots.txt."""
_ROBOTS = _Verdict("unknown", allows=False)
"""What :meth:`HostScheduler._look` returns when robots.txt must come first."""
_SLOTTED: frozenset[LeaseKind] = frozenset({"page", "robots"})
_HELD_POLL = 1.0
"""Seconds :meth:`HostScheduler.next_ready` answers while the due hosts are held back by the
slack and the best URL's host has no known next time (its requests are out)."""


class HostScheduler(Generic[E]):
    """Ready heap, per-host queues, delays, leases and the robots.txt stage of a frontier;
    see the module docstring."""

    def __init__(
        self,
        policy: PolitenessPolicy,
        *,
        rules: RulesLookup | None = None,
        lease_timeout: float = 600.0,
        max_active: int | None = None,
        slack: float = DEFAULT_SLACK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not slack >= 0:
            raise ValueError(f"slack must be a number >= 0, not {slack!r}")
        self._policy = policy
        self._slack = slack
        self._ranked = False
        """Best first across hosts: on once an entry with a priority other than 0 came."""
        self._due: list[tuple[float, float, str]] = []
        """Best first: due hosts as (-rank, due since, key), lazily updated."""
        self._best: list[tuple[float, str]] = []
        """Best first: hosts of the working set with queued URLs as (-rank, key), lazily."""
        self._lookup = rules
        self._lease_timeout = lease_timeout
        self._max_active = max_active
        self._clock = clock
        self._hosts: dict[str, Host[E]] = {}
        self._ready: list[tuple[float, str]] = []
        self._line: deque[str] = deque()
        """Hosts with queued URLs waiting to join the working set, oldest first."""
        self._delayed: list[tuple[float, int, str, E]] = []
        self._leases: dict[int, tuple[Lease, E | None, Host[E]]] = {}
        self._tokens = itertools.count(1)
        self._seq = itertools.count()
        self._next_reclaim = -math.inf
        self.queued = 0
        """URLs queued in memory."""
        self.stored = 0
        """URLs queued in storage only."""
        self.active = 0
        """Hosts in the working set."""

    # -- URLs in ---------------------------------------------------------------------------

    def push(self, key: str, entry: E) -> None:
        """Queue ``entry`` in memory at the back of its priority in host ``key``."""
        host = self._host(key)
        if host.queue is None:
            host.queue = HostQueue()
        host.queue.push(entry)
        self.queued += 1
        if entry.priority and not self._ranked:
            self._rank_all()
        self._schedule(key, host)

    def push_front(self, key: str, entry: E) -> None:
        """Queue ``entry`` (back from a lease) at the front of its priority, its host at the
        front of the line."""
        host = self._host(key)
        if host.queue is None:
            host.queue = HostQueue()
        host.queue.push(entry, front=True)
        self.queued += 1
        if entry.priority and not self._ranked:
            self._rank_all()
        self._schedule(key, host, front=True)

    def delay(self, key: str, entry: E, until: float) -> None:
        """Queue ``entry`` at the front of host ``key`` once the clock reaches ``until``."""
        heapq.heappush(self._delayed, (until, next(self._seq), key, entry))

    def store(self, key: str) -> None:
        """Count one more URL of host ``key`` queued in storage only."""
        host = self._host(key)
        host.stored += 1
        self.stored += 1
        if host.stored == 1:  # a host with stored URLs already is scheduled already
            self._schedule(key, host)

    def known(self, key: str) -> bool:
        """Whether host ``key`` has had a URL here (queued, leased, delayed or stored)."""
        return key in self._hosts

    def stored_of(self, key: str) -> int:
        """URLs of host ``key`` queued in storage only."""
        host = self._hosts.get(key)
        return 0 if host is None else host.stored

    def refill(self, key: str, entries: list[E]) -> None:
        """Entries of host ``key`` read back from storage, in order (none: it is scheduled
        again as it is)."""
        host = self._host(key)
        for entry in entries:
            if host.queue is None:
                host.queue = HostQueue()
            host.queue.push(entry)
        read = min(len(entries), host.stored)
        host.stored -= read
        self.stored -= read
        self.queued += len(entries)
        if not self._ranked and any(entry.priority for entry in entries):
            self._rank_all()
        self._schedule(key, host)

    def rerank(self, priorities: dict[str, dict[int, float]]) -> list[E]:
        """New priorities of queued and delayed entries, by host key then fingerprint (leased
        ones are not touched); returns the entries whose priority changed."""
        changed: list[E] = []
        for key, new in priorities.items():
            host = self._hosts.get(key)
            if host is None or host.queue is None:
                continue
            got = host.queue.rerank(new)
            if got:
                changed += got
                if not self._ranked and any(entry.priority for entry in got):
                    self._rank_all()
                self._schedule(key, host)
        for _, _, key, entry in self._delayed:
            priority = priorities.get(key, {}).get(entry.fp, entry.priority)
            if priority != entry.priority:
                entry.priority = priority
                changed.append(entry)
                if priority and not self._ranked:
                    self._rank_all()
        return changed

    # -- leasing ---------------------------------------------------------------------------

    def lease(self, n: int) -> Batch:
        """Up to ``n`` leases that use a slot, one per due host in turn, plus those that need
        none met on the way."""
        now = self._clock()
        self._promote(now)
        out: list[Lease] = []
        dry: list[str] = []
        slotted = 0
        while slotted < n and (due := self._next_due(now, out, dry)) is not None:
            key, host, rules = due
            if rules is _ROBOTS:
                out.append(self._robots_lease(key, host, now))
                slotted += 1
            elif (lease := self._take_one(key, host, rules, now, out)) is not None:
                out.append(lease)
                slotted += 1
            self._schedule(key, host)
        return Batch(out, dry)

    def due(self, n: int) -> Round[E]:
        """Due hosts, up to ``n`` slots over all, each with as many as it could use now; the
        backend leases them with :meth:`take` once it has the slots."""
        now = self._clock()
        self._promote(now)
        out: list[Lease] = []
        dry: list[str] = []
        wants: list[Want[E]] = []
        total = 0
        while total < n and (due := self._next_due(now, out, dry)) is not None:
            key, host, rules = due
            if rules is _ROBOTS:
                wants.append(Want(key, host, 1, None))
                total += 1
                continue
            self._take_blocked(key, host, rules, now, out)
            count = min(self._policy.room(host.slot), len(host.queue or ()), n - total)
            if count > 0:
                wants.append(Want(key, host, count, rules))
                total += count
            else:
                self._schedule(key, host)
        return Round(out, wants, dry)

    def take(self, want: Want[E], granted: int) -> tuple[list[Lease], int]:
        """Lease up to ``granted`` of what ``want`` asked for (plus ``blocked`` leases met on
        the way); returns the leases and how many slots they use."""
        key, host = want.key, want.host
        out: list[Lease] = []
        used = 0
        if self._hosts.get(key) is not host:  # dropped meanwhile
            return out, used
        now = self._clock()
        if want.rules is None:
            if granted > 0 and not host.robots_out:
                out.append(self._robots_lease(key, host, now))
                used = 1
        else:
            while used < granted:
                lease = self._take_one(key, host, want.rules, now, out)
                if lease is None:
                    break
                out.append(lease)
                used += 1
        self._schedule(key, host)
        return out, used

    def defer(self, key: str, until: float) -> None:
        """Hold host ``key`` back until ``until`` whatever its slot says."""
        host = self._hosts.get(key)
        if host is not None:
            host.not_before = until
            self._schedule(key, host)

    # -- leases end ------------------------------------------------------------------------

    def finish(self, lease: Lease, feedback: Feedback | None) -> E | None:
        """End a lease: its host's slot learns from ``feedback``. Returns its entry; None for
        a lease already ended (reclaimed) or a ``robots`` lease."""
        held = self._leases.pop(lease.token, None)
        if held is None:
            return None
        _, entry, host = held
        host.leased -= 1
        if lease.kind in _SLOTTED:
            self._policy.on_finish(host.slot, feedback, self._clock(), lease.host)
        if lease.kind == "robots":
            host.robots_out = False
        if self._hosts.get(lease.host) is host:
            self._schedule(lease.host, host)
        return entry

    def rules(self, lease: Lease, rules: Rules | None, feedback: Feedback | None) -> bool:
        """End a ``robots`` lease with the rules it brought (None: none, ask again); False
        when it had ended already."""
        held = self._leases.get(lease.token)
        if held is None or lease.kind != "robots":
            return False
        held[2].reported = rules
        self.finish(lease, feedback)
        return True

    def expired(self) -> list[Lease]:
        """Leases past their deadline, for the backend to release (looked for at most once a
        second, or a tenth of the lease timeout)."""
        now = self._clock()
        if now < self._next_reclaim or not self._leases:
            return []
        self._next_reclaim = now + min(1.0, self._lease_timeout / 10)
        return [lease for lease, _, _ in self._leases.values() if lease.deadline <= now]

    # -- for the backends' storage ---------------------------------------------------------

    def remove(self, drop: Callable[[E], bool]) -> list[E]:
        """Take the queued and delayed entries ``drop`` selects out of the scheduler."""
        gone: list[E] = []
        for key, host in list(self._hosts.items()):
            if host.queue:
                out = host.queue.remove(drop)
                if out:
                    gone += out
                    self.queued -= len(out)
                    if not host.queue:
                        host.queue = None
                    self._schedule(key, host)
        kept = [item for item in self._delayed if not drop(item[3])]
        if len(kept) < len(self._delayed):
            gone += [item[3] for item in self._delayed if drop(item[3])]
            heapq.heapify(kept)
            self._delayed = kept
        return gone

    def forget(self, key: str) -> Host[E] | None:
        """Drop host ``key`` (its queue emptied already): its leases still end here, on the
        returned host's slot."""
        host = self._hosts.pop(key, None)
        if host is None:
            return None
        if host.active:
            self.active -= 1
        self.queued -= len(host.queue or ())
        self.stored -= host.stored
        return host

    def host_keys(self) -> list[str]:
        """Every host key known."""
        return list(self._hosts)

    def out(self) -> Iterator[tuple[Lease, E | None]]:
        """The leases out, each with its entry (None for a ``robots`` lease)."""
        return ((lease, entry) for lease, entry, _ in self._leases.values())

    def slot(self, key: str) -> HostSlot | None:
        """The politeness slot of host ``key``, if known."""
        host = self._hosts.get(key)
        return None if host is None else host.slot

    # -- requests outside the leases (the host gate) ---------------------------------------

    def claim(self, key: str, *, room: bool = True) -> float:
        """Take a slot of host ``key`` for a request outside any lease
        (:class:`~gossamer.frontier.gate.HostGate`): 0.0 when taken, else the seconds until it
        may be (infinity while ``room`` is asked for and its connections are all in use).
        The host's robots.txt Crawl-delay, when known, counts as for its URLs."""
        host = self._host(key)
        slot = host.slot
        if self._lookup is not None and (rules := self._lookup(key)) is not None:
            self._policy.set_crawl_delay(slot, rules.crawl_delay, key)
        if room and slot.active >= self._policy.per_host:
            return math.inf
        now = self._clock()
        if slot.next_start > now:
            return slot.next_start - now
        self._policy.on_lease(slot, now)
        return 0.0

    def unclaim(self, key: str, feedback: Feedback | None) -> None:
        """A request of :meth:`claim` ended; its host's slot learns from ``feedback``."""
        host = self._hosts.get(key)
        if host is not None:
            self._policy.on_finish(host.slot, feedback, self._clock(), key)
            self._schedule(key, host)

    def note(self, key: str, started_at: float) -> None:
        """A leased request to host ``key`` started at ``started_at``: its next start is
        spaced from that (a rendered page's subrequests go out while its lease is held)."""
        host = self._hosts.get(key)
        if host is not None:
            slot = host.slot
            slot.next_start = max(slot.next_start, started_at + self._policy.delay_of(slot))

    def hold(self, key: str, waiting: bool) -> None:
        """A request outside the leases starts (``waiting``) or stops waiting for host
        ``key``'s slot: while any waits, the host's URLs are not leased."""
        if waiting:
            self._host(key).claims += 1
            return
        host = self._hosts.get(key)  # None: dropped meanwhile (its partition moved away)
        if host is not None and host.claims:
            host.claims -= 1
            if not host.claims:
                self._schedule(key, host)

    # -- state -----------------------------------------------------------------------------

    def next_ready(self) -> float | None:
        """Seconds until some host or delayed entry is due; None when nothing waits."""
        now = self._clock()
        held = False
        if self._ranked:
            self._drain(now)
            top = self._top_due()
            if top is not None and top >= self._floor():
                return 0.0
            held = top is not None
        ready = self._ready
        while ready and self._stale(*ready[0]):
            heapq.heappop(ready)
        times = []
        if ready:
            times.append(ready[0][0])
        if self._delayed:
            times.append(self._delayed[0][0])
        if self._line and self._has_room():
            times.append(now)
        if not times:
            return _HELD_POLL if held else None
        return max(0.0, min(times) - now)

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """Up to ``most`` hosts of the ready heap (the working set's hosts with URLs queued
        and a free slot) that politeness holds back now, the longest wait first. One pass
        over the heap: for a status snapshot every few seconds, not for the hot path."""
        now = self._clock()
        found: dict[str, HeldBack] = {}
        for when, key in self._ready:
            if key in found or self._stale(when, key):
                continue
            host = self._hosts[key]
            ready = self._ready_at(host)
            if ready <= now or math.isinf(ready):
                continue
            reason = "limiter" if host.not_before > now else self._policy.why_waiting(host.slot)
            queued = len(host.queue or ()) + host.stored
            found[key] = HeldBack(key, reason, round(ready - now, 3), queued, host.slot.active)
        return sorted(found.values(), key=lambda h: (-h.wait, -h.queued))[:most]

    @property
    def ranked(self) -> bool:
        """Best first across hosts is on (an entry with a priority other than 0 came)."""
        return self._ranked

    @property
    def leased(self) -> int:
        """Leases out."""
        return len(self._leases)

    @property
    def delayed(self) -> int:
        """Entries waiting for a time (retries)."""
        return len(self._delayed)

    @property
    def hosts(self) -> int:
        """Hosts known."""
        return len(self._hosts)

    # -- internals -------------------------------------------------------------------------

    def _host(self, key: str) -> Host[E]:
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = Host()
        return host

    def _has_room(self) -> bool:
        return self._max_active is None or self.active < self._max_active

    def _stale(self, when: float, key: str) -> bool:
        """A heap item superseded by a later one, or of a host dropped since."""
        host = self._hosts.get(key)
        return host is None or host.heap_time != when

    def _ready_at(self, host: Host[E]) -> float:
        if host.claims:
            return math.inf
        when = self._policy.ready_at(host.slot)
        return when if when >= host.not_before else host.not_before

    def _pop(self, now: float) -> tuple[str, Host[E]] | None:
        """The next host of the working set that is due now, else the next host in line if
        the set has room; None when neither."""
        if self._ranked:
            return self._pop_best(now)
        for _, key, host in self._come_due(now):
            return key, host
        return self._join(now)

    def _come_due(self, now: float) -> Iterator[tuple[float, str, Host[E]]]:
        """Hosts off the ready heap whose time has come and that may be leased now, with
        their heap time, one at a time (stale items dropped, hosts not yet due put back)."""
        ready, hosts = self._ready, self._hosts
        while ready and ready[0][0] <= now:
            when, key = heapq.heappop(ready)
            host = hosts.get(key)
            if host is None or host.heap_time != when:
                continue
            host.heap_time = None
            if host.robots_out:
                continue
            if self._ready_at(host) > now:
                self._schedule(key, host)
                continue
            yield when, key, host

    def _join(self, now: float) -> tuple[str, Host[E]] | None:
        """The next host in line that joins the working set and is due now, if any."""
        line, hosts = self._line, self._hosts
        while line and self._has_room():
            key = line.popleft()
            host = hosts.get(key)
            if host is None:
                continue
            host.pending = False
            if not host.waiting or host.active:
                continue
            host.active = True
            self.active += 1
            if self._ready_at(host) > now:
                self._schedule(key, host)
                continue
            return key, host
        return None

    def _next_due(
        self, now: float, out: list[Lease], dry: list[str]
    ) -> tuple[str, Host[E], Rules] | None:
        """The next due host with the rules its URLs go out by (see :meth:`_look`)."""
        while (due := self._pop(now)) is not None:
            key, host = due
            rules = self._look(key, host, now, out, dry)
            if rules is not None:
                return key, host, rules
        return None

    def _look(
        self, key: str, host: Host[E], now: float, out: list[Lease], dry: list[str]
    ) -> Rules | None:
        """The rules a due host's URLs go out by, or ``_ROBOTS`` when its robots.txt must be
        fetched first; None when nothing of it can go now (its queue in memory is empty, or
        its URLs went out as ``unreachable`` leases)."""
        if host.queue is None:
            if host.stored:
                dry.append(key)  # rescheduled by refill()
            else:
                self._schedule(key, host)
            return None
        if self._lookup is None:
            return _ANYTHING
        reported, host.reported = host.reported, None
        rules = self._lookup(key) or reported
        if rules is None:
            return _ROBOTS
        self._policy.set_crawl_delay(host.slot, rules.crawl_delay, key)
        if rules.status == "unreachable":
            while host.queue:
                out.append(self._new_lease(key, host, self._pop_entry(host), now, "unreachable"))
            self._schedule(key, host)
            return None
        return rules

    def _take_one(
        self, key: str, host: Host[E], rules: Rules, now: float, out: list[Lease]
    ) -> Lease | None:
        """Lease the host's next URL the rules allow (those they forbid go to ``out``)."""
        while host.queue:
            entry = self._pop_entry(host)
            if not rules.allowed(entry.url):
                out.append(self._new_lease(key, host, entry, now, "blocked"))
                continue
            self._policy.on_lease(host.slot, now)
            return self._new_lease(key, host, entry, now, "page")
        return None

    def _take_blocked(
        self, key: str, host: Host[E], rules: Rules, now: float, out: list[Lease]
    ) -> None:
        """URLs the rules forbid at the front of the host's queue go to ``out``."""
        while host.queue and not rules.allowed(host.queue.peek().url):
            out.append(self._new_lease(key, host, self._pop_entry(host), now, "blocked"))

    def _pop_entry(self, host: Host[E]) -> E:
        queue = host.queue
        assert queue is not None
        entry = queue.pop()
        if not queue:
            host.queue = None
        self.queued -= 1
        return entry

    def _robots_lease(self, key: str, host: Host[E], now: float) -> Lease:
        host.robots_out = True
        self._policy.on_lease(host.slot, now)
        return self._new_lease(key, host, None, now, "robots")

    def _new_lease(
        self, key: str, host: Host[E], entry: E | None, now: float, kind: LeaseKind
    ) -> Lease:
        """A lease of ``entry`` (None: of the host's robots.txt), held until it ends."""
        what = entry if entry is not None else Queued(key + "/robots.txt", 0, 0, 0)
        lease = Lease(
            url=what.url,
            fp=what.fp,
            host=key,
            depth=what.depth,
            hops=what.hops,
            attempts=what.attempts,
            deadline=now + self._lease_timeout,
            token=next(self._tokens),
            kind=kind,
        )
        self._leases[lease.token] = (lease, entry, host)
        host.leased += 1
        return lease

    def _schedule(self, key: str, host: Host[E], *, front: bool = False) -> None:
        """Make sure a host of the working set with queued URLs and a free slot is in the
        ready heap, and a host out of it in line (at the ``front`` for a URL coming back from
        a lease); a host with nothing left leaves the set."""
        if not host.waiting:
            if host.active and not host.leased:
                host.active = False
                self.active -= 1
            return
        if not host.active:
            if self._max_active is None:
                host.active = True
                self.active += 1
            else:
                if not host.pending:
                    host.pending = True
                    if front:
                        self._line.appendleft(key)
                    else:
                        self._line.append(key)
                return
        if self._ranked:
            self._note(key, host)
            if host.due_rank is not None:
                return
        if host.robots_out:
            return
        when = self._ready_at(host)
        if when == math.inf:
            return
        if host.heap_time is not None and host.heap_time <= when:
            return
        host.heap_time = when
        heapq.heappush(self._ready, (when, key))

    def _promote(self, now: float) -> None:
        """Delayed entries whose time has come go to the front of their host."""
        delayed = self._delayed
        while delayed and delayed[0][0] <= now:
            _, _, key, entry = heapq.heappop(delayed)
            self.push_front(key, entry)

    # -- best first ------------------------------------------------------------------------

    def _rank_all(self) -> None:
        """Turn best first across hosts on (an entry with a priority other than 0 came)."""
        self._ranked = True
        for key, host in self._hosts.items():
            if host.active and host.queue is not None:
                self._note(key, host)

    @staticmethod
    def _rank(host: Host[E]) -> float:
        """The priority of a host's next URL; infinity for a host whose URLs are all in
        storage (it is looked at first: reading them back uses no slot)."""
        return host.queue.peek().priority if host.queue is not None else math.inf

    def _note(self, key: str, host: Host[E]) -> None:
        """A host of the working set may have a new next URL: keep its ranks up to date."""
        if host.queue is None:
            return
        rank = host.queue.peek().priority
        if rank != host.best_rank:
            host.best_rank = rank
            best = self._best
            if len(best) > 2 * len(self._hosts) + 64:  # stale items of hosts gone or changed
                best[:] = [(-self._rank(h), k) for k, h in self._hosts.items() if self._live(h)]
                heapq.heapify(best)
            heapq.heappush(best, (-rank, key))
        if host.due_rank is not None and rank > host.due_rank:
            host.due_rank = rank
            heapq.heappush(self._due, (-rank, self._clock(), key))

    @staticmethod
    def _live(host: Host[E]) -> bool:
        """Its item in the best heap is current."""
        queue = host.queue
        return (
            host.active
            and queue is not None
            and host.best_rank is not None
            and queue.peek().priority == host.best_rank
        )

    def _floor(self) -> float:
        """The lowest rank a due host may have to be leased now: the best queued URL's
        priority (its host due or not) less the slack; -infinity when nothing is queued."""
        best, hosts = self._best, self._hosts
        while best:
            rank, key = best[0]
            host = hosts.get(key)
            if host is not None and host.best_rank == -rank and self._live(host):
                return -rank - self._slack
            heapq.heappop(best)
        return -math.inf

    def _drain(self, now: float) -> None:
        """Hosts of the ready heap whose time has come move to the due heap, by rank."""
        due = self._due
        for when, key, host in self._come_due(now):
            host.due_rank = rank = self._rank(host)
            heapq.heappush(due, (-rank, when, key))

    def _top_due(self) -> float | None:
        """The rank of the best due host (stale items dropped or re-ranked), None if none."""
        due, hosts = self._due, self._hosts
        while due:
            rank, when, key = due[0]
            host = hosts.get(key)
            if host is None or host.due_rank != -rank:
                heapq.heappop(due)
                continue
            now_rank = self._rank(host)
            if now_rank != -rank:
                host.due_rank = now_rank
                heapq.heapreplace(due, (-now_rank, when, key))
                continue
            return -rank
        return None

    def _pop_best(self, now: float) -> tuple[str, Host[E]] | None:
        """:meth:`_pop` best first: the due host whose next URL is best, unless it is worse
        than the best queued URL by more than the slack (then nothing). Hosts in line join the
        working set while it has room, whether or not one is due."""
        line, hosts = self._line, self._hosts
        while line and self._has_room():  # ranks are known only inside the working set
            key = line.popleft()
            host = hosts.get(key)
            if host is None:
                continue
            host.pending = False
            if host.waiting and not host.active:
                host.active = True
                self.active += 1
                self._schedule(key, host)
        self._drain(now)
        floor: float | None = None
        while (rank := self._top_due()) is not None:
            if floor is None:
                floor = self._floor()
            if rank < floor:
                return None
            _, _, key = heapq.heappop(self._due)
            host = self._hosts[key]
            host.due_rank = None
            if self._ready_at(host) > now:
                self._schedule(key, host)
                continue
            return key, host
        return self._join(now)


def waiting(held: Iterable[HeldBack]) -> tuple[int, int]:
    """Hosts held back: (at their polite pace, backing off: slowed down by errors or latency,
    or paused by a Retry-After or a limiter)."""
    polite = backing_off = 0
    for host in held:
        if host.reason in ("delay", "crawl-delay", "limit"):
            polite += 1
        else:
            backing_off += 1
    return polite, backing_off


class SchedulerViews(Generic[E]):
    """What a frontier tells straight from its `HostScheduler` (both backends keep theirs in
    ``_hosts``)."""

    _hosts: HostScheduler[E]

    @property
    def in_memory(self) -> int:
        """Queued URLs held in memory, waiting to be leased."""
        return self._hosts.queued

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """The hosts politeness holds back now (see :meth:`HostScheduler.held_back`)."""
        return self._hosts.held_back(most)

    @property
    def slots(self) -> HostScheduler[E]:
        """The scheduler whose host slots the crawl's host gate takes
        (:meth:`gossamer.frontier.gate.HostGate.bind`)."""
        return self._hosts

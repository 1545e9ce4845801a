"""The host queues of :class:`~gossamer.frontier.hosts.HostScheduler`: which URLs each host
has waiting, in memory and in storage, and the entries waiting for a time (retries).

Each host (``scheme://host[:port]``) has a queue of URLs, the highest ``priority`` first and
in arrival order among equals (all 0 by default, which is breadth first inside the host, as
URLs arrive in depth order); a URL coming back from a lease (released, reclaimed, due after a
retry's delay) goes to the front of its priority.

Among equals the host's *sections* take turns (:func:`section_of`: a path's first segment,
case and digits folded): a URL's rank is how many URLs of its section the queue took before
it, and the lowest rank goes first. A section that makes URLs without end (a trap no guard
names: pages named by words that link five more of themselves) then gets its share of the
host's fetches, never all of them, and the pages of the other sections (a chain of real pages
sixty links deep) keep going out beside it. The rank counts arrivals while the host has URLs
queued in memory (a queue that runs dry starts again), and at most ``_SECTIONS`` sections a
queue, those beyond sharing one. A host also counts its URLs held in storage
only (``stored``: the embedded frontier's spill).

:class:`HostQueues` owns the table of hosts and the counts over it; it decides nothing about
when a host goes out (the scheduler does, and is told of every change by the return values).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

from gossamer.frontier.base import Rules
from gossamer.frontier.politeness import HostSlot

__all__ = ["MAX_LEFT", "Host", "HostQueue", "HostQueues", "Queued", "section_of"]

MAX_LEFT = 10_000
"""Slots of hosts forgotten kept at most (:attr:`HostQueues.left`), the oldest dropped."""


class Queued(msgspec.Struct):
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
_SECTIONS = 64
"""Sections ranked apart per queue; those beyond share one (a host naming its first path
segments at random cannot make each of its URLs the first of its own section)."""
_RANK = 1 << 40
"""A rank's weight in the order key (``rank * _RANK + arrival``; arrivals stay below it)."""


def section_of(url: str) -> str:
    """The section of a URL in its host's queue: its path's first segment (lower case, path
    parameters dropped, ``#`` when it has a digit), ``/`` for a page at the root."""
    path = url.partition("://")[2].partition("/")[2]
    first, slash, _ = path.partition("?")[0].partition("/")
    if not slash:
        return "/"
    first = first.partition(";")[0].lower()
    if first.isalpha():  # most sections (no letter is a digit): one scan in C
        return first
    return "#" if any(map(str.isdigit, first)) else first


class HostQueue(Generic[E]):
    """One host's queued entries: the highest priority first, then the lowest rank in its
    section (module docstring), arrival order among equals.

    While every entry has the default priority 0 and one section (the common case) a list,
    or a deque once it holds more than `_SHORT` (a deque costs 600 bytes however short, and
    most hosts hold a few URLs); a heap of ``(-priority, order, entry)`` once one has another
    priority or section, ``order`` being ``rank * _RANK + arrival`` (negative at the front).
    """

    __slots__ = ("_fifo", "_heap", "_ranks", "_section")

    def __init__(self) -> None:
        self._fifo: list[E] | deque[E] | None = []
        self._heap: list[tuple[float, int, E]] | None = None
        self._section: str | None = None
        """The one section queued while a list or deque."""
        self._ranks: dict[str, int] | None = None
        """URLs queued so far per section, once a heap."""

    def __len__(self) -> int:
        return len(self._fifo) if self._fifo is not None else len(self._items())

    def push(self, entry: E, front: bool = False) -> None:
        """Queue ``entry`` after those of its priority and rank (before them with ``front``)."""
        fifo = self._fifo
        if fifo is not None:
            section = None if front else section_of(entry.url)
            if entry.priority or (section not in (None, self._section) and fifo):
                self._to_heap()
            else:
                if section is not None:
                    self._section = section
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
        key = -order if front else self._rank(section_of(entry.url)) * _RANK + order
        heapq.heappush(self._items(), (-entry.priority, key, entry))

    def _rank(self, section: str) -> int:
        ranks = self._ranks
        assert ranks is not None
        rank = ranks.get(section)
        if rank is None:
            if len(ranks) >= _SECTIONS:
                section = "*"
                rank = ranks.get(section, 0)
            else:
                rank = 0
        ranks[section] = rank + 1
        return rank

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
        gone = [entry for _, _, entry in sorted(heap, key=_key) if drop(entry)]
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
        """The list or deque as a heap, its entries ranked 0, 1, 2... in their section."""
        assert self._fifo is not None
        self._heap = [
            (-entry.priority, rank * _RANK + next(_order), entry)
            for rank, entry in enumerate(self._fifo)
        ]
        heapq.heapify(self._heap)
        self._ranks = {self._section: len(self._fifo)} if self._section is not None else {}
        self._fifo = None


def _key(item: tuple[float, int, object]) -> tuple[float, int]:
    return item[0], item[1]


class Host(msgspec.Struct, Generic[E], eq=False):
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
    """In the line of hosts waiting to join the working set (or waiting on its domain,
    whose hosts hold their share of the set)."""
    not_before: float = -math.inf
    """Not due before this time whatever its slot says (a limiter's refusal)."""
    robots_out: bool = False
    """Its ``robots`` lease is out: nothing of it is scheduled until that ends."""
    reported: Rules | None = None
    """Rules its last ``robots`` lease brought, until the next look at the host."""
    due_rank: float | None = None
    """Best first (:mod:`gossamer.frontier.bestfirst`): the rank of its live entry among the
    due hosts, None when it has none."""
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
    def slot_made(self) -> HostSlot | None:
        """Its politeness slot if it has one, without making one."""
        return self._slot

    @property
    def waiting(self) -> bool:
        """Something of it is queued, in memory or in storage."""
        return bool(self.queue) or self.stored > 0


class HostQueues(Generic[E]):
    """Every host's queue, its stored count, and the entries waiting for a time."""

    __slots__ = ("_seq", "delayed", "hosts", "left", "queued", "stored")

    def __init__(self) -> None:
        self.hosts: dict[str, Host[E]] = {}
        """Every host known, by key."""
        self.left: OrderedDict[str, HostSlot] = OrderedDict()
        """The slots of hosts forgotten (their partition given away) while their spacing
        still held or a request to them was in flight: a host made again (this worker's
        request through the host gate, its partition back) takes its slot back, so its next
        request is still spaced from this worker's last one."""
        self.delayed: list[tuple[float, int, str, E]] = []
        """Entries waiting for a time: a heap of (until, order, host key, entry)."""
        self._seq = itertools.count()
        self.queued = 0
        """URLs queued in memory."""
        self.stored = 0
        """URLs queued in storage only."""

    def host(self, key: str) -> Host[E]:
        """Host ``key``, made when first named."""
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = self._made(key)
        return host

    def _made(self, key: str) -> Host[E]:
        """A new host ``key``, with the slot it left with if it was forgotten."""
        host: Host[E] = Host()
        if self.left:
            host._slot = self.left.pop(key, None)
        return host

    def push(self, key: str, entry: E, front: bool) -> Host[E]:
        """Queue ``entry`` in host ``key`` (at the ``front`` of its priority); its host."""
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = self._made(key)
        queue = host.queue
        if queue is None:
            queue = host.queue = HostQueue()
        queue.push(entry, front)
        self.queued += 1
        return host

    def pop(self, host: Host[E]) -> E:
        """Take the next entry of ``host`` (its queue must not be empty)."""
        queue = host.queue
        assert queue is not None
        entry = queue.pop()
        if not queue:
            host.queue = None
        self.queued -= 1
        return entry

    def delay(self, key: str, entry: E, until: float) -> None:
        """Hold ``entry`` of host ``key`` until the clock reaches ``until``."""
        heapq.heappush(self.delayed, (until, next(self._seq), key, entry))

    def store(self, key: str) -> Host[E]:
        """Count one more URL of host ``key`` queued in storage only; its host."""
        host = self.host(key)
        host.stored += 1
        self.stored += 1
        return host

    def refill(self, key: str, entries: list[E]) -> Host[E]:
        """Entries of host ``key`` read back from storage, in order; its host."""
        host = self.host(key)
        for entry in entries:
            if host.queue is None:
                host.queue = HostQueue()
            host.queue.push(entry)
        read = min(len(entries), host.stored)
        host.stored -= read
        self.stored -= read
        self.queued += len(entries)
        return host

    def rerank(self, priorities: dict[str, dict[int, float]]) -> tuple[list[E], list[str]]:
        """New priorities of queued and delayed entries, by host key then fingerprint; returns
        the entries whose priority changed and the keys of the hosts whose queue they are in."""
        changed: list[E] = []
        touched: list[str] = []
        for key, new in priorities.items():
            host = self.hosts.get(key)
            if host is not None and host.queue is not None and (got := host.queue.rerank(new)):
                changed += got
                touched.append(key)
        for _, _, key, entry in self.delayed:
            priority = priorities.get(key, {}).get(entry.fp, entry.priority)
            if priority != entry.priority:
                entry.priority = priority
                changed.append(entry)
        return changed, touched

    def remove(self, drop: Callable[[E], bool]) -> tuple[list[E], list[str]]:
        """Take the queued and delayed entries ``drop`` selects out; returns them and the
        keys of the hosts whose queue they left."""
        gone: list[E] = []
        touched: list[str] = []
        for key, host in self.hosts.items():
            if host.queue:
                out = host.queue.remove(drop)
                if out:
                    gone += out
                    self.queued -= len(out)
                    if not host.queue:
                        host.queue = None
                    touched.append(key)
        kept = [item for item in self.delayed if not drop(item[3])]
        if len(kept) < len(self.delayed):
            gone += [item[3] for item in self.delayed if drop(item[3])]
            heapq.heapify(kept)
            self.delayed = kept
        return gone, touched

    def forget(self, key: str, now: float) -> Host[E] | None:
        """Drop host ``key`` and its counts; the host, None if not known. Its slot stays in
        :attr:`left` while a request is in flight or its next start is after ``now``."""
        host = self.hosts.pop(key, None)
        if host is not None:
            self.queued -= len(host.queue or ())
            self.stored -= host.stored
            slot = host._slot
            if slot is not None and (slot.active or slot.next_start > now):
                self.left[key] = slot
                self.left.move_to_end(key)
                if len(self.left) > MAX_LEFT:
                    self.left.popitem(last=False)
        return host

"""The host scheduler both frontier backends share: which URL goes out next, and when.

Synchronous, no I/O, time read from an injected clock. The backends keep their storage around
it (the embedded frontier its crawl.db staging, spill and refill; the Redis frontier its
claims, acks, renewals, partitions and shared host limiter), hand it the entries they hold in
memory and take leases from it: in one step (:meth:`HostScheduler.lease`) or in two, a shared
limiter between (:mod:`gossamer.frontier.rounds`). It coordinates parts that each own one
concern (the package docstring names them), decides nothing they decide, and hands a due host
whose URLs are all in storage back as ``dry`` (:meth:`HostScheduler.refill`). Requests outside
the leases take the same slots through :attr:`HostScheduler.claims` (``frontier.slotclaims``).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from typing import Generic

from gossamer.frontier.base import Feedback, HeldBack, Lease, LeaseKind, Rules
from gossamer.frontier.bestfirst import DEFAULT_SLACK, BestFirst
from gossamer.frontier.budgets import HostBudget
from gossamer.frontier.hostqueue import E, Host, HostQueue, HostQueues, Queued
from gossamer.frontier.idle import idle_hosts
from gossamer.frontier.leases import LeaseTable
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.frontier.ready import ReadyHeap
from gossamer.frontier.robotstage import ROBOTS_FIRST, RobotsStage, RulesLookup
from gossamer.frontier.rounds import Batch, Round, Want
from gossamer.frontier.slotclaims import SlotClaims
from gossamer.frontier.taker import PageTaker
from gossamer.frontier.workingset import WorkingSet

__all__ = ["DEFAULT_SLACK", "Host", "HostQueue", "HostScheduler", "Queued", "RulesLookup"]

_SLOTTED: frozenset[LeaseKind] = frozenset({"page", "robots"})
_HELD_POLL = 1.0
"""Seconds :meth:`HostScheduler.next_ready` answers while the slack holds due hosts back."""


class HostScheduler(Generic[E]):
    """Which URL of a frontier goes out next, and when; see the module docstring."""

    def __init__(
        self,
        policy: PolitenessPolicy,
        budget: HostBudget | None = None,
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
        self._clock = clock
        self._queues: HostQueues[E] = HostQueues()
        self._hosts = self._queues.hosts
        self._leases: LeaseTable[E] = LeaseTable(lease_timeout)
        robots = self._robots = RobotsStage(rules, policy, self._queues, self._leases)
        self._taker = PageTaker(policy, budget, self._queues, self._leases)
        self._best: BestFirst[E] | None = None
        """Made once an entry with a priority other than 0 comes; None: breadth first."""
        ready = self._ready = ReadyHeap(self._hosts, policy, self._schedule)  # and domains
        self._set: WorkingSet[E] = WorkingSet(max_active, self._hosts, ready.domains)
        self.claims = SlotClaims(self._queues, robots, policy, self._schedule, clock, ready.domains)
        """The host slots requests outside the leases take (the host gate's keeper)."""

    # -- URLs in ---------------------------------------------------------------------------

    def push(self, key: str, entry: E, *, front: bool = False) -> None:
        """Queue ``entry`` in memory at the back of its priority in host ``key`` (at the
        ``front``, its host at the front of the line, for one back from a lease)."""
        host = self._queues.push(key, entry, front)
        if entry.priority and self._best is None:
            self._best = BestFirst(self._hosts, self._slack, self._clock)
        self._schedule(key, host, front)

    def delay(self, key: str, entry: E, until: float) -> None:
        """Queue ``entry`` at the front of host ``key`` once the clock reaches ``until``."""
        self._queues.delay(key, entry, until)

    def store(self, key: str) -> None:
        """Count one more URL of host ``key`` queued in storage only."""
        host = self._queues.store(key)
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
        host = self._queues.refill(key, entries)
        if self._best is None and any(entry.priority for entry in entries):
            self._best = BestFirst(self._hosts, self._slack, self._clock)
        self._schedule(key, host)

    def rerank(self, priorities: dict[str, dict[int, float]]) -> list[E]:
        """New priorities of queued and delayed entries, by host key then fingerprint (leased
        ones are not touched); returns the entries whose priority changed."""
        changed, touched = self._queues.rerank(priorities)
        if self._best is None and any(entry.priority for entry in changed):
            self._best = BestFirst(self._hosts, self._slack, self._clock)
        for key in touched:
            self._schedule(key, self._hosts[key])
        return changed

    # -- leases out and back ----------------------------------------------------------------

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
            if rules is ROBOTS_FIRST:
                out.append(self._robots.lease(key, host, now))
                slotted += 1
            elif (lease := self._taker.take(key, host, rules, now, out)) is not None:
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
            if rules is ROBOTS_FIRST:
                wants.append(Want(key, host, 1, None))
                total += 1
                continue
            self._taker.skip_blocked(key, host, rules, now, out)
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
            if granted > 0 and not host.robots_out and self._policy.room(host.slot) > 0:
                out.append(self._robots.lease(key, host, now))
                used = 1
        else:
            while used < granted and self._policy.room(host.slot) > 0:  # (its domain's too)
                lease = self._taker.take(key, host, want.rules, now, out)
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

    def finish(self, lease: Lease, feedback: Feedback | None) -> E | None:
        """End a lease: its host's slot learns from ``feedback``. Returns its entry; None for
        a lease already ended (reclaimed) or a ``robots`` lease."""
        held = self._leases.close(lease.token)
        if held is None:
            return None
        _, entry, host = held
        if lease.kind in _SLOTTED:
            self._policy.on_finish(host.slot, feedback, self._clock(), lease.host)
        if lease.kind == "robots":
            host.robots_out = False
        current = self._hosts.get(lease.host)  # a host forgotten, made again, shares its slot
        if current is host or (
            current is not None and lease.kind in _SLOTTED and current.slot is host.slot
        ):
            self._schedule(lease.host, current)
        return entry

    def rules(self, lease: Lease, rules: Rules | None, feedback: Feedback | None) -> bool:
        """End a ``robots`` lease with the rules it brought (None: none, ask again); False
        when it had ended already."""
        reported = self._robots.report(lease, rules)
        if reported:
            self.finish(lease, feedback)
        return reported

    def expired(self) -> list[Lease]:
        """Leases past their deadline, for the backend to release (looked for at most once a
        second, or a tenth of the lease timeout)."""
        return self._leases.expired(self._clock())

    def out(self) -> Iterator[tuple[Lease, E | None]]:
        """The leases out, each with its entry (None for a ``robots`` lease)."""
        return self._leases.out()

    # -- for the backends' storage ---------------------------------------------------------

    def remove(self, drop: Callable[[E], bool]) -> list[E]:
        """Take the queued and delayed entries ``drop`` selects out of the scheduler."""
        gone, touched = self._queues.remove(drop)
        for key in touched:
            self._schedule(key, self._hosts[key])
        return gone

    def forget(self, key: str) -> Host[E] | None:
        """Drop host ``key`` (its queue emptied): its leases still end on the host returned,
        and its slot spaces this worker's next request to it (``HostQueues.left``)."""
        host = self._queues.forget(key, self._clock())
        if host is not None and (heir := self._set.forget(host)) is not None:
            self._schedule(*heir)  # its domain's host waiting longest takes its place
        return host

    def host_keys(self) -> list[str]:
        """Every host key known."""
        return list(self._hosts)

    def slot(self, key: str) -> HostSlot | None:
        """The politeness slot of host ``key``, if known."""
        host = self._hosts.get(key)
        return None if host is None else host.slot

    def idle(self, share: float, most: int, within: float = 0.0) -> list[str]:
        """Up to ``most`` hosts free for a spare request (:func:`~.idle.idle_hosts`)."""
        now = self._clock() + within
        return idle_hosts(self._hosts, self._policy, now, share, most)

    # -- state -----------------------------------------------------------------------------

    def next_ready(self) -> float | None:
        """Seconds until some host or delayed entry is due; None when nothing waits."""
        now = self._clock()
        held = False
        if (best := self._best) is not None:
            best.take_due(self._ready, now)
            if go := best.may_go():
                return 0.0
            held = go is not None
        first = self._ready.first()
        times = [] if first is None else [first]
        if self._queues.delayed:
            times.append(self._queues.delayed[0][0])
        if self._set.can_join:
            times.append(now)
        if not times:
            return _HELD_POLL if held else None  # the best URL's host: its requests are out
        return max(0.0, min(times) - now)

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """Up to ``most`` hosts of the ready heap (the working set's hosts with URLs queued
        and a free slot) that politeness holds back now, the longest wait first. One pass
        over the heap: for a status snapshot every few seconds, not for the hot path."""
        return self._ready.held_back(self._clock(), most)

    @property
    def ranked(self) -> bool:
        """Best first across hosts is on (an entry with a priority other than 0 came)."""
        return self._best is not None

    @property
    def active(self) -> int:
        """Hosts in the working set."""
        return self._set.active

    @property
    def queued(self) -> int:
        """URLs queued in memory."""
        return self._queues.queued

    @property
    def stored(self) -> int:
        """URLs queued in storage only."""
        return self._queues.stored

    @property
    def leased(self) -> int:
        """Leases out."""
        return len(self._leases)

    @property
    def delayed(self) -> int:
        """Entries waiting for a time (retries)."""
        return len(self._queues.delayed)

    @property
    def hosts(self) -> int:
        """Hosts known."""
        return len(self._hosts)

    # -- internals -------------------------------------------------------------------------

    def _pop(self, now: float) -> tuple[str, Host[E]] | None:
        """The next host of the working set due now, else the next in line; None if none."""
        if self._best is not None:
            return self._pop_best(self._best, now)
        if (due := self._ready.pop_due(now)) is not None:
            return due[1], due[2]
        return self._join(now)

    def _join(self, now: float) -> tuple[str, Host[E]] | None:
        """The next host in line that joins the working set and is due now, if any."""
        while (joined := self._set.join()) is not None:
            key, host = joined
            if self._ready.ready_at(key, host) <= now:
                return joined
            self._schedule(key, host)
        return None

    def _pop_best(self, best: BestFirst[E], now: float) -> tuple[str, Host[E]] | None:
        """:meth:`_pop` best first (:mod:`gossamer.frontier.bestfirst`). Hosts in line join
        the working set while it has room, whether or not one is due."""
        while (joined := self._set.join()) is not None:  # ranks are known only
            self._schedule(*joined)  # inside the working set
        best.take_due(self._ready, now)
        floor: float | None = None
        while (rank := best.top()) is not None:
            if floor is None:
                floor = best.floor()
            if rank < floor:
                return None
            key, host = best.pop()
            if self._ready.ready_at(key, host) > now:
                self._schedule(key, host)
                continue
            return key, host
        return self._join(now)

    def _next_due(
        self, now: float, out: list[Lease], dry: list[str]
    ) -> tuple[str, Host[E], Rules] | None:
        """The next due host with URLs in memory and the rules they go out by (see
        :meth:`RobotsStage.look`); a host whose URLs are all in storage goes to ``dry``."""
        robots = self._robots
        while (due := self._pop(now)) is not None:
            key, host = due
            if host.queue is None:
                if host.stored:
                    dry.append(key)  # rescheduled by refill()
                else:
                    self._schedule(key, host)
                continue
            rules = robots.look(key, host, now, out)
            if rules is not None:
                return key, host, rules
            self._schedule(key, host)
        return None

    def _schedule(self, key: str, host: Host[E], front: bool = False) -> None:
        """Put a host with something queued where it waits its turn (the ready heap, the
        best-first order or the working set's line); one with nothing left leaves the set."""
        if not host.waiting:
            if host.active and not host.leased and (heir := self._set.leave(host)) is not None:
                self._schedule(*heir)  # its domain's host waiting longest takes its place
            return
        if not host.active and not self._set.enter(key, host, front):
            return
        if (best := self._best) is not None:
            best.note(key, host)
            if host.due_rank is not None:
                return
        self._ready.offer(key, host)

    def _promote(self, now: float) -> None:
        """Delayed entries whose time has come go to the front of their host."""
        delayed = self._queues.delayed
        while delayed and delayed[0][0] <= now:
            _, _, key, entry = heapq.heappop(delayed)
            self.push(key, entry, front=True)

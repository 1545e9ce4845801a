"""The embedded frontier: in-memory host queues with a write-ahead log in crawl.db.

Hosts wait in a heap keyed by the time their politeness slot is next free; each host keeps its
URLs in a FIFO (breadth first inside the host). Every change of durable state (a URL accepted,
finished or retried) is staged in :class:`~gossamer.crawldb.CrawlDB` and committed by the
engine's checkpoint together with the records it refers to, so ``--resume`` after a crash
continues where the last checkpoint left off.

At most ``memory_budget`` queued URLs are held in memory. Past that, a host's new URLs stay in
crawl.db only (``spilled``), and are read back in order, a batch at a time, when the host's
in-memory queue runs dry; ``--resume`` loads the same way, so a queue of millions of URLs
costs memory only for the seen-set and the hosts.

Only a working set of at most ``max_active`` hosts is scheduled; the others wait in line, in
the order their first URL arrived, and join the set only when the set's hosts cannot fill a
lease (none is due), so the set grows just as far as politeness makes it necessary to keep
the crawl busy. A host leaves the set when it has nothing queued or leased. Without this, a
crawl starting on 200,000 hosts would fetch every host's robots.txt before the first page
(new hosts are due at once, a host whose robots.txt just came is due only after its delay),
and a robots.txt cache smaller than the hosts in play would forget rules before they were
used. A working set smaller than the robots.txt cache keeps every active host's rules known.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import AddResult, Candidate, Feedback, FrontierStats, Lease
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.urls import InvalidURL, OriginCache, Scope, canonicalize, fingerprint, host_key

RobotsCheck = Callable[[str], bool | None]
"""True allowed, False forbidden, None not known yet."""

_INSERT_URL = (
    "INSERT OR IGNORE INTO urls (fp, url, host, depth, hops, attempts, state, seq) "
    "VALUES (?, ?, ?, ?, ?, 0, 0, ?)"
)
_READ_SPILLED = (
    "SELECT fp, url, depth, hops, attempts, seq FROM urls "
    "WHERE host = ? AND state = 0 AND seq > ? ORDER BY seq LIMIT ?"
)
_REFILL_BATCH = 1000
_MIN_REFILL = 16
_FINISH_URL = "UPDATE urls SET state = 1 WHERE fp = ?"
_COUNT_ATTEMPT = "UPDATE urls SET attempts = ? WHERE fp = ?"


@dataclass(slots=True)
class _Entry:
    url: str
    fp: int
    depth: int
    hops: int
    attempts: int = 0


@dataclass(slots=True)
class _Host:
    slot: HostSlot = field(default_factory=HostSlot)
    queue: deque[_Entry] | None = None
    """Queued URLs in memory; None when there are none (an empty deque costs 760 bytes, and
    most of a big crawl's hosts have their URLs in crawl.db only)."""
    heap_time: float | None = None
    """The time of this host's live entry in the ready heap, if any."""
    spilled: int = 0
    """Queued URLs of this host held only in crawl.db."""
    loaded_seq: int = -1
    """Highest seq of this host's URLs ever held in memory; spilled ones come after it."""
    active: bool = False
    """In the working set: its URLs are scheduled (see the module doc)."""
    pending: bool = False
    """In the line of hosts waiting to join the working set."""
    leased: int = 0

    @property
    def waiting(self) -> bool:
        return bool(self.queue) or self.spilled > 0

    def memory_queue(self) -> deque[_Entry]:
        """The in-memory queue, created when first needed."""
        if self.queue is None:
            self.queue = deque()
        return self.queue


class LocalFrontier:
    """Frontier contract (see :mod:`gossamer.frontier.base`) for one process."""

    def __init__(
        self,
        scope: Scope,
        policy: PolitenessPolicy,
        db: CrawlDB | None = None,
        *,
        robots_check: RobotsCheck | None = None,
        lease_timeout: float = 600.0,
        memory_budget: int = 100_000,
        max_active: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._scope = scope
        self._policy = policy
        self._db = db
        self._robots_check = robots_check
        self._lease_timeout = lease_timeout
        self._memory_budget = memory_budget if db is not None else 1 << 62
        self._clock = clock
        self._hosts: dict[str, _Host] = {}
        self._ready: list[tuple[float, str]] = []
        self._delayed: list[tuple[float, int, str, _Entry]] = []
        self._leases: dict[int, tuple[Lease, _Entry]] = {}
        self._seen = SeenSet()
        self._tokens = itertools.count(1)
        self._seq = itertools.count()
        self._queued = 0
        self._in_memory = 0
        self._duplicates = 0
        self._rejected: dict[str, int] = {}
        self._next_reclaim = 0.0
        self._origins = OriginCache(scope)
        self._max_active = max_active
        self._active = 0
        self._line: deque[str] = deque()
        """Hosts with queued URLs waiting to join the working set, oldest first."""

    # -- loading ---------------------------------------------------------------------------

    def restore(self) -> tuple[int, int]:
        """Load the state of a previous run from crawl.db: returns (queued, finished).

        Rows are streamed in seq order; past the memory budget they stay in crawl.db.
        """
        if self._db is None:
            return (0, 0)
        self._seen = SeenSet.from_fingerprints(
            fp for (fp,) in self._db.iterate("SELECT fp FROM urls")
        )
        finished = 0
        last_seq = -1
        for fp, url, key, depth, hops, attempts, state, seq in self._db.iterate(
            "SELECT fp, url, host, depth, hops, attempts, state, seq FROM urls ORDER BY seq"
        ):
            last_seq = seq
            if state == 0:
                self._enqueue(_Entry(url, fp, depth, hops, attempts), key=key, seq=seq)
            else:
                finished += 1
        self._seq = itertools.count(last_seq + 1)
        return (self._queued, finished)

    # -- the contract ----------------------------------------------------------------------

    async def add(self, candidates: list[Candidate]) -> AddResult:
        """Canonicalize, scope, dedup and queue candidates."""
        rejected: dict[str, int] = {}
        accepted: list[tuple[str, str, Candidate]] = []
        for cand in candidates:
            try:
                url = canonicalize(cand.url)
            except InvalidURL:
                rejected["invalid-url"] = rejected.get("invalid-url", 0) + 1
                continue
            key = host_key(url)
            reason = self._origins.reason(key) or self._scope.trap_reason(url, cand.depth)
            if reason is not None:
                rejected[reason] = rejected.get(reason, 0) + 1
                continue
            accepted.append((url, key, cand))
        fps = [fingerprint(url) for url, _, _ in accepted]
        rows = []
        for (url, key, cand), fp, new in zip(accepted, fps, self._seen.add_many(fps), strict=True):
            if new:
                seq = next(self._seq)
                self._enqueue(_Entry(url, fp, cand.depth, cand.hops), key=key, seq=seq)
                rows.append((fp, url, key, cand.depth, cand.hops, seq))
        if self._db is not None:
            self._db.stage(_INSERT_URL, rows)
        added, duplicates = len(rows), len(accepted) - len(rows)
        self._duplicates += duplicates
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) + count
        return AddResult(added, duplicates, rejected)

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` URLs of due hosts, plus robots-blocked URLs met on the way."""
        now = self._clock()
        self._reclaim_expired(now)
        self._promote_delayed(now)
        out: list[Lease] = []
        dry: list[str] = []
        fetches = 0
        ready = self._ready
        line = self._line
        while fetches < n:
            if ready and ready[0][0] <= now:
                when, key = heapq.heappop(ready)
                host = self._hosts[key]
                if host.heap_time != when:
                    continue
                host.heap_time = None
            elif line and self._active < self._max_active:
                key = line.popleft()
                host = self._hosts[key]
                host.pending = False
                if not host.waiting or host.active:
                    continue
                host.active = True
                self._active += 1
            else:
                break
            fetches += self._lease_host(key, host, now, out, dry)
        for key in dry:
            await self._refill(key, self._hosts[key])
        return out

    def _lease_host(
        self, key: str, host: _Host, now: float, out: list[Lease], dry: list[str]
    ) -> int:
        """Lease the next URL of a host out of the heap if it is due: 1 if one went to ``out``
        for fetching, else 0 (robots-blocked ones go to ``out`` too; a host whose URLs are all
        in crawl.db goes to ``dry``)."""
        if self._policy.ready_at(host.slot) > now:
            self._schedule(key, host)
            return 0
        if not host.queue:
            dry.append(key)
            return 0
        lease = self._take(key, host, now, out)
        if lease is not None:
            out.append(lease)
        self._schedule(key, host)
        return 0 if lease is None else 1

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease; its URL is marked finished at the next checkpoint."""
        if self._finish(lease, feedback) is None:
            return
        self._schedule(lease.host, self._hosts[lease.host])
        if self._db is not None:
            self._db.stage(_FINISH_URL, [(lease.fp,)])

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Queue the URL again after ``after`` seconds, counting one more attempt."""
        entry = self._finish(lease, feedback)
        if entry is None:
            return
        self._schedule(lease.host, self._hosts[lease.host])
        entry.attempts += 1
        if self._db is not None:
            self._db.stage(_COUNT_ATTEMPT, [(entry.attempts, entry.fp)])
        heapq.heappush(self._delayed, (self._clock() + after, next(self._seq), lease.host, entry))

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted."""
        entry = self._finish(lease, feedback)
        if entry is not None:
            self._requeue(entry, lease.host)

    def next_ready(self) -> float | None:
        """Seconds until the earliest host or delayed retry is due; None when nothing waits."""
        times = []
        while self._ready and self._hosts[self._ready[0][1]].heap_time != self._ready[0][0]:
            heapq.heappop(self._ready)
        if self._ready:
            times.append(self._ready[0][0])
        if self._delayed:
            times.append(self._delayed[0][0])
        if self._line and self._active < self._max_active:
            times.append(self._clock())
        if not times:
            return None
        return max(0.0, min(times) - self._clock())

    def done(self) -> bool:
        """Nothing queued, leased or waiting for a retry."""
        return self._queued == 0 and not self._leases and not self._delayed

    def stats(self) -> FrontierStats:
        """A frozen snapshot."""
        return FrontierStats(
            queued=self._queued,
            leased=len(self._leases),
            delayed=len(self._delayed),
            hosts=len(self._hosts),
            active_hosts=self._active,
            seen=len(self._seen),
            duplicates=self._duplicates,
            rejected=dict(self._rejected),
        )

    # -- internals -------------------------------------------------------------------------

    def _take(self, key: str, host: _Host, now: float, out: list[Lease]) -> Lease | None:
        """Pop the host's next fetchable URL; robots-blocked ones go straight to ``out``."""
        check = self._robots_check
        queue = host.queue
        while queue:
            entry = queue.popleft()
            if not queue:
                host.queue = None
            self._queued -= 1
            self._in_memory -= 1
            blocked = check is not None and check(entry.url) is False
            lease = Lease(
                url=entry.url,
                fp=entry.fp,
                host=key,
                depth=entry.depth,
                hops=entry.hops,
                attempts=entry.attempts,
                deadline=now + self._lease_timeout,
                token=next(self._tokens),
                robots_blocked=blocked,
            )
            self._leases[lease.token] = (lease, entry)
            host.leased += 1
            if blocked:
                out.append(lease)
                continue
            self._policy.on_lease(host.slot, now)
            return lease
        return None

    def _finish(self, lease: Lease, feedback: Feedback | None) -> _Entry | None:
        held = self._leases.pop(lease.token, None)
        if held is None:
            return None
        host = self._hosts[lease.host]
        host.leased -= 1
        if not lease.robots_blocked:
            self._policy.on_finish(host.slot, feedback, self._clock(), lease.host)
        return held[1]

    def _host(self, key: str) -> _Host:
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host()
        return host

    def _enqueue(self, entry: _Entry, *, key: str, seq: int) -> None:
        """Queue a URL at the back of its host, in memory while the budget allows."""
        host = self._host(key)
        self._queued += 1
        if host.spilled or self._in_memory >= self._memory_budget:
            host.spilled += 1
        else:
            host.memory_queue().append(entry)
            host.loaded_seq = seq
            self._in_memory += 1
        self._schedule(key, host)

    def _requeue(self, entry: _Entry, key: str) -> None:
        """Put a leased URL back at the front of its host (it is in memory already)."""
        host = self._host(key)
        host.memory_queue().appendleft(entry)
        self._queued += 1
        self._in_memory += 1
        self._schedule(key, host, front=True)

    async def _refill(self, key: str, host: _Host) -> None:
        """Read a batch of a host's spilled URLs back from crawl.db."""
        # The budget is soft by a few URLs, so a dry host never waits for others to drain.
        room = max(self._memory_budget - self._in_memory, _MIN_REFILL)
        if host.spilled and self._db is not None:
            rows = await self._db.read(
                _READ_SPILLED, (key, host.loaded_seq, min(room, _REFILL_BATCH, host.spilled))
            )
            if rows:
                queue = host.memory_queue()
                queue.extend(
                    _Entry(url, fp, depth, hops, attempts)
                    for fp, url, depth, hops, attempts, _ in rows
                )
                host.loaded_seq = rows[-1][-1]
            host.spilled -= len(rows)
            self._in_memory += len(rows)
        self._schedule(key, host)

    def _schedule(self, key: str, host: _Host, *, front: bool = False) -> None:
        """Make sure a host of the working set with queued URLs and a free slot is in the
        ready heap, and a host out of it in line (at the ``front`` for a URL coming back from
        a lease); a host with nothing left leaves the set."""
        if not host.waiting:
            if host.active and not host.leased:
                host.active = False
                self._active -= 1
            return
        if not host.active:
            if not host.pending:
                host.pending = True
                if front:
                    self._line.appendleft(key)
                else:
                    self._line.append(key)
            return
        when = self._policy.ready_at(host.slot)
        if when == float("inf"):
            return
        if host.heap_time is not None and host.heap_time <= when:
            return
        host.heap_time = when
        heapq.heappush(self._ready, (when, key))

    def _promote_delayed(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key, entry = heapq.heappop(self._delayed)
            self._requeue(entry, key)

    def _reclaim_expired(self, now: float) -> None:
        if now < self._next_reclaim or not self._leases:
            return
        self._next_reclaim = now + min(1.0, self._lease_timeout / 10)
        expired = [lease for lease, _ in self._leases.values() if lease.deadline <= now]
        for lease in expired:
            entry = self._finish(lease, None)
            if entry is not None:
                self._requeue(entry, lease.host)

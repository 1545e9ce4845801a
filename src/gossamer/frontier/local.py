"""The embedded frontier: the shared host scheduler with a write-ahead log in crawl.db.

Scheduling (the ready heap of hosts, per-host queues, politeness, leases, the robots.txt stage
and the working set of at most ``max_active`` hosts) is :mod:`gossamer.frontier.hosts`; this
module keeps the storage around it. Every change of durable state (a URL accepted, finished or
retried) is staged in :class:`~gossamer.crawldb.CrawlDB` and committed by the engine's
checkpoint together with the records it refers to, so ``--resume`` after a crash continues
where the last checkpoint left off.

At most ``memory_budget`` queued URLs are held in memory. Past that, a host's new URLs stay in
crawl.db only (``stored`` in the scheduler), and are read back in order, a batch at a time,
when the host is due and its in-memory queue has run dry; ``--resume`` loads the same way, so
a queue of millions of URLs costs memory only for the seen-set and the hosts. A host's
priorities order the URLs it holds in memory; spilled ones are read back in arrival order.
A working set smaller than the robots.txt cache keeps every active host's rules known.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from gossamer.crawldb import CrawlDB
from gossamer.frontier.admission import Admission, Guards
from gossamer.frontier.base import (
    AddResult,
    Candidate,
    Feedback,
    FrontierStats,
    HeldBack,
    Lease,
    Outlinks,
    Rules,
)
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.hosts import (
    DEFAULT_SLACK,
    HostScheduler,
    Queued,
    RulesLookup,
)
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.revisits import SPARE_HOSTS
from gossamer.frontier.slotclaims import SlotClaims
from gossamer.urls import Scope, credentials_of

if TYPE_CHECKING:
    from gossamer.frontier.revisits import Revisits

_INSERT_URL = (
    "INSERT OR IGNORE INTO urls (fp, url, host, depth, hops, attempts, state, seq, priority) "
    "VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)"
)
_READ_SPILLED = (  # the fields of Queued, then seq
    "SELECT url, fp, depth, hops, attempts, priority, seq FROM urls "
    "WHERE host = ? AND state = 0 AND seq > ? ORDER BY seq LIMIT ?"
)
_REFILL_BATCH = 1000
_MIN_REFILL = 16
_RECENT_URLS = 16_384
"""URLs remembered as seen, as candidates spelled them (see `LocalFrontier.add`)."""
_FINISH_URL = "UPDATE urls SET state = 1 WHERE fp = ?"
_KEEP_PACE = "INSERT OR REPLACE INTO paces (host, not_before) VALUES (?, ?)"
_PACES = "SELECT host, not_before FROM paces WHERE not_before > ?"
_MOST_PACE = 3600.0
"""The longest wait a stored pace asks of a resumed crawl (a clock set back, or a
``Retry-After`` pause, is never waited out for longer)."""
_FINISHED_BY_HOST = "SELECT host, COUNT(*) FROM urls WHERE state = 1 GROUP BY host"
_COUNT_ATTEMPT = "UPDATE urls SET attempts = ? WHERE fp = ?"
_SET_PRIORITY = "UPDATE urls SET priority = ? WHERE fp = ? AND state = 0"
_STORED_PRIORITY = "SELECT fp, priority FROM urls WHERE state = 0 AND fp IN ({})"
_DB_VARIABLES = 500
_SPARE_LOOK = 0.1
"""Seconds between looks for idle hosts at least (work-conserving revisits)."""
_SPARE_HOSTS_A_LOOK = 10_000
"""Hosts a look for idle hosts goes over per `_SPARE_LOOK`: more hosts, rarer looks."""
"""Fingerprints per query of spilled priorities (SQLite allows a few hundred at least)."""


class LocalFrontierConfig(msgspec.Struct, frozen=True):
    """How a :class:`LocalFrontier` is sized and timed."""

    lease_timeout: float = 600.0
    """Seconds a lease is out before it is released (a stuck fetch)."""
    memory_budget: int = 100_000
    """Queued URLs held in memory; past that a host's new URLs stay in crawl.db only (no
    limit without a crawl.db)."""
    max_active: int = 50_000
    """Hosts in the scheduler's working set at most (a registrable domain's at most a few
    times ``per_domain`` of them, :mod:`gossamer.frontier.workingset`)."""
    slack: float = DEFAULT_SLACK
    """How far the best-first ordering may stray from the best URL to keep hosts busy (see
    :mod:`gossamer.frontier.hosts`)."""


class LocalFrontier:
    """Frontier contract (see :mod:`gossamer.frontier.base`) for one process."""

    def __init__(
        self,
        scope: Scope,
        policy: PolitenessPolicy,
        db: CrawlDB | None = None,
        *,
        rules: RulesLookup | None = None,
        config: LocalFrontierConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        guards: Guards | None = None,
        revisits: Revisits | None = None,
    ) -> None:
        """``config`` sizes and times it; ``revisits``: a continuous crawl's (``--recrawl``)
        revisit state, whose URLs due are queued with the others; the crawl is never done
        then."""
        config = config or LocalFrontierConfig()
        self._revisits = revisits
        self._admission = Admission(scope, guards)
        self._budget = self._admission.budget
        self.budget_spent = self._admission.spent  # the contract's
        self._db = db
        self._memory_budget = config.memory_budget if db is not None else 1 << 62
        self._hosts: HostScheduler[Queued] = HostScheduler(
            policy,
            rules=rules,
            lease_timeout=config.lease_timeout,
            max_active=config.max_active,
            slack=config.slack,
            clock=clock,
            budget=self._budget,
        )
        self._clock = clock
        self._seen = SeenSet()
        self._seq = itertools.count()
        self._loaded: dict[str, int] = {}
        """Hosts with URLs in crawl.db only that have had some in memory: the highest seq of
        theirs held in memory so far (the spilled ones come after it). A host all of whose
        URLs were spilled has no entry: a million seeds spill most hosts whole."""
        self._duplicates = 0
        self._recent: dict[str, None] = {}
        """Candidate URLs admitted lately, which are in the seen-set: the same spelling again
        is a duplicate without admission's work (navigation, sidebars and footers repeat
        most links of a site on every page). Emptied when it reaches `_RECENT_URLS`."""
        self._deepest = scope.max_depth if scope.max_depth is not None else sys.maxsize
        self._spare_at = -math.inf
        """When idle hosts are looked for again (work-conserving revisits)."""
        self._stored: dict[str, str] = {}
        """The stored user info of a resumed crawl by host (and port), for its hosts known
        by one user only (see :meth:`restore`)."""

    # -- loading ---------------------------------------------------------------------------

    def restore(self, seeds: Iterable[str] = ()) -> tuple[int, int]:
        """Load the state of a previous run from crawl.db: returns (queued, finished).

        Rows are streamed in seq order; past the memory budget they stay in crawl.db. The
        user info of the ``seeds`` given again (canonical) replaces the stored one of their
        host (:meth:`CrawlDB.renew`); the user info of the URLs restored is a seed's
        (admission let no other in), so the crawl's redirects and links keep it on its
        origin, and a seed given again without any takes it (see :meth:`add`).
        """
        if self._db is None:
            return (0, 0)
        self._db.renew(filter(None, (credentials_of(seed) for seed in seeds if "@" in seed)))
        self._seen = SeenSet.from_fingerprints(
            fp for (fp,) in self._db.iterate("SELECT fp FROM urls")
        )
        finished = 0
        last_seq = -1
        credentials: set[str] = set()
        for fp, url, key, depth, hops, attempts, priority, state, seq in self._db.iterate(
            "SELECT fp, url, host, depth, hops, attempts, priority, state, seq FROM urls "
            "ORDER BY seq"
        ):
            last_seq = seq
            if "@" in url:  # a seed's user info (admission lets no other in), or a path's @
                url = self._db.reveal(url)
                authority = credentials_of(url)
                if authority is not None:
                    credentials.add(authority)
            if state == 0:
                entry = Queued(url, fp, depth, hops, attempts, priority)
                self._enqueue(entry, key=key, seq=seq)
            else:
                finished += 1
        self._seq = itertools.count(last_seq + 1)
        self._trust(credentials | self._db.credentials())
        self._resume_paces()
        if self._budget is not None:
            self._budget.preset(dict(self._db.iterate(_FINISHED_BY_HOST)))
        return (self._queued(), finished)

    def _resume_paces(self) -> None:
        """The hosts' pace as the last run left it: a host asked last under a delay that has
        not run out waits for the rest of it (`_keep_paces`)."""
        assert self._db is not None
        wall, now = time.time(), self._clock()
        for key, not_before in self._db.iterate(_PACES, (wall,)):
            slot = self._hosts.slot(key)
            if slot is not None:  # a host with nothing queued is not asked again
                slot.next_start = max(slot.next_start, now + min(not_before - wall, _MOST_PACE))

    def _trust(self, credentials: set[str]) -> None:
        """Take ``credentials`` (``user[:password]@host[:port]``) as the seeds' (admission's
        :meth:`~Admission.trust`) and keep those of each host known by one user only for
        the seeds given again without any."""
        self._admission.trust(credentials)
        by_origin: dict[str, str | None] = {}
        for authority in credentials:
            origin = authority.rpartition("@")[2]
            by_origin[origin] = authority if origin not in by_origin else None
        self._stored = {origin: a for origin, a in by_origin.items() if a is not None}

    def _credited(self, cand: Candidate) -> Candidate:
        """A seed with no user info of its own, with the stored one of its host if any."""
        scheme, sep, rest = cand.url.partition("://")
        origin, slash, path = rest.partition("/")
        stored = self._stored.get(origin) if sep and "@" not in origin else None
        if stored is None:
            return cand
        url = f"{scheme}://{stored}{slash}{path}"
        return Candidate(url, cand.depth, cand.hops, cand.priority, seed=True)

    # -- the contract ----------------------------------------------------------------------

    async def add(self, candidates: Sequence[Candidate]) -> AddResult:
        """Admit candidates, drop those seen before and queue the rest."""
        recent, deepest = self._recent, self._deepest
        # past the depth limit, admission turns a URL away ("depth"), seen or not
        if isinstance(candidates, Outlinks):  # candidates made of the URLs not added lately
            depth, urls = candidates.depth, candidates.urls
            if depth > deepest:
                fresh = [Candidate(u, depth) for u in urls]
            else:  # one look per link (most were added lately)
                fresh = [Candidate(u, depth) for u in urls if u not in recent]
        else:
            if self._stored:  # resumed: a seed given again without its stored user info
                candidates = [self._credited(c) if c.seed else c for c in candidates]
            fresh = [c for c in candidates if c.url not in recent or c.depth > deepest]
        if not fresh:  # every link was added lately (a site's pages link the same pages)
            self._duplicates += len(candidates)
            return AddResult(0, len(candidates), {})
        admission = self._admission
        source = getattr(candidates, "source", None)
        admitted, rejected = admission.admit(fresh, source=source)
        rows = []
        news = self._seen.add_many([fp for _, _, fp, _ in admitted])
        if len(recent) + len(admitted) > _RECENT_URLS:
            recent.clear()
        for admit in admitted:
            recent[admit[3].url] = None
        # A trap's URL stays in the seen-set: met again, it is a duplicate (no more work).
        unseen = [admit for admit, new in zip(admitted, news, strict=True) if new]
        kept = admission.screen(unseen, rejected, source)
        for url, key, fp, cand in kept:
            seq = next(self._seq)
            entry = Queued(url, fp, cand.depth, cand.hops, 0, cand.priority)
            self._enqueue(entry, key=key, seq=seq)
            stored = url if "@" not in url or self._db is None else self._db.hide(url)
            rows.append((fp, stored, key, cand.depth, cand.hops, seq, cand.priority))
        if self._db is not None:
            self._db.stage(_INSERT_URL, rows)
        added = len(rows)
        duplicates = len(candidates) - len(fresh) + len(admitted) - len(unseen)
        self._duplicates += duplicates
        return AddResult(added, duplicates, rejected)

    async def reprioritize(self, priorities: Mapping[str, float]) -> int:
        """New priorities for queued URLs (in memory, waiting for a retry, or spilled to
        crawl.db); returns how many changed. Stored at the next checkpoint, for ``--resume``."""
        wanted = self._admission.locate(priorities)
        changed = self._hosts.rerank(wanted)
        rows = [(entry.priority, entry.fp) for entry in changed]
        if self._db is not None:
            rows += await self._spilled(wanted, {entry.fp for entry in changed})
            self._db.stage(_SET_PRIORITY, rows)
        return len(rows)

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot of a due host, plus those that need none."""
        for lease in self._hosts.expired():
            await self.release(lease, None)
        if self._revisits is not None:
            for key, entry in await self._revisits.due():
                self._hosts.push(key, entry)
            await self._spare(self._revisits)
        batch = self._hosts.lease(n)
        for key in batch.dry:
            await self._refill(key)
        if self._db is not None and batch.leases:
            self._keep_paces(batch.leases)
        return batch.leases

    def _keep_paces(self, leases: list[Lease]) -> None:
        """Stage when each leased host may next be asked (wall clock, its latest only): a
        crawl resumed at once after a stop or a crash keeps the hosts' pace
        (:meth:`restore`), robots.txt's first request included."""
        assert self._db is not None
        offset = time.time() - self._clock()
        for lease in leases:
            slot = self._hosts.slot(lease.host)
            if slot is not None and slot.next_start > 0:
                row = (lease.host, slot.next_start + offset)
                self._db.stage_keyed(_KEEP_PACE, lease.host, row)

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease; its URL is marked finished at the next checkpoint."""
        entry = self._hosts.finish(lease, feedback)
        if entry is not None and self._db is not None:
            self._db.stage_last(_FINISH_URL, (entry.fp,))
        if self._revisits is not None:
            self._revisits.finished(lease.url, again=lease.kind != "budget")

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Queue the URL again after ``after`` seconds, counting one more attempt."""
        entry = self._hosts.finish(lease, feedback)
        if entry is None:
            return
        entry.attempts += 1
        if self._db is not None:
            self._db.stage(_COUNT_ATTEMPT, [(entry.attempts, entry.fp)])
        self._hosts.delay(lease.host, entry, self._clock() + after)

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted."""
        entry = self._hosts.finish(lease, feedback)
        if entry is not None:
            if self._budget is not None and lease.kind == "page" and not entry.attempts:
                self._budget.give_back(lease.host)  # not fetched: its page is not spent
            self._hosts.push(lease.host, entry, front=True)

    async def rules(self, lease: Lease, rules: Rules, feedback: Feedback | None) -> None:
        """End a ``robots`` lease with its host's rules."""
        self._hosts.rules(lease, rules, feedback)

    def next_ready(self) -> float | None:
        """Seconds until the earliest host, delayed retry or revisit is due; None when
        nothing waits."""
        ready = self._hosts.next_ready()
        if self._revisits is None:
            return ready
        due = self._revisits.next_due()
        if self._revisits.spare > 0:  # the next look for idle hosts
            look = max(self._spare_at - self._clock(), 0.0)
            due = look if due is None else min(due, look)
        return due if ready is None else ready if due is None else min(ready, due)

    async def done(self) -> bool:
        """Nothing queued, leased or waiting for a retry (a continuous crawl: never)."""
        if self._revisits is not None:
            return False
        hosts = self._hosts
        return not (hosts.queued or hosts.stored or hosts.leased or hosts.delayed)

    def stats(self) -> FrontierStats:
        """A frozen snapshot."""
        hosts = self._hosts
        return FrontierStats(
            queued=self._queued(),
            leased=hosts.leased,
            delayed=hosts.delayed,
            hosts=hosts.hosts,
            active_hosts=hosts.active,
            seen=len(self._seen),
            duplicates=self._duplicates,
            rejected=self._admission.rejected,
        )

    @property
    def in_memory(self) -> int:
        """Queued URLs held in memory, waiting to be leased."""
        return self._hosts.queued

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """The hosts politeness holds back now (:meth:`HostScheduler.held_back`)."""
        return self._hosts.held_back(most)

    @property
    def slots(self) -> SlotClaims[Queued]:
        """The scheduler's host slots the crawl's host gate takes (`HostGate.bind`)."""
        return self._hosts.claims

    # -- storage ---------------------------------------------------------------------------

    async def _spare(self, revisits: Revisits) -> None:
        """Queue work-conserving revisits for the hosts idle now or before the next look (see
        :meth:`Revisits.spare_for`; the scheduler holds each until its host's slot is free),
        and for hosts of crawl.db the scheduler does not know yet (:meth:`Revisits.stored_hosts`),
        looking again after `_SPARE_LOOK` (every `_SPARE_HOSTS_A_LOOK` hosts known add one
        more: a look passes over all of them)."""
        now = self._clock()
        if revisits.spare <= 0 or now < self._spare_at:
            return
        hosts = self._hosts
        every = _SPARE_LOOK * max(1.0, hosts.hosts / _SPARE_HOSTS_A_LOOK)
        self._spare_at = now + every
        idle = hosts.idle(revisits.spare, SPARE_HOSTS, within=every)
        unseen = await revisits.stored_hosts(hosts.known)  # idle too: no slot of theirs taken
        for key, entry in [*await revisits.spare_for(idle), *await revisits.spare_for(unseen)]:
            hosts.push(key, entry)

    def _queued(self) -> int:
        return self._hosts.queued + self._hosts.stored

    def _enqueue(self, entry: Queued, *, key: str, seq: int) -> None:
        """Queue a URL at the back of its host, in memory while the budget allows."""
        hosts = self._hosts
        if hosts.queued >= self._memory_budget or (hosts.stored and hosts.stored_of(key)):
            if hosts.known(key) and not hosts.stored_of(key):
                self._loaded.setdefault(key, seq - 1)
            hosts.store(key)
        else:
            hosts.push(key, entry)

    async def _spilled(
        self, wanted: dict[str, dict[int, float]], changed: set[int]
    ) -> list[tuple[float, int]]:
        """(priority, fp) of the spilled URLs of ``wanted`` whose priority changes."""
        assert self._db is not None
        new = {
            fp: priority
            for key, fps in wanted.items()
            if self._hosts.stored_of(key)
            for fp, priority in fps.items()
            if fp not in changed
        }
        if not new:
            return []
        for lease, _ in self._hosts.out():
            new.pop(lease.fp, None)
        fps = list(new)
        rows = []
        for start in range(0, len(fps), _DB_VARIABLES):
            part = fps[start : start + _DB_VARIABLES]
            query = _STORED_PRIORITY.format(",".join("?" * len(part)))
            for fp, old in await self._db.read(query, tuple(part)):
                if old != new[fp]:
                    rows.append((new[fp], fp))
        return rows

    async def _refill(self, key: str) -> None:
        """Read a batch of a host's spilled URLs back from crawl.db."""
        # The budget is soft by a few URLs, so a dry host never waits for others to drain.
        room = max(self._memory_budget - self._hosts.queued, _MIN_REFILL)
        stored = self._hosts.stored_of(key)
        rows = []
        if stored and self._db is not None:
            batch = min(room, _REFILL_BATCH, stored)
            after = self._loaded.get(key, -1)
            rows = await self._db.read(_READ_SPILLED, (key, after, batch))
        if rows:
            self._loaded[key] = rows[-1][-1]
        reveal = self._db.reveal if self._db is not None else str
        self._hosts.refill(key, [Queued(reveal(row[0]), *row[1:-1]) for row in rows])
        if not self._hosts.stored_of(key):
            self._loaded.pop(key, None)

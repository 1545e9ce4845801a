"""The Redis frontier: one crawl job's URLs in partitioned Redis queues shared by many workers.

Hosts map to ``P`` virtual partitions (``xxh3_64(host_key) % P``, stable across machines and
Python versions). A worker leases only URLs of the partitions it owns (``owned()``), so exactly
one worker enforces each host's politeness. It *claims* batches of entries from its partitions'
Redis queues into in-memory per-host queues (the same ready heap and
:class:`~gossamer.frontier.politeness.HostSlot` logic as the embedded frontier) and leases from
those. A claim stays in Redis, with a wall-clock deadline renewed while the worker holds it,
until the URL is acked; if the worker dies its claims expire and any worker's
:meth:`RedisFrontier.reclaim_expired` puts them back in their queue. Nothing leaves Redis
before its ack, so a kill -9 loses no URL (URLs it had leased are leased again).

Key layout (``J`` the job, ``p`` a partition). Every key of partition ``p`` carries the hash
tag ``{J:p}``, so a partition lives in one Redis Cluster slot and each Lua script (in
``frontier/lua/*.lua``, run with EVALSHA) touches one slot only::

    gs:{J:p}:seen       SET    fingerprints ever added (exact: a false positive would skip a
                               page; integers, so small partitions use Redis' compact intset)
    gs:{J:p}:queue      LIST   entries waiting, FIFO: RPUSH on add, LPUSH to give back to the
                               front, LPOP to claim
    gs:{J:p}:claimed    HASH   claim token -> entry held by some worker
    gs:{J:p}:deadlines  ZSET   claim token -> wall-clock deadline (renewed while held)
    gs:{J:p}:counts     HASH   queued, claimed, seen, finished; token (last claim token issued)

An entry is ``fp|depth|hops|attempts|not_before|url``: ``not_before`` is the wall-clock time
before which a retried URL may not be fetched; a worker claiming it early keeps it in memory
until then (its claim renewed), so ``claimed`` covers URLs waiting for a retry too.

``done()`` is synchronous, so it reads a snapshot of every partition's counts taken by
:meth:`RedisFrontier.refresh`; ``lease()`` refreshes it when this worker holds nothing in
memory (at once after a local change, else every ``refresh_interval``). ``done()`` is True only
when nothing is held here and the snapshot, taken after this worker's last change, shows
nothing queued or claimed in any partition. The engine adds a page's outlinks before acking
it, so a claim always covers URLs still to come.

Known limits: a partition's queue is one FIFO, so one host's long backlog delays the other
hosts of its partition until it is claimed into memory (bounded by ``memory_budget``);
canonicalize-and-scope is duplicated from :mod:`gossamer.frontier.local` for now.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import xxhash
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from gossamer.frontier.base import AddResult, Candidate, Feedback, FrontierStats, Lease
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.urls import InvalidURL, Scope, canonicalize, fingerprint, host_key, host_of

RobotsCheck = Callable[[str], bool | None]
"""True allowed, False forbidden, None not known yet."""

SCRIPTS = ("add", "claim", "ack", "update", "unclaim", "reclaim")
_COUNT_FIELDS = ("queued", "claimed", "seen")
_RECLAIM_LIMIT = 1000
_POLL = 0.2
"""Seconds between looks at Redis while this worker holds nothing but the job is not done."""


def partition_of(key: str, partitions: int) -> int:
    """The partition of a host key (``scheme://host[:port]``)."""
    return xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % partitions


def partition_keys(job: str, part: int) -> dict[str, str]:
    """The Redis keys of one partition, all with the hash tag ``{job:part}``."""
    tag = f"gs:{{{job}:{part}}}:"
    return {name: tag + name for name in ("seen", "queue", "claimed", "deadlines", "counts")}


def _load_script(name: str) -> str:
    return (resources.files("gossamer.frontier") / "lua" / f"{name}.lua").read_text("utf-8")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


@dataclass(slots=True)
class _Entry:
    url: str
    fp: int
    depth: int
    hops: int
    attempts: int
    not_before: float
    part: int
    claim: int
    orphan: bool = False
    """Its partition was dropped while it was leased: it goes back to Redis when it returns."""

    def encode(self) -> str:
        return f"{self.fp}|{self.depth}|{self.hops}|{self.attempts}|{self.not_before!r}|{self.url}"

    @classmethod
    def decode(cls, raw: bytes | str, part: int, claim: int) -> _Entry:
        fp, depth, hops, attempts, not_before, url = _text(raw).split("|", 5)
        return cls(
            url, int(fp), int(depth), int(hops), int(attempts), float(not_before), part, claim
        )


@dataclass(slots=True)
class _Host:
    part: int
    slot: HostSlot = field(default_factory=HostSlot)
    queue: deque[_Entry] = field(default_factory=deque)
    heap_time: float | None = None


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """Counts of every partition, read by :meth:`RedisFrontier.refresh`."""

    queued: int = 0
    claimed: int = 0
    seen: int = 0
    waiting: frozenset[int] = frozenset()
    """Partitions with queued entries."""
    holding: frozenset[int] = frozenset()
    """Partitions with claims."""


class RedisFrontier:
    """Frontier contract (see :mod:`gossamer.frontier.base`) over partitioned Redis queues.

    See the module docstring for the key layout, claims and how ``done()`` is computed.
    """

    def __init__(
        self,
        redis: Redis,
        job: str,
        scope: Scope,
        policy: PolitenessPolicy,
        *,
        partitions: int = 4096,
        owned: Callable[[], Collection[int]] | None = None,
        robots_check: RobotsCheck | None = None,
        lease_timeout: float = 600.0,
        claim_batch: int = 256,
        memory_budget: int = 10_000,
        refresh_interval: float = 1.0,
        defer_acks: bool = False,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if "{" in job or "}" in job or not job:
            raise ValueError(f"job name {job!r} must be non-empty and free of braces")
        self._redis = redis
        self._job = job
        self._scope = scope
        self._policy = policy
        self._partitions = partitions
        self._owned = owned or (lambda: range(partitions))
        self._robots_check = robots_check
        self._lease_timeout = lease_timeout
        self._claim_batch = claim_batch
        self._memory_budget = memory_budget
        self._refresh_interval = refresh_interval
        self._defer_acks = defer_acks
        self._unsent: list[_Entry] = []
        """Acked entries whose ack has not gone to Redis yet (``defer_acks``)."""
        self._clock = clock
        self._wall = wall_clock
        self._scripts: dict[str, AsyncScript] = {
            name: redis.register_script(_load_script(name)) for name in SCRIPTS
        }
        self._keys: dict[int, dict[str, str]] = {}
        self._hosts: dict[str, _Host] = {}
        self._ready: list[tuple[float, str]] = []
        self._delayed: list[tuple[float, int, str, _Entry]] = []
        self._leases: dict[int, tuple[Lease, _Entry]] = {}
        self._held: dict[int, dict[int, _Entry]] = {}
        """Every claim this worker holds, by partition and claim token."""
        self._sent = SeenSet()
        """Fingerprints this worker has sent to Redis: known seen, no round trip needed."""
        self._tokens = itertools.count(1)
        self._seq = itertools.count()
        self._in_memory = 0
        self._duplicates = 0
        self._rejected: dict[str, int] = {}
        self._host_allowed: dict[str, bool] = {}
        self._snapshot = _Snapshot()
        self._changes = 0
        self._snapshot_changes = -1
        self._next_refresh = float("-inf")
        self._next_renew = float("-inf")
        self._next_reclaim = float("-inf")
        self._next_lease_check = float("-inf")
        self._waiting: set[int] = set()
        """Owned partitions believed to have queued entries in Redis."""

    # -- the contract ----------------------------------------------------------------------

    async def add(self, candidates: list[Candidate]) -> AddResult:
        """Canonicalize, scope and dedup candidates; queue the new ones in their partitions."""
        rejected: dict[str, int] = {}
        batches: dict[int, list[tuple[int, str]]] = {}
        duplicates = 0
        batch_fps: set[int] = set()
        for fp, url, key, cand in self._accept(candidates, rejected):
            if fp in batch_fps or fp in self._sent:
                duplicates += 1
                continue
            batch_fps.add(fp)
            entry = f"{fp}|{cand.depth}|{cand.hops}|0|0.0|{url}"
            batches.setdefault(partition_of(key, self._partitions), []).append((fp, entry))
        added = 0
        if batches:
            async with self._redis.pipeline(transaction=False) as pipe:
                for part, rows in batches.items():
                    keys = self._part_keys(part)
                    args = [x for fp, entry in rows for x in (fp, entry)]
                    await self._scripts["add"](
                        keys=[keys["seen"], keys["queue"], keys["counts"]], args=args, client=pipe
                    )
                results = await pipe.execute()
            self._sent.add_many(list(batch_fps))  # only once Redis has them
            owned = set(self._owned())
            for part, flags in zip(batches, results, strict=True):
                fresh = sum(int(flag) for flag in flags)
                added += fresh
                if fresh and part in owned:
                    self._waiting.add(part)
            duplicates += sum(len(rows) for rows in batches.values()) - added
            self._changes += 1
        self._duplicates += duplicates
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) + count
        return AddResult(added, duplicates, rejected)

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` URLs of due hosts, plus robots-blocked URLs met on the way.

        Also the worker's housekeeping: renews claims, refreshes the ``done()`` snapshot and
        claims more entries from owned partitions when memory runs low.
        """
        now = self._clock()
        await self._housekeep(now)
        await self._reclaim_leases(now)
        self._promote_delayed(now)
        out: list[Lease] = []
        fetches = 0
        ready = self._ready
        while fetches < n and ready and ready[0][0] <= now:
            when, key = heapq.heappop(ready)
            host = self._hosts[key]
            if host.heap_time != when:
                continue
            host.heap_time = None
            if self._policy.ready_at(host.slot) > now:
                self._schedule(key, host)
                continue
            lease = self._take(key, host, now, out)
            if lease is not None:
                out.append(lease)
                fetches += 1
            self._schedule(key, host)
        return out

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease: its claim is removed and the URL counted finished (once)."""
        entry = self._finish(lease, feedback)
        if entry is None:
            return
        if self._defer_acks:
            self._unsent.append(entry)  # its claim stays held (and renewed) until sent
            return
        await self._send_acks([entry])

    def take_acks(self) -> Callable[[], Awaitable[None]]:
        """With ``defer_acks``: the acks made so far, as a function sending them to Redis.

        Take them just before the commit that makes their records durable and call the
        function after it: a worker killed in between loses no record (its claims expire and
        the URLs are fetched again).
        """
        entries, self._unsent = self._unsent, []
        return lambda: self._send_acks(entries)

    async def _send_acks(self, entries: list[_Entry]) -> None:
        if not entries:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for entry in entries:
                keys = self._part_keys(entry.part)
                await self._scripts["ack"](
                    keys=[keys["claimed"], keys["deadlines"], keys["counts"]],
                    args=[entry.claim],
                    client=pipe,
                )
            await pipe.execute()
        for entry in entries:
            self._forget(entry)

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Count an attempt, store it with a not-before time in the claim; wait in memory."""
        entry = self._finish(lease, feedback)
        if entry is None:
            return
        entry.attempts += 1
        entry.not_before = self._wall() + after
        if entry.orphan:
            await self._give_back(entry.part, [entry])
            return
        keys = self._part_keys(entry.part)
        held = await self._scripts["update"](
            keys=[keys["claimed"]], args=[entry.claim, entry.encode()]
        )
        if not held:
            self._forget(entry)  # reclaimed meanwhile: it is queued in Redis again
            return
        heapq.heappush(self._delayed, (self._clock() + after, next(self._seq), lease.host, entry))

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted (claim kept)."""
        entry = self._finish(lease, feedback)
        if entry is None:
            return
        if entry.orphan:
            await self._give_back(entry.part, [entry])
        else:
            self._requeue(entry, lease.host)

    def next_ready(self) -> float | None:
        """Seconds until a held URL may be leasable; a short poll while others hold work."""
        times = []
        while self._ready and self._hosts[self._ready[0][1]].heap_time != self._ready[0][0]:
            heapq.heappop(self._ready)
        if self._ready:
            times.append(self._ready[0][0])
        if self._delayed:
            times.append(self._delayed[0][0])
        if times:
            return max(0.0, min(times) - self._clock())
        return None if self.done() else _POLL

    def done(self) -> bool:
        """Nothing held here, and nothing queued or claimed anywhere at the last refresh."""
        snap = self._snapshot
        return (
            not self._held
            and self._snapshot_changes == self._changes
            and snap.queued == 0
            and snap.claimed == 0
        )

    def stats(self) -> FrontierStats:
        """A frozen snapshot: ``queued`` and ``seen`` are job-wide (last refresh) plus the
        URLs this worker holds in memory; the rest is this worker's."""
        return FrontierStats(
            queued=self._snapshot.queued + self._in_memory,
            leased=len(self._leases),
            delayed=len(self._delayed),
            hosts=len(self._hosts),
            seen=max(self._snapshot.seen, len(self._sent)),
            duplicates=self._duplicates,
            rejected=dict(self._rejected),
        )

    # -- cluster operations ------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read every partition's counts (one pipeline) for ``done()``, ``stats()`` and claims."""
        changes = self._changes
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in range(self._partitions):
                pipe.hmget(self._part_keys(part)["counts"], _COUNT_FIELDS)
            rows: list[list[Any]] = await pipe.execute()
        queued = claimed = seen = 0
        waiting: set[int] = set()
        holding: set[int] = set()
        for part, (q, c, s) in enumerate(rows):
            q, c = int(q or 0), int(c or 0)
            queued, claimed, seen = queued + q, claimed + c, seen + int(s or 0)
            if q:
                waiting.add(part)
            if c:
                holding.add(part)
        self._snapshot = _Snapshot(queued, claimed, seen, frozenset(waiting), frozenset(holding))
        self._snapshot_changes = changes
        self._waiting = waiting & set(self._owned())
        self._next_refresh = self._clock() + self._refresh_interval

    async def renew(self) -> None:
        """Push the deadline of every claim this worker holds ``lease_timeout`` ahead."""
        self._next_renew = self._clock() + self._lease_timeout / 3
        if not self._held:
            return
        deadline = self._wall() + self._lease_timeout
        async with self._redis.pipeline(transaction=False) as pipe:
            for part, held in self._held.items():
                mapping = dict.fromkeys(map(str, held), deadline)
                pipe.zadd(self._part_keys(part)["deadlines"], mapping, xx=True)
            await pipe.execute()

    async def reclaim_expired(self, limit: int = _RECLAIM_LIMIT) -> int:
        """Return expired claims (their worker died) to their queues; any worker may call it.

        Refreshes the snapshot, then looks at the partitions holding claims, at most ``limit``
        claims per partition; returns how many were returned.
        """
        await self.refresh()
        return await self._reclaim(limit)

    async def _reclaim(self, limit: int = _RECLAIM_LIMIT) -> int:
        parts = sorted(self._snapshot.holding)
        if not parts:
            return 0
        now = self._wall()
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in parts:
                keys = self._part_keys(part)
                await self._scripts["reclaim"](
                    keys=[keys["claimed"], keys["deadlines"], keys["queue"], keys["counts"]],
                    args=[repr(now), limit],
                    client=pipe,
                )
            counts: list[int] = await pipe.execute()
        owned = set(self._owned())
        self._waiting.update(p for p, c in zip(parts, counts, strict=True) if c and p in owned)
        if any(counts):
            self._changes += 1
        return sum(counts)

    async def drop_partitions(self, parts: Iterable[int]) -> int:
        """Give every held entry of ``parts`` back to the front of its Redis queue.

        Leased entries go back when their ack, retry or release arrives (an ack still finishes
        the URL). Returns how many entries were given back now.
        """
        dropped = set(parts)
        back: dict[int, list[_Entry]] = {}
        for key, host in list(self._hosts.items()):
            if host.part in dropped:
                back.setdefault(host.part, []).extend(host.queue)
                self._in_memory -= len(host.queue)
                del self._hosts[key]
        keep = []
        for item in self._delayed:
            if item[3].part in dropped:
                back.setdefault(item[3].part, []).append(item[3])
            else:
                keep.append(item)
        self._delayed = keep
        heapq.heapify(self._delayed)
        for _, entry in self._leases.values():
            if entry.part in dropped:
                entry.orphan = True
        self._waiting -= dropped
        total = 0
        for part, entries in back.items():
            total += await self._give_back(part, entries)
            for entry in entries:
                self._forget(entry)
        return total

    async def close(self) -> None:
        """Give back every held claim that is not leased; the Redis client stays open."""
        await self.drop_partitions(set(self._held))

    # -- internals -------------------------------------------------------------------------

    def _accept(
        self, candidates: list[Candidate], rejected: dict[str, int]
    ) -> list[tuple[int, str, str, Candidate]]:
        """Canonicalize and scope (the same steps as the embedded frontier)."""
        accepted = []
        for cand in candidates:
            try:
                url = canonicalize(cand.url)
            except InvalidURL:
                rejected["invalid-url"] = rejected.get("invalid-url", 0) + 1
                continue
            key = host_key(url)
            allowed = self._host_allowed.get(key)
            if allowed is None:
                allowed = self._host_allowed[key] = self._scope.host_allowed(host_of(url))
            reason = "offsite" if not allowed else self._scope.trap_reason(url, cand.depth)
            if reason is not None:
                rejected[reason] = rejected.get(reason, 0) + 1
                continue
            accepted.append((fingerprint(url), url, key, cand))
        return accepted

    def _part_keys(self, part: int) -> dict[str, str]:
        keys = self._keys.get(part)
        if keys is None:
            keys = self._keys[part] = partition_keys(self._job, part)
        return keys

    async def _housekeep(self, now: float) -> None:
        if now >= self._next_renew:
            await self.renew()
        # A refresh reads all P partitions (~100 ms for 4096): only when it can matter, that
        # is when done() could be True or memory is low enough to claim more.
        idle = not self._held
        low = self._in_memory < self._memory_budget // 2
        if (now >= self._next_refresh and (idle or low)) or (
            idle and self._snapshot_changes != self._changes
        ):
            await self.refresh()
        if now >= self._next_reclaim:
            self._next_reclaim = now + min(self._lease_timeout / 4, 30.0)
            await self._reclaim()
        if self._in_memory < self._memory_budget // 2 and self._waiting:
            await self._claim()

    async def _claim(self) -> None:
        """Move entries from owned partitions' queues into memory, up to the memory budget."""
        owned = set(self._owned())
        parts = sorted(self._waiting & owned)
        room = self._memory_budget - self._in_memory
        parts = parts[: max(1, room // self._claim_batch)]
        deadline = self._wall() + self._lease_timeout
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in parts:
                keys = self._part_keys(part)
                await self._scripts["claim"](
                    keys=[keys["queue"], keys["claimed"], keys["deadlines"], keys["counts"]],
                    args=[self._claim_batch, repr(deadline)],
                    client=pipe,
                )
            results: list[list[Any]] = await pipe.execute()
        for part, (last, left, *raws) in zip(parts, results, strict=True):
            if not left:
                self._waiting.discard(part)
            first = int(last) - len(raws) + 1
            for i, raw in enumerate(raws):
                self._hold(_Entry.decode(raw, part, first + i))
        if any(len(r) > 2 for r in results):
            self._changes += 1

    def _hold(self, entry: _Entry) -> None:
        """Keep a newly claimed entry: in its host's queue, or delayed until not_before."""
        self._held.setdefault(entry.part, {})[entry.claim] = entry
        key = host_key(entry.url)
        if key not in self._hosts:
            self._hosts[key] = _Host(entry.part)
        wait = entry.not_before - self._wall()
        if wait > 0:
            heapq.heappush(self._delayed, (self._clock() + wait, next(self._seq), key, entry))
            return
        host = self._hosts[key]
        host.queue.append(entry)
        self._in_memory += 1
        self._schedule(key, host)

    def _forget(self, entry: _Entry) -> None:
        held = self._held.get(entry.part)
        if held is not None:
            held.pop(entry.claim, None)
            if not held:
                del self._held[entry.part]
        self._changes += 1

    async def _give_back(self, part: int, entries: list[_Entry]) -> int:
        if not entries:
            return 0
        keys = self._part_keys(part)
        args = [x for e in entries for x in (e.claim, e.encode())]
        given: int = await self._scripts["unclaim"](
            keys=[keys["claimed"], keys["deadlines"], keys["queue"], keys["counts"]], args=args
        )
        for entry in entries:
            if entry.orphan:
                self._forget(entry)
        return given

    def _take(self, key: str, host: _Host, now: float, out: list[Lease]) -> Lease | None:
        """Pop the host's next fetchable URL; robots-blocked ones go straight to ``out``."""
        check = self._robots_check
        while host.queue:
            entry = host.queue.popleft()
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
        host = self._hosts.get(lease.host)
        if host is not None:
            if not lease.robots_blocked:
                self._policy.on_finish(host.slot, feedback, self._clock())
            self._schedule(lease.host, host)
        return held[1]

    def _requeue(self, entry: _Entry, key: str) -> None:
        """Put a held URL back at the front of its host."""
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host(entry.part)
        host.queue.appendleft(entry)
        self._in_memory += 1
        self._schedule(key, host)

    def _schedule(self, key: str, host: _Host) -> None:
        """Make sure a host with queued URLs and a free slot is in the ready heap."""
        if not host.queue:
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

    async def _reclaim_leases(self, now: float) -> None:
        """Leases past their deadline (a stuck fetch) go back to their host's front."""
        if now < self._next_lease_check or not self._leases:
            return
        self._next_lease_check = now + min(1.0, self._lease_timeout / 10)
        expired = [lease for lease, _ in self._leases.values() if lease.deadline <= now]
        for lease in expired:
            await self.release(lease, None)

"""A look at a whole job: every partition's counts (queued, claimed, seen, finished).

The frontier reads them to tell whether the job is finished and which of its partitions have
entries waiting; the control plane and the balancer read them for the job's totals. A look at
a few partitions (those a worker just gained, the busiest of the last look) reads only those:
:class:`Looks` keeps the frontier's last look and answers ``done()`` from a few counts while
the job is busy.

A partition set aside (:mod:`.faults`) is left out of every look and named in its
``aside``; one whose ``counts`` key is not a HASH is left out too (``broken``: the frontier sets
it aside).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError

from gossamer.frontier.redis.faults import Faults, faulty, read_aside
from gossamer.frontier.redis.keys import partition_keys
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, load_script, run_scripts

_COUNT_FIELDS = ("queued", "claimed", "seen", "finished")
_COUNTS_SCRIPT = load_script("counts")
_COUNTS_CHUNK = 1024
"""Partitions per ``counts.lua`` call: Redis serves other clients between chunks."""
_SLOTLESS: weakref.WeakKeyDictionary[Redis, bool] = weakref.WeakKeyDictionary()
"""False for a client whose server turned out to be in cluster mode."""
RECHECKED = 4
"""The busiest partitions of the last look that ``done()`` reads again (:class:`Looks`)."""
BACKOFF = 4
"""At most this many ``refresh_interval`` between ``done()``'s checks while the job stays busy
(an idle worker of a busy job asks every 4 s, not every second; it sees the job's end at most
that much later)."""


@dataclass(frozen=True, slots=True)
class PartitionCounts:
    """The counts of every partition of a job (:func:`read_counts`)."""

    queued: int = 0
    claimed: int = 0
    seen: int = 0
    finished: int = 0
    busy: dict[int, tuple[int, int]] = field(default_factory=dict)
    """(queued, claimed) of every partition with either."""
    aside: dict[int, str] = field(default_factory=dict)
    """The partitions set aside (left out of the counts), and why."""
    broken: frozenset[int] = frozenset()
    """Partitions of ``aside`` whose ``counts`` key this look found unreadable, not recorded
    as set aside yet."""

    @property
    def waiting(self) -> frozenset[int]:
        """Partitions with queued entries."""
        return frozenset(part for part, (queued, _) in self.busy.items() if queued)

    @property
    def holding(self) -> frozenset[int]:
        """Partitions with claims."""
        return frozenset(part for part, (_, claimed) in self.busy.items() if claimed)


async def read_counts(
    redis: RedisClient, job: str, partitions: int, only: Iterable[int] | None = None
) -> PartitionCounts:
    """Every partition's counts (``only`` given: those partitions' counts, summed). On one
    server ``counts.lua`` sums them there (a pipeline of a few calls); a server in cluster mode
    keeps each partition in its own slot, so there it is one HMGET per partition (about 150 ms
    of client CPU for 4,096)."""
    parts = list(range(partitions)) if only is None else sorted(set(only))
    keys = [partition_keys(job, part)["counts"] for part in parts]
    return await _read(redis, job, keys, parts)


async def _read(redis: RedisClient, job: str, keys: list[str], parts: list[int]) -> PartitionCounts:
    """The counts of ``parts`` but those set aside, whose counts keys are ``keys``."""
    aside = await read_aside(redis, job)
    if aside:
        kept = [(key, part) for key, part in zip(keys, parts, strict=True) if part not in aside]
        keys, parts = [key for key, _ in kept], [part for _, part in kept]
    if not isinstance(redis, RedisCluster) and _SLOTLESS.get(redis, True):
        try:
            counts = await _summed_by_script(redis, keys, parts)
        except ClusterCrossSlotError:
            _SLOTLESS[redis] = False  # a plain client of a one-node cluster
        else:
            return _with_aside(counts, aside, keys, parts)
    return _with_aside(await _summed_here(redis, keys, parts), aside, keys, parts)


def _with_aside(
    counts: PartitionCounts, aside: dict[int, str], keys: list[str], parts: list[int]
) -> PartitionCounts:
    """``counts`` naming the partitions set aside: ``aside``, and those found ``broken``."""
    if not aside and not counts.broken:
        return counts
    where = dict(zip(parts, keys, strict=True))
    aside = {**aside, **{part: f"{where[part]} is not a hash" for part in counts.broken}}
    c = counts
    return PartitionCounts(c.queued, c.claimed, c.seen, c.finished, c.busy, aside, c.broken)


class Looks:
    """A frontier's looks at its job's counts: the last look at every partition, and the cheap
    check ``done()`` makes between such looks."""

    def __init__(self, redis: RedisClient, job: str, partitions: int, faults: Faults) -> None:
        self._redis = redis
        self._faults = faults
        self._job = job
        self._partitions = partitions
        self._keys: list[str] = []  # every partition's counts key, built at the first look
        self.counts = PartitionCounts()
        """The last look at every partition."""
        self._busiest: list[int] = []
        self._streak = 0  # checks in a row that found the job busy

    async def every(self) -> PartitionCounts:
        """Look at every partition."""
        if not self._keys:
            self._keys = [
                partition_keys(self._job, part)["counts"] for part in range(self._partitions)
            ]
        parts = list(range(self._partitions))
        counts = await _read(self._redis, self._job, self._keys, parts)
        counts = self.counts = await self._without_faults(counts)
        busy = counts.busy
        self._busiest = sorted(busy, key=lambda part: -sum(busy[part]))[:RECHECKED]
        return counts

    async def of(self, parts: Iterable[int]) -> PartitionCounts:
        """Look at ``parts`` only (the last look at every partition stays as it was)."""
        parts = list(parts)
        if not parts:
            return PartitionCounts()
        counts = await read_counts(self._redis, self._job, self._partitions, parts)
        return await self._without_faults(counts)

    async def _without_faults(self, counts: PartitionCounts) -> PartitionCounts:
        """``counts`` as the frontier takes them: the partitions it found broken set aside,
        and those it knows set aside (its record may be unreadable) left out."""
        await self._faults.found(counts.aside, counts.broken)
        gone = counts.busy.keys() & self._faults.parts.keys()
        if not gone:
            return counts
        queued = counts.queued - sum(counts.busy[part][0] for part in gone)
        claimed = counts.claimed - sum(counts.busy[part][1] for part in gone)
        busy = {part: n for part, n in counts.busy.items() if part not in gone}
        aside = {**counts.aside, **{part: self._faults.parts[part] for part in gone}}
        c = counts
        return PartitionCounts(queued, claimed, c.seen, c.finished, busy, aside, c.broken)

    async def still_busy(self, owned: Iterable[int], note: Callable[[Iterable[int]], None]) -> bool:
        """The busiest partitions of the last look at every partition (:data:`RECHECKED` of
        them) or the ``owned`` ones still have entries queued or claimed (one call; ``note``
        is told the partitions with entries queued, as by any look): the job is not finished,
        and needs no look at every partition to say so. False when they are idle: only a look
        at every partition can tell then."""
        counts = await self.of([*self._busiest, *owned])
        note(counts.waiting)
        busy = bool(counts.busy)
        self._streak = self._streak + 1 if busy else 0
        return busy

    @property
    def backoff(self) -> int:
        """How many ``refresh_interval`` until the next check: doubling while the job stays
        busy, up to :data:`BACKOFF`."""
        return min(1 << self._streak, BACKOFF)


async def _summed_by_script(redis: Redis, keys: list[str], parts: list[int]) -> PartitionCounts:
    script = redis.register_script(_COUNTS_SCRIPT)
    starts = range(0, len(keys), _COUNTS_CHUNK)
    calls: list[ScriptCall] = [(script, keys[i : i + _COUNTS_CHUNK], []) for i in starts]
    results = await run_scripts(redis, calls)
    sums = [0, 0, 0, 0]
    busy: dict[int, tuple[int, int]] = {}
    broken: set[int] = set()
    for start, (*chunk, flat, unread) in zip(starts, results, strict=True):
        sums = [total + int(value) for total, value in zip(sums, chunk, strict=True)]
        for i in range(0, len(flat), 3):
            busy[parts[start + int(flat[i])]] = (int(flat[i + 1]), int(flat[i + 2]))
        broken.update(parts[start + int(i)] for i in unread)
    queued, claimed, seen, finished = sums
    return PartitionCounts(queued, claimed, seen, finished, busy, broken=frozenset(broken))


async def _summed_here(redis: RedisClient, keys: list[str], parts: list[int]) -> PartitionCounts:
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hmget(key, _COUNT_FIELDS)
        rows: list[Any] = await pipe.execute(raise_on_error=False)
    sums = [0, 0, 0, 0]
    busy: dict[int, tuple[int, int]] = {}
    broken: set[int] = set()
    for part, row in zip(parts, rows, strict=True):
        if isinstance(row, Exception):
            if not faulty(row):
                raise row
            broken.add(part)
            continue
        values = [_count(value) for value in row]
        sums = [total + value for total, value in zip(sums, values, strict=True)]
        if values[0] or values[1]:
            busy[part] = (values[0], values[1])
    queued, claimed, seen, finished = sums
    return PartitionCounts(queued, claimed, seen, finished, busy, broken=frozenset(broken))


def _count(value: bytes | str | None) -> int:
    """A partition count as ``counts.lua`` reads it: an integer, else 0."""
    try:
        return int(value or 0)
    except ValueError:
        return 0

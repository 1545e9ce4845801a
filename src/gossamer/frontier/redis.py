"""The Redis frontier: one crawl job's URLs in partitioned Redis queues shared by many workers.

Hosts map to ``P`` virtual partitions (``xxh3_64(host_key) % P``, stable across machines and
Python versions; by URL instead, see below). A worker leases only URLs of the partitions it
owns (``owned()``), so exactly one worker enforces each host's politeness. It *claims* batches
of entries from its partitions' Redis queues into the host scheduler the embedded frontier
uses too (:mod:`gossamer.frontier.hosts`: per-host queues, ready heap, politeness slots,
leases, the robots.txt stage) and leases from that. A claim stays in Redis, with a wall-clock
deadline renewed while the worker holds it, until the URL is acked; if the worker dies its
claims expire and any worker's :meth:`RedisFrontier.reclaim_expired` puts them back in their
queue. Nothing leaves Redis before its ack, so a kill -9 loses no URL (URLs it had leased are
leased again).

Key layout (``J`` the job, ``p`` a partition). Every key of partition ``p`` carries the hash
tag ``{J:p}``, so a partition lives in one Redis Cluster slot and each Lua script (in
``frontier/lua/*.lua``, run with EVALSHA) touches one slot only. The frontier takes a client
of one server or of a Redis Cluster (:data:`RedisClient`); a cluster client splits each
pipeline per node, so partitions spread over the cluster's masters::

    gs:{J:p}:seen       SET    fingerprints ever added (exact: a false positive would skip a
                               page; integers, so small partitions use Redis' compact intset)
    gs:{J:p}:queue      LIST   entries waiting, FIFO: RPUSH on add, LPUSH to give back to the
                               front, LPOP to claim
    gs:{J:p}:claimed    HASH   claim token -> entry held by some worker
    gs:{J:p}:deadlines  ZSET   claim token -> wall-clock deadline (renewed while held)
    gs:{J:p}:counts     HASH   queued, claimed, seen, finished; token (last claim token issued)
    gs:{J:p}:fence      HASH   worker -> "ms:seq": Redis-clock ms before which no new owner
                               may claim, and the sequence of the worker's last fence call

An entry is ``fp|depth|hops|attempts|not_before|url``, or with a priority other than 0
``fp|depth|hops|attempts|not_before|priority|url`` (a URL starts with ``http``, a number never
does): ``not_before`` is the wall-clock time before which a retried URL may not be fetched; a
worker claiming it early keeps it in memory until then (its claim renewed), so ``claimed``
covers URLs waiting for a retry too.

A claimed entry that does not decode (see :meth:`_Entry.decode`: wrong field count, numbers
that are not, a URL that is not a canonical http(s) one) is set aside with a warning, never
crashing the worker nor staying claimed: it goes to the job's list of bad entries, then leaves
its partition's claims (``set_aside.lua``; ``claimed`` counts it no more), in that order, so a
worker killed in between loses nothing (the claim expires and comes back, to be set aside
again). Job-level keys, tagged ``{J}`` like the control plane's::

    gs:{J}:bad          LIST   bad entries as JSON {partition, reason, entry}, newest first,
                               the last 10,000 kept (the entry cut at 8 KiB)
    gs:{J}:bad:count    STRING how many entries were ever set aside

With ``partition_by="url"`` a URL's partition is its fingerprint modulo ``P``, so one host's
URLs spread over every worker (a crawl of few hosts uses many workers); claims, acks, reclaims
and ``done()`` work as above. No worker owns a host then, so on top of its local
:class:`~gossamer.frontier.politeness.HostSlot` each worker takes a slot of the host from a
shared limiter before leasing a URL or the robots.txt of it (``host_acquire.lua``, one
pipeline for every due host of a ``lease()`` call: the scheduler's ``due``, then ``take`` of
what was granted) and gives it back when the lease ends (``host_release.lua``, in the acks'
pipeline when acks are not deferred). Every host ``h`` (its host key's xxh3_64, in
hex) has its own hash tag ``{J:h:h}``, so each call touches one slot::

    gs:{J:h:h}:slots    ZSET   holder (worker id:counter) -> deadline; at most per_host, or
                               one while the host has a delay or none has been reported yet
    gs:{J:h:h}:pace     HASH   next (earliest next request start), delay (the last delay a
                               worker reported: its policy's, robots Crawl-delay included)

Times there are the Redis server's (``TIME``), so workers' clocks need not agree. A worker
reports when its request really started (the engine's ``Feedback.started_at``, when the
headers were sent) as an offset from now, and the next start becomes that start plus the delay
(or a Retry-After's end), so the gap the server sees holds; an acquire also pushes it a delay
ahead, in case the holder dies. A slot lasts ``lease_timeout`` unless given back, as long as
the worker's own lease of the URL: a killed worker's slots expire with its leases. A host the
limiter refuses waits in this worker's ready heap until the limiter says a slot may be free.
Both keys of an idle host expire after an hour.

``done()`` is synchronous, so it reads a snapshot of every partition's counts taken by
:meth:`RedisFrontier.refresh`; ``lease()`` refreshes it when this worker holds nothing in
memory (at once after a local change, else every ``refresh_interval``). ``done()`` is True only
when nothing is held here and the snapshot, taken after this worker's last change, shows
nothing queued or claimed in any partition. The engine adds a page's outlinks before acking
it, so a claim always covers URLs still to come.

``lease()`` also does the worker's housekeeping (claim renewals, hints, the refresh, reclaims
and claims of more entries). While some held host is due it runs in a background task and
``lease()`` hands out what is held at once, so no Redis round trip keeps a fetch slot empty;
with nothing to hand out, ``lease()`` waits for it. Claim renewals are always awaited.

A worker learns that a partition it owns has new entries from its own adds, from the
refresh, and, with ``notify``/``hints`` (the cluster worker's), at once from the others: after
an add, ``notify`` names the partitions owned elsewhere that got fresh entries, and every
``_HINT_POLL`` seconds ``lease()`` asks ``hints`` for the partitions others named for it. With
hints a busy worker refreshes every five ``refresh_interval`` only, as a safety net for a hint
lost in a hand-over.

A hand-over in host mode (``drop_partitions``) fences the partition for its new owner: the
claim script returns nothing while the old owner still has requests to the partition's hosts
in flight (a fence of ``lease_timeout``, so it lapses if that worker dies) and, once the last
ends, until those hosts' next start is due by the old owner's politeness. Each worker's fence
is its own field of ``gs:{J:p}:fence``, so a partition moved on again keeps every previous
owner's fence; a worker numbers its fence calls, so a late one (another connection, a retry)
never undoes a later one.

Known limits: a partition's queue is one FIFO, so one host's long backlog delays the other
hosts of its partition until it is claimed into memory (bounded by ``memory_budget``), and a
URL's priority orders it among the URLs of its host held in memory only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import re
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import xxhash
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import ClusterCrossSlotError, NoScriptError

from gossamer.frontier.admission import Admission
from gossamer.frontier.base import AddResult, Candidate, Feedback, FrontierStats, Lease, Rules
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.hosts import Host, HostScheduler, Queued, RulesLookup
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.urls import Scope, fingerprint, host_key

RedisClient = Redis | RedisCluster
"""A client of one Redis server or of a Redis Cluster (see
:func:`gossamer.cluster.jobs.connect`); the frontier and control plane take either."""

ScriptCall = tuple[AsyncScript, list[str], list[Any]]
"""A script with its keys and arguments, for :func:`run_scripts`."""

SCRIPTS = (
    "add",
    "claim",
    "ack",
    "update",
    "unclaim",
    "reclaim",
    "fence",
    "host_acquire",
    "host_release",
    "set_aside",
)
_COUNT_FIELDS = ("queued", "claimed", "seen", "finished")
_RECLAIM_LIMIT = 1000
_HINT_POLL = 0.05
"""Seconds between looks at the partitions other workers filled for this one (``hints``)."""
_POLL = 0.2
"""Seconds between looks at Redis while this worker holds nothing but the job is not done."""
_FENCE_POLL = 0.25
"""Seconds before asking again for a partition its previous owner fences (the fence of
requests still in flight ends when they do, earlier than it says)."""
_BUSY_RETRY = 0.05
"""Seconds before asking the limiter again for a host whose slots are all held."""
BAD_KEPT = 10_000
"""Bad entries kept in ``gs:{J}:bad`` (the newest)."""
_BAD_SHOWN = 8192
"""Characters of a bad entry kept in ``gs:{J}:bad``."""
_MAX_URL = 1 << 20
"""Characters of an entry's URL beyond which it is bad, whatever the job's max URL length."""
_FINGERPRINT = re.compile(r"-?\d{1,19}")
_COUNT = re.compile(r"\d{1,9}")

log = logging.getLogger(__name__)


def partition_of(key: str, partitions: int) -> int:
    """The partition of a host key (``scheme://host[:port]``)."""
    return xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % partitions


def partition_keys(job: str, part: int) -> dict[str, str]:
    """The Redis keys of one partition, all with the hash tag ``{job:part}``."""
    tag = f"gs:{{{job}:{part}}}:"
    names = ("seen", "queue", "claimed", "deadlines", "counts", "fence")
    return {name: tag + name for name in names}


def bad_keys(job: str) -> dict[str, str]:
    """The job's keys of set-aside entries (``entries`` LIST, ``count`` STRING), tag ``{job}``."""
    return {"entries": f"gs:{{{job}}}:bad", "count": f"gs:{{{job}}}:bad:count"}


def host_keys(job: str, key: str) -> dict[str, str]:
    """The Redis keys of one host's shared limiter (url mode), with the hash tag ``{job:h:…}``."""
    digest = xxhash.xxh3_64_hexdigest(key.encode("utf-8", "surrogatepass"))
    tag = f"gs:{{{job}:h:{digest}}}:"
    return {name: tag + name for name in ("slots", "pace")}


def _load_script(name: str) -> str:
    return (resources.files("gossamer.frontier") / "lua" / f"{name}.lua").read_text("utf-8")


_COUNTS_SCRIPT = _load_script("counts")


async def run_scripts(redis: RedisClient, calls: list[ScriptCall]) -> list[Any]:
    """Run script calls in one pipeline (a Redis Cluster client splits it per node); results
    in order, the first error raised.

    A call answered NOSCRIPT (first use, a restarted server, a replica promoted by failover)
    ran nothing: its script is loaded (on every primary of a cluster) and only those calls
    run again.
    """
    results = await _pipeline_scripts(redis, calls)
    missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
    if missing:
        for script in {calls[i][0] for i in missing}:
            await redis.script_load(script.script)
        again = await _pipeline_scripts(redis, [calls[i] for i in missing])
        for i, result in zip(missing, again, strict=True):
            results[i] = result
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


async def _pipeline_scripts(redis: RedisClient, calls: list[ScriptCall]) -> list[Any]:
    # EVALSHA by execute_command: redis-py's cluster pipeline blocks its evalsha() method but
    # routes the raw command to the node owning its keys' slot.
    async with redis.pipeline(transaction=False) as pipe:
        for script, keys, args in calls:
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        results: list[Any] = await pipe.execute(raise_on_error=False)
    return results


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _count(value: bytes | str | None) -> int:
    """A partition count as ``counts.lua`` reads it: an integer, else 0."""
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _bad_json(part: int, raw: bytes | str, reason: str) -> str:
    """A set-aside entry as stored in ``gs:{J}:bad`` (cut at ``_BAD_SHOWN`` characters)."""
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
    entry = text[:_BAD_SHOWN].encode("utf-8", "backslashreplace").decode("utf-8")
    return json.dumps({"partition": part, "reason": reason, "entry": entry})


@dataclass(slots=True, kw_only=True)
class _Entry(Queued):
    """A claimed entry: where it came from in Redis, and when it may be fetched."""

    not_before: float
    part: int
    claim: int
    orphan: bool = False
    """Its partition was dropped while it was leased: it goes back to Redis when it returns."""

    def encode(self) -> str:
        return _encode(self, self.not_before)

    @classmethod
    def decode(cls, raw: bytes | str, part: int, claim: int) -> _Entry:
        """The entry ``raw`` from Redis; :class:`BadEntry` saying why when it is malformed."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            raise BadEntry("not UTF-8") from None
        fields = text.split("|", 5)
        if len(fields) != 6:
            raise BadEntry(f"{len(fields)} fields, not 6")
        fp, *counts, not_before, url = fields
        priority = 0.0
        if not url.startswith("http"):
            number, _, url = url.partition("|")
            priority = _number(number, "priority")
        if not _FINGERPRINT.fullmatch(fp) or not -(1 << 63) <= int(fp) < 1 << 63:
            raise BadEntry("the fingerprint is not a 64-bit integer")
        if not all(_COUNT.fullmatch(n) for n in counts):
            raise BadEntry("depth, hops or attempts is not a small count")
        when = _number(not_before, "not_before")
        _check_url(url)
        if int(fp) != fingerprint(url):
            raise BadEntry("the fingerprint is not the URL's")
        depth, hops, attempts = map(int, counts)
        return cls(
            url, int(fp), depth, hops, attempts, priority, not_before=when, part=part, claim=claim
        )


def _encode(entry: Queued, not_before: float) -> str:
    """An entry as Redis keeps it (see the module docstring)."""
    head = f"{entry.fp}|{entry.depth}|{entry.hops}|{entry.attempts}|{not_before!r}"
    if entry.priority:
        return f"{head}|{entry.priority!r}|{entry.url}"
    return f"{head}|{entry.url}"


def _number(text: str, name: str) -> float:
    """A finite float of an entry; :class:`BadEntry` saying which field otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise BadEntry(f"{name} is not a number") from None
    if not math.isfinite(value):
        raise BadEntry(f"{name} is not finite")
    return value


class BadEntry(ValueError):
    """A queue entry from Redis that does not decode; it is set aside (module docstring)."""


def _check_url(url: str) -> None:
    """Raise :class:`BadEntry` unless ``url`` looks like a canonical http(s) URL."""
    if len(url) > _MAX_URL:
        raise BadEntry(f"URL of {len(url)} characters")
    if not url.startswith(("http://", "https://")):
        raise BadEntry("not an http(s) URL")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise BadEntry("URL with characters a canonical URL never has")
    if not host_key(url).partition("://")[2]:
        raise BadEntry("URL without a host")


@dataclass(slots=True)
class _Leaving:
    """A partition given away with requests to its hosts still in flight (host mode)."""

    in_flight: int
    hosts: dict[str, Host[_Entry]]
    """Its hosts' politeness, kept until the last request ends."""


@dataclass(frozen=True, slots=True)
class PartitionCounts:
    """The counts of every partition of a job (:func:`read_counts`)."""

    queued: int = 0
    claimed: int = 0
    seen: int = 0
    finished: int = 0
    busy: dict[int, tuple[int, int]] = field(default_factory=dict)
    """(queued, claimed) of every partition with either."""

    @property
    def waiting(self) -> frozenset[int]:
        """Partitions with queued entries."""
        return frozenset(part for part, (queued, _) in self.busy.items() if queued)

    @property
    def holding(self) -> frozenset[int]:
        """Partitions with claims."""
        return frozenset(part for part, (_, claimed) in self.busy.items() if claimed)


_COUNTS_CHUNK = 1024
"""Partitions per ``counts.lua`` call: Redis serves other clients between chunks."""
_SLOTLESS: weakref.WeakKeyDictionary[Redis, bool] = weakref.WeakKeyDictionary()
"""False for a client whose server turned out to be in cluster mode."""


async def read_counts(redis: RedisClient, job: str, partitions: int) -> PartitionCounts:
    """Every partition's counts. On one server ``counts.lua`` sums them there (a pipeline of a
    few calls); a server in cluster mode keeps each partition in its own slot, so there it is
    one HMGET per partition (about 150 ms of client CPU for 4,096)."""
    keys = [partition_keys(job, part)["counts"] for part in range(partitions)]
    sums = [0, 0, 0, 0]
    busy: dict[int, tuple[int, int]] = {}
    if not isinstance(redis, RedisCluster) and _SLOTLESS.get(redis, True):
        script = redis.register_script(_COUNTS_SCRIPT)
        starts = range(0, partitions, _COUNTS_CHUNK)
        calls: list[ScriptCall] = [(script, keys[i : i + _COUNTS_CHUNK], []) for i in starts]
        try:
            results = await run_scripts(redis, calls)
        except ClusterCrossSlotError:
            _SLOTLESS[redis] = False  # a plain client of a one-node cluster
        else:
            for start, (*chunk, flat) in zip(starts, results, strict=True):
                sums = [total + int(value) for total, value in zip(sums, chunk, strict=True)]
                for i in range(0, len(flat), 3):
                    busy[start + int(flat[i])] = (int(flat[i + 1]), int(flat[i + 2]))
            queued, claimed, seen, finished = sums
            return PartitionCounts(queued, claimed, seen, finished, busy)
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hmget(key, _COUNT_FIELDS)
        rows: list[list[Any]] = await pipe.execute()
    for part, row in enumerate(rows):
        values = [_count(value) for value in row]
        sums = [total + value for total, value in zip(sums, values, strict=True)]
        if values[0] or values[1]:
            busy[part] = (values[0], values[1])
    queued, claimed, seen, finished = sums
    return PartitionCounts(queued, claimed, seen, finished, busy)


class _HostLimiter:
    """The shared per-host limiter of url mode: the script calls that take and give back host
    slots (see the module docstring); the frontier runs them in its own pipelines."""

    def __init__(
        self,
        job: str,
        scripts: dict[str, AsyncScript],
        policy: PolitenessPolicy,
        slot_timeout: float,
    ) -> None:
        self._job = job
        self._acquire = scripts["host_acquire"]
        self._release = scripts["host_release"]
        self._policy = policy
        self._slot_timeout = slot_timeout
        self._id = uuid.uuid4().hex[:12]
        """This frontier's name among the holders (workers never share one)."""
        self._holders = itertools.count(1)
        self._keys: dict[str, list[str]] = {}

    def acquire(self, key: str, slot: HostSlot, want: int) -> tuple[ScriptCall, list[str]]:
        """A call asking for ``want`` slots of host ``key``, and the holder names it offers.

        It answers ``[granted, wait_ms]``: the first ``granted`` holders hold a slot; the rest
        may ask again in ``wait_ms`` milliseconds.
        """
        holders = [f"{self._id}:{next(self._holders)}" for _ in range(want)]
        args: list[Any] = [
            self._policy.per_host,
            repr(self._policy.delay_of(slot)),
            repr(self._slot_timeout),
            repr(_BUSY_RETRY),
            *holders,
        ]
        return (self._acquire, self._keys_of(key), args), holders

    def release(
        self, key: str, holders: list[str], told: HostSlot | None, now: float
    ) -> ScriptCall:
        """A call giving ``holders`` of host ``key`` back.

        ``told`` is the host's local slot after the request's feedback (its next start is then
        spaced from the request's real start), None when no request told anything.
        """
        next_in = "" if told is None else repr(told.next_start - now)
        delay = "" if told is None else repr(self._policy.delay_of(told))
        return (self._release, self._keys_of(key), [next_in, delay, *holders])

    def _keys_of(self, key: str) -> list[str]:
        keys = self._keys.get(key)
        if keys is None:
            named = host_keys(self._job, key)
            keys = self._keys[key] = [named["slots"], named["pace"]]
        return keys


class RedisFrontier:
    """Frontier contract (see :mod:`gossamer.frontier.base`) over partitioned Redis queues.

    See the module docstring for the key layout, claims and how ``done()`` is computed.
    """

    def __init__(
        self,
        redis: RedisClient,
        job: str,
        scope: Scope,
        policy: PolitenessPolicy,
        *,
        partitions: int = 4096,
        owned: Callable[[], Collection[int]] | None = None,
        rules: RulesLookup | None = None,
        lease_timeout: float = 600.0,
        claim_batch: int = 256,
        memory_budget: int = 10_000,
        refresh_interval: float = 1.0,
        defer_acks: bool = False,
        partition_by: Literal["host", "url"] = "host",
        notify: Callable[[Collection[int]], Awaitable[None]] | None = None,
        hints: Callable[[], Awaitable[Collection[int]]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if "{" in job or "}" in job or not job:
            raise ValueError(f"job name {job!r} must be non-empty and free of braces")
        self._redis = redis
        self._job = job
        self._admission = Admission(scope)
        self._policy = policy
        self._partitions = partitions
        self._owned = owned or (lambda: range(partitions))
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
        self._by_url = partition_by == "url"
        self._notify = notify
        self._hints = hints
        self._next_hint = float("-inf")
        self._limiter = (
            _HostLimiter(job, self._scripts, policy, lease_timeout) if self._by_url else None
        )
        self._slots: dict[int, str] = {}
        """Lease token -> the limiter holder name its host slot is held under (url mode)."""
        self._keys: dict[int, dict[str, str]] = {}
        self._hosts: HostScheduler[_Entry] = HostScheduler(
            policy, rules=rules, lease_timeout=lease_timeout, clock=clock
        )
        self._held: dict[int, dict[int, _Entry]] = {}
        """Every claim this worker holds, by partition and claim token."""
        self._sent = SeenSet()
        """Fingerprints this worker has sent to Redis: known seen, no round trip needed."""
        self._duplicates = 0
        self._set_aside_count = 0
        self._snapshot = PartitionCounts()
        self._changes = 0
        self._snapshot_changes = -1
        self._next_refresh = float("-inf")
        self._next_renew = float("-inf")
        self._next_reclaim = float("-inf")
        self._waiting: set[int] = set()
        """Owned partitions believed to have queued entries in Redis."""
        self._keeper: asyncio.Task[None] | None = None
        """The housekeeping under way (see ``_housekeeping``)."""
        self._id = uuid.uuid4().hex[:12]
        """This frontier's name in the fences of partitions it gave away."""
        self._leaving: dict[int, _Leaving] = {}
        """Host mode: partitions given away while requests to their hosts were in flight."""
        self._orphans: dict[int, int] = {}
        """Lease token -> partition, for leases out when their partition was given away."""
        self._fence_seq = itertools.count(1)
        self._fences: list[ScriptCall] = []
        """Fences to lift or shorten with the next call to Redis (see ``_finish``)."""
        self._claim_after: dict[int, float] = {}
        """Partitions another worker still fences: not claimed from before this time."""

    # -- the contract ----------------------------------------------------------------------

    async def add(self, candidates: list[Candidate]) -> AddResult:
        """Canonicalize, scope and dedup candidates; queue the new ones in their partitions."""
        admitted, rejected = self._admission.admit(candidates)
        batches: dict[int, list[tuple[int, str]]] = {}
        duplicates = 0
        batch_fps: set[int] = set()
        for url, key, fp, cand in admitted:
            if fp in batch_fps or fp in self._sent:
                duplicates += 1
                continue
            batch_fps.add(fp)
            entry = _encode(Queued(url, fp, cand.depth, cand.hops, 0, cand.priority), 0.0)
            part = fp % self._partitions if self._by_url else partition_of(key, self._partitions)
            batches.setdefault(part, []).append((fp, entry))
        added = 0
        if batches:
            calls: list[ScriptCall] = []
            for part, rows in batches.items():
                keys = self._part_keys(part)
                args = [x for fp, entry in rows for x in (fp, entry)]
                calls.append(
                    (self._scripts["add"], [keys["seen"], keys["queue"], keys["counts"]], args)
                )
            results = await run_scripts(self._redis, calls)
            self._sent.add_many(list(batch_fps))  # only once Redis has them
            owned = set(self._owned())
            foreign = []
            for part, flags in zip(batches, results, strict=True):
                fresh = sum(int(flag) for flag in flags)
                added += fresh
                if fresh and part in owned:
                    self._waiting.add(part)
                elif fresh:
                    foreign.append(part)
            if foreign and self._notify is not None:
                await self._notify(foreign)
            duplicates += sum(len(rows) for rows in batches.values()) - added
            self._changes += 1
        self._duplicates += duplicates
        return AddResult(added, duplicates, rejected)

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot of a due host, plus those that need none.

        Also the worker's housekeeping: renews claims, refreshes the ``done()`` snapshot and
        claims more entries from owned partitions when memory runs low. By URL, each lease
        that uses a slot also holds one of its host from the shared limiter.
        """
        await self._housekeeping(self._clock())
        for lease in self._hosts.expired():  # a stuck fetch: back to its host's front
            await self.release(lease, None)
        if self._limiter is not None:
            return await self._lease_limited(n)
        return self._hosts.lease(n).leases

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease: its claim is removed and the URL counted finished (once)."""
        entry = self._finish(lease, feedback)
        slot = self._slot_release(lease, feedback) + self._take_fences()
        if entry is None:
            await self._run(slot)
            return
        if self._defer_acks:
            self._unsent.append(entry)  # its claim stays held (and renewed) until sent
            await self._run(slot)  # but the host's slot goes back at once
            return
        await self._send_acks([entry], slot)

    def take_acks(self) -> Callable[[], Awaitable[None]]:
        """With ``defer_acks``: the acks made so far, as a function sending them to Redis.

        Take them just before the commit that makes their records durable and call the
        function after it: a worker killed in between loses no record (its claims expire and
        the URLs are fetched again).
        """
        entries, self._unsent = self._unsent, []
        return lambda: self._send_acks(entries)

    async def _send_acks(self, entries: list[_Entry], extra: Iterable[ScriptCall] = ()) -> None:
        """Acks (and ``extra`` calls, in the same pipeline) to Redis."""
        calls: list[ScriptCall] = list(extra)
        for entry in entries:
            keys = self._part_keys(entry.part)
            calls.append(
                (
                    self._scripts["ack"],
                    [keys["claimed"], keys["deadlines"], keys["counts"]],
                    [entry.claim],
                )
            )
        await self._run(calls)
        for entry in entries:
            self._forget(entry)

    async def _run(self, calls: list[ScriptCall]) -> None:
        if calls:
            await run_scripts(self._redis, calls)

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Count an attempt, store it with a not-before time in the claim; wait in memory."""
        entry = self._finish(lease, feedback)
        await self._run(self._slot_release(lease, feedback) + self._take_fences())
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
        self._hosts.delay(lease.host, entry, self._clock() + after)

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted (claim kept)."""
        entry = self._finish(lease, feedback)
        await self._run(self._slot_release(lease, feedback) + self._take_fences())
        if entry is None:
            return
        if entry.orphan:
            await self._give_back(entry.part, [entry])
        else:
            self._hosts.push_front(lease.host, entry)

    async def rules(self, lease: Lease, rules: Rules, feedback: Feedback | None) -> None:
        """End a ``robots`` lease with its host's rules."""
        self._finish(lease, feedback, rules)
        await self._run(self._slot_release(lease, feedback) + self._take_fences())

    def next_ready(self) -> float | None:
        """Seconds until a held URL may be leasable; a short poll while others hold work."""
        wait = self._hosts.next_ready()
        if wait is not None:
            return wait
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

    @property
    def in_memory(self) -> int:
        """URLs this worker holds in memory waiting to be leased (its queue depth)."""
        return self._hosts.queued

    def stats(self) -> FrontierStats:
        """A frozen snapshot: ``queued`` and ``seen`` are job-wide (last refresh) plus the
        URLs this worker holds in memory; the rest is this worker's."""
        return FrontierStats(
            queued=self._snapshot.queued + self._hosts.queued,
            leased=self._hosts.leased,
            delayed=self._hosts.delayed,
            hosts=self._hosts.hosts,
            seen=max(self._snapshot.seen, len(self._sent)),
            duplicates=self._duplicates,
            rejected=self._admission.rejected,
            set_aside=self._set_aside_count,
        )

    # -- cluster operations ------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read every partition's counts for ``done()``, ``stats()`` and claims."""
        changes = self._changes
        self._snapshot = await read_counts(self._redis, self._job, self._partitions)
        self._snapshot_changes = changes
        self._waiting = set(self._snapshot.waiting & set(self._owned()))
        self._claim_after.clear()  # a fresh look at every partition, fenced ones too
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
        calls: list[ScriptCall] = []
        for part in parts:
            keys = self._part_keys(part)
            calls.append(
                (
                    self._scripts["reclaim"],
                    [keys["claimed"], keys["deadlines"], keys["queue"], keys["counts"]],
                    [repr(now), limit],
                )
            )
        counts: list[int] = await run_scripts(self._redis, calls)
        owned = set(self._owned())
        self._waiting.update(p for p, c in zip(parts, counts, strict=True) if c and p in owned)
        if any(counts):
            self._changes += 1
            log.info(
                "job %s: returned %d expired claims of %d partitions to their queues",
                self._job, sum(counts), sum(1 for c in counts if c),
                extra={"event": "claims-reclaimed", "job": self._job, "claims": sum(counts),
                       "partitions": sum(1 for c in counts if c)},
            )  # fmt: skip
        return sum(counts)

    async def drop_partitions(self, parts: Iterable[int]) -> int:
        """Give every held entry of ``parts`` back to the front of its Redis queue.

        Leased entries go back when their ack, retry or release arrives (an ack still finishes
        the URL). Returns how many entries were given back now.

        By host, the partitions are fenced for their new owner (``fence.lua``) while this
        worker still has requests to their hosts in flight and then until those hosts' next
        start is due: a host never sees both owners at once, nor a gap shorter than its delay.
        """
        dropped = set(parts)
        back: dict[int, list[_Entry]] = {}
        for queued in self._hosts.remove(lambda entry: entry.part in dropped):
            back.setdefault(queued.part, []).append(queued)
        leaving: dict[int, dict[str, Host[_Entry]]] = {}
        if not self._by_url:
            for key in self._hosts.host_keys():
                part = partition_of(key, self._partitions)
                host = self._hosts.forget(key) if part in dropped else None
                if host is not None:  # the host's new owner keeps its politeness now
                    leaving.setdefault(part, {})[key] = host
        in_flight: dict[int, int] = {}
        for lease, leased in self._hosts.out():
            if leased is not None:
                at = leased.part
            elif self._by_url:
                continue
            else:  # its host's robots.txt, in flight to a host of the partition
                at = partition_of(lease.host, self._partitions)
            if at in dropped:
                if leased is not None:
                    leased.orphan = True
                self._orphans[lease.token] = at
                in_flight[at] = in_flight.get(at, 0) + 1
        self._waiting -= dropped
        for part, hosts in leaving.items():
            if in_flight.get(part):
                self._leaving[part] = _Leaving(in_flight[part], hosts)
                self._fence(part, self._lease_timeout)  # until the last request ends
            else:
                self._fence(part, self._due_in(hosts.values()))
        await self._run(self._take_fences())
        total = 0
        for part, entries in back.items():
            total += await self._give_back(part, entries)
            for entry in entries:
                self._forget(entry)
        return total

    async def close(self) -> None:
        """Give back every held claim that is not leased; the Redis client stays open."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            # Its claims must be held here to be given back. A failure of it was or will be
            # met again by the calls below.
            with contextlib.suppress(Exception):
                await keeper
        await self.drop_partitions(set(self._held))

    # -- internals -------------------------------------------------------------------------

    def _part_keys(self, part: int) -> dict[str, str]:
        keys = self._keys.get(part)
        if keys is None:
            keys = self._keys[part] = partition_keys(self._job, part)
        return keys

    async def _housekeeping(self, now: float) -> None:
        """Run the housekeeping: in the background while a host is due (the URLs held now
        are leased at once, the Redis round trips overlap the fetches), else awaited (there
        is nothing to lease before it). Claims are renewed before anything is leased, so no
        deadline slips behind a slow round trip."""
        if now >= self._next_renew:
            await self.renew()
        task = self._keeper
        if task is not None and task.done():
            self._keeper = None
            task.result()  # a failure in the background surfaces here
            task = None
        if task is None:
            if not self._housekeeping_due(now):
                return
            task = self._keeper = asyncio.create_task(self._housekeep(now))
        wait = self._hosts.next_ready()
        if wait is None or wait > 0:
            await asyncio.shield(task)

    def _housekeeping_due(self, now: float) -> bool:
        return (
            (self._hints is not None and now >= self._next_hint)
            or self._refresh_due(now)
            or now >= self._next_reclaim
            or self._claim_due(now)
        )

    def _refresh_due(self, now: float) -> bool:
        """A refresh reads all P partitions (on a Redis Cluster ~150 ms of CPU for 4096): only
        when it can matter, that is when done() could be True or memory is low enough to
        claim more. With hints (other workers name the partitions of ours they filled) a busy
        worker refreshes only every five refresh intervals."""
        idle = not self._held
        if idle and self._snapshot_changes != self._changes:
            return True
        if now < self._next_refresh:
            return False
        if idle:
            return True
        wait = 4 * self._refresh_interval if self._hints is not None else 0.0
        return self._hosts.queued < self._memory_budget // 2 and now >= self._next_refresh + wait

    def _claim_due(self, now: float) -> bool:
        low = self._hosts.queued < self._memory_budget // 2
        return low and next(self._claimable(now), None) is not None

    async def _housekeep(self, now: float) -> None:
        if self._hints is not None and now >= self._next_hint:
            self._next_hint = now + _HINT_POLL
            owned = set(self._owned())
            self._waiting.update(p for p in await self._hints() if p in owned)
        if self._refresh_due(now):
            await self.refresh()
        if now >= self._next_reclaim:
            self._next_reclaim = now + min(self._lease_timeout / 4, 30.0)
            await self._reclaim()
        if self._claim_due(now):
            await self._claim()

    async def _claim(self) -> None:
        """Move entries from owned partitions' queues into memory, up to the memory budget."""
        now = self._clock()
        parts = sorted(self._claimable(now))
        room = self._memory_budget - self._hosts.queued
        parts = parts[: max(1, room // self._claim_batch)]
        deadline = self._wall() + self._lease_timeout
        names = ("queue", "claimed", "deadlines", "counts", "fence")
        calls: list[ScriptCall] = []
        bad: list[tuple[int, int, bytes | str, str]] = []
        for part in parts:
            keys = self._part_keys(part)
            args = [self._claim_batch, repr(deadline)]
            calls.append((self._scripts["claim"], [keys[name] for name in names], args))
        results: list[list[Any]] = await run_scripts(self._redis, calls)
        for part, (last, left, *raws) in zip(parts, results, strict=True):
            if int(last) < 0:  # fenced by its previous owner for ``left`` ms more (or less)
                self._claim_after[part] = now + min(int(left) / 1000, _FENCE_POLL)
                continue
            self._claim_after.pop(part, None)
            if not left:
                self._waiting.discard(part)
            first = int(last) - len(raws) + 1
            for i, raw in enumerate(raws):
                try:
                    self._hold(_Entry.decode(raw, part, first + i))
                except BadEntry as exc:
                    bad.append((part, first + i, raw, str(exc)))
        if any(len(r) > 2 for r in results):
            self._changes += 1
        await self._set_aside(bad)

    async def _set_aside(self, bad: list[tuple[int, int, bytes | str, str]]) -> None:
        """Move claimed entries that do not decode to the job's bad entries (see the module
        docstring): first into ``gs:{J}:bad``, then out of their partition's claims."""
        if not bad:
            return
        keys = bad_keys(self._job)
        async with self._redis.pipeline(transaction=True) as pipe:
            for part, _, raw, reason in bad:
                log.warning(
                    "job %s: set aside a malformed entry of partition %d (%s): %.200r",
                    self._job, part, reason, raw,
                    extra={"event": "entry-set-aside", "job": self._job, "partition": part},
                )  # fmt: skip
                pipe.lpush(keys["entries"], _bad_json(part, raw, reason))
            pipe.ltrim(keys["entries"], 0, BAD_KEPT - 1)
            pipe.incrby(keys["count"], len(bad))
            await pipe.execute()
        calls: list[ScriptCall] = []
        for part, claim, _, _ in bad:
            names = self._part_keys(part)
            keys_of = [names["claimed"], names["deadlines"], names["counts"]]
            calls.append((self._scripts["set_aside"], keys_of, [claim]))
        await self._run(calls)
        self._set_aside_count += len(bad)
        self._changes += 1

    def _claimable(self, now: float) -> Iterator[int]:
        """Owned partitions believed to have queued entries and not fenced now."""
        owned = self._owned()
        after = self._claim_after
        return (p for p in self._waiting if p in owned and after.get(p, now) <= now)

    def _hold(self, entry: _Entry) -> None:
        """Keep a newly claimed entry: in its host's queue, or delayed until not_before."""
        self._held.setdefault(entry.part, {})[entry.claim] = entry
        key = host_key(entry.url)
        wait = entry.not_before - self._wall()
        if wait > 0:
            self._hosts.delay(key, entry, self._clock() + wait)
        else:
            self._hosts.push(key, entry)

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

    # -- the shared host limiter (url mode) ---------------------------------------------------

    async def _lease_limited(self, n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot of a due host, each slot also taken from the
        limiter (one pipeline for every due host), plus those that need none."""
        assert self._limiter is not None
        due = self._hosts.due(n)
        out = due.leases
        if not due.wants:
            return out
        asks = [self._limiter.acquire(want.key, want.host.slot, want.count) for want in due.wants]
        answers = await run_scripts(self._redis, [call for call, _ in asks])
        now = self._clock()
        unused: list[ScriptCall] = []
        for want, (_, holders), (granted, wait_ms) in zip(due.wants, asks, answers, strict=True):
            if granted < want.count:
                self._hosts.defer(want.key, now + wait_ms / 1000)
            leases, used = self._hosts.take(want, granted)
            out += leases
            slotted = (lease.token for lease in leases if lease.kind in ("page", "robots"))
            self._slots.update(zip(slotted, holders[:used], strict=True))
            if used < granted:  # blocked by robots.txt, or given away meanwhile
                unused.append(self._limiter.release(want.key, holders[used:granted], None, now))
        await self._run(unused)
        return out

    def _slot_release(self, lease: Lease, feedback: Feedback | None) -> list[ScriptCall]:
        """The call giving a finished lease's host slot back (none in host mode)."""
        holder = self._slots.pop(lease.token, None)
        if holder is None or self._limiter is None:
            return []
        told = self._hosts.slot(lease.host) if feedback is not None else None
        return [self._limiter.release(lease.host, [holder], told, self._clock())]

    def _finish(
        self, lease: Lease, feedback: Feedback | None, rules: Rules | None = None
    ) -> _Entry | None:
        """End a lease in the scheduler (a ``robots`` one with ``rules``): its entry, None for
        a ``robots`` lease or one ended already. The last request to a partition given away
        lifts its fence down to the delay its hosts still need."""
        if lease.kind == "robots":
            self._hosts.rules(lease, rules, feedback)
            entry = None
        else:
            entry = self._hosts.finish(lease, feedback)
        part = self._orphans.pop(lease.token, None)
        leaving = self._leaving.get(part) if part is not None else None
        if part is not None and leaving is not None:
            leaving.in_flight -= 1
            if leaving.in_flight <= 0:  # the last request there ended: fence its delay only
                del self._leaving[part]
                self._fence(part, self._due_in(leaving.hosts.values()))
        return entry

    def _due_in(self, hosts: Iterable[Host[_Entry]]) -> float:
        """Seconds until every one of ``hosts`` may be requested again (0 if all may now)."""
        now = self._clock()
        due = max((self._policy.ready_at(host.slot) for host in hosts), default=now)
        return min(max(due - now, 0.0), self._lease_timeout)

    def _fence(self, part: int, seconds: float) -> None:
        """Queue a call fencing ``part`` for ``seconds`` (lifting this worker's fence if 0)."""
        keys = [self._part_keys(part)["fence"]]
        keep = math.ceil(self._lease_timeout * 1000)
        args = [self._id, math.ceil(seconds * 1000), next(self._fence_seq), keep]
        self._fences.append((self._scripts["fence"], keys, args))

    def _take_fences(self) -> list[ScriptCall]:
        calls, self._fences = self._fences, []
        return calls

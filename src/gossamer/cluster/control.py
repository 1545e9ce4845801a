"""The control plane of a cluster job: the stored job, membership, leader lease, assignment.

Job-level keys carry the hash tag ``{J}`` (``J`` the job), never a partition's ``{J:p}``, so
they share one Redis Cluster slot and the scripts and transactions below touch one slot only
(a Redis Cluster client runs a MULTI/EXEC transaction only within one slot)::

    gs:{J}:job                 STRING  the job's settings as JSON, without its seeds (a few
                                       KiB), written last by submit
    gs:{J}:origins             SET     the seeds' origins ``scheme://host[:port]/``: what the
                                       scope needs of the seeds (read with SSCAN)
    gs:{J}:submit              HASH    digest, seeds, queued, origins: how far the batched
                                       submit of the seeds got (see :mod:`.seeding`)
    gs:{J}:worker:<name>       STRING  a live worker's figures as JSON; TTL = heartbeat TTL
    gs:{J}:figures             HASH    name -> last figures (kept after the worker is gone)
    gs:{J}:alive               ZSET    name -> when its heartbeat runs out (Redis' own clock,
                                       ms): the leader reads the live names in one command
    gs:{J}:leader              STRING  the leader's name; PX TTL, renewed by the holder
    gs:{J}:assignment          HASH    name -> owned partition ranges, e.g. ``0-99,200-249``
    gs:{J}:assignment:version  STRING  incremented on every published assignment
    gs:{J}:owners              HASH    partition -> its owner's name, written with the
                                       assignment: a worker reads the owners of the
                                       partitions it fills, never the whole table
    gs:{J}:wake:<name>         SET     partitions of worker <name> others just filled
    gs:{J}:state               STRING  ``paused`` or ``stopped`` (absent: running); set by
                                       ``cluster pause|resume|stop``, read by every worker
                                       in its keeper's loop: paused, it leases nothing;
                                       stopped, it finishes its in-flight URLs and exits

The leader's :class:`~gossamer.cluster.balancer.Balancer` decides the assignment and publishes
it here; workers read the version (one GET) and, when it moves, their own row, never every
row: what each worker reads stays the same however many workers the job has. Changes are
announced on two pub/sub channels, so workers need not poll for them (:mod:`.notices`; a
slow poll remains for what a dropped subscription missed)::

    gs:{J}:notify              CHANNEL ``assignment`` (new version), ``leader`` (left), ``state``
    gs:{J}:notify:<name>       CHANNEL ``wake``: others filled partitions of worker <name>

A heartbeat is one script call, and so is a follower's try at the leader lease, which tells
it when the lease could next fall free: followers try again then, not every half second, or
at once when a leader that leaves resigns.

What Redis answers is read as hostile: a worker name, a figures row or an assignment row that
does not decode is skipped with a warning; a malformed assignment version raises
:class:`MalformedReply` (a Redis error: a clear one-line message, never a traceback).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoPermissionError, RedisError

from gossamer.frontier.redis import RedisClient, bad_keys, read_counts
from gossamer.frontier.redis.faults import faulty

log = logging.getLogger(__name__)

MAX_PARTITIONS = 65_536
"""No partition number reaches this (the ``partitions`` setting's bound)."""
_RANGE = re.compile(r"(\d{1,5})(?:-(\d{1,5}))?")
_INTEGER = re.compile(rb"-?\d{1,19}")
JOB_STATES = ("running", "paused", "stopped")
"""What ``gs:{J}:state`` may say; anything else reads as ``running``."""


class MalformedReply(RedisError):
    """Redis holds a control value gossamer never wrote (one line, shown as a Redis failure)."""


_LEAD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then
    left = tonumber(ARGV[2])
  end
  return -math.max(left, 1)
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
_BEAT = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ms + tonumber(ARGV[3]), ARGV[1])
return 1
"""
_WAKE = """
local a = 1
for _, key in ipairs(KEYS) do
  local last = a + 1 + tonumber(ARGV[a + 1])
  for j = a + 2, last, 1000 do
    redis.call('SADD', key, unpack(ARGV, j, math.min(j + 999, last)))
  end
  redis.pcall('PUBLISH', ARGV[a], 'wake')  -- a notice, not a duty: refused, polls stand in
  a = last + 1
end
return #KEYS
"""
_LIVE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""
_RESIGN = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.pcall('PUBLISH', ARGV[2], 'leader')  -- followers try the lease now, not when it ends
  return redis.call('DEL', KEYS[1])
end
return 0
"""
_PUBLISH = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
redis.call('DEL', KEYS[2], KEYS[4])
local rows = tonumber(ARGV[2])
for i = 3, 2 + 2 * rows, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
for i = 3 + 2 * rows, #ARGV - 1, 2 do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
end
local version = redis.call('INCR', KEYS[3])
redis.pcall('PUBLISH', ARGV[#ARGV], 'assignment')  -- refused by an ACL: polls stand in
return version
"""


def job_keys(job: str) -> dict[str, str]:
    """The job-level keys (all tagged ``{job}``); worker keys are ``worker`` + name."""
    if not job or "{" in job or "}" in job:
        raise ValueError(f"job name {job!r} must be non-empty and free of braces")
    tag = f"gs:{{{job}}}:"
    names = ("job", "origins", "submit", "figures", "leader", "assignment", "owners")
    keys = {name: tag + name for name in (*names, "assignment:version", "state", "alive")}
    keys["worker"] = tag + "worker:"
    keys["wake"] = tag + "wake:"
    keys["notify"] = tag + "notify"
    return keys


# -- assignment -----------------------------------------------------------------------------


def format_ranges(parts: Iterable[int]) -> str:
    """``{0, 1, 2, 7}`` -> ``"0-2,7"``."""
    out: list[str] = []
    ordered = sorted(parts)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_ranges(text: str) -> frozenset[int]:
    """``"0-2,7"`` -> ``{0, 1, 2, 7}``; ValueError unless every item is a partition or an
    ascending range of partitions below :data:`MAX_PARTITIONS`."""
    parts: set[int] = set()
    for item in filter(None, text.split(",")):
        match = _RANGE.fullmatch(item)
        if match is None:
            raise ValueError(f"{item[:40]!r} is not a partition range")
        low = int(match[1])
        high = int(match[2] or low)
        if not low <= high < MAX_PARTITIONS:
            raise ValueError(f"{item!r} is not a partition range below {MAX_PARTITIONS}")
        parts.update(range(low, high + 1))
    return frozenset(parts)


# -- the control plane ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker as ``status`` shows it."""

    name: str
    alive: bool
    figures: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JobTotals:
    """Counts summed over every partition of a job."""

    queued: int
    claimed: int
    seen: int
    finished: int
    set_aside: int = 0
    """Malformed entries moved aside (``gs:{J}:bad``, see :mod:`gossamer.frontier.redis`)."""
    aside: Mapping[int, str] = field(default_factory=dict)
    """Partitions set aside (a key of the wrong type...) and why; left out of the counts
    (see :mod:`gossamer.frontier.redis.faults`)."""

    @property
    def done(self) -> bool:
        return self.seen > 0 and self.queued == 0 and self.claimed == 0


class Control:
    """One process' handle on a job's control keys (worker, leader and observer alike)."""

    def __init__(self, redis: RedisClient, job: str) -> None:
        self.redis = redis
        self.job = job
        self.keys = job_keys(job)
        self._lead = redis.register_script(_LEAD)
        self._resign = redis.register_script(_RESIGN)
        self._publish = redis.register_script(_PUBLISH)
        self._beat = redis.register_script(_BEAT)
        self._alive = redis.register_script(_LIVE)
        self._wake = redis.register_script(_WAKE)

    # job

    async def store_job(self, settings_json: str) -> None:
        """Store the job's settings; workers waiting for it start."""
        await self.redis.set(self.keys["job"], settings_json)

    async def origins(self) -> int:
        """How many seed origins the job holds."""
        return int(await self.redis.scard(self.keys["origins"]))

    async def load_job(self) -> str | None:
        """The stored settings JSON, or None before submit."""
        raw = await self.redis.get(self.keys["job"])
        try:
            return None if raw is None else _text(raw)
        except UnicodeDecodeError:
            raise MalformedReply("malformed reply: the stored job is not UTF-8") from None

    async def set_state(self, state: str) -> None:
        """Run, pause or stop the job's workers (one of :data:`JOB_STATES`)."""
        if state not in JOB_STATES:
            raise ValueError(f"job state {state!r} is not one of {', '.join(JOB_STATES)}")
        if state == "running":
            await self.redis.delete(self.keys["state"])
        else:
            await self.redis.set(self.keys["state"], state)
        with contextlib.suppress(NoPermissionError):  # a notice: without it, polls see the state
            await self.redis.publish(self.keys["notify"], "state")

    async def state(self) -> str:
        """``running``, ``paused`` or ``stopped`` (a value gossamer never wrote: running)."""
        raw = await self.redis.get(self.keys["state"])
        text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
        return text if text in JOB_STATES else "running"

    async def totals(self, partitions: int) -> JobTotals:
        """Queued, claimed, seen and finished URLs summed over every partition (but those set
        aside, named in ``aside``: a look finds those whose counts are unreadable too)."""
        counts = await read_counts(self.redis, self.job, partitions)
        try:
            bad = _count(await self.redis.get(bad_keys(self.job)["count"]))
        except RedisError as exc:
            if not faulty(exc):
                raise
            bad = 0  # not a STRING: the workers said so (bad-entries-unusable)
        c = counts
        return JobTotals(c.queued, c.claimed, c.seen, c.finished, bad, dict(c.aside))

    # membership

    async def heartbeat(self, name: str, figures: Mapping[str, Any], ttl: float) -> None:
        """Say ``name`` is alive for ``ttl`` seconds, with its figures (one script call)."""
        data = json.dumps(dict(figures), sort_keys=True)
        keys = [self.keys["worker"] + name, self.keys["figures"], self.keys["alive"]]
        await self._beat(keys=keys, args=[name, data, int(ttl * 1000)])

    async def leave(self, name: str, figures: Mapping[str, Any]) -> None:
        """Remove ``name``'s heartbeat (its partitions move at once) and its leadership."""
        data = json.dumps(dict(figures), sort_keys=True)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys["worker"] + name)
            pipe.zrem(self.keys["alive"], name)
            pipe.hset(self.keys["figures"], name, data)
            await pipe.execute()
        await self._resign(keys=[self.keys["leader"]], args=[name, self.keys["notify"]])

    async def workers(self) -> list[WorkerInfo]:
        """Every worker that ever joined, alive or not, by name (malformed rows skipped)."""
        raw = await self.redis.hgetall(self.keys["figures"])
        figures: dict[str, dict[str, Any]] = {}
        for key, value in raw.items():
            name, data = _name(key), _figures(value)
            if name is None or data is None:
                log.warning("job %s: skipped malformed worker figures %.80r", self.job, key)
                continue
            figures[name] = data
        live = await self._live(sorted(figures))
        return [WorkerInfo(name, name in live, figures[name]) for name in sorted(figures)]

    async def figures_of(self, names: list[str]) -> list[WorkerInfo]:
        """The last figures of ``names`` (one HMGET; rows that do not decode: empty)."""
        if not names:
            return []
        raw = await self.redis.hmget(self.keys["figures"], names)
        figures = [None if value is None else _figures(value) for value in raw]
        return [WorkerInfo(n, True, f or {}) for n, f in zip(names, figures, strict=True)]

    async def live_workers(self) -> list[str]:
        """Names whose heartbeat has not run out (one script call, however many workers)."""
        raw = await self._alive(keys=[self.keys["alive"]])
        return sorted(name for name in map(_name, raw) if name is not None)

    async def alive(self, names: Collection[str]) -> Collection[str]:
        """Which of ``names`` are live workers (heartbeat not run out), in one pipeline."""
        return await self._live(sorted(names))

    async def _live(self, names: list[str]) -> set[str]:
        if not names:
            return set()
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.exists(self.keys["worker"] + name)
            flags = await pipe.execute()
        return {name for name, flag in zip(names, flags, strict=True) if flag}

    # leader lease

    async def lead(self, name: str, ttl: float) -> bool:
        """Take or renew the leader lease; True while ``name`` holds it."""
        return await self.try_lead(name, ttl) == 0.0

    async def try_lead(self, name: str, ttl: float) -> float:
        """Take or renew the leader lease: 0.0 while ``name`` holds it, else the seconds
        until another's lease runs out unless renewed (at most ``ttl``)."""
        held = _integer(
            await self._lead(keys=[self.keys["leader"]], args=[name, int(ttl * 1000)]), "lease"
        )
        if held > 0:
            return 0.0
        return ttl if held >= 0 else min(ttl, -held / 1000)

    async def leader(self) -> str | None:
        """The leader's name (undecodable bytes shown as U+FFFD), None without a leader."""
        raw = await self.redis.get(self.keys["leader"])
        if isinstance(raw, bytes):
            return raw.decode("utf-8", "replace")
        return raw

    # assignment

    async def assignment(self) -> dict[str, frozenset[int]]:
        """The published assignment, name -> partitions (malformed rows skipped)."""
        raw = await self.redis.hgetall(self.keys["assignment"])
        out: dict[str, frozenset[int]] = {}
        for key, value in raw.items():
            name, parts = _name(key), self._ranges(value)
            if name is not None and parts is not None:
                out[name] = parts
        return out

    async def version(self) -> int:
        """The assignment's version (0 before the first); :class:`MalformedReply` if garbled."""
        return _integer(await self.redis.get(self.keys["assignment:version"]), "assignment version")

    async def versioned(self) -> tuple[int, dict[str, frozenset[int]]]:
        """The assignment's version and the assignment, read together."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys["assignment:version"])
            pipe.hgetall(self.keys["assignment"])
            version, raw = await pipe.execute()
        out: dict[str, frozenset[int]] = {}
        for key, value in raw.items():
            name, parts = _name(key), self._ranges(value)
            if name is not None and parts is not None:
                out[name] = parts
        return _integer(version, "assignment version"), out

    async def owned_by(self, name: str) -> tuple[int, frozenset[int]]:
        """The assignment version and ``name``'s partitions in it (one row read, whatever the
        number of workers)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys["assignment:version"])
            pipe.hget(self.keys["assignment"], name)
            version, ranges = await pipe.execute()
        return _integer(version, "assignment version"), self._ranges(ranges) or frozenset()

    async def assigned(self) -> int:
        """How many workers the published assignment names."""
        return int(await self.redis.hlen(self.keys["assignment"]))

    async def owners_of(self, parts: Iterable[int]) -> dict[int, str | None]:
        """The owner of each of ``parts`` by the published assignment (None: no owner, or a
        name that does not decode)."""
        ordered = sorted(set(parts))
        if not ordered:
            return {}
        raw = await self.redis.hmget(self.keys["owners"], ordered)
        return {
            part: None if name is None else _name(name)
            for part, name in zip(ordered, raw, strict=True)
        }

    def _ranges(self, raw: bytes | str | None) -> frozenset[int] | None:
        """An assignment row's partitions; None (and a warning) when it does not decode."""
        if raw is None:
            return frozenset()
        try:
            return parse_ranges(raw.decode("ascii") if isinstance(raw, bytes) else raw)
        except ValueError as exc:
            log.warning("job %s: skipped a malformed assignment row: %s", self.job, exc)
            return None

    async def wake(self, owners: Mapping[str, Iterable[int]]) -> None:
        """Tell each owner which of its partitions just got new entries, and announce it on
        the owner's channel (one script call: the wake sets share the job's slot)."""
        keys: list[str] = []
        args: list[str | int] = []
        for name, parts in owners.items():
            listed = list(parts)
            if listed:
                keys.append(self.keys["wake"] + name)
                args += [self.keys["notify"] + ":" + name, len(listed), *listed]
        if keys:
            await self._wake(keys=keys, args=args)

    async def woken(self, name: str, most: int = 100_000) -> set[int]:
        """Take the partitions others named for ``name`` since the last call."""
        raw = await self.redis.spop(self.keys["wake"] + name, most)
        items = [p for p in raw or () if isinstance(p, bytes | str)]
        return {int(p) for p in items if _INTEGER.fullmatch(_bytes(p))}  # garbage skipped

    async def publish(self, leader: str, assignment: Mapping[str, Iterable[int]]) -> int:
        """Publish a new assignment if ``leader`` still holds the lease; its version or -1."""
        rows = sorted(assignment.items())
        args: list[str | int] = [leader, len(rows)]
        for name, parts in rows:
            args += [name, format_ranges(parts)]
        for name, parts in rows:
            for part in parts:
                args += [part, name]
        keys = [self.keys["leader"], self.keys["assignment"], self.keys["assignment:version"]]
        keys.append(self.keys["owners"])
        args.append(self.keys["notify"])  # a channel, not a key: Redis Cluster routes it
        return int(await self._publish(keys=keys, args=args))


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _name(raw: bytes | str) -> str | None:
    """A worker name from Redis; None unless it is UTF-8 (gossamer writes no other)."""
    try:
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return None


def _figures(raw: bytes | str) -> dict[str, Any] | None:
    """A worker's figures from Redis; None unless they are a JSON object."""
    try:
        data = json.loads(raw)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        return None
    return data if isinstance(data, dict) else None


def _integer(raw: bytes | str | int | None, what: str) -> int:
    """An integer Redis holds for us (0 when absent); :class:`MalformedReply` if it is not."""
    if raw is None or isinstance(raw, int):
        return raw or 0
    if not _INTEGER.fullmatch(_bytes(raw)):
        raise MalformedReply(f"malformed reply: the {what} is {_bytes(raw)[:40]!r}")
    return int(raw)


def _count(raw: bytes | str | None) -> int:
    """A counter Redis holds for us; 0 (and a warning) when it is not an integer."""
    try:
        return _integer(raw, "counter")
    except MalformedReply as exc:
        log.warning("%s", exc)
        return 0

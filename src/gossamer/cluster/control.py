"""The control plane of a cluster job: the stored job, membership, leader lease, assignment.

Job-level keys carry the hash tag ``{J}`` (``J`` the job), never a partition's ``{J:p}``, so
they share one Redis Cluster slot and the scripts and transactions below touch one slot only
(a Redis Cluster client runs a MULTI/EXEC transaction only within one slot)::

    gs:{J}:job                 STRING  the job's CrawlSettings as JSON (written by submit)
    gs:{J}:worker:<name>       STRING  a live worker's figures as JSON; TTL = heartbeat TTL
    gs:{J}:figures             HASH    name -> last figures (kept after the worker is gone)
    gs:{J}:leader              STRING  the leader's name; PX TTL, renewed by the holder
    gs:{J}:assignment          HASH    name -> owned partition ranges, e.g. ``0-99,200-249``
    gs:{J}:assignment:version  STRING  incremented on every published assignment
    gs:{J}:wake:<name>         SET     partitions of worker <name> others just filled

The leader's :class:`~gossamer.cluster.balancer.Balancer` decides the assignment and publishes
it here; workers poll the version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gossamer.frontier.redis import RedisClient, read_counts

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RESIGN = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
_PUBLISH = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
redis.call('DEL', KEYS[2])
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
return redis.call('INCR', KEYS[3])
"""


def job_keys(job: str) -> dict[str, str]:
    """The job-level keys (all tagged ``{job}``); worker keys are ``worker`` + name."""
    if not job or "{" in job or "}" in job:
        raise ValueError(f"job name {job!r} must be non-empty and free of braces")
    tag = f"gs:{{{job}}}:"
    names = ("job", "figures", "leader", "assignment", "assignment:version")
    keys = {name: tag + name for name in names}
    keys["worker"] = tag + "worker:"
    keys["wake"] = tag + "wake:"
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
    """``"0-2,7"`` -> ``{0, 1, 2, 7}``."""
    parts: set[int] = set()
    for item in filter(None, text.split(",")):
        low, _, high = item.partition("-")
        parts.update(range(int(low), int(high or low) + 1))
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

    @property
    def done(self) -> bool:
        return self.seen > 0 and self.queued == 0 and self.claimed == 0


class Control:
    """One process' handle on a job's control keys (worker, leader and observer alike)."""

    def __init__(self, redis: RedisClient, job: str) -> None:
        self.redis = redis
        self.job = job
        self.keys = job_keys(job)
        self._renew = redis.register_script(_RENEW)
        self._resign = redis.register_script(_RESIGN)
        self._publish = redis.register_script(_PUBLISH)

    # job

    async def store_job(self, settings_json: str) -> None:
        """Store the job's settings; workers waiting for it start."""
        await self.redis.set(self.keys["job"], settings_json)

    async def load_job(self) -> str | None:
        """The stored settings JSON, or None before submit."""
        raw = await self.redis.get(self.keys["job"])
        return None if raw is None else _text(raw)

    async def totals(self, partitions: int) -> JobTotals:
        """Queued, claimed, seen and finished URLs summed over every partition."""
        counts = await read_counts(self.redis, self.job, partitions)
        return JobTotals(counts.queued, counts.claimed, counts.seen, counts.finished)

    # membership

    async def heartbeat(self, name: str, figures: Mapping[str, Any], ttl: float) -> None:
        """Say ``name`` is alive for ``ttl`` seconds, with its figures."""
        data = json.dumps(dict(figures), sort_keys=True)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys["worker"] + name, data, px=int(ttl * 1000))
            pipe.hset(self.keys["figures"], name, data)
            await pipe.execute()

    async def leave(self, name: str, figures: Mapping[str, Any]) -> None:
        """Remove ``name``'s heartbeat (its partitions move at once) and its leadership."""
        data = json.dumps(dict(figures), sort_keys=True)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys["worker"] + name)
            pipe.hset(self.keys["figures"], name, data)
            await pipe.execute()
        await self._resign(keys=[self.keys["leader"]], args=[name])

    async def workers(self) -> list[WorkerInfo]:
        """Every worker that ever joined, alive or not, by name."""
        raw = await self.redis.hgetall(self.keys["figures"])
        figures = {_text(k): json.loads(_text(v)) for k, v in raw.items()}
        live = await self._live(sorted(figures))
        return [WorkerInfo(name, name in live, figures[name]) for name in sorted(figures)]

    async def live_workers(self) -> list[str]:
        """Names whose heartbeat key exists."""
        names = sorted(_text(k) for k in await self.redis.hkeys(self.keys["figures"]))
        return sorted(await self._live(names))

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
        px = int(ttl * 1000)
        if await self._renew(keys=[self.keys["leader"]], args=[name, px]):
            return True
        return bool(await self.redis.set(self.keys["leader"], name, nx=True, px=px))

    async def leader(self) -> str | None:
        raw = await self.redis.get(self.keys["leader"])
        return None if raw is None else _text(raw)

    # assignment

    async def assignment(self) -> dict[str, frozenset[int]]:
        """The published assignment, name -> partitions."""
        raw = await self.redis.hgetall(self.keys["assignment"])
        return {_text(k): parse_ranges(_text(v)) for k, v in raw.items()}

    async def version(self) -> int:
        return int(await self.redis.get(self.keys["assignment:version"]) or 0)

    async def owned_by(self, name: str) -> tuple[int, frozenset[int]]:
        """The assignment version and ``name``'s partitions in it."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys["assignment:version"])
            pipe.hget(self.keys["assignment"], name)
            version, ranges = await pipe.execute()
        return int(version or 0), parse_ranges(_text(ranges or b""))

    async def wake(self, owners: Mapping[str, Iterable[int]]) -> None:
        """Tell each owner which of its partitions just got new entries (one pipeline)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for name, parts in owners.items():
                pipe.sadd(self.keys["wake"] + name, *parts)
            await pipe.execute()

    async def woken(self, name: str, most: int = 100_000) -> set[int]:
        """Take the partitions others named for ``name`` since the last call."""
        raw = await self.redis.spop(self.keys["wake"] + name, most)
        return {int(p) for p in raw or ()}

    async def publish(self, leader: str, assignment: Mapping[str, Iterable[int]]) -> int:
        """Publish a new assignment if ``leader`` still holds the lease; its version or -1."""
        args: list[str] = [leader]
        for name, parts in sorted(assignment.items()):
            args += [name, format_ranges(parts)]
        keys = [self.keys["leader"], self.keys["assignment"], self.keys["assignment:version"]]
        return int(await self._publish(keys=keys, args=args))


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value

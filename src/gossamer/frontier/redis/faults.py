"""Partitions set aside: one whose keys Redis refuses to work on is left, the job goes on.

A partition key of the wrong type (``counts`` a STRING, say: Redis answers ``WRONGTYPE``), a
counter that is not a number, or a script's reply of the wrong shape is hostile input of one
partition: it must not stop the workers nor ``cluster status``. The first worker to meet it
records the partition in the job's ``gs:{J}:aside`` HASH (partition -> which key holds what,
or the error) and logs it once for the job (``partition-set-aside``); from then on no worker
claims from it, adds to it nor waits for it, and every look at the job's counts leaves it out
(and names it: :func:`read_aside`). What the partition held stays in Redis as it was for an
operator to mend; URLs found for it later are stored with the job's bad entries
(``gs:{J}:bad``, reason ``partition set aside``) rather than lost.

Once an operator mends the key (deletes it, or gives it back its type), the partition is taken
up again without a restart: each worker looks at the partitions it set aside or heard of
every :data:`RETAKE_EVERY` seconds at most (:meth:`Faults.retake`, from the frontier's
refresh). The owner reads each key of a partition it owns with a command of the key's type
(the documented ACL has no TYPE), and the counters of ``counts``; when all answer, it deletes
the partition's field of ``gs:{J}:aside`` and logs it (``partition-taken-up``). Another
worker takes it up once its field is gone. Its claims lapsed meanwhile come back to its queue
with the leader's next reclaim; the URLs kept with the bad entries stay there. A partition set
aside again after it was taken up (a key the probes do not read, its ``seen:n`` SETs, is
still wrong) is not looked at before ``RETAKE_EVERY * 2**n`` seconds after its ``n``-th take
up, :data:`RETAKE_MOST` at most.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from redis.exceptions import RedisError

from gossamer.frontier.redis.keys import BAD_KEPT, PartitionKeys, aside_key, bad_json, bad_keys
from gossamer.frontier.redis.scripts import RedisClient, refused

__all__ = ["ASIDE_SHOWN", "RETAKE_EVERY", "RETAKE_MOST", "TYPES", "Faults", "faulty", "read_aside"]

TYPES = {
    "queue": "list",
    "ranked": "zset",
    "ranks": "hash",
    "claimed": "hash",
    "deadlines": "zset",
    "counts": "hash",
    "fence": "hash",
    "hosts": "hash",
    "holder": "string",
    "pages": "hash",
    "revisits": "hash",
    "due": "zset",
}
"""The type of each key of a partition (its ``seen:n`` SETs aside: see :mod:`.keys`)."""
ASIDE_SHOWN = 300
"""Characters of a reason kept in ``gs:{J}:aside`` (and read back)."""
_ASIDE_READ = 1 << 16
"""Partitions set aside read back, at most (a job has fewer partitions)."""
RETAKE_EVERY = 5.0
"""Seconds between a worker's looks at the partitions set aside, at least."""
RETAKE_MOST = 640.0
"""Seconds a partition set aside again and again waits for its next look, at most."""
_RETAKE_MOST = 64
"""Partitions set aside one look reads the keys of, at most (and as many others' records)."""
_PROBES = {"hash": "HLEN", "list": "LLEN", "zset": "ZCARD", "string": "GET"}
"""A command of each type, answered WRONGTYPE by a key of another (as ``lua/_types.lua``)."""
_COUNTERS = ("queued", "claimed", "finished", "token", "order", "front", "hosts")
"""The fields of ``counts`` the scripts add to (HINCRBY): a value that is not an integer
fails them."""

log = logging.getLogger(__name__)


def faulty(error: object) -> bool:
    """Redis refused a call of one partition for its data (a key of another type, a counter
    that is not a number): the partition is set aside. An ACL refusal is the user's, not the
    partition's: it stops the worker with its own message."""
    if not isinstance(error, BaseException) or not refused(error):
        return False
    text = str(error)
    return not ("NOPERM" in text or "no permissions" in text or "can't run this command" in text)


class Faults:
    """The partitions of a job set aside, as this worker knows them (see the module)."""

    def __init__(self, redis: RedisClient, keys: PartitionKeys) -> None:
        self._redis = redis
        self._keys = keys
        self.parts: dict[int, str] = {}
        """Partition -> what is wrong with it."""
        self.kept = 0
        """URLs found for partitions set aside, stored with the job's bad entries."""
        self.unkept = 0
        """URLs found for partitions set aside while Redis refused the job's bad entries."""
        self._bad_said = False
        self._retake_at = float("-inf")
        self._taken: dict[int, int] = {}
        """Partition -> times this worker took it up again."""
        self._not_before: dict[int, float] = {}
        """Partition taken up -> when it may be looked at again once set aside again."""

    def __contains__(self, part: object) -> bool:
        return part in self.parts

    async def answered(self, parts: list[int], results: list[Any]) -> bool:
        """Whether every call of ``parts`` (``results`` their answers, in order) went through;
        a partition whose call Redis refused for its data is set aside, another error raised."""
        failed = [(p, r) for p, r in zip(parts, results, strict=True) if isinstance(r, Exception)]
        for _, error in failed:
            if not faulty(error):
                raise error
        for part, error in failed:
            await self.set_aside(part, error)
        return not failed

    async def through(self, parts: Sequence[int], results: Sequence[Any]) -> list[tuple[int, Any]]:
        """The (partition, answer) of each call of ``parts`` (``results`` their answers, in
        order) that went through; a partition whose call Redis refused for its data is set
        aside, another error raised."""
        failed = [(p, r) for p, r in zip(parts, results, strict=True) if isinstance(r, Exception)]
        if not failed:
            return list(zip(parts, results, strict=True))
        await self.answered([p for p, _ in failed], [r for _, r in failed])
        return [(p, r) for p, r in zip(parts, results, strict=True) if not isinstance(r, Exception)]

    async def found(self, aside: Mapping[int, str], broken: Iterable[int]) -> None:
        """A look at the job found ``aside`` set aside (by this worker or another), and the
        ``broken`` ones of them not recorded yet: those are recorded now."""
        broken = set(broken)
        self.parts.update((part, why) for part, why in aside.items() if part not in broken)
        for part in sorted(broken):
            await self.set_aside(part, aside[part])

    async def keep(self, part: int, entries: Iterable[str]) -> int:
        """Store ``entries`` (as workers write them) of ``part``, set aside, with the job's bad
        entries rather than lose them; how many."""
        keys = bad_keys(self._keys.job)
        rows = [bad_json(part, entry, "partition set aside") for entry in entries]
        if not rows:
            return 0
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lpush(keys["entries"], *rows)
                pipe.ltrim(keys["entries"], 0, BAD_KEPT - 1)
                pipe.incrby(keys["count"], len(rows))
                await pipe.execute()
        except RedisError as exc:
            if not faulty(exc):
                raise
            self.bad_refused(exc)
            self.unkept += len(rows)
            return len(rows)
        self.kept += len(rows)
        return len(rows)

    def bad_refused(self, error: object) -> None:
        """Redis refused the job's bad entries (``gs:{J}:bad`` or its count of another type):
        said once; the worker goes on without them."""
        if not self._bad_said:
            self._bad_said = True
            text = str(error)
            log.warning(
                "job %s: its bad entries (%s) are unusable, the worker goes on without them: %s",
                self._keys.job,
                " or ".join(bad_keys(self._keys.job).values()),
                "a key of another type" if "WRONGTYPE" in text else text[:200],
                extra={"event": "bad-entries-unusable", "job": self._keys.job},
            )

    async def set_aside(self, part: int, error: object) -> None:
        """Set ``part`` aside for ``error`` (an exception Redis answered, or a description of
        a reply of the wrong shape): recorded for the job, logged once."""
        if part in self.parts:
            return
        reason = (await self._describe(part, error))[:ASIDE_SHOWN]
        self.parts[part] = reason
        job = self._keys.job
        try:
            first = await self._redis.hsetnx(aside_key(job), str(part), reason)
        except RedisError as exc:
            if not faulty(exc):
                raise
            first = True  # the job's record itself is unusable: this worker logs its own
        if first:
            log.warning(
                "job %s: partition %d set aside, its URLs are no longer crawled: %s",
                job,
                part,
                reason,
                extra={"event": "partition-set-aside", "job": job, "partition": part},
            )

    async def retake(self, owned: Container[int], now: float) -> set[int]:
        """Take up again the partitions set aside whose keys answer now (those of ``owned``;
        the others once their record is gone: see the module), if the last look was
        :data:`RETAKE_EVERY` seconds before ``now`` or more; the owned ones taken up."""
        if not self.parts or now < self._retake_at:
            return set()
        self._retake_at = now + RETAKE_EVERY
        due = self._not_before
        mine = [p for p in sorted(self.parts) if p in owned and due.get(p, now) <= now]
        mine = mine[:_RETAKE_MOST]
        others = [part for part in sorted(self.parts) if part not in owned][:_RETAKE_MOST]
        if not mine and not others:
            return set()
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in mine:
                for key, kind in zip(self._keys.of(part, *TYPES), TYPES.values(), strict=True):
                    pipe.execute_command(_PROBES[kind], key)
                pipe.hmget(self._keys(part)["counts"], _COUNTERS)
            if others:
                pipe.hmget(aside_key(self._keys.job), [str(part) for part in others])
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, Exception) and not faulty(reply):
                raise reply
        step = len(TYPES) + 1
        sound = {p for i, p in enumerate(mine) if _sound(replies[i * step : (i + 1) * step])}
        await self._take_up(sorted(sound), now)
        await self._record([part for part in mine if part not in sound])
        if others and isinstance(records := replies[-1], list):
            for part, record in zip(others, records, strict=True):
                if record is None:  # taken up by its owner, or an operator deleted the record
                    self.parts.pop(part, None)
        return sound

    async def _record(self, parts: list[int]) -> None:
        """Record ``parts``, still set aside, for the job again where their record is gone (an
        operator deleted it with the key still of the wrong type): ``status`` names them."""
        if parts:
            async with self._redis.pipeline(transaction=False) as pipe:
                for part in parts:
                    pipe.hsetnx(aside_key(self._keys.job), str(part), self.parts[part])
                await pipe.execute(raise_on_error=False)

    async def _take_up(self, parts: list[int], now: float) -> None:
        """Forget ``parts`` were set aside, delete their records, log those this worker did."""
        if not parts:
            return
        job = self._keys.job
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in parts:
                pipe.hdel(aside_key(job), str(part))
            deleted: list[Any] = await pipe.execute(raise_on_error=False)
        for part, gone in zip(parts, deleted, strict=True):
            if isinstance(gone, Exception) and not faulty(gone):
                raise gone
            why = self.parts.pop(part, "")
            taken = self._taken[part] = self._taken.get(part, 0) + 1
            self._not_before[part] = now + min(RETAKE_EVERY * 2 ** min(taken, 16), RETAKE_MOST)
            if gone == 0:  # another worker took it up (or an operator deleted the record)
                continue
            log.warning(
                "job %s: partition %d taken up again, its keys answer (it was set aside: %s)",
                job,
                part,
                why,
                extra={"event": "partition-taken-up", "job": job, "partition": part},
            )

    async def _describe(self, part: int, error: object) -> str:
        """Which key of ``part`` holds which wrong type (TYPE, where the user's ACL allows it),
        else what Redis answered (the scripts name the key: ``lua/_types.lua``)."""
        keys = self._keys.of(part, *TYPES)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.type(key)
                types: list[Any] = await pipe.execute()
        except RedisError:  # not allowed (the documented ACL has no TYPE), or an outage
            types = []
        for key, want, got in zip(keys, TYPES.values(), types, strict=False):
            kind = got.decode() if isinstance(got, bytes) else str(got)
            if kind not in ("none", want):
                return f"{key} holds a {kind}, not a {want}"
        return str(error).removeprefix("WRONGTYPE ")


def _sound(replies: Sequence[Any]) -> bool:
    """Whether a partition's keys answered :meth:`Faults.retake`'s probes (its counters last),
    each counter an integer or absent."""
    *probes, counters = replies
    if any(isinstance(reply, Exception) for reply in probes) or not isinstance(counters, list):
        return False
    for value in counters:
        try:
            int(value if value is not None else 0)
        except ValueError:
            return False
    return True


async def read_aside(redis: RedisClient, job: str) -> dict[int, str]:
    """The job's partitions set aside and why (empty when its record is unreadable, or holds
    more than :data:`_ASIDE_READ`: not gossamer's)."""
    key = aside_key(job)
    try:
        if not 0 < await redis.hlen(key) <= _ASIDE_READ:  # none, as in most jobs: one HLEN
            return {}
        rows = await redis.hgetall(key)
    except RedisError as exc:
        if not faulty(exc):
            raise
        return {}
    aside: dict[int, str] = {}
    pairs = rows.items() if isinstance(rows, dict) else zip(rows[::2], rows[1::2], strict=False)
    for field, value in pairs:
        name = field.decode("ascii", "replace") if isinstance(field, bytes) else str(field)
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        if name.isdigit() and len(name) <= 9:
            aside[int(name)] = text[:ASIDE_SHOWN]
    return aside

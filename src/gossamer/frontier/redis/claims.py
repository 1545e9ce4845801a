"""Claims: the entries a worker has taken from its partitions' Redis queues.

A claim stays in Redis (``claimed``, with a wall-clock deadline in ``deadlines``) until the URL
is acked; while the worker lives its owner renews the deadlines (:meth:`Claims.renew`). If the
worker dies its claims expire, and :meth:`Claims.reclaim` (the cluster leader's) puts them back
in their queue. Nothing leaves Redis before its ack, so a kill -9 loses no URL.

A claimed entry that does not decode (:class:`~.keys.BadEntry`) is set aside with a warning,
never crashing the worker nor staying claimed: it goes to the job's list of bad entries
(``gs:{J}:bad``, the last :data:`BAD_KEPT` kept, each cut at 8 KiB), then leaves its
partition's claims (``set_aside.lua``), in that order, so a worker killed in between loses
nothing (the claim expires and comes back, to be set aside again).

A partition whose keys Redis refuses to work on (a key of the wrong type, a reply of the wrong
shape) is set aside as a whole (:mod:`.faults`): no longer claimed from nor reclaimed, its
claims not renewed; the other partitions' calls of the same pipeline go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from gossamer.frontier.redis.config import RedisFrontierConfig
from gossamer.frontier.redis.credentials import Credentials, Trusts
from gossamer.frontier.redis.faults import Faults, faulty
from gossamer.frontier.redis.holders import HANDOVER_POLL, Holders
from gossamer.frontier.redis.keys import (
    BAD_KEPT,
    BadEntry,
    Entry,
    Ownership,
    PartitionKeys,
    bad_json,
    bad_keys,
    split_url,
)
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, refused, run_scripts

_CLAIM_KEYS = ("queue", "claimed", "deadlines", "counts", "fence", "ranked", "ranks", "hosts")
_HELD = -2
"""``claim.lua``'s answer for a partition another worker holds (see :mod:`.holders`)."""
RECLAIM_LIMIT = 1000
"""Expired claims returned per partition and call, at most."""

log = logging.getLogger(__name__)

Bad = tuple[int, int, bytes | str, str]
"""A claimed entry that does not decode: (partition, claim token, raw entry, reason)."""


class Claims:
    """The claims this worker holds, the owned partitions believed to have queued entries, and
    the script calls that take, keep, end and return claims."""

    def __init__(
        self,
        redis: RedisClient,
        keys: PartitionKeys,
        scripts: dict[str, AsyncScript],
        config: RedisFrontierConfig,
        trusts: Trusts | None,
        ownership: Ownership,
        *,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        faults: Faults | None = None,
    ) -> None:
        self._redis = redis
        self.faults = faults or Faults(redis, keys)
        """The partitions set aside: never claimed from."""
        self._keys = keys
        self._scripts = scripts
        self._credentials = Credentials(redis, keys.job, trusts)
        """The seeds' passwords, put back in the entries claimed (``trusts`` learns them)."""
        self._lease_timeout = config.lease_timeout
        self.batch = config.claim_batch
        """Entries claimed per partition and call, at most."""
        self._clock = clock
        self._wall = wall_clock
        self.owned = ownership.partitions
        """The partitions this worker owns (see :meth:`RedisFrontier.own`)."""
        self.held: dict[int, dict[int, Entry]] = {}
        """Every claim this worker holds, by partition and claim token."""
        self.set_aside = 0
        """Entries this worker set aside."""
        self._waiting: set[int] = set()
        self._claim_after: dict[int, float] = {}
        """Partitions another worker still holds or fences: not claimed from before this
        time."""
        self.holders = Holders(
            config.handover_grace, by_host=config.partition_by == "host", clock=clock
        )
        """Who may claim from the owned partitions (see :mod:`.holders`)."""
        self.holders.version = ownership.version

    def note(self, parts: Iterable[int]) -> None:
        """``parts`` have entries queued in Redis (those this worker owns are claimed)."""
        self._waiting.update(
            part for part in parts if part in self.owned and part not in self.faults
        )

    def looked(self, waiting: Iterable[int]) -> None:
        """A fresh look at every partition found ``waiting`` ones with queued entries."""
        self.note(waiting)
        self._claim_after.clear()  # fenced ones are asked again too

    def own(self, ownership: Ownership) -> tuple[set[int], set[int]]:
        """Own ``ownership``'s partitions from now on; those lost and those gained."""
        lost = set(self.owned - ownership.partitions)
        gained = set(ownership.partitions - self.owned)
        self.owned = ownership.partitions
        self.holders.own(ownership.version, gained, lost)
        log.debug(
            "job %s: owns %d partitions at v%d (%d gained, %d lost)",
            self._keys.job,
            len(self.owned),
            ownership.version,
            len(gained),
            len(lost),
        )
        return lost, gained

    def disown(self, parts: set[int]) -> None:
        self._waiting -= parts

    def claimable(self, now: float) -> list[int]:
        """Owned partitions believed to have queued entries and not fenced now."""
        after = self._claim_after
        self._waiting.difference_update(self.faults.parts)
        return sorted(p for p in self._waiting if p in self.owned and after.get(p, now) <= now)

    async def claim(self, parts: list[int], batch: int | None = None) -> list[Entry]:
        """Claim up to a batch of entries (``batch``, else :attr:`batch`) from each of
        ``parts``; the entries now held (those that do not decode are set aside). Partitions
        another worker holds are taken over at once when :mod:`.holders` says so."""
        entries: list[Entry] = []
        held = await self._claim(parts, batch or self.batch, entries)
        if held:
            take, wait = await self.holders.takeovers(held)
            after = self._clock() + wait
            self._claim_after.update((part, after) for part in held.keys() - take)
            if take:
                await self._claim(sorted(take), batch or self.batch, entries, takeover=True)
        return entries

    async def _claim(
        self, parts: list[int], batch: int, entries: list[Entry], *, takeover: bool = False
    ) -> dict[int, bytes]:
        """One claim call per partition of ``parts``; the entries taken go to ``entries``.
        Returns the holder records of partitions held by another worker."""
        now = self._clock()
        deadline = self._wall() + self._lease_timeout
        names = (*_CLAIM_KEYS, "holder")
        args = [batch, repr(deadline), *self.holders.args(takeover)]
        calls = [(self._scripts["claim"], self._keys.of(part, *names), args) for part in parts]
        answers = await run_scripts(self._redis, calls, check=0)
        parts, results = await self._sound(parts, answers, "claim")
        bad: list[Bad] = []
        held: dict[int, bytes] = {}
        reveal = await self._credentials.reveal(raw for r in results for raw in r[2:])
        for part, (last, left, *raws) in zip(parts, results, strict=True):
            if int(last) == _HELD:  # ``left``: the record of the worker holding it
                held[part] = left
                continue
            if int(last) < 0:  # fenced by its previous owner for ``left`` ms more (or less)
                self._claim_after[part] = now + min(int(left) / 1000, HANDOVER_POLL)
                continue
            self._claim_after.pop(part, None)
            self.holders.claimed(part)
            if not left:
                self._waiting.discard(part)
            first = int(last) - len(raws) + 1
            for i, raw in enumerate(raws):
                try:
                    entry = Entry.decode(raw, part, first + i, reveal)
                except BadEntry as exc:
                    bad.append((part, first + i, raw, str(exc)))
                else:
                    self.held.setdefault(part, {})[entry.claim] = entry
                    entries.append(entry)
        await self._set_aside(bad)
        return held

    async def _sound(
        self, parts: list[int], results: list[Any], script: str
    ) -> tuple[list[int], list[list[Any]]]:
        """The partitions of ``parts`` whose ``script`` call answered a list starting with two
        integers, and those answers; the others are set aside (an error Redis answers that is
        no partition's is raised)."""
        kept: list[tuple[int, list[Any]]] = []
        for part, result in zip(parts, results, strict=True):
            if isinstance(result, Exception) and not faulty(result):
                raise result
            if isinstance(result, Exception) or not _well_formed(result):
                await self._fault(part, result, script)
            else:
                kept.append((part, result))
        return [part for part, _ in kept], [result for _, result in kept]

    async def _fault(self, part: int, result: object, script: str) -> None:
        """Set ``part`` aside: its ``script`` call answered ``result``."""
        error = result if isinstance(result, Exception) else f"{script} answered {result!r:.100}"
        await self.faults.set_aside(part, error)
        self._waiting.discard(part)

    def forget(self, entry: Entry) -> None:
        """``entry`` is no longer claimed by this worker."""
        held = self.held.get(entry.part)
        if held is not None:
            held.pop(entry.claim, None)
            if not held:
                del self.held[entry.part]

    async def renew(self) -> None:
        """Push the deadline of every claim this worker holds ``lease_timeout`` ahead."""
        if not self.held:
            return
        deadline = self._wall() + self._lease_timeout
        parts = [part for part in self.held if part not in self.faults]
        async with self._redis.pipeline(transaction=False) as pipe:
            for part in parts:
                mapping = dict.fromkeys(map(str, self.held[part]), deadline)
                pipe.zadd(self._keys(part)["deadlines"], mapping, xx=True)
            results = await pipe.execute(raise_on_error=False)
        for part, result in zip(parts, results, strict=True):
            if isinstance(result, Exception):
                if not faulty(result):
                    raise result
                await self._fault(part, result, "renew")

    async def reclaim(self, parts: list[int], limit: int = RECLAIM_LIMIT) -> int:
        """Return the expired claims of ``parts`` (their worker died) to their queues, at most
        ``limit`` per partition; how many were returned."""
        parts = [part for part in parts if part not in self.faults]
        if not parts:
            return 0
        names = ("claimed", "deadlines", "queue", "counts", "ranked", "ranks", "hosts")
        args = [repr(self._wall()), limit]
        calls = [(self._scripts["reclaim"], self._keys.of(part, *names), args) for part in parts]
        answers = await run_scripts(self._redis, calls, check=0)
        counts: list[int] = []
        for part, answer in zip(parts, answers, strict=True):
            if isinstance(answer, int):
                counts.append(answer)
                if answer:
                    self.note([part])
                continue
            if isinstance(answer, Exception) and not faulty(answer):
                raise answer
            await self._fault(part, answer, "reclaim")
        if any(counts):
            job = self._keys.job
            log.info(
                "job %s: returned %d expired claims of %d partitions to their queues",
                job,
                sum(counts),
                sum(1 for c in counts if c),
                extra={
                    "event": "claims-reclaimed",
                    "job": job,
                    "claims": sum(counts),
                    "partitions": sum(1 for c in counts if c),
                },
            )
        return sum(counts)

    async def give_back(self, part: int, entries: list[Entry]) -> int:
        """Return held entries of ``part`` to the front of its queue; how many went back."""
        if not entries:
            return 0
        args = [x for e in entries for x in (e.claim, e.encode())]
        names = ("claimed", "deadlines", "queue", "counts", "ranked", "ranks", "hosts")
        keys = self._keys.of(part, *names)
        try:
            given: int = await self._scripts["unclaim"](keys=keys, args=args)
        except BaseException as exc:
            if refused(exc):  # it would fail again: forgotten, the claims lapse and are reclaimed
                for entry in entries:
                    self.forget(entry)
                if faulty(exc):  # the partition's keys: set aside, the job goes on
                    await self._fault(part, exc, "unclaim")
                    return 0
            raise
        for entry in entries:
            self.forget(entry)
        return given

    def ack(self, entry: Entry) -> ScriptCall:
        """The call finishing ``entry``: its claim removed, the URL counted finished once."""
        keys = self._keys.of(entry.part, "claimed", "deadlines", "counts")
        return (self._scripts["ack"], keys, [entry.claim])

    def rerank(
        self,
        wanted: Mapping[str, Mapping[int, float]],
        urls: Mapping[int, str],
        held: set[int],
        part_of: Callable[[str, int], int],
    ) -> list[ScriptCall]:
        """The calls giving entries queued in Redis new priorities (``wanted``: by host key
        and fingerprint, ``urls`` the fingerprints' URLs, but for those ``held`` here), one
        per partition; each answers how many changed."""
        parts: dict[int, list[str]] = {}
        for key, fps in wanted.items():
            for fp in fps.keys() - held:
                parts.setdefault(part_of(key, fp), []).extend(_ranked(urls[fp], fps[fp]))
        names = ("queue", "ranked", "ranks", "counts", "hosts")
        script = self._scripts["reprioritize"]
        return [(script, self._keys.of(part, *names), args) for part, args in parts.items()]

    def update_call(self, entry: Entry) -> ScriptCall:
        """The call storing ``entry`` (a new priority, or a retry's attempts and not-before
        time) in its claim, if still held; it answers 0 when the claim was reclaimed meanwhile
        (the URL is queued in Redis again)."""
        return (
            self._scripts["update"],
            self._keys.of(entry.part, "claimed"),
            [entry.claim, entry.encode()],
        )

    async def _set_aside(self, bad: list[Bad]) -> None:
        """Move claimed entries that do not decode to the job's bad entries: first into
        ``gs:{J}:bad``, then out of their partition's claims."""
        if not bad:
            return
        job = self._keys.job
        keys = bad_keys(job)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                for part, _, raw, reason in bad:
                    log.warning(
                        "job %s: set aside a malformed entry of partition %d (%s): %.200r",
                        job,
                        part,
                        reason,
                        raw,
                        extra={"event": "entry-set-aside", "job": job, "partition": part},
                    )
                    pipe.lpush(keys["entries"], bad_json(part, raw, reason))
                pipe.ltrim(keys["entries"], 0, BAD_KEPT - 1)
                pipe.incrby(keys["count"], len(bad))
                await pipe.execute()
        except RedisError as exc:  # nowhere to keep them: they stay claimed, lapse, come back
            if not faulty(exc):
                raise
            self.faults.bad_refused(exc)
            return
        names = ("claimed", "deadlines", "counts")
        calls = [(self._scripts["set_aside"], self._keys.of(p, *names), [c]) for p, c, _, _ in bad]
        await run_scripts(self._redis, calls)
        self.set_aside += len(bad)


def _well_formed(result: object) -> bool:
    """A ``claim.lua`` answer: a list of two integers and the entries claimed."""
    if not isinstance(result, list) or len(result) < 2 or not isinstance(result[0], int):
        return False
    if result[0] == _HELD:
        return len(result) == 2 and isinstance(result[1], bytes | str)
    return isinstance(result[1], int) and all(isinstance(raw, bytes | str) for raw in result[2:])


def _ranked(url: str, priority: float) -> tuple[str, str, str]:
    """A URL (host, path) and a priority as ``reprioritize.lua`` takes them ('' for 0)."""
    host, path = split_url(url)
    return host, path, repr(priority) if priority else ""

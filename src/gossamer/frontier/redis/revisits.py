"""A continuous crawl's revisits on the Redis frontier (``--recrawl``): each page's revisit
state and due time kept with its partition, so whoever owns the partition revisits it.

Two keys per partition, under the partition's hash tag (see :mod:`.keys`): ``revisits``, a HASH
of fingerprint -> the page's state packed as a JSON array (:class:`Packed`: its last fetch's
time, depth and URL first, which the scripts read, then validators, digests, interval and
counts; the URL with a seed's password masked, as queue entries hold it: the entry queued from
the state gets it back from the job's ``credentials`` when it is claimed, see
:mod:`.credentials`), and ``due``, a ZSET of fingerprint -> wall-clock due time. A page is in
``due`` while it waits; ``revisit_due.lua`` moves the due ones into the partition's queue as
ordinary entries, atomically, and from there they are claimed, leased through the host
scheduler (one pace per host with discovery), renewed, reclaimed when their worker dies and
handed over with their partition like any URL. A page's state is read when it is leased
(:meth:`RedisRevisits.load`), and its new state goes to Redis with its ack, in one script
(``revisit_ack.lua``): a worker killed before its ack loses nothing, the claim comes back and
the page is judged again against the same state.

Each worker knows the earliest due time of each partition it owns from its last look, and
looks again at those due (and at all of them every :data:`SWEEP` seconds: a due time written
by a worker that no longer owns the partition, a new owner's partitions). A sitemap's newer
``lastmod`` queues the page at once (``revisit_sooner.lua``).

Spare revisits (``--revisit-spare``): for an owned host whose politeness slot is free in the
worker's scheduler, :meth:`RedisRevisits.spare` reads a window of at most `SPARE_SAMPLE` of its
partition's waiting revisits (``revisit_sample.lua``: none while the partition has entries
queued or revisits due), picks the host's page of the greatest spare index, ``r**0.75``
times the seconds since its last fetch (:func:`gossamer.frontier.revisit.spare_index`), and
queues it as a revisit now (``revisit_sooner.lua``). Bounded work a pick: one script, a window
of the partition (all of it below `SPARE_SAMPLE` pages waiting; else a random window, so the
pick is the best of a sample).

Memory: a page's state is its URL and about 150 bytes of packed values, plus the fingerprint
as a field of the HASH and a member of the ZSET (see the README for the measured figure).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any

import msgspec
from msgspec import Meta
from msgspec.structs import replace
from redis.commands.core import AsyncScript

from gossamer.frontier.base import Lease
from gossamer.frontier.redis.credentials import masked_url
from gossamer.frontier.redis.faults import Faults
from gossamer.frontier.redis.keys import Entry, PartitionKeys
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts
from gossamer.frontier.revisit import History, spare_index
from gossamer.frontier.revisits import BoundsOf, RevisitBook, RevisitState
from gossamer.urls import fingerprint, host_key

log = logging.getLogger(__name__)
SWEEP = 5.0
"""Seconds between looks at every owned partition's due revisits."""
AGAIN = 0.25
"""Seconds before a partition with more revisits due than one look queued is looked at again."""
SPARE_SAMPLE = 64
"""Waiting revisits of a partition one spare pick looks at."""
_ANY = repr(1e11)
"""A ``lastmod`` later than any fetch: ``revisit_sooner.lua`` queues a page still waiting."""
_QUEUE = ("due", "revisits", "queue", "counts", "ranked", "ranks", "hosts")
"""The keys of the scripts that queue revisits, in their order."""

_Time = Annotated[float, Meta(ge=0, le=1e11)]
_Count = Annotated[int, Meta(ge=0, lt=1 << 40)]
_Digest = Annotated[int, Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_Header = Annotated[str, Meta(max_length=8192)]


class Packed(msgspec.Struct, array_like=True, frozen=True):
    """A page's revisit state as Redis keeps it (a JSON array, in this order; the scripts
    read the first three). What comes off Redis is decoded into this, checked; a state that
    does not decode is dropped with a warning (its page is fetched as a first fetch)."""

    fetched_at: _Time
    depth: _Count
    url: Annotated[str, Meta(max_length=1 << 20)]
    etag: _Header | None
    last_modified: _Header | None
    payload: _Digest | None
    text: _Digest | None
    captured_at: _Time
    interval: _Time
    checks: _Count
    changes: _Count
    gone: _Count
    observed: _Time
    size: _Count
    content_type: _Header | None


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Packed)


def pack(state: RevisitState, depth: int, url: str) -> bytes:
    """``state`` of the page ``url`` as Redis keeps it (times to the millisecond)."""
    return _ENCODER.encode(
        Packed(
            round(state.fetched_at, 3),
            depth,
            url,
            state.etag,
            state.last_modified,
            state.payload,
            state.text,
            round(state.captured_at, 3),
            round(state.interval, 3),
            state.checks,
            state.changes,
            state.gone,
            round(state.observed, 3),
            state.size,
            state.content_type,
        )
    )


def unpack(raw: bytes, fp: int) -> RevisitState:
    """The state ``raw`` of the page with fingerprint ``fp``; ``msgspec.ValidationError`` or
    ``msgspec.DecodeError`` when it is malformed."""
    p = _DECODER.decode(raw)
    return RevisitState(
        fp,
        p.etag,
        p.last_modified,
        p.payload,
        p.text,
        p.fetched_at,
        p.captured_at,
        p.interval,
        None,
        p.checks,
        p.changes,
        p.gone,
        p.observed,
        p.size,
        p.content_type,
    )


PartOf = Callable[[str, int], int]
"""The partition of a URL by its host key and fingerprint."""


class RedisRevisits(RevisitBook):
    """The revisit state of a cluster job's pages in Redis, and the due revisits of the
    partitions this worker owns (module doc)."""

    def __init__(
        self,
        redis: RedisClient,
        keys: PartitionKeys,
        scripts: dict[str, AsyncScript],
        bounds: BoundsOf,
        *,
        max_gone: int = 3,
        wall_clock: Callable[[], float] = time.time,
        faults: Faults | None = None,
    ) -> None:
        """``max_gone``: answers of gone after which a page is no longer revisited;
        ``wall_clock``: unix time (due times outlive the worker, and are shared); ``faults``:
        the partitions set aside (the frontier's), where a partition whose revisit keys Redis
        refuses goes."""
        super().__init__(bounds, max_gone=max_gone)
        self._redis = redis
        self._faults = faults or Faults(redis, keys)
        self._keys = keys
        self._scripts = scripts
        self._wall = wall_clock
        self._judged: dict[str, RevisitState] = {}
        """New states of pages judged, by URL, until their ack goes to Redis."""
        self._owned: frozenset[int] = frozenset()
        self._next: dict[int, float] = {}
        """Owned partition -> earliest due time at the last look (absent: look now)."""
        self._backlogs: dict[int, int] = {}
        self._sweep_at = -math.inf

    # -- the page stage's side ---------------------------------------------------------------

    def observed(self, url: str, state: RevisitState) -> None:
        """Keep the new state of ``url``; it goes to Redis with the URL's ack."""
        self._judged[url] = state
        if url in self._loaded:
            self._loaded[url] = None

    # -- the frontier's side -----------------------------------------------------------------

    async def load(self, leases: Sequence[Lease], part_of: PartOf) -> None:
        """Read the states of the pages ``leases`` fetch (those fetched before are revisits;
        a page leased again after a release keeps the state read)."""
        by_part: dict[int, list[Lease]] = {}
        for lease in leases:
            if lease.kind == "page" and lease.url not in self._loaded:
                by_part.setdefault(part_of(lease.host, lease.fp), []).append(lease)
        if not by_part:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for part, held in by_part.items():
                pipe.hmget(self._keys(part)["revisits"], [str(lease.fp) for lease in held])
            rows: list[Any] = await pipe.execute(raise_on_error=False)
        for part, raws in await self._faults.through(list(by_part), rows):
            for lease, raw in zip(by_part[part], raws, strict=True):
                if raw is not None:
                    self._load(lease, raw)

    def _load(self, lease: Lease, raw: bytes) -> None:
        try:
            self._loaded[lease.url] = unpack(raw, lease.fp)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning(
                "job %s: dropped the malformed revisit state of %s (%s)",
                self._keys.job,
                masked_url(lease.url)[:200],
                exc,
                extra={"event": "revisit-state-dropped", "job": self._keys.job},
            )

    def forget(self, entries: Iterable[Entry]) -> None:
        """``entries`` went back to Redis unfetched: their next claim reads their state."""
        for entry in entries:
            self._loaded.pop(entry.url, None)
            self._judged.pop(entry.url, None)

    def ack_call(self, entry: Entry) -> ScriptCall | None:
        """The call finishing ``entry`` with its page's new state (None: a page with none,
        acked plainly). A revisit that ended without an answer judged is due again one
        interval later."""
        judged = self._judged.pop(entry.url, None)
        loaded = self._loaded.pop(entry.url, None)
        if judged is None and loaded is None:
            return None
        if judged is None:
            assert loaded is not None
            judged = _later(loaded, self._wall())
        packed: bytes | str = ""
        due = ""
        if judged.due is not None:
            packed, due = pack(judged, entry.depth, masked_url(entry.url)), repr(judged.due)
            if entry.part in self._owned:
                self._next[entry.part] = min(self._next.get(entry.part, math.inf), judged.due)
        keys = self._keys.of(entry.part, "claimed", "deadlines", "counts", "revisits", "due")
        return (self._scripts["revisit_ack"], keys, [entry.claim, str(entry.fp), packed, due])

    def own(self, parts: frozenset[int]) -> None:
        """This worker owns ``parts`` from now on: those gained are looked at first."""
        for part in self._owned - parts:
            self._next.pop(part, None)
            self._backlogs.pop(part, None)
        for part in parts - self._owned:
            self._next[part] = -math.inf
        self._owned = parts

    def looking(self) -> list[int]:
        """The owned partitions to look at for due revisits now (none set aside)."""
        now = self._wall()
        for part in self._faults.parts.keys() & self._next.keys():
            del self._next[part]
            self._backlogs.pop(part, None)
        if now >= self._sweep_at:
            self._sweep_at = now + SWEEP
            return sorted(p for p in self._owned if p not in self._faults)
        looked = self._owned - self._faults.parts.keys()
        return sorted(p for p in looked if self._next.get(p, -math.inf) <= now)

    async def queue_due(self, parts: list[int], most: int) -> list[int]:
        """Queue up to ``most`` due revisits of each of ``parts``; the partitions that got
        some."""
        now = self._wall()
        script = self._scripts["revisit_due"]
        calls = [(script, self._keys.of(part, *_QUEUE), [repr(now), most]) for part in parts]
        results: list[Any] = await run_scripts(self._redis, calls, check=0)
        queued = []
        for part, (count, left, first) in await self._faults.through(parts, results):
            if part not in self._owned:
                continue
            self._backlogs[part] = int(left)
            self._next[part] = now + AGAIN if int(left) else _time(first)
            if int(count):
                queued.append(part)
        self._backlog = sum(self._backlogs.values())
        return queued

    def next_due(self) -> float:
        """Seconds until an owned partition's revisits are due, or the next sweep (0: now)."""
        now = self._wall()
        earliest = min(self._next.values(), default=math.inf)
        return max(min(earliest, self._sweep_at) - now, 0.0)

    async def spare(self, idle: Sequence[tuple[int, str]]) -> list[int]:
        """Work-conserving revisits (module doc): for each idle host of ``idle`` (partition,
        host key), its page of the greatest spare index queued now; the partitions that
        got one."""
        if not idle:
            return []
        now = self._wall()
        sample = self._scripts["revisit_sample"]
        idle = [(part, key) for part, key in idle if part not in self._faults]
        calls: list[ScriptCall] = [
            (
                sample,
                self._keys.of(part, "due", "revisits", "counts"),
                [repr(now), SPARE_SAMPLE, repr(random.random())],
            )
            for part, _ in idle
        ]
        flats = await run_scripts(self._redis, calls, check=0)
        await self._faults.through([part for part, _ in idle], flats)  # refused: set aside
        picks: dict[int, list[str]] = {}
        for (part, key), flat in zip(idle, flats, strict=True):
            if not isinstance(flat, Exception) and (fp := _pick(key, flat, now)) is not None:
                picks.setdefault(part, []).extend((fp, _ANY))
        queued = await self._queue_now(picks)
        self.spared += sum(queued.values())
        return list(queued)

    async def sooner(self, listed: Sequence[tuple[str, float]], part_of: PartOf) -> list[int]:
        """Queue now the pages ``listed`` (URL, sitemap ``lastmod``) whose last fetch is
        older; the partitions that got some."""
        args: dict[int, list[str]] = {}
        for url, lastmod in listed:
            fp = fingerprint(url)
            part = part_of(host_key(url), fp)
            if part not in self._faults:  # set aside: its pages wait for their due time there
                args.setdefault(part, []).extend((str(fp), repr(lastmod)))
        return list(await self._queue_now(args))

    async def _queue_now(self, args: dict[int, list[str]]) -> dict[int, int]:
        """Queue now the pages of ``revisit_sooner.lua``'s ``args`` by partition; how many
        each partition that got some got (a partition whose keys Redis refuses is set aside)."""
        script = self._scripts["revisit_sooner"]
        calls = [(script, self._keys.of(part, *_QUEUE), a) for part, a in args.items()]
        counts = await run_scripts(self._redis, calls, check=0)
        through = await self._faults.through(list(args), counts)
        return {part: int(count) for part, count in through if int(count)}


def _pick(key: str, flat: list[Any], now: float) -> str | None:
    """The fingerprint of the page of host ``key`` of the greatest spare index
    (:func:`~gossamer.frontier.revisit.spare_index`) in a sample (``revisit_sample.lua``'s
    reply); None if the host has none fetched a second ago or more. A state that does not
    decode is passed over."""
    best, most = None, -1.0
    for i in range(0, len(flat) - 1, 2):
        try:
            p = _DECODER.decode(flat[i + 1])
            fp = str(int(flat[i]))
        except (ValueError, msgspec.ValidationError, msgspec.DecodeError):
            continue
        if now - p.fetched_at < 1.0 or host_key(p.url) != key:
            continue
        expected = spare_index(
            History(p.checks, p.changes, p.observed, p.interval), now - p.fetched_at
        )
        if expected > most:
            best, most = fp, expected
    return best


def _later(state: RevisitState, now: float) -> RevisitState:
    return replace(state, due=now + max(state.interval, 1.0))


def _time(text: bytes | str) -> float:
    """A due time a script answered ('' : none left)."""
    try:
        value = float(text)
    except ValueError:
        return math.inf
    return value if math.isfinite(value) else math.inf


__all__ = ["AGAIN", "SPARE_SAMPLE", "SWEEP", "Packed", "RedisRevisits", "pack", "unpack"]

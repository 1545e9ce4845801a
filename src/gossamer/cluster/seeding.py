"""A job's seeds on their way into Redis, in batches a second submit resumes, and the scope
the workers read back.

The job's own key (``gs:{J}:job``) holds its settings without their seeds, so it stays a few
KiB whatever the seed count and every reply stays within the bounds of
:mod:`gossamer.cluster.bounded`. ``cluster submit`` instead

1. stores the seeds' origins (``scheme://host[:port]/``, what the scope needs of the seeds:
   their hosts, and the ports they name) in the SET ``gs:{J}:origins``, SADD by
   :data:`ORIGIN_BATCH`; a million seeds on a thousand hosts make a thousand members;
2. queues the seeds through the frontier's admission (canonical, in scope, deduplicated by
   the partitions' seen sets, exactly as a worker's links) by :data:`SEED_BATCH`, recording
   after each batch how many of the list are queued in the HASH ``gs:{J}:submit``
   (``digest``, ``seeds``, ``queued``, ``origins``);
3. stores the job's key last: workers start only once every seed is queued.

A submit killed midway leaves the job unstored and its progress recorded. The next submit of
the same job with the same seeds and placing settings (same :func:`seeds_digest`) resumes
after the last recorded batch; a batch queued but not yet recorded is queued again, and the
seen sets make those seeds duplicates, so no URL is queued twice. A submit with other seeds
or settings meets a different digest and is refused (nothing changed): queueing its seeds
beside the first list's would make a job of neither. The progress record stays after the
submit, so ``cluster status`` shows how many seeds the job had.

Workers read ``gs:{J}:origins`` with SSCAN, :data:`SCAN_COUNT` members a reply; a member that
is not an origin gossamer writes is skipped with a warning.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gossamer.cluster.control import Control, MalformedReply
from gossamer.frontier.base import AddResult, Candidate
from gossamer.frontier.redis import RedisFrontier
from gossamer.settings import JobSettings, SettingsError
from gossamer.urls import canonicalize, host_key

log = logging.getLogger(__name__)

SEED_BATCH = 50_000
"""Seeds queued (and their progress recorded) at a time: about 4 MB of commands."""
ORIGIN_BATCH = 10_000
"""Origins stored by one SADD."""
SCAN_COUNT = 10_000
"""Origins asked for by one SSCAN."""
_ORIGIN = re.compile(r"https?://[^/\s]{1,300}/")
_NUMBER = re.compile(r"\d{1,12}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_FIELDS = ("digest", "seeds", "queued", "origins")


@dataclass(frozen=True, slots=True)
class SubmitProgress:
    """How far the submit of a job's seeds got (the HASH ``gs:{J}:submit``)."""

    digest: str
    """:func:`seeds_digest` of the seeds and settings being submitted."""
    seeds: int
    """Seeds in the list, after canonicalization."""
    queued: int = 0
    """Seeds of the list, from its start, added to the queues (a prefix of whole batches)."""
    origins: bool = False
    """Every origin of the seeds is stored."""


def seed_origins(seeds: Sequence[str]) -> list[str]:
    """The origins (``scheme://host[:port]/``) of canonical seeds, sorted, each once."""
    return sorted({host_key(seed) + "/" for seed in seeds})


def seeds_digest(settings: JobSettings, seeds: Sequence[str]) -> str:
    """A SHA-256 of the canonical seeds and of the settings that decide where and whether each
    is queued (partitions, partition_by, the scope's settings)."""
    placing = {
        "partitions": settings.partitions,
        "partition_by": settings.partition_by,
        "allow_domains": sorted(settings.allow_domains),
        "allow_ports": sorted(settings.allow_ports),
        "max_depth": settings.max_depth,
        "max_url_length": settings.max_url_length,
        "max_repeated_segments": settings.max_repeated_segments,
    }
    digest = hashlib.sha256(json.dumps(placing, sort_keys=True).encode())
    for chunk in batches(seeds, ORIGIN_BATCH):
        digest.update("".join(seed + "\n" for seed in chunk).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class Seeding:
    """The batched, resumable submit of one job's seeds (see the module docstring)."""

    def __init__(self, control: Control, frontier: RedisFrontier, batch: int | None = None) -> None:
        self._control = control
        self._frontier = frontier
        self._batch = batch or SEED_BATCH

    async def run(self, seeds: Sequence[str], origins: Sequence[str], digest: str) -> int:
        """Store the seeds' ``origins`` and queue the seeds not queued yet; returns where it
        started in ``seeds`` (0, or where an interrupted submit of the same digest stopped).

        A recorded submit of another digest raises SettingsError and changes nothing.
        """
        control = self._control
        progress = await read_progress(control)
        if progress is not None and progress.digest != digest:
            raise SettingsError(
                f"job {control.job!r} has an unfinished submit of other seeds or settings "
                f"({progress.queued} of {progress.seeds} seeds queued): submit the same seeds "
                "and settings to finish it, or choose another --job"
            )
        if progress is None:
            progress = SubmitProgress(digest, len(seeds))
            await _record(control, progress)
        if not progress.origins:
            await store_origins(control, origins)
            await _record(control, progress, origins=True)
        start = progress.queued
        if start:
            log.info("job %s: submit resumed at seed %d of %d", control.job, start, len(seeds))
        await self._queue(seeds, start, progress)
        return start

    async def _queue(self, seeds: Sequence[str], start: int, progress: SubmitProgress) -> None:
        """Queue ``seeds[start:]`` a batch at a time, each recorded once it and every batch
        before it are in Redis. Two batches are under way at once: this process admits the
        next while Redis queues the last."""
        under_way: list[tuple[asyncio.Task[AddResult], int]] = []
        try:
            for low in range(start, len(seeds), self._batch):
                high = min(low + self._batch, len(seeds))
                under_way.append((asyncio.create_task(self._add(seeds[low:high])), high))
                if len(under_way) == 2:
                    await self._finish(*under_way.pop(0), progress)
            while under_way:
                await self._finish(*under_way.pop(0), progress)
        finally:  # a failed batch: the next one stops too (a resumed submit sends it again)
            for task, _ in under_way:
                task.cancel()
            await asyncio.gather(*(task for task, _ in under_way), return_exceptions=True)

    async def _add(self, seeds: Sequence[str]) -> AddResult:
        return await self._frontier.add([Candidate(seed, seed=True) for seed in seeds])

    async def _finish(
        self, adding: asyncio.Task[AddResult], high: int, progress: SubmitProgress
    ) -> None:
        await adding
        await _record(self._control, progress, queued=high)


async def _record(
    control: Control, progress: SubmitProgress, *, queued: int | None = None, origins: bool = False
) -> None:
    """Write ``progress`` (with ``queued`` seeds queued, or its origins stored)."""
    fields: dict[str, str | int] = {"digest": progress.digest, "seeds": progress.seeds}
    if queued is not None:
        fields["queued"] = queued
    if origins:
        fields["origins"] = 1
    await control.redis.hset(control.keys["submit"], mapping=fields)  # type: ignore[arg-type]


async def read_progress(control: Control) -> SubmitProgress | None:
    """The recorded progress of the job's submit, None before any; :class:`MalformedReply`
    when it holds what gossamer never writes."""
    raw = await control.redis.hmget(control.keys["submit"], _FIELDS)
    digest, *numbers = (_text(value) or "" for value in raw)
    if not digest:
        return None
    numbers = [number or "0" for number in numbers]
    if _DIGEST.fullmatch(digest) is None or not all(map(_NUMBER.fullmatch, numbers)):
        raise MalformedReply(f"malformed reply: the job's submit record is {raw!r:.120}")
    seeds, queued, origins = map(int, numbers)
    return SubmitProgress(digest, seeds, queued, origins == 1)


async def store_origins(control: Control, origins: Sequence[str]) -> None:
    """Add ``origins`` to the job's origins, :data:`ORIGIN_BATCH` per SADD."""
    for chunk in batches(origins, ORIGIN_BATCH):
        await control.redis.sadd(control.keys["origins"], *chunk)


async def load_origins(control: Control) -> list[str]:
    """The job's seed origins, sorted, read :data:`SCAN_COUNT` at a time (malformed members
    skipped with a warning)."""
    found: set[str] = set()
    bad = 0
    async for raw in control.redis.sscan_iter(control.keys["origins"], count=SCAN_COUNT):
        origin = _origin(raw)
        if origin is None:
            bad += 1
        else:
            found.add(origin)
    if bad:
        log.warning("job %s: skipped %d malformed seed origins", control.job, bad)
    return sorted(found)


def _origin(raw: object) -> str | None:
    """An origin read from Redis; None unless it is one gossamer writes (canonical: a
    member such as ``http://[/`` or ``http://a.test:x/`` passed the shape and then raised
    in the worker's scope)."""
    text = _text(raw) if isinstance(raw, bytes | str) else None
    if text is None or not text.isascii() or _ORIGIN.fullmatch(text) is None:
        return None
    try:
        return text if host_key(canonicalize(text)) + "/" == text else None
    except ValueError:
        return None


def _text(raw: object) -> str | None:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return raw if isinstance(raw, str) else None


def batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]

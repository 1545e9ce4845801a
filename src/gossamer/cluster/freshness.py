"""What a continuous cluster job shows its operators: revisits by result, the bytes 304s
saved, the spare revisits sent, the due backlog and the sitemap and feed URLs found, for the
whole job (``cluster status``, ``cluster metrics``).

Each worker publishes its own counts with its heartbeat (:func:`worker_figures`, the
``fresh`` figures); the job's are those summed over every worker that joined, alive or gone
(the registry keeps the last figures of a worker that left or died, so a dead worker's counts
stay in the job's while others revisit its partitions), read back checked, since they come
off Redis. The registry keeps a row per worker name: a worker started again under a name
that was in the job (a restarted pod) adds to that name's last counts
(:func:`earlier_figures`), or the job's would drop by them. A worker that stops publishes its
final figures as it leaves the registry (its sitemap reads stopped and their records committed
first), so the job's counts are then those of its records; what a worker counted after its
last heartbeat and before it was killed (a third of ``--heartbeat-ttl``) is not in them.
The due backlog is read from Redis itself: the revisits of every partition whose due time
has passed and that no worker has queued yet (:func:`due_backlog`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gossamer.cluster.control import Control, WorkerInfo
from gossamer.frontier.redis.keys import partition_keys
from gossamer.frontier.redis.scripts import RedisClient

if TYPE_CHECKING:
    from gossamer.crawl.sitemaps import SitemapStage
    from gossamer.frontier.revisits import RevisitBook

__all__ = ["JobFreshness", "due_backlog", "earlier_figures", "job_freshness", "worker_figures"]

RESULTS = ("changed", "unchanged", "not-modified", "gone")
"""What a revisit found (as :data:`gossamer.frontier.revisits.RESULTS`)."""
_COUNTS = ("bytes_saved", "spared", "sitemap_files", "sitemap_entries", "sitemap_admitted")
_MOST = 1 << 53
"""A figure above this (or negative, or not an integer) is not a worker's: counted as 0."""
_CHUNK = 1024
"""Partitions whose due revisits one pipeline counts."""


async def earlier_figures(control: Control, name: str) -> dict[str, int]:
    """The ``fresh`` figures the job's registry holds for the worker ``name`` (one that ran
    before under this name; empty for a new name), checked."""
    [info] = await control.figures_of([name])
    fresh = info.figures.get("fresh")
    if not isinstance(fresh, Mapping):
        return {}
    return {key: _figure(fresh.get(key)) for key in (*RESULTS, *_COUNTS) if key in fresh}


def worker_figures(
    revisits: RevisitBook | None,
    sitemaps: SitemapStage | None,
    earlier: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """This worker's ``fresh`` figures for its heartbeat (empty when it has neither), added
    to ``earlier`` (:func:`earlier_figures`: those of a previous run under its name)."""
    figures = _counted(revisits, sitemaps)
    for key, count in (earlier or {}).items():
        figures[key] = min(figures.get(key, 0) + count, _MOST)
    return figures


def _counted(revisits: RevisitBook | None, sitemaps: SitemapStage | None) -> dict[str, int]:
    figures: dict[str, int] = {}
    if revisits is not None:
        stats = revisits.stats()
        figures |= {name: stats.results.get(name, 0) for name in RESULTS}
        figures |= {"bytes_saved": stats.bytes_saved, "spared": stats.spared}
    if sitemaps is not None:
        found = sitemaps.stats()
        figures["sitemap_files"] = found.files_total
        figures["sitemap_entries"] = found.entries_total
        figures["sitemap_admitted"] = found.admitted_total
    return figures


@dataclass(frozen=True, slots=True)
class JobFreshness:
    """A job's revisits by result, bytes 304s saved, spare revisits, due backlog, and the
    sitemap and feed files read with the URLs they listed and those admitted."""

    results: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RESULTS, 0))
    bytes_saved: int = 0
    spared: int = 0
    backlog: int = 0
    sitemap_files: int = 0
    sitemap_entries: int = 0
    sitemap_admitted: int = 0

    @property
    def anything(self) -> bool:
        """Whether any figure is above 0 (a job that ends and reads no sitemap has none)."""
        counts = (self.bytes_saved, self.spared, self.backlog, self.sitemap_files)
        return any(self.results.values()) or any(counts)

    def as_json(self) -> dict[str, Any]:
        """As ``cluster status --json`` shows it."""
        return asdict(self)

    def line(self) -> str:
        """As ``cluster status`` shows it: the revisits' figures when the job revisits (or
        has revisited), the sitemaps' when it read any."""
        r = self.results
        parts = []
        if any(r.values()) or self.spared or self.backlog or self.bytes_saved:
            parts.append(
                "revisits "
                + " ".join(f"{name} {r[name]}" for name in RESULTS)
                + f", spare {self.spared}, due {self.backlog}, saved {self.bytes_saved} bytes"
                " by 304s"
            )
        if self.sitemap_files:
            parts.append(
                f"sitemaps {self.sitemap_files} files, {self.sitemap_entries} URLs "
                f"(+{self.sitemap_admitted})"
            )
        return "  " + "; ".join(parts)


def job_freshness(workers: Iterable[WorkerInfo], backlog: int) -> JobFreshness:
    """The ``fresh`` figures of ``workers`` summed, with the job's due ``backlog``."""
    sums = dict.fromkeys((*RESULTS, *_COUNTS), 0)
    for worker in workers:
        fresh = worker.figures.get("fresh")
        if isinstance(fresh, Mapping):
            for name in sums:
                sums[name] += _figure(fresh.get(name))
    return JobFreshness(
        {name: sums[name] for name in RESULTS},
        sums["bytes_saved"],
        sums["spared"],
        backlog,
        sums["sitemap_files"],
        sums["sitemap_entries"],
        sums["sitemap_admitted"],
    )


async def due_backlog(
    redis: RedisClient, job: str, partitions: int, now: float | None = None
) -> int:
    """Revisits due by ``now`` (unix time) and not queued yet, in every partition of ``job``
    (one ZCOUNT a partition, pipelined; a ``due`` key of another type counts none)."""
    until = repr(time.time() if now is None else now)
    total = 0
    for start in range(0, partitions, _CHUNK):
        async with redis.pipeline(transaction=False) as pipe:
            for part in range(start, min(start + _CHUNK, partitions)):
                pipe.zcount(partition_keys(job, part)["due"], "-inf", until)
            counts: list[Any] = await pipe.execute(raise_on_error=False)  # a wrong type: 0
        total += sum(_figure(count) for count in counts)
    return total


def _figure(value: object) -> int:
    ok = type(value) is int and 0 <= value <= _MOST
    return value if ok else 0  # type: ignore[return-value]

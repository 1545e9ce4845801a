"""Membership: this worker's entry in the job's registry of workers.

The heartbeat keeps the entry alive (a key with a TTL: a worker that stops beating is dead to
the leader, who moves its partitions); it carries the worker's figures (:class:`Report`), which
the leader's balancer plans with, and its revisit and sitemap counts, which ``cluster status``
sums (:mod:`gossamer.cluster.freshness`). The worker also cuts its crawl into observation
windows for the balancer's runtime model, and leaves the registry when it stops.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gossamer.balance.capability import Capability
from gossamer.balance.probe import capability_figures, live_figures
from gossamer.cluster.balancer import Observer, record
from gossamer.cluster.control import Control
from gossamer.cluster.freshness import worker_figures
from gossamer.crawl import Stages
from gossamer.engine import Crawler
from gossamer.frontier.redis import RedisFrontier

if TYPE_CHECKING:
    from gossamer.frontier.revisits import RevisitBook


class Report:
    """What a worker tells the others about itself: the heartbeat's figures."""

    def __init__(
        self,
        crawler: Crawler,
        stages: Stages,
        capability: Capability,
        frontier: RedisFrontier,
        revisits: RevisitBook | None = None,
        earlier: Mapping[str, int] | None = None,
    ) -> None:
        """``revisits``: a continuous job's revisit state, whose counts the figures carry
        (added to ``earlier``: those of a previous run under this worker's name)."""
        self._crawler = crawler
        self._revisits = revisits
        self._earlier = earlier
        self._stages = stages
        self._capability = capability
        self._frontier = frontier
        self._started = time.time()
        self.observer = Observer()
        """Observation windows for the balancer's runtime model."""

    def figures(self, partitions: int) -> dict[str, Any]:
        """What the heartbeat publishes, for a worker owning ``partitions`` partitions."""
        stats = self._crawler.stats()
        figures: dict[str, Any] = {
            "pages": stats.pages,
            "pages_per_second": round(stats.pages_per_second, 2),
            "started": round(self._started, 3),
            "partitions": partitions,
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        fresh = worker_figures(self._revisits, self._stages.sitemaps, self._earlier)
        if fresh:
            figures["fresh"] = fresh
        meter = self._stages.meter
        if meter is not None:
            figures["capability"] = capability_figures(self._capability, meter)
            fetched = self._stages.fetcher.stats()
            live = live_figures(stats, fetched, meter, self._frontier.in_memory)
            if self.observer.busy_rate > 0:  # the rate while it had work, not since start
                live["pages_per_second"] = round(self.observer.busy_rate, 2)
            figures["live"] = live
        return figures

    def capability(self) -> Capability | None:
        """The capability measured so far (None without a meter)."""
        meter = self._stages.meter
        if meter is None:
            return None
        return Capability.from_json(capability_figures(self._capability, meter))

    @property
    def busy(self) -> bool:
        """URLs wait in memory: the worker's pace measures the worker, not a lack of work."""
        return self._frontier.in_memory > 0

    @property
    def pages(self) -> int:
        return self._crawler.stats().pages


class Membership:
    """This worker in the job's registry: its heartbeat, its observations, its leaving."""

    def __init__(self, control: Control, name: str, ttl: float, report: Report) -> None:
        self._control = control
        self._name = name
        self._ttl = ttl
        self._report = report

    async def beat(self, partitions: int) -> None:
        """Renew this worker's entry with its figures (``partitions`` owned now)."""
        await self._control.heartbeat(self._name, self._report.figures(partitions), self._ttl)

    async def observe(self) -> None:
        """Cut the crawl into observation windows for the runtime model (see balancer)."""
        capability = self._report.capability()
        if capability is None:
            return
        report = self._report
        seen = report.observer.sample(time.monotonic(), report.pages, report.busy, capability)
        if seen is not None:
            await record(self._control, seen)

    async def leave(self, partitions: int) -> None:
        """Leave the registry, with the last figures."""
        await self._control.leave(self._name, self._report.figures(partitions))

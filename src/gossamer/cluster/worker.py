"""A cluster worker: the normal crawl engine over the Redis frontier, plus its duties.

Duties run as background tasks next to the crawl loop: the heartbeat, the leader's work
(taking the lease, publishing the assignment, returning dead workers' expired claims) and
following the assignment (dropping lost partitions, claiming gained ones). Acks reach Redis
only after the checkpoint that makes their records durable in this worker's crawl.db.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from redis.exceptions import RedisError

from gossamer.balance.capability import Capability
from gossamer.balance.probe import capability_figures, live_figures, probe_capability
from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.balancer import Balancer, Observer, record
from gossamer.cluster.control import Control
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.jobs import load_job, open_control
from gossamer.cluster.resilient import (
    DEFAULT_BUDGET,
    RedisGuard,
    RedisUnavailable,
    install_guard,
)
from gossamer.crawl import (
    Stages,
    install_signal_handlers,
    open_stages,
    tune_gc,
)
from gossamer.engine import Crawler
from gossamer.frontier.redis import RedisFrontier
from gossamer.redact import redact_text, redact_url
from gossamer.retry import Outage
from gossamer.settings import ClusterSettings, JobSettings, SettingsError, crawl_scope
from gossamer.stats import CrawlStats

log = logging.getLogger(__name__)
_JOB_POLL = 0.1
"""Seconds between looks for a job not submitted yet: a waiting worker starts at once."""
_FOLLOW = 0.1
"""Seconds between looks at the assignment's version (one GET)."""


# -- the worker -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """What ``cluster worker`` is told on its command line."""

    redis_url: str
    job: str = DEFAULT_JOB
    name: str | None = None
    out: Path | None = None
    concurrency: int | None = None
    max_bandwidth: int | None = None
    heartbeat_ttl: float | None = None
    store: str | None = None
    """This worker's page store DSN, password included: it replaces the job's, which is
    stored without a password (``--store`` or ``GOSSAMER_STORE``; see ``jobs.job_settings``)."""
    job_timeout: float = 600.0
    """Seconds to wait for a job to be submitted."""
    redis_timeout: float = DEFAULT_BUDGET
    """Seconds an unreachable Redis is waited for before the worker gives up."""


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


async def run_worker(options: WorkerOptions) -> CrawlStats:
    """Join the job, crawl its share until the job is finished (or SIGTERM), write stats.json."""
    if options.redis_timeout <= 0:
        raise SettingsError("invalid worker option 'redis-timeout': give a positive number")
    control = await open_control(options.redis_url, options.job)
    guard = install_guard(control.redis, options.redis_url, options.redis_timeout)
    name = options.name or default_name()
    try:
        settings = await _wait_for_job(control, options, name)
        tune_gc()
        return await _work(control, settings, name, guard)
    finally:
        await control.redis.aclose()


async def _wait_for_job(control: Control, options: WorkerOptions, name: str) -> JobSettings:
    """The job's settings with this worker's options, once it is submitted. Meanwhile the
    worker beats, so the first leader's first assignment includes every waiting worker."""
    deadline = time.monotonic() + options.job_timeout
    ttl = options.heartbeat_ttl or ClusterSettings.model_fields["heartbeat_ttl"].default
    figures = {"pages": 0, "partitions": 0, "pid": os.getpid(), "host": socket.gethostname()}
    figures["started"] = round(time.time(), 3)
    next_beat = 0.0
    told = False
    while (settings := await load_job(control)) is None:
        now = time.monotonic()
        if now >= next_beat:
            await control.heartbeat(name, figures, ttl)
            next_beat = now + ttl / 3
        if now >= deadline:
            with contextlib.suppress(RedisError):
                await control.leave(name, figures)
            raise ClusterError(
                f"no job {options.job!r} submitted at {redact_url(options.redis_url)} "
                f"after {options.job_timeout:g}s"
            )
        if not told:
            print(f"waiting for job {options.job!r} to be submitted", file=sys.stderr)
            told = True
        await asyncio.sleep(_JOB_POLL)
    update: dict[str, Any] = {"resume": True, "quiet": True}
    if options.out is not None:
        update["out"] = options.out
    if options.concurrency is not None:
        update["concurrency"] = options.concurrency
    if options.max_bandwidth is not None:
        update["max_bandwidth"] = options.max_bandwidth
    if options.heartbeat_ttl is not None:
        update["heartbeat_ttl"] = options.heartbeat_ttl
    if options.store is not None:
        update["store"] = options.store
    try:
        return JobSettings.model_validate(settings.model_dump() | update)
    except ValidationError as exc:
        raise SettingsError(f"invalid worker option: {exc.errors()[0]['msg']}") from None


async def _work(
    control: Control, settings: JobSettings, name: str, guard: RedisGuard
) -> CrawlStats:
    try:
        settings.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {settings.out}") from exc
    duties = Duties(control, name, settings, guard)
    async with open_stages(settings, settings.seeds, worker=name) as stages:
        duties.capability = await probe_capability(
            settings.out, settings.concurrency, settings.max_bandwidth
        )
        frontier = RedisFrontier(
            control.redis,
            control.job,
            crawl_scope(settings, settings.seeds),
            stages.politeness,
            partitions=settings.partitions,
            owned=duties.owned,
            rules=stages.robots.known if settings.robots else None,
            lease_timeout=settings.claim_timeout,
            memory_budget=settings.queue_memory,
            defer_acks=True,
            partition_by=settings.partition_by,
            notify=duties.notify,
            hints=duties.hints,
        )
        crawler = stages.crawler(settings, frontier, on_commit=frontier.take_acks)
        crawler.restore_counts()
        install_signal_handlers(crawler)
        await duties.start(frontier, crawler, stages)
        log.info(
            "%s crawls job %s into %s", name, control.job, settings.out,
            extra={"event": "worker-started", "worker": name, "job": control.job},
        )  # fmt: skip
        try:
            stats = await crawler.run([])
        finally:
            await duties.stop()
            with contextlib.suppress(RedisError, OSError):
                await frontier.close()
                await control.leave(name, duties.figures())
        duties.raise_failure()
        stats.write(settings.out / "stats.json")
        log.info(
            "%s stopped after %d pages", name, stats.pages,
            extra={"event": "worker-stopped", "worker": name, "pages": stats.pages},
        )  # fmt: skip
    return stats


class Duties:
    """A worker's background tasks: heartbeat, leadership, assignment, claim renewal.

    After a Redis outage the leader waits until it has been steady for one heartbeat TTL and
    one claim renewal period before it rebalances or reclaims: by then every live worker has
    beaten again (its heartbeat key may have expired during the outage) and pushed its claims'
    deadlines past the outage, so neither a live worker's partitions nor its claims move.
    """

    def __init__(
        self, control: Control, name: str, settings: JobSettings, guard: RedisGuard
    ) -> None:
        self._control = control
        self._name = name
        self._settings = settings
        self._guard = guard
        self._ttl = settings.heartbeat_ttl
        self._settle = settings.heartbeat_ttl + settings.claim_timeout / 3
        self._owned: frozenset[int] = frozenset()
        self._owners: dict[int, str] = {}
        self._version = -1
        self._leading = False
        self._started = time.time()
        self._crawler: Crawler | None = None
        self._frontier: RedisFrontier | None = None
        self._stages: Stages | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._failure: BaseException | None = None
        self.capability = Capability(
            concurrency=settings.concurrency, max_bandwidth=settings.max_bandwidth
        )
        """What the probe found (set before :meth:`start`)."""
        self._observer = Observer()
        self._balancer = Balancer(control, settings.partitions, settings.allocator)

    def owned(self) -> frozenset[int]:
        """The partitions this worker owns now (the frontier's ``owned`` callable)."""
        return self._owned

    async def notify(self, parts: Collection[int]) -> None:
        """Tell the owners of ``parts`` (by the last assignment seen) they have new URLs."""
        owners: dict[str, list[int]] = {}
        for part in parts:
            owner = self._owners.get(part)
            if owner is not None and owner != self._name:
                owners.setdefault(owner, []).append(part)
        if owners:
            await self._control.wake(owners)

    async def hints(self) -> set[int]:
        """The partitions of this worker others filled since the last call."""
        return await self._control.woken(self._name)

    def figures(self) -> dict[str, Any]:
        """What the heartbeat publishes."""
        stats = self._crawler.stats() if self._crawler is not None else None
        figures: dict[str, Any] = {
            "pages": stats.pages if stats else 0,
            "pages_per_second": round(stats.pages_per_second, 2) if stats else 0.0,
            "started": round(self._started, 3),
            "partitions": len(self._owned),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        stages = self._stages
        if stats is not None and stages is not None and stages.meter is not None:
            figures["capability"] = capability_figures(self.capability, stages.meter)
            live = live_figures(stats, stages.fetcher.stats(), stages.meter, self._queue_depth())
            if self._observer.busy_rate > 0:  # the rate while it had work, not since start
                live["pages_per_second"] = round(self._observer.busy_rate, 2)
            figures["live"] = live
        return figures

    def _queue_depth(self) -> int:
        return self._frontier.in_memory if self._frontier is not None else 0

    async def start(self, frontier: RedisFrontier, crawler: Crawler, stages: Stages) -> None:
        self._frontier = frontier
        self._crawler = crawler
        self._stages = stages
        await self._control.heartbeat(self._name, self.figures(), self._ttl)
        # Lead at once: workers that waited for the job have beaten already, so they are in
        # the first assignment; one starting later joins the next.
        await self._lead()
        await self._follow()
        beat = self._ttl / 3
        renew = self._settings.claim_timeout / 3
        reclaim = max(1.0, min(self._settings.claim_timeout / 4, 10.0))
        for every, duty in (
            (beat, self._beat),
            (min(0.5, beat), self._lead),
            (min(_FOLLOW, beat), self._follow),
            (renew, frontier.renew),
            (reclaim, self._reclaim),
            (1.0, self._observe),
        ):
            task = asyncio.create_task(self._every(every, duty))
            task.add_done_callback(self._task_done)
            self._tasks.append(task)

    async def stop(self) -> None:
        """Cancel the duties; one that does not end within a second is cancelled again."""
        pending = set(self._tasks)
        for _ in range(10):
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=1.0)
            if not pending:
                return

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    async def _every(self, seconds: float, duty: Callable[[], Awaitable[Any]]) -> None:
        """Run ``duty`` every ``seconds``. The guard waits out connection errors; any other
        Redis error (``NOSCRIPT`` from a restarted server, say) is tolerated, the next round
        running the duty again, until such errors have lasted the guard's budget."""
        name = getattr(duty, "__name__", "duty").lstrip("_")
        errors = Outage(
            self._guard.budget,
            on_start=lambda error: log.warning(
                "%s failed (%s); trying again every %gs",
                name,
                redact_text(str(error)),
                seconds,
                extra={"event": "duty-failing", "duty": name},
            ),
        )
        task = asyncio.current_task()
        while True:
            await asyncio.sleep(seconds)
            try:
                await duty()
                if task is not None and task.cancelling():
                    # A cancel that a library turned into an error it then retried (asyncio
                    # timeouts can do that on 3.11) must still stop the loop.
                    raise asyncio.CancelledError
            except RedisUnavailable:
                raise
            except RedisError as error:
                if errors.failed(error) <= 0:
                    raise
            else:
                errors.recovered()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if self._failure is None:
            self._failure = task.exception()
        if self._crawler is not None:
            self._crawler.stop()

    async def _beat(self) -> None:
        await self._control.heartbeat(self._name, self.figures(), self._ttl)

    async def _lead(self) -> None:
        leading = await self._control.lead(self._name, self._ttl)
        if leading != self._leading:
            self._leading = leading
            self._log_leadership(leading)
        if leading and self._settled():
            if await self._balancer.rebalance(self._name) is not None:
                await self._follow()  # the leader's own share at once
            if self._settings.allocator == "bpnn-pso":
                await self._balancer.train()

    async def _observe(self) -> None:
        """Cut the crawl into observation windows for the runtime model (see balancer)."""
        if self._crawler is None or self._stages is None or self._stages.meter is None:
            return
        capability = Capability.from_json(capability_figures(self.capability, self._stages.meter))
        busy = self._queue_depth() > 0
        pages = self._crawler.stats().pages
        seen = self._observer.sample(time.monotonic(), pages, busy, capability)
        if seen is not None:
            await record(self._control, seen)

    async def _reclaim(self) -> None:
        if self._frontier is None or not self._settled():
            return
        if await self._control.leader() == self._name:
            await self._frontier.reclaim_expired()

    def _log_leadership(self, leading: bool) -> None:
        fields = {"worker": self._name, "job": self._control.job}
        if leading:
            log.info(
                "%s leads job %s now", self._name, self._control.job,
                extra={"event": "leader-acquired", **fields},
            )  # fmt: skip
        else:
            log.info(
                "%s no longer leads job %s", self._name, self._control.job,
                extra={"event": "leader-lost", **fields},
            )  # fmt: skip

    def _settled(self) -> bool:
        """Steady long enough since the last Redis failure to act as leader (see the class)."""
        return self._guard.steady_for() >= self._settle

    async def _follow(self) -> None:
        """On a new assignment version: drop lost partitions, claim from gained ones."""
        if await self._control.version() == self._version:
            return
        version, owned = await self._control.owned_by(self._name)
        if version == self._version:
            return
        self._version = version
        assignment = await self._control.assignment()
        self._owners = {p: name for name, parts in assignment.items() for p in parts}
        lost = self._owned - owned
        gained = owned - self._owned
        self._owned = owned
        given_back = 0
        if self._frontier is not None:
            if lost:
                given_back = await self._frontier.drop_partitions(lost)
            if gained:
                await self._frontier.refresh()
        if lost or gained:
            log.info(
                "assignment v%d: %s owns %d partitions (%d gained, %d lost, %d URLs given back)",
                version, self._name, len(owned), len(gained), len(lost), given_back,
                extra={
                    "event": "partitions-moved", "worker": self._name, "version": version,
                    "partitions": len(owned), "gained": len(gained), "lost": len(lost),
                    "given_back": given_back,
                },
            )  # fmt: skip

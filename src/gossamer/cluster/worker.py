"""A cluster worker: the normal crawl engine over the Redis frontier, plus its keeper.

The worker waits for its job, then builds its parts from the job's settings: the stages, the
Redis frontier, the crawl engine, and the keeper (:mod:`gossamer.cluster.keeper`) that runs its
housekeeping in one task next to the crawl loop: membership, leadership, following the
assignment and the frontier's upkeep. Acks reach Redis only after the checkpoint that makes
their records durable in this worker's crawl.db.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from gossamer import eventloop
from gossamer.balance.probe import probe_capability
from gossamer.cluster import DEFAULT_BUDGET, DEFAULT_JOB
from gossamer.cluster.assignment import Assignment
from gossamer.cluster.balancer import Balancer
from gossamer.cluster.control import Control
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.freshness import earlier_figures
from gossamer.cluster.jobs import load_job, open_guarded
from gossamer.cluster.jobusers import reveal_users
from gossamer.cluster.keeper import Keeper, Pace
from gossamer.cluster.leadership import Leadership
from gossamer.cluster.membership import Membership, Report
from gossamer.cluster.resilient import RedisGuard
from gossamer.cluster.seeding import load_origins, seed_origins
from gossamer.cluster.sitemaps import SitemapClaims
from gossamer.crawl import (
    NOTHING,
    WORKER_ADVICE,
    Additions,
    assemble_crawler,
    check_proxies,
    focus_policy,
    install_signal_handlers,
    metric_sources,
    open_stages,
    start_stages,
    stop_after,
    storage_errors,
    tune_gc,
)
from gossamer.digests.redis import RedisDigests
from gossamer.frontier.admission import Guards
from gossamer.frontier.redis import Peers, RedisFrontier, RedisFrontierConfig, partition_of
from gossamer.logs import LOG_FILE, logging_to_file
from gossamer.redact import redact_url
from gossamer.settings import (
    ClusterSettings,
    InvalidSetting,
    JobSettings,
    SettingsError,
    settings_to_dict,
    validate_model,
)
from gossamer.settings.base import redacted
from gossamer.stats import CrawlStats
from gossamer.status import status_file

if TYPE_CHECKING:
    from gossamer.crawl.stages import Stages
    from gossamer.engine import Crawler
    from gossamer.frontier.revisits import RevisitBook
    from gossamer.metrics.exporter import MetricsServer

log = logging.getLogger(__name__)
_JOB_POLL = 0.1
"""Seconds between looks for a job not submitted yet: a waiting worker starts at once."""


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
    stored without a password, and with a user name given alone kept apart (``--store`` or
    ``GOSSAMER_STORE``; see ``jobs.job_settings``)."""
    proxies: tuple[str, ...] = ()
    """This worker's proxies, passwords included: with ``proxies_file``, they replace the
    job's, which are stored without passwords (``--proxy`` or ``GOSSAMER_PROXIES``)."""
    proxies_file: Path | None = None
    job_timeout: float = 600.0
    """Seconds to wait for a job to be submitted."""
    redis_timeout: float = DEFAULT_BUDGET
    """Seconds an unreachable Redis is waited for before the worker gives up."""
    replica_wait: bool = True
    """WAIT for a replica after pipelined frontier writes when the Redis Cluster has replicas."""
    metrics_port: int | None = None
    """Serve ``/metrics`` and ``/healthz`` on this port (from the start: while waiting for
    the job too); the job's own ``metrics_port`` is not used by workers."""
    metrics_bind: str = "127.0.0.1"
    metrics_hosts: tuple[str, ...] = ()
    """Host names the metrics port answers to besides addresses, localhost and the
    machine's name (see gossamer.metrics.hostcheck)."""

    def __repr__(self) -> str:
        """The options with every password (Redis URL, page store, proxies) masked."""
        shown = ", ".join(f"{f.name}={redacted(getattr(self, f.name))!r}" for f in fields(self))
        return f"WorkerOptions({shown})"


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


async def run_worker(options: WorkerOptions, additions: Additions = NOTHING) -> CrawlStats:
    """Join the job, crawl its share until the job is finished (or SIGTERM), write stats.json;
    with what ``additions`` adds (page handlers, sinks, the crawl loop handed to ``started``:
    see :class:`gossamer.Worker`)."""
    if options.redis_timeout <= 0:
        raise SettingsError("invalid worker option 'redis-timeout': give a positive number")
    from gossamer.metrics.exporter import serve_metrics

    name = options.name or default_name()
    port, bind = options.metrics_port, options.metrics_bind
    async with serve_metrics(bind, port, options.job, name, options.metrics_hosts) as metrics:
        # Guarded from the first connection: a worker started before Redis waits for it.
        control, guard = await open_guarded(
            options.redis_url, options.job, options.redis_timeout, durable=options.replica_wait
        )
        try:
            settings = await _wait_for_job(control, options, name, additions.stopping)
            tune_gc()
            return await _work(control, settings, name, guard, metrics, additions)
        finally:
            await control.redis.aclose()


async def _wait_for_job(
    control: Control,
    options: WorkerOptions,
    name: str,
    stopping: Callable[[], bool] | None = None,
) -> JobSettings:
    """The job's settings with this worker's options, once it is submitted. Meanwhile the
    worker beats, so the first leader's first assignment includes every waiting worker.
    Cancelled, or at its next look once ``stopping`` says so."""
    deadline = time.monotonic() + options.job_timeout
    ttl = options.heartbeat_ttl or ClusterSettings().heartbeat_ttl
    figures = {"pages": 0, "partitions": 0, "pid": os.getpid(), "host": socket.gethostname()}
    figures["started"] = round(time.time(), 3)
    next_beat = 0.0
    told = False
    while (settings := await load_job(control)) is None:
        if stopping is not None and stopping():
            raise asyncio.CancelledError  # as the cancel that may have been lost
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
    own_proxies = bool(options.proxies) or options.proxies_file is not None
    settings = await reveal_users(  # those of the job's store and proxies this one keeps
        control.redis, control.job, settings, store=options.store is None, proxies=not own_proxies
    )
    update: dict[str, Any] = {"resume": True, "quiet": True, "metrics_port": None}
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
    if own_proxies:
        update["proxies"] = list(options.proxies)
        update["proxies_file"] = options.proxies_file
    try:
        return validate_model(JobSettings, settings_to_dict(settings) | update)
    except InvalidSetting as exc:
        raise SettingsError(f"invalid worker option '{exc.field}': {exc.problem}") from None


async def _work(
    control: Control,
    settings: JobSettings,
    name: str,
    guard: RedisGuard,
    metrics: MetricsServer | None = None,
    additions: Additions = NOTHING,
) -> CrawlStats:
    """Build the worker's parts from the job's settings (the one wiring place), crawl, stop.
    A full disk or a corrupt crawl.db ends it with one line, as it does a crawl
    (:func:`~gossamer.crawl.storage_errors`), once it has left the job as it does at its
    normal end (`_leave`)."""
    try:
        settings.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {settings.out}") from exc
    with storage_errors(settings.out, WORKER_ADVICE), logging_to_file(settings.out / LOG_FILE):
        return await _crawl_share(control, settings, name, guard, metrics, additions)


async def _crawl_share(
    control: Control,
    settings: JobSettings,
    name: str,
    guard: RedisGuard,
    metrics: MetricsServer | None,
    additions: Additions,
) -> CrawlStats:
    # What the scope needs of the seeds: their origins (stored apart from the job's settings;
    # a job stored before held its seeds in its settings).
    origins = sorted({*await load_origins(control), *seed_origins(settings.seeds)})
    async with open_stages(settings, origins, worker=name, items=additions.items) as stages:
        del origins  # kept by the scope as far as the crawl needs them
        capability = await probe_capability(
            settings.out, settings.concurrency, settings.max_bandwidth
        )
        moved = None if stages.sitemaps is None else stages.sitemaps.moved
        assignment = Assignment(control, name, moved)
        frontier = _frontier(control, settings, stages, assignment)
        revisits = _keep_fresh(frontier, settings, stages)
        digests = None
        if settings.digests != "off" and settings.text:
            digests = RedisDigests(control.redis, control.job, settings.digest_threshold)
        if stages.sitemaps is not None:  # one read of each sitemap in the job
            stages.sitemaps.share(
                SitemapClaims(
                    control.redis,
                    control.job,
                    name,
                    settings.claim_timeout,
                    reread=_reread(settings),
                )
            )
        shared = frontier.shared_slots()
        if shared is not None and stages.gate is not None:  # sitemaps at the shared pace
            stages.gate.share(shared)
        if settings.partition_by == "host":  # a host's sitemaps at its owner's pace only
            _by_owner(stages, assignment, settings.partitions)
        await start_stages(frontier, stages.gate, stages.proxies)
        focus = await focus_policy(
            settings,
            frontier,
            stages.fetcher,
            stages.gate,
            stages.robots,
            shared=(control.redis, control.job),
            scope=stages.scope,
            proxies=stages.proxies,
        )
        crawler = assemble_crawler(
            stages,
            settings,
            frontier,
            on_commit=frontier.take_acks,
            focus=focus,
            digests=digests,
            additions=additions,
            revisits=revisits,
        )
        crawler.restore_counts()
        if metrics is not None:
            sources = metric_sources(stages, crawler, frontier, revisits)
            extra = {**sources.extra, "redis": guard.stats}  # outages, waits for replicas
            metrics.attach(dataclasses.replace(sources, extra=extra))
        if additions.signals:
            install_signal_handlers(crawler)
        if settings.max_duration is not None:
            stop_after(crawler, settings.max_duration)  # this worker stops, as on SIGTERM
        earlier = await earlier_figures(control, name)  # a run before under this name
        report = Report(crawler, stages, capability, frontier, revisits, earlier)
        keeper = Keeper(
            control,
            name,
            frontier,
            crawler,
            membership=Membership(control, name, settings.heartbeat_ttl, report),
            leadership=Leadership(
                control,
                name,
                settings.heartbeat_ttl,
                Balancer(control, settings.partitions, settings.allocator),
                guard,
                settle=settings.heartbeat_ttl + settings.claim_timeout / 3,
                train=settings.allocator == "bpnn-pso",
            ),
            assignment=assignment,
            guard=guard,
            pace=Pace(
                settings.heartbeat_ttl, settings.claim_timeout, partitions=settings.partitions
            ),
        )
        await keeper.start()
        if additions.started is not None:
            additions.started(crawler)
        loop = eventloop.running()
        log.info(
            "%s crawls job %s into %s (%s loop)",
            name,
            control.job,
            settings.out,
            loop,
            extra={
                "event": "worker-started",
                "worker": name,
                "job": control.job,
                "event_loop": loop,
            },
        )
        try:
            async with status_file(settings.out, crawler, worker=name):
                stats = await crawler.run([])
        finally:
            await _leave(keeper, frontier, stages, crawler)
        keeper.raise_failure()
        stats.write(settings.out / "stats.json")
        log.info(
            "%s stopped after %d pages",
            name,
            stats.pages,
            extra={"event": "worker-stopped", "worker": name, "pages": stats.pages},
        )
        check_proxies(stages.proxies)  # stopped by proxies that refuse it: an error exit
    return stats


async def _leave(keeper: Keeper, frontier: RedisFrontier, stages: Stages, crawler: Crawler) -> None:
    """The crawl ended: stop the sitemap reads and commit what those that ended since the
    crawl's last checkpoint recorded (a read counted then had no record, and what the reads
    count from now on would never be published), hand the claims back, then leave the
    registry with the final figures, which the job's totals keep
    (:mod:`gossamer.cluster.freshness`), even when the handover failed. Each waits out an
    outage; the job goes on without this worker if Redis stays away."""
    try:
        if stages.sitemaps is not None:
            await stages.sitemaps.close()
            await crawler.checkpoint()
    finally:
        await keeper.stop()
        try:
            with contextlib.suppress(RedisError, OSError):
                await frontier.close()
        finally:
            with contextlib.suppress(RedisError, OSError):
                await keeper.leave()


def _by_owner(stages: Stages, assignment: Assignment, partitions: int) -> None:
    """By host: the gate's aside passes and the sitemap stage's reads for the hosts of the
    partitions ``assignment`` gives this worker only (:mod:`gossamer.frontier.gate`)."""

    def owns(key: str) -> bool:
        return partition_of(key, partitions) in assignment.ownership.partitions

    if stages.gate is not None:
        stages.gate.own(owns)
    if stages.sitemaps is not None:
        stages.sitemaps.own(owns)


def _frontier(
    control: Control, settings: JobSettings, stages: Stages, assignment: Assignment
) -> RedisFrontier:
    """The worker's Redis frontier (a continuous job's: ``ContinuousFrontier``)."""
    kind: type[RedisFrontier] = RedisFrontier
    if settings.recrawl:  # a job that ends imports none of the revisit modules
        from gossamer.frontier.redis.continuous import ContinuousFrontier

        kind = ContinuousFrontier
    frontier = kind(
        control.redis,
        control.job,
        stages.scope,
        stages.politeness,
        config=RedisFrontierConfig(
            partitions=settings.partitions,
            lease_timeout=settings.claim_timeout,
            memory_budget=settings.queue_memory,
            slack=settings.focus_slack,
            defer_acks=True,
            partition_by=settings.partition_by,
        ),
        ownership=assignment.ownership,
        rules=stages.robots.known if settings.robots else None,
        guards=Guards.of(settings),
    )
    frontier.join(Peers(assignment.name, control.alive))  # partitions change hands among them
    return frontier


def _keep_fresh(
    frontier: RedisFrontier, settings: JobSettings, stages: Stages
) -> RevisitBook | None:
    """A continuous job's revisit state, the sitemaps' ``lastmod`` hooked in (None for a
    job that ends)."""
    if not settings.recrawl:
        return None
    from gossamer.crawl.revisiting import revisit_bounds
    from gossamer.frontier.redis.continuous import ContinuousFrontier

    assert isinstance(frontier, ContinuousFrontier)
    if stages.sitemaps is not None:
        stages.sitemaps.use_lastmod(frontier.sooner)
    return frontier.recrawl(revisit_bounds(settings), spare=settings.revisit_spare)


def _reread(settings: JobSettings) -> Callable[[str], float] | None:
    """A continuous job's: the seconds from a sitemap read's start to its next read (its
    URL's initial revisit interval, as in an embedded crawl); None for a job that ends."""
    if not settings.recrawl:
        return None
    from gossamer.crawl.revisiting import revisit_bounds

    bounds = revisit_bounds(settings)
    return lambda url: bounds(url, None).initial

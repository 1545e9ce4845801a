"""A cluster worker: the normal crawl engine over the Redis frontier, plus its duties.

Duties run as background tasks next to the crawl loop: the heartbeat, the leader's work
(taking the lease, publishing the assignment, returning dead workers' expired claims) and
following the assignment (dropping lost partitions, claiming gained ones). Acks reach Redis
only after the checkpoint that makes their records durable in this worker's crawl.db.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from gossamer.balance.capability import Capability
from gossamer.balance.probe import capability_figures, live_figures, probe_capability
from gossamer.cluster.balancer import Balancer, Observer, model_report, record
from gossamer.cluster.control import Control, JobTotals
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.resilient import (
    DEFAULT_BUDGET,
    RedisGuard,
    RedisUnavailable,
    install_guard,
)
from gossamer.crawl import (
    Stages,
    canonical_seeds,
    crawl_scope,
    install_signal_handlers,
    open_stages,
    tune_gc,
)
from gossamer.engine import Crawler, robots_check
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisClient, RedisFrontier
from gossamer.settings import CrawlSettings, SettingsError
from gossamer.stats import CrawlStats

DEFAULT_JOB = "gossamer"
_CONNECT_TIMEOUT = 3.0
_POLL = 0.5
_JOB_POLL = 0.1
"""Seconds between looks for a job not submitted yet: a waiting worker starts at once."""


def connect(url: str, *, cluster: bool = False) -> RedisClient:
    """A client for ``url`` (``redis://`` or ``rediss://``): of that one server, or with
    ``cluster`` of the Redis Cluster that server belongs to. A malformed URL is a settings error.
    """
    kind = RedisCluster if cluster else Redis
    try:
        return kind.from_url(url, socket_connect_timeout=_CONNECT_TIMEOUT, socket_timeout=30)
    except ValueError as exc:
        raise SettingsError(f"invalid setting 'redis': {exc}") from None


async def open_control(url: str, job: str) -> Control:
    """A control handle on ``job`` once Redis at ``url`` answers.

    For a Redis Cluster give any one node's URL, as to ``redis-cli -c``: the node is asked
    once whether it runs in cluster mode, and if so a cluster client finds the other nodes
    and sends each key to the node owning its slot.
    """
    redis = connect(url)
    try:
        if (await redis.info("cluster")).get("cluster_enabled"):
            await redis.aclose()
            redis = connect(url, cluster=True)
        await redis.ping()
        return Control(redis, job)
    except ValueError as exc:
        await redis.aclose()
        raise SettingsError(f"invalid setting 'job': {exc}") from None
    except (RedisError, OSError) as exc:
        await redis.aclose()
        raise ClusterError(f"cannot reach Redis at {url}: {exc}") from None


def parse_job(raw: str, job: str) -> CrawlSettings:
    """The stored settings of ``job``; malformed ones are a settings error."""
    try:
        return CrawlSettings.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        raise SettingsError(f"stored job {job!r} is malformed: {where}: {first['msg']}") from None


async def load_job(control: Control) -> CrawlSettings | None:
    """The job's settings, or None before submit."""
    raw = await control.load_job()
    return None if raw is None else parse_job(raw, control.job)


# -- submit ---------------------------------------------------------------------------------


async def submit(settings: CrawlSettings, url: str, job: str) -> int:
    """Store the job's settings and queue its seeds; returns how many seeds were queued."""
    seeds = canonical_seeds(settings)
    settings = settings.model_copy(update={"seeds": seeds, "seeds_file": None, "resume": False})
    control = await open_control(url, job)
    try:
        if await control.load_job() is not None:
            raise SettingsError(f"job {job!r} exists already at {url}; choose another --job")
        frontier = RedisFrontier(
            control.redis,
            job,
            crawl_scope(settings, seeds),
            PolitenessPolicy(),
            partitions=settings.partitions,
            partition_by=settings.partition_by,
        )
        added = await frontier.add([Candidate(seed) for seed in seeds])
        # Seeds first: a worker that sees the job must not find it finished already.
        await control.store_job(settings.model_dump_json())
        return added.added
    finally:
        await control.redis.aclose()


# -- status and wait ------------------------------------------------------------------------


async def status(url: str, job: str) -> dict[str, Any]:
    """The job's state as ``cluster status --json`` prints it."""
    control = await open_control(url, job)
    try:
        settings = await load_job(control)
        totals = await control.totals(settings.partitions) if settings else None
        workers = [
            {
                "name": w.name,
                "alive": w.alive,
                "partitions": w.figures.get("partitions", 0),
                "pages": w.figures.get("pages", 0),
                "pages_per_second": w.figures.get("pages_per_second", 0.0),
                "started": w.figures.get("started"),
                "capability": w.figures.get("capability", {}),
                "live": w.figures.get("live", {}),
            }
            for w in await control.workers()
        ]
        return {
            "job": job,
            "submitted": settings is not None,
            "done": bool(totals and totals.done),
            "leader": await control.leader(),
            "assignment_version": await control.version(),
            "totals": _totals(totals),
            "pages_per_second": round(sum(w["pages_per_second"] for w in workers if w["alive"]), 2),
            "workers": workers,
            "allocator": settings.allocator if settings else None,
            "runtime_model": await model_report(control),
        }
    finally:
        await control.redis.aclose()


def _totals(totals: JobTotals | None) -> dict[str, int]:
    if totals is None:
        return {"queued": 0, "claimed": 0, "seen": 0, "finished": 0}
    return {
        "queued": totals.queued,
        "claimed": totals.claimed,
        "seen": totals.seen,
        "finished": totals.finished,
    }


async def wait(url: str, job: str, limit: float | None) -> bool:
    """Wait until the job is finished (True) or ``limit`` seconds pass (False); a Redis
    restart meanwhile is waited out like in a worker (within ``limit``)."""
    control = await open_control(url, job)
    install_guard(
        control.redis, url, DEFAULT_BUDGET if limit is None else min(limit, DEFAULT_BUDGET)
    )
    deadline = None if limit is None else time.monotonic() + limit
    try:
        while True:
            settings = await load_job(control)
            if settings is not None and (await control.totals(settings.partitions)).done:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(_POLL)
    finally:
        await control.redis.aclose()


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
    try:
        settings = await _wait_for_job(control, options)
        tune_gc()
        return await _work(control, settings, options.name or default_name(), guard)
    finally:
        await control.redis.aclose()


async def _wait_for_job(control: Control, options: WorkerOptions) -> CrawlSettings:
    deadline = time.monotonic() + options.job_timeout
    told = False
    while (settings := await load_job(control)) is None:
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"no job {options.job!r} submitted at {options.redis_url} "
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
    try:
        return CrawlSettings.model_validate(settings.model_dump() | update)
    except ValidationError as exc:
        raise SettingsError(f"invalid worker option: {exc.errors()[0]['msg']}") from None


async def _work(
    control: Control, settings: CrawlSettings, name: str, guard: RedisGuard
) -> CrawlStats:
    try:
        settings.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {settings.out}") from exc
    duties = Duties(control, name, settings, guard)
    async with open_stages(settings, worker=name) as stages:
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
            robots_check=robots_check(stages.robots, settings.robots),
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
        try:
            stats = await crawler.run([])
        finally:
            await duties.stop()
            with contextlib.suppress(RedisError, OSError):
                await frontier.close()
                await control.leave(name, duties.figures())
        duties.raise_failure()
        stats.write(settings.out / "stats.json")
    return stats


class Duties:
    """A worker's background tasks: heartbeat, leadership, assignment, claim renewal.

    After a Redis outage the leader waits until it has been steady for one heartbeat TTL and
    one claim renewal period before it rebalances or reclaims: by then every live worker has
    beaten again (its heartbeat key may have expired during the outage) and pushed its claims'
    deadlines past the outage, so neither a live worker's partitions nor its claims move.
    """

    def __init__(
        self, control: Control, name: str, settings: CrawlSettings, guard: RedisGuard
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
        await self._follow()  # the first leader publishes a tick later: workers started
        # together are all in its first assignment
        beat = self._ttl / 3
        renew = self._settings.claim_timeout / 3
        reclaim = max(1.0, min(self._settings.claim_timeout / 4, 10.0))
        for every, duty in (
            (beat, self._beat),
            (min(0.5, beat), self._lead),
            (min(0.25, beat), self._follow),
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
        failing_since: float | None = None
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
            except RedisError:
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since >= self._guard.budget:
                    raise
            else:
                failing_since = None

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
        if await self._control.lead(self._name, self._ttl) and self._settled():
            await self._balancer.rebalance(self._name)
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

    def _settled(self) -> bool:
        """Steady long enough since the last Redis failure to act as leader (see the class)."""
        return self._guard.steady_for() >= self._settle

    async def _follow(self) -> None:
        """On a new assignment version: drop lost partitions, claim from gained ones."""
        version, owned = await self._control.owned_by(self._name)
        if version == self._version:
            return
        self._version = version
        assignment = await self._control.assignment()
        self._owners = {p: name for name, parts in assignment.items() for p in parts}
        lost = self._owned - owned
        gained = owned - self._owned
        self._owned = owned
        if self._frontier is None:
            return
        if lost:
            await self._frontier.drop_partitions(lost)
        if gained:
            await self._frontier.refresh()

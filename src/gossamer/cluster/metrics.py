"""A cluster job's Prometheus view, read from Redis on every scrape: ``/metrics``,
``/queued`` and ``/healthz`` of ``gossamer cluster metrics``.

It reads the job's live workers and their heartbeat figures and the job's partition counts
on every scrape: a worker that left (its heartbeat expired or it left cleanly) has no series.
The revisit and sitemap families sum the last figures of every worker that joined, left or
not, so they only grow (:mod:`gossamer.cluster.freshness`).
Labels are ``job``, and ``worker`` for the ``gossamer_worker_*`` families; the help texts are
:data:`gossamer.metrics.exporter.HELP`'s, the server is built like a crawl's
(:mod:`gossamer.metrics.exporter`), behind the same ``Host`` check.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from redis.exceptions import RedisError

from gossamer.balance.capability import Live
from gossamer.cluster.control import Control
from gossamer.cluster.freshness import JobFreshness, due_backlog, job_freshness
from gossamer.cluster.jobs import load_job
from gossamer.metrics.exporter import COUNTER, GAUGE, application, family, listen
from gossamer.metrics.hostcheck import HostCheck
from gossamer.redact import redact_text
from gossamer.settings import SettingsError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobView:
    """A job as one scrape sees it: its totals, and its live workers' figures (from their
    heartbeats, validated: :class:`~gossamer.balance.capability.Live` plus partitions)."""

    job: str
    submitted: bool
    queued: int = 0
    claimed: int = 0
    seen: int = 0
    finished: int = 0
    set_aside: int = 0
    workers: tuple[tuple[str, int, Live], ...] = ()
    """(name, partitions, live figures) of each live worker."""
    freshness: JobFreshness = field(default_factory=JobFreshness)
    """Revisits and sitemaps of every worker that joined, the due backlog."""
    partitions_aside: int = 0
    """Partitions set aside (a key of the wrong type...), their URLs not crawled."""

    @property
    def done(self) -> bool:
        return self.seen > 0 and self.queued == 0 and self.claimed == 0


async def read_job(control: Control, *, fresh: bool = True) -> JobView:
    """The job's totals and live workers, read from Redis now (with ``fresh``, a continuous
    job's due backlog too: a count in every partition)."""
    settings = await load_job(control)
    if settings is None:
        return JobView(control.job, submitted=False)
    totals = await control.totals(settings.partitions)
    workers = []
    infos = await control.workers()
    backlog = 0
    if settings.recrawl and fresh:
        backlog = await due_backlog(control.redis, control.job, settings.partitions)
    for info in infos:
        if info.alive:
            parts = info.figures.get("partitions")
            count = parts if type(parts) is int and 0 <= parts < 1 << 20 else 0
            workers.append((info.name, count, Live.from_json(info.figures.get("live"))))
    return JobView(
        control.job,
        True,
        totals.queued,
        totals.claimed,
        totals.seen,
        totals.finished,
        totals.set_aside,
        tuple(workers),
        job_freshness(infos, backlog),
        len(totals.aside),
    )


class JobCollector(Collector):
    """The metric families of one :class:`JobView`: job totals (label ``job``) and a series
    per live worker (``job``, ``worker``); a worker that left has none."""

    def __init__(self, view: JobView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        view = self._view
        job = [view.job]
        backlog = view.queued + view.claimed
        yield family(GAUGE, "gossamer_job_queued_urls", job, backlog)
        yield family(GAUGE, "gossamer_job_claimed_urls", job, view.claimed)
        yield family(GAUGE, "gossamer_job_workers", job, len(view.workers))
        rate = round(sum(live.pages_per_second for _, _, live in view.workers), 3)
        yield family(GAUGE, "gossamer_job_pages_per_second", job, rate)
        yield family(GAUGE, "gossamer_job_done", job, int(view.done))
        yield family(GAUGE, "gossamer_job_submitted", job, int(view.submitted))
        yield family(COUNTER, "gossamer_job_seen_urls_total", job, view.seen)
        yield family(COUNTER, "gossamer_job_finished_urls_total", job, view.finished)
        yield family(COUNTER, "gossamer_job_set_aside_total", job, view.set_aside)
        yield family(GAUGE, "gossamer_job_partitions_set_aside", job, view.partitions_aside)
        yield from _fresh(view)
        for kind, name, figure in _PER_WORKER:
            yield _per_worker(kind, name, view, figure)


def _fresh(view: JobView) -> Iterator[Metric]:
    """The job's revisit and sitemap families (every worker that joined summed)."""
    job, fresh = [view.job], view.freshness
    results = {name.replace("-", "_"): count for name, count in fresh.results.items()}
    yield family(COUNTER, "gossamer_job_revisits_total", job, results, "result")
    yield family(COUNTER, "gossamer_job_revisits_bytes_saved_total", job, fresh.bytes_saved)
    yield family(COUNTER, "gossamer_job_revisits_spared_total", job, fresh.spared)
    yield family(GAUGE, "gossamer_job_revisits_backlog", job, fresh.backlog)
    yield family(COUNTER, "gossamer_job_sitemap_files_total", job, fresh.sitemap_files)
    yield family(COUNTER, "gossamer_job_sitemap_entries_total", job, fresh.sitemap_entries)
    yield family(COUNTER, "gossamer_job_sitemap_admitted_total", job, fresh.sitemap_admitted)


_PER_WORKER: tuple[tuple[str, str, Callable[[int, Live], float]], ...] = (
    (COUNTER, "gossamer_worker_pages_total", lambda _, live: live.pages),
    (COUNTER, "gossamer_worker_errors_total", lambda _, live: live.errors),
    (GAUGE, "gossamer_worker_pages_per_second", lambda _, live: live.pages_per_second),
    (GAUGE, "gossamer_worker_partitions", lambda parts, _: parts),
    (GAUGE, "gossamer_worker_queued_urls", lambda _, live: live.queue_depth),
    (GAUGE, "gossamer_worker_fetch_latency_seconds", lambda _, live: live.mean_latency),
    (GAUGE, "gossamer_worker_received_bytes_per_second", lambda _, live: live.bandwidth_bps),
)


def _per_worker(
    kind: str, name: str, view: JobView, figure: Callable[[int, Live], float]
) -> Metric:
    metric = family(kind, name, [view.job, ""], {})
    for worker, parts, live in view.workers:
        metric.add_metric([view.job, worker], figure(parts, live))  # type: ignore[attr-defined]
    return metric


async def job_metrics(control: Control) -> bytes:
    """The job's metrics in the Prometheus text format, read from Redis now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobCollector(await read_job(control)))
    return generate_latest(registry)


def cluster_handler(control: Control) -> Callable[[web.Request], Awaitable[web.Response]]:
    """An aiohttp handler serving ``control``'s job metrics (mount it at ``/metrics``); a
    Redis failure answers 503 with one line."""

    async def handle(request: web.Request) -> web.Response:
        try:
            body = await job_metrics(control)
        except (RedisError, OSError, SettingsError) as exc:
            log.warning("job %s: metrics not read: %s", control.job, redact_text(str(exc)))
            return web.Response(status=503, text=f"cannot read job {control.job!r} from Redis\n")
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle


def queued_handler(control: Control) -> Callable[[web.Request], Awaitable[web.Response]]:
    """An aiohttp handler answering ``{"job": J, "queued": N, "claimed": M}``, ``queued``
    as ``gossamer_job_queued_urls`` (for KEDA's metrics-api scaler)."""

    async def handle(request: web.Request) -> web.Response:
        try:
            view = await read_job(control, fresh=False)
        except (RedisError, OSError, SettingsError):
            return web.json_response({"job": control.job, "error": "redis"}, status=503)
        queued = view.queued + view.claimed
        return web.json_response({"job": view.job, "queued": queued, "claimed": view.claimed})

    return handle


async def serve_job(control: Control, bind: str, port: int, hosts: Iterable[str] = ()) -> None:
    """``gossamer cluster metrics``: serve the job's ``/metrics``, ``/queued`` and
    ``/healthz`` until SIGINT or SIGTERM (to the ``Host`` names of
    :meth:`HostCheck.for_bind`)."""
    app = application(HostCheck.for_bind(bind, hosts))
    app.router.add_get("/metrics", cluster_handler(control))
    app.router.add_get("/queued", queued_handler(control))
    app.router.add_get("/healthz", _alive)
    runner = await listen(app, bind, port)
    try:
        print(f"serving job {control.job!r} metrics on http://{bind}:{port}/metrics", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


async def _alive(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")

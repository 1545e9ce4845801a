"""Prometheus metrics: ``/metrics`` and ``/healthz`` of a crawl process, and a cluster job's
view read from Redis.

Nothing is counted for Prometheus on the hot path: a scrape reads the stages' frozen
``stats()`` snapshots (:class:`Sources`) and turns them into metric families
(:class:`CrawlCollector`). The server (:class:`MetricsServer`) runs on the crawl's own event
loop (aiohttp.web), so the snapshots are taken on the loop that owns the counters.

``/healthz`` answers 200 ``ok`` while the crawl loop goes round (or the process waits for its
crawl to start: a worker waiting for its job), and 503 once the crawl is stopping, has
stopped, or its loop has not gone round for :data:`STALL_SECONDS` (stuck).

A job's cluster-wide view (:func:`cluster_handler`, served by ``gossamer cluster metrics``)
reads the job's live workers and their heartbeat figures and the job's partition counts on
every scrape: a worker that left (its heartbeat expired or it left cleanly) has no series.

Labels are ``job`` and ``worker`` (plus one bounded dimension where a family needs one:
outcome, status class, error reason); never a host or a URL.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gossamer.engine import LoopState
from gossamer.fetch.http import DURATION_BUCKETS, FetchStats
from gossamer.fetch.proxies import PoolStats
from gossamer.frontier.base import FrontierStats
from gossamer.settings import SettingsError
from gossamer.stats import CrawlStats

if TYPE_CHECKING:
    from gossamer.cluster.control import Control

log = logging.getLogger(__name__)

STALL_SECONDS = 60.0
"""``/healthz`` says ``stuck`` once the crawl loop has not gone round for this long (it goes
round at least once a second while it runs; a Redis outage is waited out for up to 60 s)."""
LOCAL_JOB = "local"
"""The ``job`` label of a ``gossamer crawl`` (a cluster worker's is its job's name)."""
_MAX_REASONS = 64
"""Distinct error reasons exported; any more are summed as ``other``."""
_NAME = re.compile(r"[^a-zA-Z0-9_]")
_LABELS = ["job", "worker"]

Snapshot = Callable[[], object]


@dataclass(frozen=True)
class Sources:
    """Where a crawl process' figures come from: each a function returning a frozen snapshot.

    ``extra`` holds further stages by section name (``{"render": renderer.stats}``): each
    numeric field of its snapshot (a dataclass or a mapping; None: no series) becomes
    ``gossamer_<section>_<field>``, a counter if the field's name ends in ``_total``, else
    a gauge.
    """

    crawl: Callable[[], CrawlStats]
    fetch: Callable[[], FetchStats]
    frontier: Callable[[], FrontierStats]
    loop: Callable[[], LoopState]
    proxies: Callable[[], PoolStats] | None = None
    extra: Mapping[str, Snapshot] = field(default_factory=dict)


def default_worker() -> str:
    """The ``worker`` label of a process with no worker name: host-pid."""
    return f"{socket.gethostname()}-{os.getpid()}"


# -- one crawl process ---------------------------------------------------------------------


class CrawlCollector(Collector):
    """The metric families of one crawl process, read from its :class:`Sources` at scrape
    time (none before :meth:`attach`)."""

    def __init__(self, job: str, worker: str) -> None:
        self._labels = [job, worker]
        self._sources: Sources | None = None

    def attach(self, sources: Sources) -> None:
        """Read the crawl's figures from ``sources`` from now on."""
        self._sources = sources

    @property
    def sources(self) -> Sources | None:
        return self._sources

    def collect(self) -> Iterator[Metric]:
        if self._sources is None:
            return
        sources = self._sources
        yield from self._crawl(sources.crawl(), sources.frontier())
        yield from self._fetch(sources.fetch())
        if sources.proxies is not None:
            yield from self._proxies(sources.proxies())
        for section, snapshot in sources.extra.items():
            yield from self._generic(section, snapshot())

    def _crawl(self, stats: CrawlStats, front: FrontierStats) -> Iterator[Metric]:
        lab = self._labels
        other = stats.pages - stats.ok - stats.errors - stats.robots_blocked
        yield _counter(
            "gossamer_pages",
            "Records written (one per finished URL), by outcome: ok (2xx), error, "
            "robots_blocked, other (redirects and other non-2xx answers without an error).",
            lab,
            "outcome",
            {
                "ok": stats.ok,
                "error": stats.errors,
                "robots_blocked": stats.robots_blocked,
                "other": max(0, other),
            },
        )
        yield _counter(
            "gossamer_requests",
            "HTTP requests made, robots.txt included.",
            lab,
            value=stats.requests,
        )
        yield _counter(
            "gossamer_retries", "URLs queued again for another attempt.", lab, value=stats.retries
        )
        yield _counter(
            "gossamer_duplicates", "Links dropped as already seen.", lab, value=stats.duplicates
        )
        yield _counter(
            "gossamer_internal_errors",
            "URLs ended by a failure inside gossamer.",
            lab,
            value=stats.internal_errors,
        )
        yield _counter(
            "gossamer_rejected_urls", "Links out of scope, by reason.", lab, "reason",
            _bounded(stats.rejected),
        )  # fmt: skip
        yield _gauge(
            "gossamer_queued_urls",
            "URLs queued (in memory, on disk or delayed).",
            lab,
            stats.queued,
        )
        yield _gauge(
            "gossamer_in_flight_urls", "URLs being fetched or handled now.", lab, stats.in_flight
        )
        hosts = GaugeMetricFamily(
            "gossamer_hosts_waiting",
            "Hosts with URLs waiting for their time: at their polite pace, or backing off "
            "(slowed down by errors or latency, paused by Retry-After).",
            labels=[*_LABELS, "reason"],
        )
        hosts.add_metric([*lab, "politeness"], front.hosts_polite)
        hosts.add_metric([*lab, "backoff"], front.hosts_backing_off)
        yield hosts

    def _fetch(self, fetch: FetchStats) -> Iterator[Metric]:
        lab = self._labels
        yield _counter(
            "gossamer_responses", "HTTP responses by status class.", lab, "status_class",
            dict(fetch.responses),
        )  # fmt: skip
        yield _counter(
            "gossamer_fetch_errors", "Failed fetches by reason (a response whose body failed "
            "counts here and in gossamer_responses_total).", lab, "reason", _bounded(fetch.errors),
        )  # fmt: skip
        received = CounterMetricFamily(
            "gossamer_received_bytes",
            "Body bytes received: as sent (wire) and after content decoding (decoded).",
            labels=[*_LABELS, "encoding"],
        )
        received.add_metric([*lab, "wire"], fetch.wire_bytes)
        received.add_metric([*lab, "decoded"], fetch.body_bytes)
        yield received
        if fetch.durations:
            histogram = HistogramMetricFamily(
                "gossamer_fetch_duration_seconds",
                "Time from a request's start to its whole body (or its failure).",
                labels=_LABELS,
            )
            buckets: list[tuple[str, float]] = []
            total = 0
            for bound, count in zip((*DURATION_BUCKETS, math.inf), fetch.durations, strict=True):
                total += count
                buckets.append(("+Inf" if bound == math.inf else repr(bound), total))
            histogram.add_metric(lab, buckets, fetch.duration_sum)
            yield histogram

    def _proxies(self, pool: PoolStats) -> Iterator[Metric]:
        lab = self._labels
        states: dict[str, int] = {"live": 0, "dead": 0}
        for proxy in pool.proxies:
            states[proxy.state] = states.get(proxy.state, 0) + 1
        yield _gauge_by("gossamer_proxies", "Proxies of the pool by state.", lab, "state", states)
        yield _counter(
            "gossamer_proxy_requests", "Requests sent through a proxy.", lab,
            value=sum(p.requests for p in pool.proxies),
        )  # fmt: skip
        yield _counter(
            "gossamer_proxy_failures", "Requests that failed at their proxy.", lab,
            value=sum(p.failures for p in pool.proxies),
        )  # fmt: skip
        yield _counter(
            "gossamer_proxy_retries",
            "Requests tried again through another proxy.",
            lab,
            value=pool.retries,
        )
        yield _counter(
            "gossamer_proxy_unserved",
            "Requests that found no live proxy.",
            lab,
            value=pool.unserved,
        )

    def _generic(self, section: str, snapshot: object) -> Iterator[Metric]:
        prefix = "gossamer_" + _NAME.sub("_", section)
        for name, value in _numbers(snapshot):
            if name.endswith("_total"):
                base = name.removesuffix("_total")
                yield _counter(f"{prefix}_{base}", f"{section} {base}.", self._labels, value=value)
            else:
                yield _gauge(f"{prefix}_{name}", f"{section} {name}.", self._labels, value)


def _numbers(snapshot: object) -> Iterator[tuple[str, float]]:
    """The finite numeric fields of a dataclass or mapping snapshot, names made safe."""
    if snapshot is None:
        return
    if is_dataclass(snapshot) and not isinstance(snapshot, type):
        items: Iterable[tuple[str, Any]] = (
            (f.name, getattr(snapshot, f.name)) for f in fields(snapshot)
        )
    elif isinstance(snapshot, Mapping):
        items = snapshot.items()
    else:
        return
    for name, value in items:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            yield _NAME.sub("_", str(name))[:100], value


def _counter(
    name: str,
    doc: str,
    labels: list[str],
    dimension: str | None = None,
    values: Mapping[str, float] | None = None,
    *,
    value: float = 0,
) -> CounterMetricFamily:
    """A counter family ``name`` + ``_total``: one series, or one per ``values`` key."""
    family = CounterMetricFamily(name, doc, labels=[*_LABELS, *([dimension] if dimension else [])])
    if dimension is None:
        family.add_metric(labels, value)
    else:
        for key, count in sorted((values or {}).items()):
            family.add_metric([*labels, key], count)
    return family


def _gauge(name: str, doc: str, labels: list[str], value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=_LABELS)
    family.add_metric(labels, value)
    return family


def _gauge_by(
    name: str, doc: str, labels: list[str], dimension: str, values: Mapping[str, float]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[*_LABELS, dimension])
    for key, value in sorted(values.items()):
        family.add_metric([*labels, key], value)
    return family


def _bounded(counts: Mapping[str, int]) -> dict[str, int]:
    """``counts`` with at most :data:`_MAX_REASONS` keys (the rest summed as ``other``)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out = {str(k)[:64]: v for k, v in ranked[:_MAX_REASONS]}
    rest = sum(v for _, v in ranked[_MAX_REASONS:])
    if rest:
        out["other"] = out.get("other", 0) + rest
    return out


def health(state: LoopState | None, stall: float = STALL_SECONDS) -> tuple[int, str]:
    """``/healthz``'s status and text for the crawl loop's ``state`` (None: no crawl yet)."""
    if state is None:
        return 200, "ok: waiting for the crawl to start\n"
    if state.phase == "starting":
        return 200, "ok: starting\n"
    if state.phase != "running":
        return 503, f"{state.phase}\n"
    if state.silent > stall:
        return 503, f"stuck: the crawl loop has not gone round for {state.silent:.0f}s\n"
    return 200, "ok\n"


# -- the server ----------------------------------------------------------------------------


class MetricsServer:
    """``/metrics`` and ``/healthz`` of one crawl process, on the running event loop."""

    def __init__(self, job: str, worker: str) -> None:
        self.collector = CrawlCollector(job, worker)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def attach(self, sources: Sources) -> None:
        """Serve the crawl's figures from ``sources`` from now on."""
        self.collector.attach(sources)

    def app(self) -> web.Application:
        """The aiohttp application (mountable elsewhere)."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def start(self, bind: str, port: int) -> None:
        """Listen on ``bind``:``port``; a port that cannot be had is a settings error."""
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, bind, port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            why = exc.strerror or str(exc)
            raise SettingsError(
                f"invalid setting 'metrics_port': cannot listen on {bind}:{port}: {why}"
            ) from None
        self._runner = runner
        self.port = runner.addresses[0][1] if runner.addresses else port
        log.info(
            "metrics on http://%s:%d/metrics", bind, port,
            extra={"event": "metrics-listening", "bind": bind, "port": port},
        )  # fmt: skip

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        sources = self.collector.sources
        status, text = health(None if sources is None else sources.loop())
        return web.Response(status=status, text=text)


@asynccontextmanager
async def serve_metrics(
    bind: str, port: int | None, job: str, worker: str
) -> AsyncIterator[MetricsServer | None]:
    """A :class:`MetricsServer` listening while the block runs; None without a port."""
    if port is None:
        yield None
        return
    server = MetricsServer(job, worker)
    await server.start(bind, port)
    try:
        yield server
    finally:
        await server.close()


# -- a cluster job -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerFigures:
    """A live worker's figures, as its heartbeat gave them (validated)."""

    name: str
    partitions: float
    pages: float
    pages_per_second: float
    errors: float
    queue_depth: float
    mean_latency: float
    bandwidth_bps: float


@dataclass(frozen=True, slots=True)
class JobView:
    """A job as one scrape sees it: its totals and its live workers."""

    job: str
    submitted: bool
    queued: int = 0
    claimed: int = 0
    seen: int = 0
    finished: int = 0
    set_aside: int = 0
    workers: tuple[WorkerFigures, ...] = ()

    @property
    def done(self) -> bool:
        return self.seen > 0 and self.queued == 0 and self.claimed == 0


async def read_job(control: Control) -> JobView:
    """The job's totals and live workers, read from Redis now (figures validated)."""
    from gossamer.balance.capability import Live
    from gossamer.cluster.jobs import load_job

    settings = await load_job(control)
    if settings is None:
        return JobView(control.job, submitted=False)
    totals = await control.totals(settings.partitions)
    workers = []
    for info in await control.workers():
        if not info.alive:
            continue
        live = Live.from_json(info.figures.get("live"))
        workers.append(
            WorkerFigures(
                info.name,
                partitions=_finite(info.figures.get("partitions")),
                pages=live.pages or _finite(info.figures.get("pages")),
                pages_per_second=live.pages_per_second
                or _finite(info.figures.get("pages_per_second")),
                errors=live.errors,
                queue_depth=live.queue_depth,
                mean_latency=live.mean_latency,
                bandwidth_bps=live.bandwidth_bps,
            )
        )
    return JobView(
        control.job, True, totals.queued, totals.claimed, totals.seen, totals.finished,
        totals.set_aside, tuple(workers),
    )  # fmt: skip


def _finite(value: object) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and value >= 0 else 0.0  # type: ignore[arg-type,operator]


class JobCollector(Collector):
    """The metric families of one :class:`JobView`."""

    def __init__(self, view: JobView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        view = self._view
        job = [view.job]
        for name, doc, value in (
            (
                "gossamer_job_queued_urls",
                "URLs queued in the job's partitions (for autoscalers).",
                view.queued,
            ),
            ("gossamer_job_claimed_urls", "URLs claimed by workers now.", view.claimed),
            ("gossamer_job_workers", "Live workers (heartbeat not expired).", len(view.workers)),
            (
                "gossamer_job_pages_per_second",
                "Pages per second of the live workers.",
                sum(w.pages_per_second for w in view.workers),
            ),
            ("gossamer_job_done", "1 once nothing is queued or claimed.", int(view.done)),
            ("gossamer_job_submitted", "1 once the job is submitted.", int(view.submitted)),
        ):
            family = GaugeMetricFamily(name, doc, labels=["job"])
            family.add_metric(job, value)
            yield family
        for name, doc, value in (
            ("gossamer_job_seen_urls", "URLs the job has seen (queued once).", view.seen),
            ("gossamer_job_finished_urls", "URLs the job has finished.", view.finished),
            ("gossamer_job_set_aside", "Malformed queue entries moved aside.", view.set_aside),
        ):
            counter = CounterMetricFamily(name, doc, labels=["job"])
            counter.add_metric(job, value)
            yield counter
        per_worker = (
            ("gossamer_worker_pages", "counter", "Records the worker has written.", "pages"),
            ("gossamer_worker_errors", "counter", "Records of the worker with an error.", "errors"),
            (
                "gossamer_worker_pages_per_second",
                "gauge",
                "The worker's pages per second.",
                "pages_per_second",
            ),
            ("gossamer_worker_partitions", "gauge", "Partitions the worker owns.", "partitions"),
            (
                "gossamer_worker_queued_urls",
                "gauge",
                "URLs the worker holds in memory.",
                "queue_depth",
            ),
            (
                "gossamer_worker_fetch_latency_seconds",
                "gauge",
                "The worker's mean fetch time.",
                "mean_latency",
            ),
            (
                "gossamer_worker_received_bytes_per_second",
                "gauge",
                "The worker's recent download rate.",
                "bandwidth_bps",
            ),
        )
        for name, kind, doc, attr in per_worker:
            metric: Metric = (
                CounterMetricFamily(name, doc, labels=_LABELS)
                if kind == "counter"
                else GaugeMetricFamily(name, doc, labels=_LABELS)
            )
            for worker in view.workers:
                metric.add_metric([view.job, worker.name], getattr(worker, attr))  # type: ignore[attr-defined]
            yield metric


async def job_metrics(control: Control) -> bytes:
    """The job's metrics in the Prometheus text format, read from Redis now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobCollector(await read_job(control)))
    return generate_latest(registry)


def cluster_handler(control: Control) -> Callable[[web.Request], Any]:
    """An aiohttp handler serving ``control``'s job metrics (mount it at ``/metrics``); a
    Redis failure answers 503 with one line."""
    from redis.exceptions import RedisError

    async def handle(request: web.Request) -> web.Response:
        try:
            body = await job_metrics(control)
        except (RedisError, OSError, SettingsError) as exc:
            log.warning("job %s: metrics not read: %s", control.job, exc)
            return web.Response(
                status=503, text=f"cannot read job {control.job!r}: {type(exc).__name__}\n"
            )
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle


def queued_handler(control: Control) -> Callable[[web.Request], Any]:
    """An aiohttp handler answering ``{"job": J, "queued": N}`` (KEDA's metrics-api scaler)."""
    from redis.exceptions import RedisError

    async def handle(request: web.Request) -> web.Response:
        try:
            view = await read_job(control)
        except (RedisError, OSError, SettingsError):
            return web.json_response({"job": control.job, "error": "redis"}, status=503)
        return web.json_response({"job": view.job, "queued": view.queued, "claimed": view.claimed})

    return handle


async def serve_job(control: Control, bind: str, port: int) -> None:
    """``gossamer cluster metrics``: serve the job's metrics until cancelled (SIGTERM)."""
    app = web.Application()
    app.router.add_get("/metrics", cluster_handler(control))
    app.router.add_get("/queued", queued_handler(control))
    app.router.add_get("/healthz", _alive)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, bind, port, reuse_address=True).start()
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise SettingsError(
                f"invalid setting 'metrics_port': cannot listen on {bind}:{port}: {why}"
            ) from None
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

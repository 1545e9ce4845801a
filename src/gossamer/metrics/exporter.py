"""Prometheus metrics of one crawl process: ``/metrics`` and ``/healthz`` of a crawl or a
cluster worker.

Nothing is counted for Prometheus on the hot path: a scrape reads the stages' frozen
``stats()`` snapshots (:class:`Sources`) and turns them into metric families
(:class:`CrawlCollector`). The server (:class:`MetricsServer`) runs on the crawl's own event
loop (aiohttp.web), so the snapshots are taken on the loop that owns the counters.

Every endpoint answers only requests whose ``Host`` names it by address, ``localhost``, the
machine's name or a name of ``metrics_hosts`` (:mod:`gossamer.metrics.hostcheck`): a
DNS-rebinding page cannot read job and worker names.

``/healthz`` answers 200 ``ok`` while the crawl loop goes round (or the process waits for its
crawl to start: a worker waiting for its job), and 503 once the crawl is stopping, has
stopped, or its loop has not gone round for :data:`STALL_SECONDS` (stuck).

Labels are ``job`` and ``worker`` (plus one bounded dimension where a family needs one:
outcome, status class, error reason); never a host or a URL. A cluster job's view
(``gossamer cluster metrics``) is :mod:`gossamer.cluster.metrics`, built with
:func:`family`, :func:`application` and :func:`listen` of this module.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import msgspec
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    ProcessCollector,
    generate_latest,
)
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
from gossamer.metrics.hostcheck import HostCheck, host_middleware
from gossamer.metrics.serverlog import server_logger
from gossamer.settings import SettingsError
from gossamer.stats import CrawlStats

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
COUNTER, GAUGE = "counter", "gauge"

HELP = {
    # one crawl process (labels job, worker)
    "gossamer_pages_total": "Records written (one per finished URL), by outcome: ok (2xx), "
    "error, robots_blocked, budget (its host's page budget spent: never fetched), other "
    "(redirects and non-2xx answers without an error).",
    "gossamer_requests_total": "HTTP requests made, robots.txt included.",
    "gossamer_retries_total": "URLs queued again for another attempt.",
    "gossamer_duplicates_total": "Links dropped as seen already.",
    "gossamer_internal_errors_total": "URLs ended by a failure inside gossamer.",
    "gossamer_rejected_urls_total": "Links out of scope, by reason (trap-* the trap guards', "
    "budget a spent host's, userinfo a link with a user name or password).",
    "gossamer_page_signals_total": "Pages by the site owner's signal: noindex, nofollow, "
    "canonical (naming another URL) and what --canonical follow made of it.",
    "gossamer_queued_urls": "URLs queued (a cluster worker: its job's at the last look).",
    "gossamer_in_flight_urls": "URLs being fetched or handled now.",
    "gossamer_hosts_waiting": "Hosts with URLs waiting for their time, by reason: politeness "
    "(their pace), backoff (slowed down by errors or latency, or paused by a Retry-After).",
    "gossamer_responses_total": "HTTP responses by status class.",
    "gossamer_fetch_errors_total": "Failed fetches by reason.",
    "gossamer_received_bytes_total": "Body bytes received, by encoding: wire (as sent) and "
    "decoded.",
    "gossamer_fetch_duration_seconds": "Seconds from a request's start to its whole body "
    "(or its failure).",
    "gossamer_proxies": "Proxies of the pool by state.",
    "gossamer_proxy_requests_total": "Requests sent through a proxy.",
    "gossamer_proxy_failures_total": "Requests that failed at their proxy.",
    "gossamer_proxy_retries_total": "Requests tried again through another proxy.",
    "gossamer_proxy_unserved_total": "Requests that found no live proxy.",
    "gossamer_proxies_waiting": "1 while no proxy is live: the crawl waits for the next check.",
    "gossamer_sitemap_files_total": "Sitemap and feed files read (robots-blocked included).",
    "gossamer_sitemap_entries_total": "URLs sitemaps and feeds listed in their scope.",
    "gossamer_sitemap_admitted_total": "Of those, URLs queued (new and in the crawl's scope).",
    "gossamer_sitemap_flagged_total": "Sitemap files flagged (cut, broken, hostile, no 2xx).",
    "gossamer_sitemap_blocked_total": "Sitemaps robots.txt disallowed (not fetched).",
    "gossamer_sitemap_reading": "Hosts whose sitemaps are being read now.",
    "gossamer_sitemap_waiting": "Sitemaps waiting to be read.",
    "gossamer_sitemap_offscope_total": "Sitemap files not fetched: out of the crawl's scope "
    "(host, port), as named by robots.txt, an index or a redirect.",
    "gossamer_sitemap_invalid_total": "Sitemap URLs that are no valid URL (dropped).",
    "gossamer_sitemap_budget_total": "Sitemap entries of hosts whose page budget was spent "
    "(turned away: neither queued nor kept in crawl.db).",
    "gossamer_revisits_changed_total": "Revisits (--recrawl) that found the page changed.",
    "gossamer_revisits_unchanged_total": "Revisits answered 2xx with the content unchanged.",
    "gossamer_revisits_not_modified_total": "Revisits answered 304 Not Modified.",
    "gossamer_revisits_gone_total": "Revisits that found the page gone (404, 410, a redirect).",
    "gossamer_revisits_bytes_saved_total": "Body bytes 304 answers saved (the size of each "
    "page's last full fetch).",
    "gossamer_revisits_backlog": "Revisits due and not fetched yet (at the last read).",
    "gossamer_revisits_loaded": "Revisits out of crawl.db now (queued or being fetched).",
    "gossamer_revisits_spared_total": "Revisits sent early into a free slot of their host "
    "(--revisit-spare).",
    # a cluster job (gossamer cluster metrics; label job, and worker for gossamer_worker_*)
    "gossamer_job_queued_urls": "URLs still to crawl: queued in the job's partitions or "
    "claimed by a worker and not finished (what an autoscaler scales on).",
    "gossamer_job_claimed_urls": "Of those, URLs claimed by workers now.",
    "gossamer_job_workers": "Live workers (heartbeat not expired).",
    "gossamer_job_pages_per_second": "Pages per second of the live workers together.",
    "gossamer_job_done": "1 once the job has seen URLs and none is queued or claimed.",
    "gossamer_job_submitted": "1 once the job is submitted.",
    "gossamer_job_seen_urls_total": "URLs the job has queued (each once).",
    "gossamer_job_finished_urls_total": "URLs the job has finished.",
    "gossamer_job_set_aside_total": "Malformed queue entries moved aside.",
    "gossamer_job_partitions_set_aside": "Partitions set aside for a key of the wrong type "
    "or a reply Redis refused: their URLs are not crawled (cluster status names them).",
    "gossamer_job_revisits_total": "Revisits (--recrawl) of the job's workers, by result: "
    "changed, unchanged, not_modified, gone.",
    "gossamer_job_revisits_bytes_saved_total": "Body bytes 304 answers saved the job's workers.",
    "gossamer_job_revisits_spared_total": "Revisits the job's workers sent early into a free "
    "slot of their host (--revisit-spare).",
    "gossamer_job_revisits_backlog": "Revisits due and not queued yet, in all the job's "
    "partitions.",
    "gossamer_job_sitemap_files_total": "Sitemap and feed files the job's workers read.",
    "gossamer_job_sitemap_entries_total": "URLs the job's sitemaps and feeds listed.",
    "gossamer_job_sitemap_admitted_total": "Of those, URLs queued (new, in the job's scope).",
    "gossamer_worker_pages_total": "Records a live worker has written.",
    "gossamer_worker_errors_total": "Records of a live worker with an error.",
    "gossamer_worker_pages_per_second": "A live worker's pages per second.",
    "gossamer_worker_partitions": "Partitions a live worker owns.",
    "gossamer_worker_queued_urls": "URLs a live worker holds in memory.",
    "gossamer_worker_fetch_latency_seconds": "A live worker's mean fetch time.",
    "gossamer_worker_received_bytes_per_second": "A live worker's recent download rate.",
}
"""Every metric gossamer exports, with its help text (docs/metrics.md lists the same)."""

Snapshot = Callable[[], object]


@dataclass(frozen=True)
class Sources:
    """Where a crawl process' figures come from: each a function returning a frozen snapshot.

    ``extra`` holds further stages by section name (``{"render": renderer.stats}``): each
    numeric field of its snapshot (a dataclass or a mapping; None: no series) becomes
    ``gossamer_<section>_<field>``, a counter if the field's name ends in ``_total``, else
    a gauge (help text: the section and the field).
    """

    crawl: Callable[[], CrawlStats]
    fetch: Callable[[], FetchStats]
    waiting_hosts: Callable[[], tuple[int, int]]
    """Hosts waiting (at their polite pace, backing off): the frontier's, at scrape time."""
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
        self.sources: Sources | None = None

    def attach(self, sources: Sources) -> None:
        """Read the crawl's figures from ``sources`` from now on."""
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        sources = self.sources
        if sources is None:
            return
        yield from self._crawl(sources.crawl(), sources.waiting_hosts())
        yield from self._fetch(sources.fetch())
        if sources.proxies is not None:
            yield from self._proxies(sources.proxies())
        for section, snapshot in sources.extra.items():
            prefix = "gossamer_" + _NAME.sub("_", section)
            for name, value in _numbers(snapshot()):
                kind = COUNTER if name.endswith("_total") else GAUGE
                name = f"{prefix}_{name}"
                help_text = HELP.get(name, f"{section}: {name}.")
                yield family(kind, name, self._labels, value, help_text=help_text)

    def _crawl(self, stats: CrawlStats, waiting: tuple[int, int]) -> Iterator[Metric]:
        lab = self._labels
        other = max(0, stats.pages - stats.ok - stats.errors - stats.robots_blocked - stats.budget)
        outcomes = {"ok": stats.ok, "error": stats.errors, "robots_blocked": stats.robots_blocked}
        outcomes["budget"] = stats.budget
        yield family(COUNTER, "gossamer_pages_total", lab, outcomes | {"other": other}, "outcome")
        yield family(COUNTER, "gossamer_requests_total", lab, stats.requests)
        yield family(COUNTER, "gossamer_retries_total", lab, stats.retries)
        yield family(COUNTER, "gossamer_duplicates_total", lab, stats.duplicates)
        yield family(COUNTER, "gossamer_internal_errors_total", lab, stats.internal_errors)
        rejected = _bounded(stats.rejected)
        yield family(COUNTER, "gossamer_rejected_urls_total", lab, rejected, "reason")
        signals = stats.page_signals
        yield family(COUNTER, "gossamer_page_signals_total", lab, signals, "signal")
        yield family(GAUGE, "gossamer_queued_urls", lab, stats.queued)
        yield family(GAUGE, "gossamer_in_flight_urls", lab, stats.in_flight)
        hosts = {"politeness": waiting[0], "backoff": waiting[1]}
        yield family(GAUGE, "gossamer_hosts_waiting", lab, hosts, "reason")

    def _fetch(self, fetch: FetchStats) -> Iterator[Metric]:
        lab = self._labels
        responses = dict(fetch.responses)
        yield family(COUNTER, "gossamer_responses_total", lab, responses, "status_class")
        yield family(COUNTER, "gossamer_fetch_errors_total", lab, _bounded(fetch.errors), "reason")
        received = {"wire": fetch.wire_bytes, "decoded": fetch.body_bytes}
        yield family(COUNTER, "gossamer_received_bytes_total", lab, received, "encoding")
        if fetch.durations:
            name = "gossamer_fetch_duration_seconds"
            histogram = HistogramMetricFamily(name, HELP[name], labels=_LABELS)
            bounds = [repr(bound) for bound in DURATION_BUCKETS] + ["+Inf"]
            buckets = list(zip(bounds, itertools.accumulate(fetch.durations), strict=True))
            histogram.add_metric(lab, buckets, fetch.duration_sum)
            yield histogram

    def _proxies(self, pool: PoolStats) -> Iterator[Metric]:
        lab = self._labels
        states = {"live": 0, "dead": 0} | Counter(p.state for p in pool.proxies)
        yield family(GAUGE, "gossamer_proxies", lab, states, "state")
        requests = sum(p.requests for p in pool.proxies)
        yield family(COUNTER, "gossamer_proxy_requests_total", lab, requests)
        failures = sum(p.failures for p in pool.proxies)
        yield family(COUNTER, "gossamer_proxy_failures_total", lab, failures)
        yield family(COUNTER, "gossamer_proxy_retries_total", lab, pool.retries)
        yield family(COUNTER, "gossamer_proxy_unserved_total", lab, pool.unserved)
        yield family(GAUGE, "gossamer_proxies_waiting", lab, int(pool.waiting))


def family(
    kind: str,
    name: str,
    labels: list[str],
    values: float | Mapping[str, float],
    dimension: str | None = None,
    *,
    help_text: str | None = None,
) -> Metric:
    """A counter or gauge family ``name`` (a counter's ends in ``_total``): one series of
    ``labels``, or with a ``dimension`` one per key of ``values``."""
    text = HELP[name] if help_text is None else help_text
    names = [*labels_of(labels), *([dimension] if dimension else [])]
    if kind == COUNTER:
        family: Metric = CounterMetricFamily(name.removesuffix("_total"), text, labels=names)
    else:
        family = GaugeMetricFamily(name, text, labels=names)
    if isinstance(values, Mapping):
        for key, value in sorted(values.items()):
            family.add_metric([*labels, key], value)  # type: ignore[attr-defined]
    else:
        family.add_metric(labels, values)  # type: ignore[attr-defined]
    return family


def labels_of(values: list[str]) -> list[str]:
    """The label names of ``values``: ``job``, then ``worker`` if given."""
    return _LABELS[: len(values)]


def _numbers(snapshot: object) -> Iterator[tuple[str, float]]:
    """The finite numeric fields of a Struct, dataclass or mapping snapshot, names made safe."""
    if snapshot is None:
        return
    if isinstance(snapshot, msgspec.Struct):
        items: Iterable[tuple[str, Any]] = msgspec.structs.asdict(snapshot).items()
    elif is_dataclass(snapshot) and not isinstance(snapshot, type):
        items = ((f.name, getattr(snapshot, f.name)) for f in fields(snapshot))
    elif isinstance(snapshot, Mapping):
        items = snapshot.items()
    else:
        return
    for name, value in items:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            yield _NAME.sub("_", str(name))[:100], value


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

    def __init__(self, job: str, worker: str, hosts: HostCheck | None = None) -> None:
        self.collector = CrawlCollector(job, worker)
        self._hosts = hosts
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total and the like
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def attach(self, sources: Sources) -> None:
        """Serve the crawl's figures from ``sources`` from now on."""
        self.collector.attach(sources)

    def app(self) -> web.Application:
        """The aiohttp application (mountable elsewhere), behind the ``Host`` check given
        (or :meth:`start`'s)."""
        app = application(self._hosts)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def start(self, bind: str, port: int, hosts: Iterable[str] = ()) -> None:
        """Listen on ``bind``:``port``, answering the ``Host`` names of
        :meth:`HostCheck.for_bind`; a port that cannot be had is a settings error."""
        if self._hosts is None:
            self._hosts = HostCheck.for_bind(bind, hosts)
        self._runner = runner = await listen(self.app(), bind, port)
        self.port = runner.addresses[0][1] if runner.addresses else port
        log.info(
            "metrics on http://%s:%d/metrics",
            bind,
            port,
            extra={"event": "metrics-listening", "bind": bind, "port": port},
        )

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
    bind: str, port: int | None, job: str, worker: str, hosts: Iterable[str] = ()
) -> AsyncIterator[MetricsServer | None]:
    """A :class:`MetricsServer` listening while the block runs (answering the ``Host``
    names of :meth:`HostCheck.for_bind`); None without a port."""
    if port is None:
        yield None
        return
    server = MetricsServer(job, worker)
    await server.start(bind, port, hosts)
    try:
        yield server
    finally:
        await server.close()


def application(hosts: HostCheck | None) -> web.Application:
    """An aiohttp application behind the ``Host`` check ``hosts`` (None: none)."""
    return web.Application(middlewares=[] if hosts is None else [host_middleware(hosts)])


async def listen(app: web.Application, bind: str, port: int) -> web.AppRunner:
    """``app`` listening on ``bind``:``port``; one that cannot be had is a settings error."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, logger=server_logger())
    await runner.setup()
    try:
        await web.TCPSite(runner, bind, port, reuse_address=True).start()
    except OSError as exc:
        await runner.cleanup()
        why = exc.strerror or str(exc)
        raise SettingsError(
            f"invalid setting 'metrics_port': cannot listen on {bind}:{port}: {why}"
        ) from None
    return runner

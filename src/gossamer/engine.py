"""The crawl loop: leases URLs from the frontier, fetches, parses and hands records to sinks.

One task runs per leased URL; the loop keeps at most ``concurrency`` of them fetching (a
task's slot frees once its response is in) and at most as many more parsing, queueing
outlinks and acking, so a frontier round trip after a fetch (the Redis frontier's) holds no
fetch slot. It sleeps until a task ends or the frontier says a host becomes due. A checkpoint
task commits the journal (crawl.db: frontier state and records in one transaction) and then
hands the same records to each record sink in turn (pages.jsonl, then the store) before the
checkpoint's acks are sent; it runs every ``checkpoint_interval`` and as soon as no task is
left, when there is nothing more to batch. With an archive (WARC), every fetch (robots.txt,
redirects and retried answers too) is archived as it arrives, and the record names where its
response lies; each checkpoint flushes the archive before the journal commits.

The engine knows its sinks by their protocols (:mod:`gossamer.sinks.base`) only; ``crawl.py``
builds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gossamer.frontier.base import Candidate, Feedback, Frontier, HeldBack, Lease
from gossamer.frontier.robots import RobotsCache, RobotsDeferred, RobotsPolicy
from gossamer.outcomes import Action, Outcome, RetryPolicy, classify, is_failure
from gossamer.page import Fetched, PageStage
from gossamer.redact import redact_url
from gossamer.sinks.base import Archive, Journal, PageRecord, RecordSink, WarcLocation
from gossamer.stats import CrawlStats, peak_rss_mb
from gossamer.urls import host_key

log = logging.getLogger(__name__)
_GRACE_SECONDS = 5.0
MAX_PENDING_RECORDS = 1000
"""Records waiting for the next checkpoint past which no new URL is leased: while a commit
is slow (a busy disk), fetching goes on only as far as this, so records (each with its text)
do not pile up in memory."""
_SEED_BATCH = 10_000
SEEDING_META = "seeding"
"""Journal meta: ``started`` while seeds are being queued, ``done`` once all are durable."""

CommitHook = Callable[[], Callable[[], Awaitable[None]]]
"""Called as a checkpoint starts; what it returns is awaited once the checkpoint is durable
(e.g. sending a cluster frontier's acks only after their records are committed)."""


class Fetch(Protocol):
    """Anything that fetches one URL without following redirects and never raises."""

    async def fetch(self, url: str) -> Fetched: ...


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """The knobs of the crawl loop (the page stage has its own, `PageConfig`)."""

    concurrency: int = 64
    max_pages: int | None = None
    robots_retry: float = 30.0
    """Seconds before a URL of a host whose robots.txt was unreachable is tried again."""
    checkpoint_interval: float = 0.5
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(frozen=True, slots=True)
class Robots:
    """robots.txt: the cache the crawl asks for a host's rules, and the fetch it asks
    through (which takes a robots lease's slot and counts the requests)."""

    cache: RobotsCache
    fetch: RobotsFetch


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where records go: the journal (crawl.db) first, then each sink in turn after every
    commit; the archive (WARC) of every answer; and the commit hook, if any."""

    journal: Journal
    sinks: Sequence[RecordSink] = ()
    archive: Archive | None = None
    on_commit: CommitHook | None = None


StatsSource = Callable[[], Mapping[str, Any]]
"""A stage's figures as a mapping (what stats.json shows of it)."""
STATS_SOURCES = ("proxies", "auth", "render")
"""The names of the stats sources a crawl may have: they become fields of `CrawlStats`."""


@dataclass(frozen=True, slots=True)
class LoopState:
    """Whether the crawl loop runs: its phase (``starting``, ``running``, ``stopping``,
    ``stopped``, ``failed``) and the seconds since it last went round (at least once a
    second while it runs)."""

    phase: str
    silent: float


_COUNTERS = {
    Outcome.FETCHED: (),
    Outcome.FAILED: ("errors",),
    Outcome.ROBOTS: ("robots_blocked",),
    Outcome.INTERNAL_ERROR: ("internal_errors", "errors"),
    Outcome.HOOK_ERROR: ("hook_errors", "errors"),
}
"""The counters each outcome adds to (besides ``pages``, its status and ``ok``)."""


class Crawler:
    """Runs one crawl to its end (or until asked to stop): leases URLs, fetches them, hands
    each answer to the page stage, queues the links it returns, records, acks."""

    def __init__(
        self,
        config: EngineConfig,
        frontier: Frontier,
        fetcher: Fetch,
        robots: Robots,
        outputs: Outputs,
        page: PageStage,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        stats: Mapping[str, StatsSource] | None = None,
        proxies_down: Callable[[], bool] | None = None,
    ) -> None:
        """``stats`` names the stages' figures to show (see `STATS_SOURCES`);
        ``proxies_down`` is true while no proxy is live: nothing is leased then, and no
        URL's attempt is spent on a request that never left."""
        unknown = set(stats or ()) - set(STATS_SOURCES)
        if unknown:
            raise ValueError(f"unknown stats sources: {sorted(unknown)}")
        self._config = config
        self._frontier = frontier
        self._fetcher = fetcher
        self._robots = robots.cache
        self._robots_fetch = robots.fetch
        self._journal = outputs.journal
        self._sinks = tuple(outputs.sinks)
        self._archive = outputs.archive
        self._on_commit = outputs.on_commit
        self._page = page
        self._upkeep = page.upkeep
        self._clock = clock
        self._rng = rng or random.Random()
        self._stats_sources = dict(stats or {})
        self._proxies_down = proxies_down
        self._tasks: set[asyncio.Task[None]] = set()
        self._seeding: asyncio.Task[None] | None = None
        self._fetching: set[asyncio.Task[None]] = set()
        """Tasks that have not had their response yet (they hold a fetch slot)."""
        self._flush = asyncio.Event()
        """Set to checkpoint now instead of at the next interval."""
        self._wake = asyncio.Event()
        self._stopping = False
        self._paused = False
        self._pending: list[PageRecord] = []
        self._committing = 0  # records of the checkpoint under way, not yet in every sink
        self._failure: BaseException | None = None
        self._counts: Counter[str] = Counter()
        self._statuses: Counter[str] = Counter()
        self._started = clock()
        self._prior_pages = 0
        self._phase = "starting"
        self._turned = self._started
        """When the crawl loop last went round."""

    # -- public ----------------------------------------------------------------------------

    def restore_counts(self) -> None:
        """Start the counters from the records of a previous run (``--resume``)."""
        for status, error, count in self._journal.outcome_counts():
            self._tally(status, Outcome.of(status, error), count)
        self._prior_pages = self._counts["pages"]
        self._page.restore_counts(self._journal.rule_counts)

    async def run(self, seeds: list[str]) -> CrawlStats:
        """Crawl from the seeds (plus whatever a resumed frontier holds) until done.

        The seeds are queued while the crawl starts, and ``seeds`` is emptied once they are.
        """
        seeding = self._seeding = asyncio.create_task(self._seed(seeds))
        seeding.add_done_callback(self._task_done)
        finished = asyncio.Event()
        checkpointer = asyncio.create_task(self._checkpoint_loop(finished))
        self._phase = "running"
        try:
            await self._loop()
            await self._drain()
        finally:
            self._phase = "stopping"
            with contextlib.suppress(Exception):
                await seeding  # every seed is queued (durably, below) even when stopping
            finished.set()  # a checkpoint under way completes: its records reach pages.jsonl
            self._flush.set()
            with contextlib.suppress(asyncio.CancelledError):
                await checkpointer
            await self.checkpoint()
            self._phase = "stopped" if self._failure is None else "failed"
        if self._failure is not None:
            raise self._failure
        return self.stats()

    async def _seed(self, seeds: list[str]) -> None:
        """Queue the seeds in batches, each committed, while the crawl starts: a million
        seeds are neither staged in memory at once nor wait for before the first fetch."""
        if not seeds:
            return
        self._journal.set_meta(SEEDING_META, "started")
        while seeds:
            await self._frontier.add([Candidate(url) for url in seeds[:_SEED_BATCH]])
            del seeds[:_SEED_BATCH]  # queued: its memory serves the crawl from now on
            await self._journal.commit()
            self._wake.set()
        self._journal.set_meta(SEEDING_META, "done")
        await self._journal.commit()

    def stop(self) -> None:
        """Stop leasing; in-flight URLs finish (or go back to the queue after a grace time)."""
        self._stopping = True
        self._wake.set()

    def loop_state(self) -> LoopState:
        """Is the crawl loop alive? (what ``/healthz`` answers from)."""
        phase = "stopping" if self._stopping and self._phase == "running" else self._phase
        return LoopState(phase, self._clock() - self._turned)

    def pause(self, paused: bool) -> None:
        """While paused, lease nothing; in-flight URLs finish."""
        self._paused = paused
        self._wake.set()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def stopping(self) -> bool:
        """Asked to stop (by a signal, a failure or the cluster's stop)."""
        return self._stopping

    def held_back(self, most: int = 10) -> list[HeldBack]:
        """The hosts politeness holds back now (see :meth:`Frontier.held_back`)."""
        return self._frontier.held_back(most)

    def stats(self) -> CrawlStats:
        """A frozen snapshot of the crawl so far."""
        elapsed = self._clock() - self._started
        front = self._frontier.stats()
        page = self._page.stats()
        fetched = self._counts["pages"] - self._prior_pages
        sources = {name: dict(source()) for name, source in self._stats_sources.items()}
        render = sources.get("render")
        browser_peak = 0.0 if render is None else float(render["browser_peak_rss_mb"])
        return CrawlStats(
            pages=self._counts["pages"],
            ok=self._counts["ok"],
            errors=self._counts["errors"],
            robots_blocked=self._counts["robots_blocked"],
            retries=self._counts["retries"],
            requests=self._counts["requests"] + self._robots_fetch.requests,
            duplicates=front.duplicates,
            rejected=dict(front.rejected),
            status_counts=dict(self._statuses),
            queued=front.queued + front.delayed,
            in_flight=len(self._tasks),
            elapsed=elapsed,
            pages_per_second=fetched / elapsed if elapsed > 0 else 0.0,
            peak_rss_mb=round(peak_rss_mb() + browser_peak, 1),
            internal_errors=self._counts["internal_errors"],
            hook_errors=self._counts["hook_errors"],
            set_aside=front.set_aside,
            proxies=sources.get("proxies"),
            auth=sources.get("auth"),
            render=render,
            focus=page.focus,
            rule_pages=page.rule_pages,
            items=page.items,
            items_dropped=page.items_dropped,
            rule_errors=page.rule_errors,
            duplicates_exact=page.duplicates_exact,
            duplicates_near=page.duplicates_near,
        )

    async def checkpoint(self) -> None:
        """Commit the journal (state and records together), hand the records to each sink in
        turn, then run the commit hook's follow-up (the acks).

        A sink's records are always a prefix of the journal's; ``--resume`` sends it the rest.
        """
        records, self._pending = self._pending, []
        self._committing = len(records)
        try:
            after = self._on_commit() if self._on_commit is not None else None
            if self._archive is not None:
                self._archive.flush()  # before the commit: a committed record's response is on disk
            await self._journal.commit()
            for sink in self._sinks:
                await sink.write(records)
        finally:
            self._committing = 0
        if after is not None:
            await after()

    # -- the loop --------------------------------------------------------------------------

    async def _loop(self) -> None:
        frontier = self._frontier
        limit = self._config.concurrency
        while not self._stopping:
            self._turned = self._clock()
            free = min(limit - len(self._fetching), 2 * limit - len(self._tasks), self._budget())
            if self._paused or (self._proxies_down is not None and self._proxies_down()):
                free = 0
            if len(self._pending) + self._committing >= MAX_PENDING_RECORDS:
                free = 0  # the checkpoint wakes the loop once the records are written
                self._flush.set()
            if free > 0:
                for lease in await frontier.lease(free):
                    self._spawn(lease)
            if not self._tasks:
                if self._budget() <= 0 or (self._seeded() and await frontier.done()):
                    return
                if self._pending:
                    self._flush.set()  # idle: nothing to batch the records with
            wait = frontier.next_ready()
            timeout = 1.0 if wait is None or free <= 0 else min(max(wait, 0.001), 1.0)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    def _seeded(self) -> bool:
        return self._seeding is None or self._seeding.done()

    def _budget(self) -> int:
        if self._config.max_pages is None:
            return 1 << 30
        return self._config.max_pages - self._counts["pages"] - len(self._tasks)

    def _spawn(self, lease: Lease) -> None:
        task = asyncio.create_task(self._process(lease))
        self._tasks.add(task)
        self._fetching.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        """A URL's task or the seeding ended: wake the loop; a failure stops the crawl."""
        self._tasks.discard(task)
        self._fetching.discard(task)
        self._wake.set()
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        """Stop the crawl; ``run`` raises the first failure once the crawl has wound down."""
        if self._failure is None:
            self._failure = exc
            self.stop()

    async def _drain(self) -> None:
        """Let in-flight URLs finish for a grace time, then put the rest back."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=_GRACE_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _checkpoint_loop(self, finished: asyncio.Event) -> None:
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flush.wait(), self._config.checkpoint_interval)
            self._flush.clear()
            if not finished.is_set():
                try:
                    await self.checkpoint()
                except Exception as exc:
                    self._fail(exc)
                    return
                self._wake.set()  # its acks may have finished the crawl

    # -- one URL ---------------------------------------------------------------------------

    async def _process(self, lease: Lease) -> None:
        try:
            await self._process_lease(lease)
        except asyncio.CancelledError:
            await self._frontier.release(lease, None)
            raise

    async def _process_lease(self, lease: Lease) -> None:
        if lease.kind == "robots":
            await self._fetch_robots(lease)
            return
        if lease.kind == "unreachable":
            await self._robots_unreachable(lease)
            return
        if lease.kind == "blocked":
            record = PageRecord(lease.url, None, lease.depth, error="robots")
            self._record(record, lease, Outcome.ROBOTS)
            await self._frontier.ack(lease, None)
            return
        result = await self._fetcher.fetch(lease.url)
        self._fetched()
        if result.error in _UNSENT and self._proxies_down is not None and self._proxies_down():
            await self._frontier.release(lease, None)  # never reached the site: no attempt
            return
        self._counts["requests"] += 1
        archived = await self._archive.write(result) if self._archive is not None else None
        feedback = Feedback(
            started_at=result.sent_by,
            elapsed=result.elapsed,
            failed=is_failure(result.status, result.error),
            retry_after=result.retry_after,
        )
        try:
            action = classify(result.status, result.error, result.location)
            decision = self._config.retry.decide(
                action, lease.attempts, result.retry_after, self._rng, result.error
            )
        except Exception:
            await self._contain(lease, result, feedback, archived)
            return
        if decision.action is Action.RETRY:
            self._counts["retries"] += 1
            await self._frontier.retry(lease, decision.after, feedback)
            return
        try:
            page = await self._page.handle(lease, result, decision.action, decision.error)
        except Exception:
            await self._contain(lease, result, feedback, archived)
            return
        if page.links:
            await self._frontier.add(page.links)
        self._record(_with_warc(page.record, archived), lease, page.outcome)
        await self._frontier.ack(lease, feedback)
        if self._upkeep is not None:
            await self._upkeep()

    async def _contain(
        self,
        lease: Lease,
        result: Fetched,
        feedback: Feedback | None,
        archived: WarcLocation | None = None,
    ) -> None:
        """A failure while handling one URL's answer (a bug that input revealed) ends that URL
        with an ``internal-error`` record instead of the crawl; it is not tried again."""
        log.exception("internal error handling %s; recorded, crawl goes on", redact_url(lease.url))
        record = PageRecord(
            lease.url,
            result.status,
            lease.depth,
            bytes=len(result.body),
            fetched_at=round(result.fetched_at, 3),
            elapsed_ms=round(result.elapsed * 1000, 1),
            error="internal-error",
            attempts=lease.attempts + 1,
            truncated=result.truncated,
            proxy=result.proxy,
        )
        self._record(_with_warc(record, archived), lease, Outcome.INTERNAL_ERROR)
        await self._frontier.ack(lease, feedback)

    def _fetched(self) -> None:
        """The current task's response is in: its fetch slot is free for the next URL."""
        task = asyncio.current_task()
        if task in self._fetching:
            self._fetching.discard(task)
            self._wake.set()

    async def _fetch_robots(self, lease: Lease) -> None:
        """A ``robots`` lease: fetch the host's robots.txt into the cache (unless it is there)
        and report its rules, which free the host's URLs. A robots.txt that could not be asked
        for (no live proxy) is asked for again at the host's next slot."""
        self._robots_fetch.leased(lease.host)
        try:
            policy = await self._robots.get(lease.url)
        except RobotsDeferred:
            self._fetched()
            self._robots_fetch.ended(lease.host)
            await self._frontier.release(lease, None)  # a robots lease again, when due
            return
        self._fetched()
        self._journal.stage_sitemaps(lease.host, policy.sitemaps)
        started = self._robots_fetch.ended(lease.host)
        feedback = Feedback(started_at=started, crawl_delay=policy.crawl_delay)
        await self._frontier.rules(lease, policy, feedback)

    async def _robots_unreachable(self, lease: Lease) -> None:
        """A URL of a host whose robots.txt could not be fetched: tried again after
        ``robots_retry`` (an attempt), recorded once the attempts run out."""
        if lease.attempts >= self._config.retry.max_retries:
            record = PageRecord(
                lease.url, None, lease.depth, error="robots-unreachable", attempts=lease.attempts
            )
            self._record(record, lease, Outcome.FAILED)
            await self._frontier.ack(lease, None)
            return
        self._counts["retries"] += 1
        await self._frontier.retry(lease, self._config.robots_retry, None)

    def _record(self, record: PageRecord, lease: Lease, outcome: Outcome) -> None:
        """Stage a record in the journal before the caller acks its lease (with no await
        between), so whichever commit makes the ack durable makes the record durable too. The
        sinks get the record after the next checkpoint's commit."""
        self._journal.stage([record])
        self._pending.append(record)
        self._tally(record.status, outcome, 1)

    def _tally(self, status: int | None, outcome: Outcome, count: int) -> None:
        counts = self._counts
        counts["pages"] += count
        self._statuses[str(status) if status is not None else "none"] += count
        for name in _COUNTERS[outcome]:
            counts[name] += count
        if status is not None and 200 <= status < 300:
            counts["ok"] += count


_UNSENT = frozenset({"no-proxy", "proxy-error"})
"""Fetch errors of a request that never reached the site (no live proxy, or every proxy
tried failed)."""


class RobotsFetch:
    """The fetch function handed to the robots cache.

    A host's robots lease takes its slot for the first request of its robots.txt
    (`leased`, then `ended`, which tells when its last request started). Every other
    robots.txt request, a redirect's next hop or one asked for outside a lease (a focus
    example's host, a rendered page's subrequest), goes through ``gated``: the fetcher
    behind the host gate, pace only (the one asking may hold a lease of the host). In a
    crawl through proxies (``proxied``) a request that never reached the site (no
    live proxy, or every proxy tried failed it) raises `RobotsDeferred`: no "unreachable"
    verdict is cached for a site never asked (its URLs would spend their attempts on it).
    The robots lease is asked for again; the proxies' failures soon leave none live, and
    the crawl waits.
    """

    def __init__(
        self,
        fetcher: Fetch,
        archive: Archive | None = None,
        *,
        gated: Fetch | None = None,
        proxied: bool = False,
    ) -> None:
        self._fetcher = fetcher
        self._archive = archive
        self._gated = gated if gated is not None else fetcher
        self._proxied = proxied
        self._leases: dict[str, float | None] = {}
        """Hosts whose robots lease is out: when their last request started (None: the
        lease's own slot is not used yet)."""
        self.requests = 0

    def leased(self, host: str) -> None:
        """A robots lease of ``host`` is out: its first request uses the lease's slot."""
        self._leases[host] = None

    def ended(self, host: str) -> float | None:
        """The robots lease of ``host`` ended: when its last request started, if any."""
        return self._leases.pop(host, None)

    async def __call__(self, url: str) -> Fetched:
        host = host_key(url)
        if host in self._leases and self._leases[host] is None:
            result = await self._fetcher.fetch(url)
        else:
            result = await self._gated.fetch(url)
        self.requests += 1
        if self._archive is not None:
            await self._archive.write(result)
        if host in self._leases:
            self._leases[host] = result.sent_by
        if self._proxied and result.error in _UNSENT:
            raise RobotsDeferred(url)
        return result


def _with_warc(record: PageRecord, archived: WarcLocation | None) -> PageRecord:
    if archived is None:
        return record
    return replace(
        record,
        warc_file=archived.file,
        warc_offset=archived.offset,
        warc_length=archived.length,
    )


__all__ = [
    "STATS_SOURCES",
    "CommitHook",
    "Crawler",
    "EngineConfig",
    "LoopState",
    "Outputs",
    "Robots",
    "RobotsFetch",
    "RobotsPolicy",
    "StatsSource",
]

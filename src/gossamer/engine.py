"""The crawl loop: leases URLs from the frontier, fetches them, hands each answer to the page
stage (:mod:`gossamer.page`), queues the links it returns, records, acks.

One task runs per leased URL; the loop keeps at most ``concurrency`` of them fetching (a
task's slot frees once its response is in) and at most as many more handing over, queueing
outlinks and acking, so a frontier round trip after a fetch (the Redis frontier's) holds no
fetch slot. It sleeps until a task ends or the frontier says a host becomes due. A checkpoint
task has the ledger (:mod:`gossamer.ledger`) commit the records and hand them to the sinks
every ``checkpoint_interval``, and as soon as no task is left. Every fetch is archived (WARC),
a page's once its stage said what to keep (noindex), and its record names where it lies."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from gossamer.frontier.base import Candidate, Feedback, Frontier, HeldBack, Lease
from gossamer.frontier.robots import RobotsDeferred, RobotsPolicy
from gossamer.ledger import CommitHook, Ledger, Outputs
from gossamer.outcomes import Action, Outcome, RetryPolicy, classify, is_failure
from gossamer.page import Fetched, PageStage, internal_error
from gossamer.redact import redact_url
from gossamer.robots_fetch import UNSENT, Fetch, Robots, RobotsFetch
from gossamer.sinks.base import PageRecord
from gossamer.stats import CrawlStats, peak_rss_mb

log = logging.getLogger(__name__)
_GRACE_SECONDS = 5.0
MAX_PENDING_RECORDS = 1000
"""Records waiting for the next checkpoint past which no new URL is leased: while a commit
is slow (a busy disk), fetching goes on only as far as this, so records (each with its text)
do not pile up in memory."""
_SEED_BATCH = 10_000
SEEDING_META = "seeding"
"""Journal meta: ``started`` while seeds are being queued, ``done`` once all are durable."""


class EngineConfig(msgspec.Struct, frozen=True):
    """The knobs of the crawl loop (the page stage has its own, `PageConfig`)."""

    concurrency: int = 64
    max_pages: int | None = None
    robots_retry: float = 30.0
    """Seconds before a URL of a host whose robots.txt was unreachable is tried again."""
    checkpoint_interval: float = 0.5
    retry: RetryPolicy = msgspec.field(default_factory=RetryPolicy)


StatsSource = Callable[[], Mapping[str, Any]]
"""A stage's figures as a mapping (what stats.json shows of it)."""
STATS_SOURCES = ("proxies", "auth", "render", "revisits", "sitemaps", "parse_sandbox")
"""The names of the stats sources a crawl may have: they become fields of `CrawlStats`."""


class LoopState(msgspec.Struct, frozen=True):
    """Whether the crawl loop runs: its phase (``starting``, ``running``, ``stopping``,
    ``stopped``, ``failed``) and the seconds since it last went round (once a second or so)."""

    phase: str
    silent: float


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
        self._ledger = Ledger(outputs)
        self._archive = outputs.archive
        self._journal = outputs.journal
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
        self.wake: Callable[[], None] = self._wake.set  # a host's slot (or turn) came back
        self._stopping = False
        self._paused = False
        self._failure: BaseException | None = None
        self._counts: Counter[str] = Counter()
        """The loop's own counts (requests, retries); the ledger counts the records."""
        self._started = clock()
        self._prior_pages = 0
        self._phase = "starting"
        self._turned = self._started
        """When the crawl loop last went round."""

    # -- public ----------------------------------------------------------------------------

    def restore_counts(self) -> None:
        """Start the counters from the records of a previous run (``--resume``)."""
        self._ledger.restore()
        self._prior_pages = self._ledger.counts["pages"]
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
            await self._frontier.add([Candidate(url, seed=True) for url in seeds[:_SEED_BATCH]])
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
        counts = self._ledger.counts
        fetched = counts["pages"] - self._prior_pages
        sources = {name: dict(source()) for name, source in self._stats_sources.items()}
        render = sources.get("render")
        browser_peak = 0.0 if render is None else float(render["browser_peak_rss_mb"])
        return CrawlStats(
            pages=counts["pages"],
            ok=counts["ok"],
            errors=counts["errors"],
            robots_blocked=counts["robots_blocked"],
            retries=self._counts["retries"],
            requests=self._counts["requests"] + self._robots_fetch.requests,
            duplicates=front.duplicates,
            rejected=dict(front.rejected),
            status_counts=dict(self._ledger.statuses),
            queued=front.queued + front.delayed,
            in_flight=len(self._tasks),
            elapsed=elapsed,
            pages_per_second=fetched / elapsed if elapsed > 0 else 0.0,
            peak_rss_mb=round(peak_rss_mb() + browser_peak, 1),
            internal_errors=counts["internal_errors"],
            hook_errors=counts["hook_errors"],
            set_aside=front.set_aside,
            **{name: sources.get(name) for name in STATS_SOURCES},  # proxies, auth, render...
            focus=page.focus,
            rule_pages=page.rule_pages,
            items=page.items,
            items_dropped=page.items_dropped,
            rule_errors=page.rule_errors,
            duplicates_exact=page.duplicates_exact,
            duplicates_near=page.duplicates_near,
            budget=counts["budget"],
            page_signals=dict(page.signals or {}),
        )

    async def checkpoint(self) -> None:
        """Commit the records so far and hand them to the sinks (see :class:`Ledger`)."""
        await self._ledger.checkpoint()

    # -- the loop --------------------------------------------------------------------------

    async def _loop(self) -> None:
        frontier, limit, loop = self._frontier, self._config.concurrency, asyncio.get_running_loop()
        alarm = loop.call_later(1.0, self._wake.set)  # wakes the loop; one left set is harmless
        while not self._stopping:
            self._turned = self._clock()
            free = min(limit - len(self._fetching), 2 * limit - len(self._tasks), self._budget())
            if self._paused or (self._proxies_down is not None and self._proxies_down()):
                free = 0
            if len(self._ledger.pending) + self._ledger.committing >= MAX_PENDING_RECORDS:
                free = 0  # the checkpoint wakes the loop once the records are written
                self._flush.set()
            if free > 0:
                for lease in await frontier.lease(free):
                    self._spawn(lease)
            if not self._tasks:
                if self._budget() <= 0 or (self._seeded() and await frontier.done()):
                    return
                if self._ledger.pending:
                    self._flush.set()  # idle: nothing to batch the records with
            wait = frontier.next_ready()
            timeout = 1.0 if wait is None or free <= 0 else min(max(wait, 0.001), 1.0)
            if not 0.0005 < alarm.when() - loop.time() <= timeout + 0.001:  # rang (uvloop: or
                alarm.cancel()  # at 0 in the ms it rang), or late: a timer a second (or a due
                alarm = loop.call_later(timeout, self._wake.set)  # host), not one per page woken
            self._wake.clear()
            await self._wake.wait()

    def _seeded(self) -> bool:  # no URL to come from outside: seeds, sitemaps being read
        return (self._seeding is None or self._seeding.done()) and not self._ledger.awaiting()

    def _budget(self) -> int:
        if self._config.max_pages is None:
            return 1 << 30
        return self._config.max_pages - self._ledger.counts["pages"] - len(self._tasks)

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
        if lease.kind == "blocked" or lease.kind == "budget":  # recorded, never fetched
            error = "robots" if lease.kind == "blocked" else "budget"
            record = PageRecord(lease.url, None, lease.depth, error=error)
            self._ledger.record(record, Outcome.of(None, error))
            await self._frontier.ack(lease, None)
            return
        result = await self._fetcher.fetch(lease.url)
        self._fetched()
        if result.error in UNSENT and self._proxies_down is not None and self._proxies_down():
            await self._frontier.release(lease, None)  # never reached the site: no attempt
            return
        self._counts["requests"] += 1
        feedback = Feedback(
            started_at=result.sent_by,
            elapsed=result.latency,
            failed=is_failure(result.status, result.error),
            retry_after=result.retry_after,
        )
        try:
            action = classify(result.status, result.error, result.location)
            decision = self._config.retry.decide(
                action, lease.attempts, result.retry_after, self._rng, result.error, result.status
            )
        except Exception:
            await self._contain(lease, result, feedback)
            return
        if decision.action is Action.RETRY:
            if self._archive is not None:  # without its body if it is noindex
                await self._archive.write(await self._page.archivable(result))
            self._counts["retries"] += 1
            await self._frontier.retry(lease, decision.after, feedback)
            return
        try:
            page = await self._page.handle(lease, result, decision.action, decision.error)
        except Exception:
            await self._contain(lease, result, feedback)
            return
        archive = self._archive  # written once the page stage said what to keep (noindex)
        archived = await archive.write(page.archive or result) if archive is not None else None
        for kept in page.kept:  # pages stored after all: their canonical URL led back or failed
            at = await archive.write(kept.archive) if archive is not None else None
            self._ledger.note(kept.record, at)  # the same page again: not one more page
        if page.links:
            await self._frontier.add(page.links)
        self._ledger.record(page.record, page.outcome, archived)
        await self._frontier.ack(lease, feedback)
        if self._upkeep is not None:
            await self._upkeep()

    async def _contain(self, lease: Lease, result: Fetched, feedback: Feedback) -> None:
        """A failure while handling one URL's answer (a bug that input revealed) ends that URL
        with an ``internal-error`` record instead of the crawl; it is not tried again."""
        log.exception("internal error handling %s; recorded, crawl goes on", redact_url(lease.url))
        archived = await self._archive.write(result) if self._archive is not None else None
        self._ledger.record(internal_error(lease, result), Outcome.INTERNAL_ERROR, archived)
        await self._frontier.ack(lease, feedback)

    def _fetched(self) -> None:
        """The current task's response is in: its fetch slot is free for the next URL."""
        task = asyncio.current_task()
        if task in self._fetching:  # the loop waits for a free slot only when all were taken
            if len(self._fetching) >= self._config.concurrency:
                self._wake.set()
            self._fetching.discard(task)

    async def _fetch_robots(self, lease: Lease) -> None:
        """A ``robots`` lease: fetch the host's robots.txt into the cache (unless it is there)
        and report its rules, which free its URLs; asked for again if it could not be (no proxy)."""
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
            error, attempts = "robots-unreachable", lease.attempts
            record = PageRecord(lease.url, None, lease.depth, error=error, attempts=attempts)
            self._ledger.record(record, Outcome.FAILED)
            await self._frontier.ack(lease, None)
            return
        self._counts["retries"] += 1
        await self._frontier.retry(lease, self._config.robots_retry, None)


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

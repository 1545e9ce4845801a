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
import functools
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from gossamer.digests.base import DigestIndex, Match, digest
from gossamer.frontier.base import Candidate, Feedback, Frontier, HeldBack, Lease, Outlinks
from gossamer.frontier.robots import RobotsCache, RobotsDeferred, RobotsPolicy
from gossamer.hooks import Hook, HookError, Page, run_hook
from gossamer.outcomes import Action, RetryPolicy, classify, is_failure
from gossamer.parse.charset import detect_encoding
from gossamer.parse.links import ParsedPage, parse_html
from gossamer.redact import redact_url
from gossamer.sinks.base import (
    Archivable,
    Archive,
    Item,
    Journal,
    PageRecord,
    RecordSink,
    WarcLocation,
)
from gossamer.stats import CrawlStats, peak_rss_mb
from gossamer.urls import Resolver, canonicalize, host_key

if TYPE_CHECKING:
    from gossamer.extract import Content
    from gossamer.extract.pdf import PdfPool
    from gossamer.extract.rules import RuleSet
    from gossamer.extract.rules.pool import RulePool

log = logging.getLogger(__name__)
_PARSE_IN_THREAD_BYTES = 512 * 1024
"""Bodies from this size on are parsed off the event loop: a worst-case 10 MB page takes the
parser a few seconds, and lexbor lets the loop run meanwhile (it releases the GIL)."""
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
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


class FetchResultLike(Archivable, Protocol):
    """The parts of a fetch result the engine reads."""

    @property
    def status(self) -> int | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str | None: ...
    @property
    def charset(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def location(self) -> str | None: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def started_at(self) -> float: ...
    @property
    def sent_by(self) -> float: ...
    @property
    def fetched_at(self) -> float: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def flags(self) -> tuple[str, ...]: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def proxy(self) -> str | None: ...
    @property
    def rendered(self) -> bool: ...


class Focus(Protocol):
    """A focused crawl's policy (:class:`gossamer.focus.policy.FocusPolicy`): judges each 2xx
    HTML page and sets its outlinks' priorities. ``crawl.py`` builds it only when asked to
    focus, so a plain crawl imports nothing of :mod:`gossamer.focus`."""

    def judge(
        self, url: str, depth: int, page: ParsedPage, content: Content | None, links: list[str]
    ) -> tuple[float, list[Candidate]]:
        """The page's relevance (0..1) and the outlinks to queue, with their priorities."""
        ...

    def redirected(self, url: str, target: str) -> float:
        """``url`` redirected to ``target``: the target's priority (``url``'s)."""
        ...

    async def upkeep(self) -> None:
        """Re-score the URLs waiting in the frontier, when due."""
        ...

    def json_stats(self) -> dict[str, Any]: ...


class Fetch(Protocol):
    """Anything that fetches one URL without following redirects and never raises."""

    async def fetch(self, url: str) -> FetchResultLike: ...


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """The knobs of the crawl loop."""

    concurrency: int = 64
    max_pages: int | None = None
    robots_retry: float = 30.0
    """Seconds before a URL of a host whose robots.txt was unreachable is tried again."""
    follow_nofollow: bool = False
    max_redirects: int = 10
    checkpoint_interval: float = 0.5
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    hook: Hook | None = None
    """The user's ``--hook`` (see :mod:`gossamer.hooks`), called on every 2xx page."""
    text: bool = True
    """Extract the main text and metadata of HTML, plain-text and PDF pages."""
    extractor: str = "tree"
    """The main-text extractor (see :mod:`gossamer.extract`, imported only when ``text``)."""
    max_text_chars: int = 1_000_000
    rules: RuleSet | None = None
    """The rule documents (``--rules``) read on every 2xx HTML page, before the hook."""
    follow_duplicates: bool = False
    """Follow the links of a page whose main text an earlier page had (with digests)."""
    near_digests: bool = False
    """Look for near duplicates too (a SimHash of every main text), not only exact ones."""


@dataclass(frozen=True, slots=True)
class LoopState:
    """Whether the crawl loop runs: its phase (``starting``, ``running``, ``stopping``,
    ``stopped``, ``failed``) and the seconds since it last went round (at least once a
    second while it runs)."""

    phase: str
    silent: float


class Crawler:
    """Runs one crawl to its end (or until asked to stop)."""

    def __init__(
        self,
        config: EngineConfig,
        frontier: Frontier,
        fetcher: Fetch,
        robots: RobotsCache,
        robots_fetch: RobotsFetch,
        journal: Journal,
        sinks: Sequence[RecordSink] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        on_commit: CommitHook | None = None,
        archive: Archive | None = None,
        pdf: PdfPool | None = None,
        rule_pool: RulePool | None = None,
        proxy_stats: Callable[[], dict[str, Any]] | None = None,
        auth_stats: Callable[[], Mapping[str, int]] | None = None,
        render_stats: Callable[[], dict[str, Any]] | None = None,
        focus: Focus | None = None,
        digests: DigestIndex | None = None,
        proxies_down: Callable[[], bool] | None = None,
    ) -> None:
        self._config = config
        self._proxies_down = proxies_down
        """True while no proxy is live: nothing is leased, no URL's attempt is spent."""
        self._render_stats = render_stats
        self._focus = focus
        self._digests = digests
        self._proxy_stats = proxy_stats
        self._auth_stats = auth_stats
        self._archive = archive
        self._pdf = pdf
        if config.rules is not None and rule_pool is None:
            raise ValueError("a crawl with rules reads them in a RulePool")
        self._rule_pool = rule_pool
        self._frontier = frontier
        self._fetcher = fetcher
        self._robots = robots
        self._robots_fetch = robots_fetch
        self._journal = journal
        self._sinks = tuple(sinks)
        self._clock = clock
        self._rng = rng or random.Random()
        self._on_commit = on_commit
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
            self._tally(status, error, count)
        self._prior_pages = self._counts["pages"]
        if self._config.rules is not None:
            counts = zip(_RULE_COUNTERS, self._journal.rule_counts(), strict=True)
            self._counts.update(dict(counts))

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
        fetched = self._counts["pages"] - self._prior_pages
        render = None if self._render_stats is None else self._render_stats()
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
            proxies=None if self._proxy_stats is None else self._proxy_stats(),
            auth=None if self._auth_stats is None else dict(self._auth_stats()),
            render=render,
            focus=None if self._focus is None else self._focus.json_stats(),
            **{name: self._counts[name] for name in _RULE_COUNTERS},
            **self._duplicate_counts(),
        )

    def _duplicate_counts(self) -> dict[str, int]:
        if self._digests is None:
            return {}
        found = self._digests.stats()
        return {"duplicates_exact": found.exact, "duplicates_near": found.near}

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
            self._record(PageRecord(lease.url, None, lease.depth, error="robots"), lease)
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
            record, links = await self._finish(lease, result, decision.action, decision.error)
        except Exception:
            await self._contain(lease, result, feedback, archived)
            return
        if links:
            await self._frontier.add(links)
        self._record(_with_warc(record, archived), lease)
        await self._frontier.ack(lease, feedback)
        if self._focus is not None:
            await self._focus.upkeep()

    async def _contain(
        self,
        lease: Lease,
        result: FetchResultLike,
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
        self._record(_with_warc(record, archived), lease)
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
            self._record(record, lease)
            await self._frontier.ack(lease, None)
            return
        self._counts["retries"] += 1
        await self._frontier.retry(lease, self._config.robots_retry, None)

    async def _finish(
        self, lease: Lease, result: FetchResultLike, action: Action, error: str | None
    ) -> tuple[PageRecord, Sequence[Candidate]]:
        """The URL's record and the candidates it leads to (outlinks or a redirect target)."""
        title = None
        links: Sequence[Candidate] = ()
        redirect_to = None
        flags = result.flags
        extra = None
        content: dict[str, Any] = {}
        ruled: dict[str, Any] = {}
        relevance = None
        duplicate = None
        outlinks = 0
        if action is Action.STORE:
            page, found_content = await self._read(lease, result)
            found = page.links if page is not None else []
            if page is not None and self._config.rules is not None:
                ruled, found = await self._apply_rules(lease.url, result, found)
            if page is not None:
                title = page.title
                flags += page.flags
            if found_content is not None:
                content, cut = self._content_fields(found_content)
                flags += cut
            elif self._config.text and result.content_type == "application/pdf":
                content, pdf_error = await self._pdf_text(result)
                error = error or pdf_error
            if self._config.hook is not None:
                extra, found, hook_error = self._run_hook(lease, result, page, found, found_content)
                error = error or hook_error
            duplicate = await self._duplicate(lease.url, content.get("text"))
            outlinks = len(found)  # a duplicate's record counts the links it did not follow
            if duplicate is not None and not self._config.follow_duplicates:
                found = []
            if self._focus is not None and page is not None and _is_ok(result.status):
                relevance, links = self._focus.judge(
                    lease.url, lease.depth, page, found_content, found
                )
            else:
                links = Outlinks(found, lease.depth + 1)
        elif action is Action.REDIRECT and result.location is not None:
            redirect_to, error = self._follow_redirect(lease, result.location)
            if redirect_to is not None and error is None:
                priority = 0.0
                if self._focus is not None:
                    priority = self._focus.redirected(lease.url, redirect_to)
                links = [Candidate(redirect_to, lease.depth, lease.hops + 1, priority)]
        record = PageRecord(
            url=lease.url,
            status=result.status,
            depth=lease.depth,
            content_type=result.content_type,
            bytes=len(result.body),
            fetched_at=round(result.fetched_at, 3),
            elapsed_ms=round(result.elapsed * 1000, 1),
            title=title,
            outlinks=outlinks,
            redirect_to=redirect_to,
            error=error or result.error,
            attempts=lease.attempts + 1,
            truncated=result.truncated,
            flags=flags,
            extra=extra,
            proxy=result.proxy,
            rendered=result.rendered,
            relevance=relevance,
            duplicate_of=None if duplicate is None else duplicate.first,
            **content,
            **ruled,
        )
        return record, links

    async def _duplicate(self, url: str, text: str | None) -> Match | None:
        """The page that had this main text first (with digests), or None."""
        if self._digests is None or not text:
            return None
        found = digest(text, self._config.near_digests)
        return None if found is None else await self._digests.check(url, found)

    async def _read(
        self, lease: Lease, result: FetchResultLike
    ) -> tuple[ParsedPage | None, Content | None]:
        """The parsed page and its content (HTML), or the content alone (plain text)."""
        if _is_html(result):
            return await self._parse(lease, result)
        if self._config.text and result.content_type == "text/plain":
            from gossamer.extract import Content
            from gossamer.extract.lang import detect_language
            from gossamer.extract.text import plain_text

            detected = detect_encoding(result.body, result.charset)
            body = result.body[detected.bom_length :]
            text = plain_text(body.decode(detected.encoding, "replace"))
            return None, Content(text=text, lang=detect_language(text))
        return None, None

    def _content_fields(self, content: Content) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The record's content fields, and ``("text-cut",)`` if the text was cut."""
        text = content.text
        limit = self._config.max_text_chars
        cut: tuple[str, ...] = ("text-cut",) if len(text) > limit else ()
        fields = {
            "text": text[:limit],
            "lang": content.lang,
            "description": content.description,
            "canonical": content.canonical,
            "published": content.published,
            "authors": tuple(content.authors),
            "images": tuple({"src": i.src, "alt": i.alt} for i in content.images),
            "text_chars": len(text),
        }
        return fields, cut

    async def _pdf_text(self, result: FetchResultLike) -> tuple[dict[str, Any], str | None]:
        """A PDF's text from the worker pool: (fields, None) or ({}, the error)."""
        if self._pdf is None or result.truncated:
            return {}, "pdf-truncated" if result.truncated else None
        extracted = await self._pdf.text(result.body, self._config.max_text_chars)
        if extracted.text is None:
            return {}, extracted.error
        from gossamer.extract.lang import detect_language

        text = extracted.text
        return {"text": text, "text_chars": len(text), "lang": detect_language(text)}, None

    def _run_hook(
        self,
        lease: Lease,
        result: FetchResultLike,
        parsed: ParsedPage | None,
        links: list[str],
        content: Content | None,
    ) -> tuple[dict[str, Any] | None, list[str], str | None]:
        """The user's ``--hook`` on a 2xx page: (its fields, the links to follow, an error)."""
        assert self._config.hook is not None
        page = Page(
            url=lease.url,
            status=result.status or 0,
            headers=result.headers,
            body=result.body,
            content_type=result.content_type,
            encoding=parsed.text_encoding if parsed is not None else None,
            tree=parsed.tree if parsed is not None else None,
            links=tuple(links),
            title=parsed.title if parsed is not None else None,
            content=content,
        )
        try:
            extra, replaced = run_hook(self._config.hook, page)
        except HookError as exc:
            log.warning("%s on %s", exc.__cause__ or exc, redact_url(lease.url))
            return None, links, str(exc)
        return extra, (links if replaced is None else replaced), None

    async def _parse(
        self, lease: Lease, result: FetchResultLike
    ) -> tuple[ParsedPage, Content | None]:
        """Parse an HTML body and extract its content; a large one in a worker thread, so the
        event loop (and with it a cluster worker's claim renewals) keeps running meanwhile."""
        parse = functools.partial(self._parse_now, lease.url, result.body, result.charset)
        if len(result.body) < _PARSE_IN_THREAD_BYTES:
            return parse()
        return await asyncio.to_thread(parse)

    def _parse_now(
        self, url: str, body: bytes, charset: str | None
    ) -> tuple[ParsedPage, Content | None]:
        page = parse_html(
            body, url, header_charset=charset, follow_nofollow=self._config.follow_nofollow
        )
        if not self._config.text:
            return page, None
        from gossamer.extract import Content, extract  # a --no-text crawl never loads them

        if page.tree is None:
            return page, Content(text="")
        return page, extract(page.tree, url, self._config.extractor)

    async def _apply_rules(
        self, url: str, result: FetchResultLike, links: list[str]
    ) -> tuple[dict[str, Any], list[str]]:
        """The record's rule fields and the links to follow: the rule's own, when it has link
        rules. The rule reads the page in a worker process of the rule pool, within its time
        bound; a failure or a page over the bound becomes the page's rule error, never the
        crawl's."""
        assert self._config.rules is not None and self._rule_pool is not None
        from gossamer.extract.rules import PageItems

        try:
            found = await self._rule_pool.evaluate(
                self._config.rules, url, result.body, result.charset,
                follow_nofollow=self._config.follow_nofollow,
            )  # fmt: skip
        except Exception as exc:
            log.exception("rules failed on %s; recorded, crawl goes on", redact_url(url))
            rule = self._config.rules.select(url)
            found = PageItems(rule.name if rule else "", [], None, [f"internal error: {exc!r}"])
        if found is None:
            return {}, links
        self._counts.update(
            rule_pages=1, items=len(found.items), items_dropped=found.dropped,
            rule_errors=len(found.errors),
        )  # fmt: skip
        fetched_at = round(result.fetched_at, 3)
        items = tuple(
            Item(url, found.rule, i, fetched_at, item) for i, item in enumerate(found.items)
        )
        fields = {"rule": found.rule, "items": len(items), "rule_errors": tuple(found.errors)}
        return fields | {"found": items}, (links if found.links is None else found.links)

    def _follow_redirect(self, lease: Lease, location: str) -> tuple[str | None, str | None]:
        try:
            resolved = Resolver(lease.url).resolve(location)
            target = canonicalize(resolved) if resolved is not None else None
        except ValueError:  # InvalidURL, or a lease URL no resolver takes
            target = None
        if target is None:
            return None, "bad-redirect"
        if lease.hops + 1 > self._config.max_redirects:
            return target, "too-many-redirects"
        return target, None

    def _record(self, record: PageRecord, lease: Lease) -> None:
        """Stage a record in the journal before the caller acks its lease (with no await
        between), so whichever commit makes the ack durable makes the record durable too. The
        sinks get the record after the next checkpoint's commit."""
        self._journal.stage([record])
        self._pending.append(record)
        self._tally(record.status, record.error, 1)

    def _tally(self, status: int | None, error: str | None, count: int) -> None:
        self._counts["pages"] += count
        self._statuses[str(status) if status is not None else "none"] += count
        if error == "robots":
            self._counts["robots_blocked"] += count
        elif error == "internal-error":
            self._counts["internal_errors"] += count
            self._counts["errors"] += count
        elif error is not None and error.startswith("hook-error"):
            self._counts["hook_errors"] += count
            self._counts["errors"] += count
        elif error is not None or status is None:
            self._counts["errors"] += count
        if status is not None and 200 <= status < 300:
            self._counts["ok"] += count


_RULE_COUNTERS = ("rule_pages", "items", "items_dropped", "rule_errors")


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

    async def __call__(self, url: str) -> FetchResultLike:
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


def _is_ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def _is_html(result: FetchResultLike) -> bool:
    if result.content_type is not None:
        return result.content_type in _HTML_TYPES
    head = result.body[:256].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


__all__ = [
    "CommitHook",
    "Crawler",
    "EngineConfig",
    "Focus",
    "LoopState",
    "RobotsFetch",
    "RobotsPolicy",
]

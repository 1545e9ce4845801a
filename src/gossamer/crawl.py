"""Wiring of a single-process crawl: builds every stage from the settings and runs it.

This is the one place where objects are constructed and handed their collaborators.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from gossamer.balance.probe import BandwidthMeter
from gossamer.crawldb import CrawlDB
from gossamer.digests.base import DigestIndex
from gossamer.digests.local import LocalDigests
from gossamer.engine import (
    SEEDING_META,
    CommitHook,
    Crawler,
    EngineConfig,
    Outputs,
    Robots,
    RobotsFetch,
    StatsSource,
)
from gossamer.fetch.auth import Authenticator, Login, Secret, UserLogin
from gossamer.fetch.cookies import CookieJar, CookieRow, read_cookies_txt
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.guard import AddressGuard
from gossamer.fetch.http import FetchConfig, Fetcher, FetchResult
from gossamer.fetch.proxies import ProxyPool, read_proxies_file
from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Frontier, waiting
from gossamer.frontier.gate import HostGate, SlotSource
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsCache, RobotsPolicy
from gossamer.hooks import load_hook
from gossamer.logs import LOG_FILE, logging_to_file
from gossamer.outcomes import RetryPolicy
from gossamer.page import Focus, PageConfig, PageStage
from gossamer.progress import progress_line
from gossamer.proxyurl import ProxyError, parse_proxy
from gossamer.settings import (
    AuthSettings,
    CrawlSettings,
    SettingsError,
    canonical_seeds,
    crawl_scope,
    read_secret,
)
from gossamer.sinks.base import RecordSink
from gossamer.sinks.jsonl import ItemJsonlSink, JsonlSink, repair_jsonl
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.stats import CrawlStats
from gossamer.status import status_file
from gossamer.urls import InvalidURL, Scope, canonicalize, host_key

if TYPE_CHECKING:
    from gossamer.extract.pdf import PdfPool
    from gossamer.extract.rules import RuleSet
    from gossamer.extract.rules.pool import RulePool
    from gossamer.fetch.render import RenderingFetcher
    from gossamer.metrics.exporter import MetricsServer, Sources
    from gossamer.sinks.postgres import PostgresSink, StoreExport
    from gossamer.sinks.warc import WarcWriter

log = logging.getLogger(__name__)

_OUTPUTS = (
    "crawl.db", "crawl.db-wal", "crawl.db-shm", "pages.jsonl", "items.jsonl", "stats.json",
    "status.json", "crawl.log", "crawl.log.1",
)  # fmt: skip
_FROM_SETTINGS: Any = object()
"""``open_stages`` without rules given: it reads those of the settings."""


def prepare_out_dir(settings: CrawlSettings) -> None:
    """Create --out; refuse to mix a new crawl into an old one unless asked."""
    out = settings.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {out}") from exc
    if settings.resume:
        return
    if settings.overwrite:
        for name in _OUTPUTS:
            (out / name).unlink(missing_ok=True)
        for path in (out / "warc").glob("*.warc.gz"):
            path.unlink()
    elif (out / "crawl.db").exists():
        raise SettingsError(
            f"invalid setting 'out': {out} holds a crawl already; use --resume or --overwrite"
        )


@dataclass(frozen=True, slots=True)
class Stages:
    """The stages every crawl process has, whatever its frontier."""

    db: CrawlDB
    jsonl: JsonlSink
    fetcher: Fetcher
    robots_fetch: RobotsFetch
    robots: RobotsCache
    politeness: PolitenessPolicy
    scope: Scope
    """What the crawl may visit (robots.txt redirects and the embedded frontier's links)."""
    store: RecordSink | None = None
    """With ``--store``: the shared page store, after pages.jsonl."""
    meter: BandwidthMeter | None = None
    """Fed by the fetcher with every body chunk received (a worker's bandwidth figures)."""
    warc: WarcWriter | None = None
    """With ``--warc``: where every fetch is archived."""
    pdf: PdfPool | None = None
    """Worker processes for PDF text (started at the first PDF), unless ``--no-text``."""
    rules: RuleSet | None = None
    """With ``--rules`` (or a job's rules): the rule documents, compiled."""
    rule_pool: RulePool | None = None
    """With rules: the worker processes pages are read by the rules in, in bounded time."""
    items: ItemJsonlSink | None = None
    """With rules: items.jsonl (repaired after a crash)."""
    proxies: ProxyPool | None = None
    """With ``--proxy`` or ``--proxies-file``: the pool the fetcher sends requests through."""
    auth: Authenticator | None = None
    """With [[auth]] tables: the logins the fetcher attaches, their cookies in crawl.db."""
    renderer: RenderingFetcher | None = None
    """With ``--render auto|always`` or ``--render-url``: the fetcher the engine calls,
    rendering pages in headless Chromium over ``fetcher``."""
    gate: HostGate | None = None
    """The way into a host's politeness slot for every request outside the frontier's
    leases (proxy checks, focus examples, robots.txt asked for outside a lease, rendered
    pages' subrequests, logins); bound to the frontier's scheduler by `start`."""

    async def start(self, frontier: SlotSource) -> None:
        """Before the crawl's first request: out-of-band requests take ``frontier``'s host
        slots from now on, and every proxy is checked once (through those slots)."""
        if self.gate is not None:
            self.gate.bind(frontier.slots)
        if self.proxies is not None:
            await self.proxies.start()

    def metric_sources(self, crawler: Crawler, frontier: Frontier) -> Sources:
        """Where ``/metrics`` reads this crawl's figures (the stages' snapshots)."""
        from gossamer.metrics.exporter import Sources

        return Sources(
            crawl=crawler.stats,
            fetch=self.fetcher.stats,
            waiting_hosts=lambda: waiting(frontier.held_back(None)),
            loop=crawler.loop_state,
            proxies=None if self.proxies is None else self.proxies.stats,
            extra={} if self.renderer is None else {"render": self.renderer.stats},
        )

    def crawler(
        self,
        settings: CrawlSettings,
        frontier: Frontier,
        on_commit: CommitHook | None = None,
        focus: Focus | None = None,
        digests: DigestIndex | None = None,
    ) -> Crawler:
        """The crawl loop over these stages and ``frontier``: crawl.db is its journal,
        pages.jsonl, items.jsonl (with rules) and the store (if any) its record sinks, in
        that order; ``focus`` (:func:`focus_policy`) when the crawl is focused."""
        sinks: list[RecordSink] = [self.jsonl]
        if self.items is not None:
            sinks.append(self.items)
        if self.store is not None:
            sinks.append(self.store)
        page = PageStage(
            _page_config(settings, self.rules),
            pdf=self.pdf,
            rule_pool=self.rule_pool,
            focus=focus,
            digests=digests,
        )
        return Crawler(
            _engine_config(settings),
            frontier,
            self.renderer if self.renderer is not None else self.fetcher,
            Robots(self.robots, self.robots_fetch),
            Outputs(SQLiteSink(self.db), sinks, self.warc, on_commit),
            page,
            stats=self.stats_sources(),
            proxies_down=_proxies_down(self.proxies),
        )

    def stats_sources(self) -> dict[str, StatsSource]:
        """The stages whose figures the crawl's stats show, by name."""
        sources: dict[str, StatsSource] = {}
        if self.proxies is not None:
            sources["proxies"] = self.proxies.json_stats
        if self.auth is not None:
            sources["auth"] = self.auth.stats_counts
        if self.renderer is not None:
            sources["render"] = self.renderer.json_stats
        return sources

    async def focus_policy(self, settings: CrawlSettings, frontier: Frontier) -> Focus | None:
        """A focused crawl's policy (None for a plain crawl, which imports nothing of
        :mod:`gossamer.focus`): the example pages are fetched now (robots.txt and the hosts'
        delays obeyed, and waited for before the crawl's first request), and with the phrase
        they make the topic. A bad example or an empty topic raises SettingsError."""
        if not settings.focused:
            return None
        from gossamer.focus.examples import ExampleError, fetch_examples
        from gossamer.focus.policy import FocusConfig, FocusPolicy
        from gossamer.focus.topic import Topic, TopicError

        fetcher: Any = self.fetcher if self.gate is None else GatedFetch(self.fetcher, self.gate)
        try:
            examples = await fetch_examples(
                settings.focus_examples,
                fetcher,
                self.robots if settings.robots else None,
                extractor=settings.extractor,
            )
        except ExampleError as exc:
            raise SettingsError(f"invalid setting 'focus_examples': {exc}") from None
        try:
            topic = Topic(settings.focus_phrase or "", [e.text for e in examples])
        except TopicError as exc:
            raise SettingsError(f"invalid setting 'focus_phrase': {exc}") from None
        config = FocusConfig(
            threshold=settings.focus_threshold,
            mode=settings.focus_mode,
            tolerance=settings.focus_tolerance,
        )
        reprioritize = getattr(frontier, "reprioritize", None)
        return FocusPolicy(
            topic,
            config,
            reprioritize=reprioritize,
            extractor=settings.extractor,
            known=[e.url for e in examples],
        )


@asynccontextmanager
async def open_stages(
    settings: CrawlSettings,
    seeds: list[str],
    worker: str | None = None,
    *,
    rules: RuleSet | None = _FROM_SETTINGS,
    first_seed: str | None = None,
) -> AsyncIterator[Stages]:
    """crawl.db, pages.jsonl (repaired after a crash), fetcher, robots cache, politeness,
    with ``--warc`` the WARC writer (a new file, even when resuming), with ``--store`` the
    shared page store (rows signed by ``worker``, default host-pid) and with rules (``rules``,
    by default read from the settings by :func:`load_ruleset`) items.jsonl.
    ``seeds`` (canonical) name the hosts the address guard lets reach private addresses and,
    with the settings, the scope robots.txt redirects must stay in (``Stages.scope``);
    ``first_seed`` (canonical, as given) checks the proxies unless ``--proxy-check-url``
    says otherwise (default: the first of ``seeds``). `Stages.start` starts them."""
    if rules is _FROM_SETTINGS:
        rules = load_ruleset(settings)
    if settings.text:
        _check_extraction(settings.extractor)
    # Each resource is entered on the stack as soon as it is built: a failure further on (a
    # bad setting, a browser that does not start) closes what was opened, and a close that
    # fails does not skip the others.
    async with AsyncExitStack() as stack:
        sink, db, jsonl, items = await _open_outputs(stack, settings, worker, rules is not None)
        scope = crawl_scope(settings, seeds)
        check_url = proxy_check_url(settings, [first_seed] if first_seed else seeds)
        del seeds  # 200,000 seed origins cost 16 MB: the scope holds what the crawl needs
        proxies = proxy_pool(settings)  # holds nothing until `Stages.start`
        meter = BandwidthMeter()
        auth = authenticator(settings, db, scope)
        politeness = politeness_policy(settings)
        gate = HostGate(politeness)
        fetcher = Fetcher(
            _fetch_config(settings, check_url),
            meter=meter,
            guard=address_guard(settings, scope, check_url),
            proxies=proxies,
            auth=auth,
            gate=gate,
        )
        stack.push_async_callback(fetcher.close)
        if proxies is not None:  # closed before the fetcher its checks use
            stack.push_async_callback(proxies.close)
        warc = _warc_writer(settings)
        if warc is not None:
            stack.callback(warc.close)
        robots_fetch = RobotsFetch(
            fetcher,
            warc,
            gated=GatedFetch(fetcher, gate, pace_only=True),
            proxied=proxies is not None,
        )
        robots = _robots_cache(settings, robots_fetch, scope, db)
        if settings.robots:
            fetcher.set_check_rules(robots)
        pdf = _pdf_pool() if settings.text else None
        if pdf is not None:
            stack.push_async_callback(pdf.close)
        rule_pool = _rule_pool(settings) if rules is not None else None
        if rule_pool is not None:
            stack.push_async_callback(rule_pool.close)
        renderer = rendering_fetcher(settings, fetcher, scope, robots, gate)
        if renderer is not None:
            stack.push_async_callback(renderer.close)
            await _start_renderer(renderer)
        yield Stages(
            db,
            jsonl,
            fetcher,
            robots_fetch,
            robots,
            politeness,
            scope,
            await _catch_up(sink, db),
            meter=meter,
            warc=warc,
            pdf=pdf,
            rules=rules,
            rule_pool=rule_pool,
            items=items,
            proxies=proxies,
            auth=auth,
            renderer=renderer,
            gate=gate,
        )


async def _open_outputs(
    stack: AsyncExitStack, settings: CrawlSettings, worker: str | None, with_items: bool
) -> tuple[PostgresSink | None, CrawlDB, JsonlSink, ItemJsonlSink | None]:
    """The shared page store (first: a bad store fails before crawl.db exists), crawl.db,
    pages.jsonl (repaired after a crash) and, with rules, items.jsonl; each entered on
    ``stack`` as it opens."""
    out = settings.out
    sink = await _open_store(settings, worker)
    if sink is not None:
        stack.push_async_callback(sink.close)
    db = CrawlDB(out / "crawl.db")
    stack.callback(db.close)
    jsonl_path = out / "pages.jsonl"
    committed = repair_jsonl(jsonl_path)
    jsonl = JsonlSink(jsonl_path)
    stack.callback(jsonl.close)
    await jsonl.write(SQLiteSink(db).records_after(committed))
    items = None
    if with_items:
        items = _item_sink(out / "items.jsonl", db)
        stack.callback(items.close)
    return sink, db, jsonl, items


def _robots_cache(
    settings: CrawlSettings, fetch: RobotsFetch, scope: Scope, db: CrawlDB
) -> RobotsCache:
    """The crawl's robots.txt rules, fetched through ``fetch``."""
    return RobotsCache(
        fetch=fetch,
        token=settings.robots_token,
        retry_interval=settings.robots_retry,
        may_follow=functools.partial(in_scope, scope),
        on_rules=functools.partial(_keep_sitemaps, SQLiteSink(db)),
        # More than the hosts a frontier schedules at once (the embedded one's working set,
        # a cluster worker's claimed URLs), so their rules are never evicted before use.
        max_hosts=max(100_000, 2 * settings.queue_memory),
    )


def politeness_policy(settings: CrawlSettings) -> PolitenessPolicy:
    """The rules every host slot follows."""
    return PolitenessPolicy(
        per_host=settings.per_host,
        delay=settings.delay,
        slow_latency=settings.adaptive_latency,
        max_delay=settings.max_host_delay,
        max_pause=settings.max_retry_after,
        max_crawl_delay=settings.max_crawl_delay,
    )


def _keep_sitemaps(journal: SQLiteSink, origin: str, policy: RobotsPolicy) -> None:
    """Stage the ``Sitemap:`` lines of a robots.txt in crawl.db, whoever asked for it (a
    robots lease, a proxy check, a focus example, a rendered page's subrequest)."""
    if policy.sitemaps:
        journal.stage_sitemaps(origin, policy.sitemaps)


def _proxies_down(proxies: ProxyPool | None) -> Callable[[], bool] | None:
    """Whether no proxy is live (None without proxies)."""
    return None if proxies is None else lambda: proxies.waiting


def renders(settings: CrawlSettings) -> bool:
    """Whether the crawl renders any page (``--render auto|always`` or ``--render-url``)."""
    return settings.render != "never" or bool(settings.render_url)


def check_rendering(settings: CrawlSettings) -> None:
    """When the crawl renders: Playwright and the browser must be there (a SettingsError,
    exit status 2, says what to install). Imports Playwright only then."""
    if not renders(settings):
        return
    from gossamer.fetch.render import RenderUnavailable, check_available

    try:
        check_available(settings.render_browser)
    except RenderUnavailable as exc:
        raise SettingsError(f"invalid setting 'render': {exc}") from None


def rendering_fetcher(
    settings: CrawlSettings,
    fetcher: Fetcher,
    scope: Scope,
    robots: RobotsCache,
    gate: HostGate | None = None,
) -> RenderingFetcher | None:
    """The rendering middleware over ``fetcher`` (None when the crawl renders nothing): its
    browser's subrequests keep to ``scope`` and, unless ``--no-robots``, to robots.txt, and
    wait for their host's pace in ``gate`` (pace only: the page's own lease holds its
    host's slot while it renders)."""
    if not renders(settings):
        return None
    check_rendering(settings)
    from gossamer.fetch.render import (
        BrowserConfig,
        BrowserPool,
        HostLearner,
        PageOptions,
        PageRenderer,
        RenderingFetcher,
        default_concurrency,
    )  # fmt: skip

    concurrency = settings.render_concurrency or default_concurrency()
    pool = BrowserPool(
        BrowserConfig(
            executable=settings.render_browser,
            js_heap_mb=settings.render_js_heap_mb,
            restart_pages=settings.render_restart_pages,
            memory_mb=settings.render_memory_mb,
        ),
        concurrency,
    )
    options = PageOptions(
        user_agent=settings.user_agent,
        timeout=settings.render_timeout,
        load_timeout=settings.render_load_timeout,
        settle=settings.render_settle,
        scroll=settings.render_scroll,
        block=frozenset(settings.render_block),
    )
    renderer = PageRenderer(
        pool,
        fetcher if gate is None else GatedFetch(fetcher, gate, pace_only=True),
        options,
        in_scope=functools.partial(in_scope, scope),
        allowed=robots.allowed if settings.robots else None,
    )
    patterns = tuple(re.compile(p) for p in settings.render_url)
    mode = settings.render
    documents = fetcher if gate is None else _StartsTold(fetcher, gate)
    return RenderingFetcher(
        documents, renderer, pool, mode, patterns, HostLearner(), max_bytes=settings.max_body_bytes
    )


class _StartsTold:
    """``fetcher``, each result telling ``gate`` when its request started: a rendered page's
    document, so its subrequests are spaced from its real start (see `HostGate.started`)."""

    def __init__(self, fetcher: Fetcher, gate: HostGate) -> None:
        self._fetcher = fetcher
        self._gate = gate

    async def fetch(self, url: str) -> FetchResult:
        result = await self._fetcher.fetch(url)
        self._gate.started(url, result.sent_by)
        return result


async def _start_renderer(renderer: RenderingFetcher) -> None:
    """Launch the browser; one that cannot start is a settings error (exit status 2)."""
    from gossamer.fetch.render import RenderUnavailable

    try:
        await renderer.start()
    except RenderUnavailable as exc:
        raise SettingsError(f"invalid setting 'render': {exc}") from None
    except Exception as exc:
        if type(exc).__module__.startswith("playwright"):
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise SettingsError(
                f"invalid setting 'render': the browser did not start: {first}"
            ) from None
        raise


def auth_logins(settings: CrawlSettings, env: Mapping[str, str] | None = None) -> list[Login]:
    """The [[auth]] logins with their secrets read (from ``env``, default the process's);
    a missing variable or unreadable file raises SettingsError naming it."""
    env = os.environ if env is None else env
    return [_login(auth, index, env) for index, auth in enumerate(settings.auth)]


def authenticator(
    settings: CrawlSettings, db: CrawlDB | None, scope: Scope | None = None
) -> Authenticator | None:
    """The crawl's logins and cookie jar (``--cookies``), its cookies kept in ``db`` (and
    read back from it when resuming); with ``--cookies on`` the sites of ``scope`` keep
    theirs. None without [[auth]] tables and without cookies."""
    if not settings.auth and settings.cookies != "on":
        return None
    jar = CookieJar(db.cookies(), on_update=db.update_cookies) if db is not None else None
    return Authenticator(
        auth_logins(settings),
        jar,
        cookies=settings.cookies,
        in_scope=None if scope is None else functools.partial(in_scope, scope),
    )


def _login(auth: AuthSettings, index: int, env: Mapping[str, str]) -> Login:
    def secret(name: str) -> Secret | None:
        if getattr(auth, f"{name}_env") is None and getattr(auth, f"{name}_file") is None:
            return None
        return Secret(read_secret(auth, index, name, env))

    cookies: tuple[CookieRow, ...] = ()
    if auth.cookies_file is not None:
        try:
            cookies = read_cookies_txt(auth.cookies_file, auth.domain)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise SettingsError(f"invalid setting 'auth.{index}.cookies_file': {why}") from None
    user_login = None
    if auth.login_hook is not None:
        try:
            user_login = cast(UserLogin, load_hook(auth.login_hook))
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'auth.{index}.login_hook': {exc}") from None
    return Login(
        domain=auth.domain,
        kind=auth.type,
        username=secret("username"),
        password=secret("password"),
        token=secret("token"),
        cookies=cookies,
        login_url=auth.login_url,
        username_field=auth.username_field,
        password_field=auth.password_field,
        fields=dict(auth.fields),
        logged_out_status=frozenset(auth.logged_out_status),
        logged_out_selector=auth.logged_out_selector,
        user_login=user_login,
        token_url=auth.token_url,
        client_id=secret("client_id"),
        client_secret=secret("client_secret"),
        scope=auth.scope,
        token_cache=auth.token_cache,
        refresh_margin=auth.refresh_margin,
    )


def load_ruleset(settings: CrawlSettings) -> RuleSet | None:
    """The crawl's rules: a cluster job's documents (``shipped_rules``, their digest checked
    first) or the ``rules`` files; None without either. Raises SettingsError with a line per
    problem of the documents."""
    shipped = settings.shipped_rules
    if shipped is None and not settings.rules:
        return None
    from gossamer.extract.rules import Document, RuleError, digest_of, load_rules
    from gossamer.extract.rules import rules_from_documents as compile_documents

    try:
        if shipped is None:
            return load_rules(settings.rules, settings.rule_functions)
        documents = [Document(d.name, d.text) for d in shipped.documents]
        if (digest := digest_of(documents)) != shipped.digest:
            raise SettingsError(
                "invalid setting 'rules': the job's rule documents do not match their digest "
                f"(stored {shipped.digest[:16]}, computed {digest[:16]}); submit the job again"
            )
        return compile_documents(documents, settings.rule_functions)
    except RuleError as exc:
        raise SettingsError("invalid setting 'rules':\n" + "\n".join(exc.problems)) from None


def _item_sink(path: Path, db: CrawlDB) -> ItemJsonlSink:
    """items.jsonl, its torn last line cut and the committed items it lacks appended."""
    committed = repair_jsonl(path)
    sink = ItemJsonlSink(path)
    sink.write_items(SQLiteSink(db).items_after(committed))
    return sink


def _pdf_pool() -> PdfPool:
    from gossamer.extract.pdf import PdfPool  # a --no-text crawl never loads the extractors

    return PdfPool(workers=2)


def _rule_pool(settings: CrawlSettings) -> RulePool:
    from gossamer.extract.rules.pool import RulePool  # a crawl without rules never loads it

    return RulePool(workers=2, timeout=settings.rule_timeout)


def _check_extraction(extractor: str) -> None:
    """Load the language model and the extractor's library now: one missing fails the crawl
    at its start, not every page with an internal error."""
    from gossamer.extract import extract
    from gossamer.extract.lang import load_model as load_language_model

    try:
        load_language_model()
    except ImportError as exc:
        raise SettingsError(f"{exc}; reinstall gossamer, or crawl with --no-text") from None
    try:
        extract("<p>x</p>", "http://gossamer.invalid/", extractor)
    except ImportError as exc:
        raise SettingsError(
            f"invalid setting 'extractor': {extractor} needs the {exc.name or extractor} "
            "package, which is not installed (see benchmarks/requirements-extract.txt)"
        ) from None


def _warc_writer(settings: CrawlSettings) -> WarcWriter | None:
    if not settings.warc:
        return None
    from gossamer.sinks.warc import WarcWriter  # FastWARC loads only for --warc

    return WarcWriter(
        settings.out / "warc",
        max_bytes=settings.warc_max_bytes,
        info={
            "http-header-user-agent": settings.user_agent,
            "robots": "obey" if settings.robots else "ignore",
        },
    )


async def _open_store(settings: CrawlSettings, worker: str | None) -> PostgresSink | None:
    if settings.store is None:
        return None
    # Imported only for a store: asyncpg costs import time and memory in every process.
    from gossamer.sinks.postgres import PostgresSink

    name = worker or f"{socket.gethostname()}-{os.getpid()}"
    return await PostgresSink.open(settings.store, name)


async def _catch_up(sink: PostgresSink | None, db: CrawlDB) -> StoreExport | None:
    """The store's view of crawl.db, after sending the records a lost server missed."""
    if sink is None:
        return None
    from gossamer.sinks.postgres import StoreExport

    store = StoreExport(sink, db)
    await store.catch_up()
    return store


@asynccontextmanager
async def build_crawler(
    settings: CrawlSettings,
    seeds: list[str],
    rules: RuleSet | None = _FROM_SETTINGS,
    metrics: MetricsServer | None = None,
) -> AsyncIterator[Crawler]:
    """Construct the crawler and its stages over the embedded frontier (``metrics`` reads
    their figures); close them on exit."""
    # The scope and the address guard need only the seeds' origins: 200,000, not 1,000,000.
    origins = sorted({host_key(seed) + "/" for seed in seeds})
    if not origins and settings.resume:
        origins = _stored_seeds(settings.out / "crawl.db")
    first = seeds[0] if seeds else None
    async with open_stages(settings, origins, rules=rules, first_seed=first) as stages:
        db = stages.db
        db.set_meta("seeds", "\n".join(origins))
        del origins  # kept by the scope as far as the crawl needs them
        frontier = LocalFrontier(
            stages.scope,
            stages.politeness,
            db,
            rules=stages.robots.known if settings.robots else None,
            memory_budget=settings.queue_memory,
            slack=settings.focus_slack,
            guards=Guards.of(settings),
        )
        digests = None
        if settings.digests != "off" and settings.text:
            digests = LocalDigests(db, settings.digest_threshold)
        if settings.resume:
            frontier.restore()
            if digests is not None:
                digests.restore()
        await stages.start(frontier)
        focus = await stages.focus_policy(settings, frontier)
        crawler = stages.crawler(settings, frontier, focus=focus, digests=digests)
        if settings.resume:
            crawler.restore_counts()
        if metrics is not None:
            metrics.attach(stages.metric_sources(crawler, frontier))
        yield crawler


def _stored_seeds(path: Path) -> list[str]:
    """The seeds of the crawl stored at ``path`` (``--resume`` without seeds)."""
    if not path.exists():
        return []
    db = CrawlDB(path)
    try:
        stored = db.get_meta("seeds")
        seeding = db.get_meta(SEEDING_META)
    finally:
        db.close()
    if seeding == "started":
        raise SettingsError(
            "invalid setting 'seeds': the crawl stopped before all its seeds were queued; "
            "resume with the same seeds (or --seeds-file) and --resume"
        )
    return stored.split("\n") if stored else []


def in_scope(scope: Scope, url: str) -> bool:
    """Whether the crawl may visit ``url`` (any form), by its host and port."""
    try:
        return scope.reject_reason(canonicalize(url), 0) is None
    except InvalidURL:
        return False


def address_guard(
    settings: CrawlSettings, scope: Scope, proxy_check: str | None = None
) -> AddressGuard:
    """The address guard of a crawl: the hosts its user named are the seeds' hosts (those of
    its scope), the allowed domains, the names of ``--resolve`` overrides and, with proxies,
    the proxies' hosts and that of the URL that checks them (``proxy_check``)."""
    named = _proxy_hosts(settings, proxy_check) | {
        host for url in settings.focus_examples if (host := urlsplit(url).hostname)
    }
    return AddressGuard.for_crawl(
        scope.hosts | named if named else scope.hosts,
        settings.allow_domains,
        settings.resolve,
        allow_private=settings.allow_private,
    )


def proxy_pool(settings: CrawlSettings) -> ProxyPool | None:
    """The crawl's proxy pool (None without proxies). Raises SettingsError for a proxies
    file that cannot be read or holds a bad line."""
    if not settings.proxies and settings.proxies_file is None:
        return None
    if settings.proxies_file is not None:
        try:
            read_proxies_file(settings.proxies_file)
        except ProxyError as exc:
            raise SettingsError(f"invalid setting 'proxies_file': {exc}") from None
        except OSError as exc:
            raise SettingsError(
                f"invalid setting 'proxies_file': {exc.strerror}: {settings.proxies_file}"
            ) from None
    return ProxyPool(
        [parse_proxy(url) for url in settings.proxies],
        file=settings.proxies_file,
        max_failures=settings.proxy_max_failures,
        check_interval=settings.proxy_check_interval,
        revalidate=settings.proxy_revalidate,
    )


def proxy_check_url(settings: CrawlSettings, seeds: list[str]) -> str | None:
    """The URL proxies are checked with: ``--proxy-check-url``, else the first seed; None
    without proxies. Raises SettingsError when proxies have none."""
    if not settings.proxies and settings.proxies_file is None:
        return None
    if settings.proxy_check_url is not None:
        try:
            return canonicalize(settings.proxy_check_url)
        except InvalidURL as exc:
            raise SettingsError(f"invalid setting 'proxy_check_url': {exc}") from None
    if not seeds:
        raise SettingsError("invalid setting 'proxy_check_url': no seed to check proxies with")
    return seeds[0]


def _proxy_hosts(settings: CrawlSettings, check_url: str | None) -> frozenset[str]:
    """The proxies' hosts (given directly) and the check URL's: hosts the user named."""
    hosts = {parse_proxy(url).host for url in settings.proxies}
    if check_url is not None:
        hosts.add(urlsplit(check_url).hostname or "")
    hosts.discard("")
    return frozenset(hosts)


def _fetch_config(settings: CrawlSettings, proxy_check: str | None = None) -> FetchConfig:
    return FetchConfig(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        total_timeout=settings.total_timeout,
        max_body_bytes=settings.max_body_bytes,
        concurrency=settings.concurrency,
        resolve=tuple(settings.resolve),
        max_bandwidth=settings.max_bandwidth,
        keep_wire=settings.warc,
        proxy_retries=settings.proxy_retries,
        proxy_check_url=proxy_check,
    )


def _engine_config(settings: CrawlSettings) -> EngineConfig:
    return EngineConfig(
        concurrency=settings.concurrency,
        max_pages=settings.max_pages,
        robots_retry=settings.robots_retry,
        checkpoint_interval=settings.checkpoint_interval,
        retry=RetryPolicy(
            max_retries=settings.max_retries,
            backoff=settings.retry_backoff,
            max_retry_after=settings.max_retry_after,
        ),
    )


def _page_config(settings: CrawlSettings, rules: RuleSet | None = None) -> PageConfig:
    hook = None
    if settings.hook is not None:
        try:
            hook = load_hook(settings.hook)
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'hook': {exc}") from None
    return PageConfig(
        follow_nofollow=settings.follow_nofollow,
        max_redirects=settings.max_redirects,
        hook=hook,
        text=settings.text,
        extractor=settings.extractor,
        max_text_chars=settings.max_text_chars,
        rules=rules,
        follow_duplicates=settings.follow_duplicates,
        near_digests=settings.digests == "near",
    )


def tune_gc() -> None:
    """Fewer, cheaper collections: the long-lived objects built at start-up are frozen out of
    the collector, and young collections run less often (measured: 12-16% less CPU per page
    and no full collections pausing the loop for 0.2 s)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


async def run_crawl(settings: CrawlSettings) -> CrawlStats:
    """Run a whole crawl: signals, progress line, stats.json. Raises SettingsError."""
    seeds = canonical_seeds(settings)
    _page_config(settings)  # a bad --hook fails before anything is written
    rules = load_ruleset(settings)  # and so do bad rule documents
    auth_logins(settings)  # and a missing secret
    check_rendering(settings)  # and --render without Playwright or the browser
    async with _metrics_server(settings) as metrics:  # a port in use fails before the crawl
        prepare_out_dir(settings)
        with logging_to_file(settings.out / LOG_FILE):
            async with build_crawler(settings, seeds, rules, metrics) as crawler:
                tune_gc()
                install_signal_handlers(crawler)
                show = not settings.quiet and sys.stderr.isatty()
                log.info(
                    "crawl of %d seed(s) into %s started", len(seeds), settings.out,
                    extra={
                        "event": "crawl-started", "seeds": len(seeds), "resume": settings.resume,
                    },
                )  # fmt: skip
                async with (
                    status_file(settings.out, crawler),
                    progress_line(crawler.stats, enabled=show),
                ):
                    stats = await crawler.run(seeds)
                stats.write(settings.out / "stats.json")
                log.info(
                    "crawl ended: %d pages, %d errors", stats.pages, stats.errors,
                    extra={"event": "crawl-ended", "pages": stats.pages, "errors": stats.errors},
                )  # fmt: skip
    return stats


@asynccontextmanager
async def _metrics_server(settings: CrawlSettings) -> AsyncIterator[MetricsServer | None]:
    """With ``metrics_port``: ``/metrics`` and ``/healthz`` served while the block runs."""
    if settings.metrics_port is None:
        yield None
        return
    from gossamer.metrics.exporter import LOCAL_JOB, default_worker, serve_metrics

    port, bind, hosts = settings.metrics_port, settings.metrics_bind, settings.metrics_hosts
    async with serve_metrics(bind, port, LOCAL_JOB, default_worker(), hosts) as server:
        yield server


def install_signal_handlers(crawler: Crawler) -> None:
    """SIGINT/SIGTERM stop the crawler gracefully; a second one exits at once. SIGUSR1 prints
    the asyncio tasks (:func:`dump_tasks`)."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received:
            os._exit(128 + signum)
        received.append(signum)
        print(
            "\nstopping: finishing in-flight URLs (again to quit now)",
            file=sys.stderr,
            flush=True,
        )
        crawler.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)


def dump_tasks() -> None:
    """SIGUSR1: print every asyncio task and where it waits, to find a stuck crawl."""
    tasks = asyncio.all_tasks()
    print(f"\n{len(tasks)} asyncio tasks:", file=sys.stderr)
    for task in tasks:
        task.print_stack(limit=8, file=sys.stderr)
    sys.stderr.flush()


def summary(stats: CrawlStats, out: Path) -> str:
    """The end-of-crawl summary printed to stdout."""
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(stats.status_counts.items()))
    items = out / "items.jsonl"
    rules = (
        f"rules: {stats.rule_pages} pages matched, {stats.items} items, "
        f"{stats.items_dropped} dropped, {stats.rule_errors} rule errors\n"
        if items.exists()
        else ""
    )
    return (
        f"crawled {stats.pages} pages in {stats.elapsed:.1f}s "
        f"({stats.pages_per_second:.1f} pages/s), ok {stats.ok}, errors {stats.errors}, "
        f"robots-blocked {stats.robots_blocked}, retries {stats.retries}, "
        f"duplicates skipped {stats.duplicates}, peak RSS {stats.peak_rss_mb} MB\n"
        f"statuses: {statuses}\n{rules}"
        f"output: {out / 'pages.jsonl'}, {f'{items}, ' if rules else ''}{out / 'crawl.db'}, "
        f"{out / 'stats.json'}"
    )

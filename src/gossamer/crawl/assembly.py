"""A crawl put together over its stages and a frontier: the stages started (host slots bound,
proxies checked), a focused crawl's policy made (its example pages fetched), the crawl loop
built, and the figures ``/metrics`` and stats.json read named. Each function takes what it
needs; :class:`~gossamer.crawl.stages.Stages` holds data only."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from gossamer.crawl.additions import NOTHING, Additions
from gossamer.crawl.builders import engine_config, page_config, proxies_down
from gossamer.crawl.fetching import check_proxies, in_scope
from gossamer.crawl.outputs import stored_seeds
from gossamer.crawl.stages import FROM_SETTINGS, Stages, open_stages
from gossamer.digests.base import DigestIndex
from gossamer.digests.local import LocalDigests
from gossamer.engine import CommitHook, Crawler, Outputs, Robots, StatsSource
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.http import Fetcher
from gossamer.fetch.proxies import ProxyPool
from gossamer.frontier.admission import Guards, refusal
from gossamer.frontier.base import Frontier, waiting
from gossamer.frontier.gate import HostGate, SlotSource
from gossamer.frontier.local import LocalFrontier, LocalFrontierConfig
from gossamer.frontier.robots import RobotsCache
from gossamer.page import Focus, PageStage
from gossamer.page.canonical import Checks
from gossamer.robots_fetch import Fetch
from gossamer.settings import CrawlSettings, SettingsError
from gossamer.sinks.base import RecordSink
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.tracking import ParamStripper
from gossamer.urls import Scope, host_key

if TYPE_CHECKING:
    from gossamer.extract.rules import RuleSet
    from gossamer.frontier.revisits import RevisitBook
    from gossamer.metrics.exporter import MetricsServer, Sources
    from gossamer.page.freshness import Freshness


async def start_stages(
    frontier: SlotSource, gate: HostGate | None, proxies: ProxyPool | None
) -> None:
    """Before the crawl's first request: out-of-band requests take ``frontier``'s host
    slots in ``gate`` from now on, and every proxy is checked once (through those slots)."""
    if gate is not None:
        gate.bind(frontier.slots)
    if proxies is not None:
        await proxies.start()


async def focus_policy(
    settings: CrawlSettings,
    frontier: Frontier,
    fetcher: Fetcher,
    gate: HostGate | None,
    robots: RobotsCache,
    shared: tuple[Any, str] | None = None,
    scope: Scope | None = None,
    proxies: ProxyPool | None = None,
) -> Focus | None:
    """A focused crawl's policy (None for a plain crawl, which imports nothing of
    :mod:`gossamer.focus`): the example pages are fetched now by ``fetcher`` (through
    ``gate``, robots.txt and the hosts' delays obeyed, and waited for before the crawl's first
    request), and with the phrase they make the topic. A bad example or an empty topic raises
    SettingsError. ``shared``: a cluster job's Redis client and job name, through which the
    policy shares what it learns with the other workers. An example outside ``scope`` is
    named in a warning. None too when every one of ``proxies`` rejected the crawl's
    credentials (before or while the examples were fetched): no example is at fault, and the
    crawl the caller builds stops at once as a plain one does (its seeds queued, stats.json
    written, then :func:`check_proxies` raises CommandError)."""
    if not settings.focused or (proxies is not None and proxies.refused):
        return None
    from gossamer.focus.config import FocusConfig
    from gossamer.focus.examples import ExampleError, fetch_examples, warn_unrelated
    from gossamer.focus.policy import FocusPolicy
    from gossamer.focus.shared import SharedLearning
    from gossamer.focus.topic import Topic, TopicError

    fetch: Any = fetcher if gate is None else GatedFetch(fetcher, gate)
    scoped = None if scope is None else functools.partial(in_scope, scope)
    try:
        examples = await fetch_examples(
            settings.focus_examples,
            fetch,
            robots if settings.robots else None,
            extractor=settings.extractor,
            in_scope=scoped,
        )
    except ExampleError as exc:
        if proxies is not None and proxies.refused:  # no proxy takes the credentials
            return None
        raise SettingsError(f"invalid setting 'focus_examples': {exc}") from None
    try:
        topic = Topic(settings.focus_phrase or "", [e.text for e in examples])
    except TopicError as exc:
        raise SettingsError(f"invalid setting 'focus_phrase': {exc}") from None
    warn_unrelated(examples, topic, scoped)
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
        near=[link for e in examples for link in e.links],
        shared=None if shared is None else SharedLearning(*shared),
    )


def _canonical_checks(settings: CrawlSettings, stages: Stages) -> Checks:
    """What admission and robots.txt would say of a canonical URL (``--canonical follow``)."""
    stripper = ParamStripper(tuple(settings.strip_params))
    return Checks(
        strip=stripper.strip if stripper else None,
        refusal=functools.partial(refusal, stages.scope),
        allowed=stages.robots.verdict if settings.robots else None,
    )


def assemble_crawler(
    stages: Stages,
    settings: CrawlSettings,
    frontier: Frontier,
    on_commit: CommitHook | None = None,
    focus: Focus | None = None,
    digests: DigestIndex | None = None,
    revisits: RevisitBook | None = None,
    additions: Additions = NOTHING,
) -> Crawler:
    """The crawl loop over ``stages`` and ``frontier``: crawl.db is its journal,
    pages.jsonl, items.jsonl (with rules or handlers), the store (if any) and the sinks of
    ``additions`` its record sinks, in that order; ``focus`` (:func:`focus_policy`) when the
    crawl is focused; the page handlers of ``additions`` a step of its page stage."""
    sinks: list[RecordSink] = [stages.jsonl]
    if stages.items is not None:
        sinks.append(stages.items)
    if stages.store is not None:
        sinks.append(stages.store)
    sinks.extend(additions.sinks)
    config = page_config(settings, stages.rules)
    if additions.handlers:
        config = msgspec.structs.replace(config, handlers=additions.handlers)
    page = PageStage(
        config,
        pdf=stages.pdf,
        rule_pool=stages.rule_pool,
        focus=focus,
        digests=digests,
        in_scope=functools.partial(in_scope, stages.scope),
        freshness=None if revisits is None else _freshness(revisits),
        canonical_checks=_canonical_checks(settings, stages),
        sandbox=stages.sandbox,
    )
    fetch: Fetch = stages.renderer if stages.renderer is not None else stages.fetcher
    sources = stats_sources(stages)
    if revisits is not None:
        from gossamer.crawl.revisiting import ConditionalFetch

        if stages.renderer is None:
            fetch = ConditionalFetch(stages.fetcher, revisits)
        sources["revisits"] = revisits.json_stats
    if stages.sitemaps is not None:
        stages.sitemaps.start(frontier)
    crawler = Crawler(
        engine_config(settings),
        frontier,
        fetch,
        Robots(stages.robots, stages.robots_fetch),
        Outputs(SQLiteSink(stages.db), sinks, stages.warc, on_commit, stages.sitemaps),
        page,
        stats=sources,
        proxies_down=proxies_down(stages.proxies),
    )
    if stages.gate is not None:
        stages.gate.on_free(crawler.wake)  # a slot the gate gives back is leased at once
    if stages.proxies is not None:  # no proxy takes the credentials: stop, the queue kept
        stages.proxies.on_refused(crawler.stop)
    return crawler


def _freshness(revisits: RevisitBook) -> Freshness:
    from gossamer.page.freshness import Freshness  # a crawl that ends never imports it

    return Freshness(revisits)


def stats_sources(stages: Stages) -> dict[str, StatsSource]:
    """The stages whose figures the crawl's stats show, by name."""
    sources: dict[str, StatsSource] = {}
    if stages.proxies is not None:
        sources["proxies"] = stages.proxies.json_stats
    if stages.auth is not None:
        sources["auth"] = stages.auth.stats_counts
    if stages.renderer is not None:
        sources["render"] = stages.renderer.json_stats
    if stages.sitemaps is not None:
        sources["sitemaps"] = stages.sitemaps.json_stats
    if stages.sandbox is not None:
        sources["parse_sandbox"] = stages.sandbox.json_stats
    return sources


def metric_sources(
    stages: Stages, crawler: Crawler, frontier: Frontier, revisits: RevisitBook | None = None
) -> Sources:
    """Where ``/metrics`` reads this crawl's figures (the stages' snapshots)."""
    from gossamer.metrics.exporter import Snapshot, Sources

    extra: dict[str, Snapshot] = {}
    if stages.renderer is not None:
        extra["render"] = stages.renderer.stats
    if stages.sitemaps is not None:
        extra["sitemap"] = stages.sitemaps.stats
    if revisits is not None:
        extra["revisits"] = revisits.metrics

    return Sources(
        crawl=crawler.stats,
        fetch=stages.fetcher.stats,
        waiting_hosts=lambda: waiting(frontier.held_back(None)),
        loop=crawler.loop_state,
        proxies=None if stages.proxies is None else stages.proxies.stats,
        extra=extra,
    )


@asynccontextmanager
async def build_crawler(
    settings: CrawlSettings,
    seeds: list[str],
    rules: RuleSet | None = FROM_SETTINGS,
    metrics: MetricsServer | None = None,
    additions: Additions = NOTHING,
) -> AsyncIterator[Crawler]:
    """Construct the crawler and its stages over the embedded frontier (``metrics`` reads
    their figures), with what ``additions`` adds; close them on exit."""
    # The scope and the address guard need only the seeds' origins: 200,000, not 1,000,000.
    origins = sorted({host_key(seed) + "/" for seed in seeds})
    if not origins and settings.resume:
        origins = stored_seeds(settings.out / "crawl.db")
    first = seeds[0] if seeds else None
    opened = open_stages(settings, origins, rules=rules, first_seed=first, items=additions.items)
    async with opened as stages:
        db = stages.db
        db.set_meta("seeds", "\n".join(origins))
        del origins  # kept by the scope as far as the crawl needs them
        revisits = None
        if settings.recrawl:
            from gossamer.crawl.revisiting import open_revisits

            revisits = open_revisits(settings, db)
            if revisits is not None and stages.sitemaps is not None:
                stages.sitemaps.use_lastmod(revisits.sooner, revisits.vouch)
        frontier = LocalFrontier(
            stages.scope,
            stages.politeness,
            db,
            rules=stages.robots.known if settings.robots else None,
            config=LocalFrontierConfig(
                memory_budget=settings.queue_memory,
                max_active=settings.active_hosts,
                slack=settings.focus_slack,
            ),
            guards=Guards.of(settings),
            revisits=revisits,
        )
        digests = None
        if settings.digests != "off" and settings.text:
            digests = LocalDigests(db, settings.digest_threshold)
        if settings.resume:
            frontier.restore(seeds)
            if revisits is not None:
                revisits.adopt()
            if digests is not None:
                digests.restore()
        await start_stages(frontier, stages.gate, stages.proxies)
        focus = await focus_policy(
            settings,
            frontier,
            stages.fetcher,
            stages.gate,
            stages.robots,
            scope=stages.scope,
            proxies=stages.proxies,
        )
        crawler = assemble_crawler(
            stages,
            settings,
            frontier,
            focus=focus,
            digests=digests,
            revisits=revisits,
            additions=additions,
        )
        if settings.resume:
            crawler.restore_counts()
        if metrics is not None:
            metrics.attach(metric_sources(stages, crawler, frontier, revisits))
        yield crawler
        check_proxies(stages.proxies)  # stopped by proxies that refuse it: an error exit

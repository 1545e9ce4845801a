"""The stages every crawl process has, whatever its frontier: built from the settings by
:func:`open_stages`, each resource entered on one exit stack the moment it is built, and handed
on as :class:`Stages`, a bundle of what was built (data only; what starts or fetches lives in
:mod:`gossamer.crawl.assembly`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from gossamer.crawl.builders import (
    authenticator,
    check_extraction,
    load_ruleset,
    parse_sandbox,
    pdf_pool,
    politeness_policy,
    robots_cache,
    rule_pool,
    sitemap_stage,
)
from gossamer.crawl.fetching import (
    address_guard,
    fetch_config,
    proxy_check_fallbacks,
    proxy_check_url,
    proxy_pool,
    rendering_fetcher,
    start_renderer,
)
from gossamer.crawl.outputs import catch_up, open_outputs, warc_writer
from gossamer.crawl.sitemaps import SitemapStage
from gossamer.crawldb import CrawlDB
from gossamer.engine import RobotsFetch
from gossamer.fetch.auth import Authenticator
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.http import Fetcher
from gossamer.fetch.proxies import ProxyPool
from gossamer.frontier.gate import HostGate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsCache
from gossamer.robots_fetch import NoCookies
from gossamer.settings import CrawlSettings, crawl_scope
from gossamer.sinks.base import RecordSink
from gossamer.sinks.jsonl import ItemJsonlSink, JsonlSink
from gossamer.urls import Scope

if TYPE_CHECKING:
    from gossamer.balance.probe import BandwidthMeter
    from gossamer.extract.pdf import PdfPool
    from gossamer.extract.rules import RuleSet
    from gossamer.extract.rules.pool import RulePool
    from gossamer.fetch.render import RenderingFetcher
    from gossamer.parse.sandbox import Sandbox
    from gossamer.sinks.warc import WarcWriter

FROM_SETTINGS: Any = object()
"""``open_stages`` without rules given: it reads those of the settings."""


class Stages(msgspec.Struct, frozen=True):
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
    """A cluster worker's: fed by the fetcher with every body chunk received (its bandwidth
    figures); None in a crawl of one process, which reports none."""
    warc: WarcWriter | None = None
    """With ``--warc``: where every fetch is archived."""
    pdf: PdfPool | None = None
    """Worker processes for PDF text (started at the first PDF), unless ``--no-text``."""
    sandbox: Sandbox | None = None
    """Worker processes big pages are parsed in, unless ``--parse-sandbox off``."""
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
    pages' subrequests, logins); bound to the frontier's scheduler by
    :func:`~gossamer.crawl.assembly.start_stages`."""
    sitemaps: SitemapStage | None = None
    """With ``--sitemaps on``: the stage reading the sitemaps and feeds robots.txt names and
    ``--sitemap`` gives; started with the crawl loop by
    :func:`~gossamer.crawl.assembly.assemble_crawler`."""


class _Fetching(msgspec.Struct, frozen=True):
    """What :func:`_open_fetching` built."""

    fetcher: Fetcher
    proxies: ProxyPool | None
    meter: BandwidthMeter | None
    auth: Authenticator | None
    politeness: PolitenessPolicy
    gate: HostGate
    warc: WarcWriter | None
    robots_fetch: RobotsFetch
    robots: RobotsCache
    sitemaps: SitemapStage | None


@asynccontextmanager
async def open_stages(
    settings: CrawlSettings,
    seeds: list[str],
    worker: str | None = None,
    *,
    rules: RuleSet | None = FROM_SETTINGS,
    first_seed: str | None = None,
    items: bool = False,
) -> AsyncIterator[Stages]:
    """crawl.db, pages.jsonl (repaired after a crash), fetcher, robots cache, politeness,
    with ``--warc`` the WARC writer (a new file, even when resuming), with ``--store`` the
    shared page store (rows signed by ``worker``, default host-pid) and with rules (``rules``,
    by default read from the settings by :func:`load_ruleset`) or ``items`` (page handlers)
    items.jsonl.
    ``seeds`` (canonical) name the hosts the address guard lets reach private addresses and,
    with the settings, the scope robots.txt redirects must stay in (``Stages.scope``);
    ``first_seed`` (canonical, as given) checks the proxies unless ``--proxy-check-url``
    says otherwise (default: the first of ``seeds``).
    :func:`~gossamer.crawl.assembly.start_stages` starts them."""
    if rules is FROM_SETTINGS:
        rules = load_ruleset(settings)
    if settings.text:
        check_extraction(settings.extractor)
    # Each resource is entered on the stack as soon as it is built: a failure further on (a
    # bad setting, a browser that does not start) closes what was opened, and a close that
    # fails does not skip the others.
    async with AsyncExitStack() as stack:
        with_items = items or rules is not None
        sink, db, jsonl, item_sink = await open_outputs(stack, settings, worker, with_items)
        scope = crawl_scope(settings, seeds)
        check_url = proxy_check_url(settings, [first_seed] if first_seed else seeds)
        fallbacks = proxy_check_fallbacks(settings, seeds, check_url)
        del seeds  # 200,000 seed origins cost 16 MB: the scope holds what the crawl needs
        checks = (check_url, fallbacks)
        built = _open_fetching(stack, settings, scope, checks, db, worker is not None)
        pdf, pool, sandbox = _open_pools(stack, settings, rules is not None)
        renderer = rendering_fetcher(settings, built.fetcher, scope, built.robots, built.gate)
        if renderer is not None:
            stack.push_async_callback(renderer.close)
            await start_renderer(renderer)
        yield Stages(
            db,
            jsonl,
            built.fetcher,
            built.robots_fetch,
            built.robots,
            built.politeness,
            scope,
            await catch_up(sink, db),
            meter=built.meter,
            warc=built.warc,
            pdf=pdf,
            sandbox=sandbox,
            rules=rules,
            rule_pool=pool,
            items=item_sink,
            proxies=built.proxies,
            auth=built.auth,
            renderer=renderer,
            gate=built.gate,
            sitemaps=built.sitemaps,
        )


def _open_fetching(
    stack: AsyncExitStack,
    settings: CrawlSettings,
    scope: Scope,
    checks: tuple[str | None, tuple[str, ...]],
    db: CrawlDB,
    metered: bool,
) -> _Fetching:
    """The fetcher with its proxies, logins, politeness and host gate, the WARC archive and
    the robots.txt cache, each entered on ``stack`` as it is built; ``metered``: with the
    bandwidth meter a cluster worker reports (a crawl of one process spares every body chunk
    its count, and itself the balancer's module)."""
    check_url = checks[0]  # the URLs proxies are checked with (`proxy_check_fallbacks`)
    proxies = proxy_pool(settings)  # holds nothing until started: closed with the fetcher
    meter = None
    if metered:
        from gossamer.balance.probe import BandwidthMeter

        meter = BandwidthMeter()
    auth = authenticator(settings, db, scope)
    politeness = politeness_policy(settings)
    gate = HostGate(politeness)
    fetcher = Fetcher(
        fetch_config(settings, *checks),
        meter=meter,
        guard=address_guard(settings, scope, check_url),
        proxies=proxies,
        auth=auth,
        gate=gate,
    )
    stack.push_async_callback(fetcher.close)
    if proxies is not None:  # closed before the fetcher its checks use
        stack.push_async_callback(proxies.close)
    warc = warc_writer(settings)
    if warc is not None:
        stack.callback(warc.close)
    cookieless = NoCookies(fetcher)
    robots_fetch = RobotsFetch(
        cookieless,
        warc,
        gated=GatedFetch(cookieless, gate, pace_only=True),
        started=gate.started,
        proxied=proxies is not None,
    )
    sitemaps = sitemap_stage(settings, GatedFetch(fetcher, gate, aside=True), db, warc, scope)
    robots = robots_cache(settings, robots_fetch, scope, db, sitemaps)
    if settings.robots:
        fetcher.set_check_rules(robots)
    if sitemaps is not None:
        if settings.robots:
            sitemaps.use_robots(robots.allowed)
        stack.push_async_callback(sitemaps.close)  # before the fetcher and crawl.db close
    return _Fetching(
        fetcher, proxies, meter, auth, politeness, gate, warc, robots_fetch, robots, sitemaps
    )


def _open_pools(
    stack: AsyncExitStack, settings: CrawlSettings, with_rules: bool
) -> tuple[PdfPool | None, RulePool | None, Sandbox | None]:
    """The worker processes for PDF text (unless ``--no-text``), with ``with_rules`` those
    pages are read by the rules in, and those big pages are parsed in (unless
    ``--parse-sandbox off``); each entered on ``stack`` as it is built."""
    pdf = pdf_pool() if settings.text else None
    if pdf is not None:
        stack.push_async_callback(pdf.close)
    pool = rule_pool(settings) if with_rules else None
    if pool is not None:
        stack.push_async_callback(pool.close)
    sandbox = parse_sandbox(settings)
    if sandbox is not None:
        stack.push_async_callback(sandbox.close)
    return pdf, pool, sandbox

"""The fetch stage's builders: the fetch settings, the address guard, the proxy pool and the
URL that checks it, and the rendering middleware (headless Chromium) with its browser."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gossamer.errors import CommandError
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.guard import AddressGuard
from gossamer.fetch.http import FetchConfig, Fetcher, FetchResult
from gossamer.fetch.proxies import ProxyPool, read_proxies_file
from gossamer.frontier.gate import HostGate
from gossamer.frontier.robots import RobotsCache
from gossamer.proxyurl import ProxyError, parse_proxy
from gossamer.redact import redact_url
from gossamer.settings import CrawlSettings, SettingsError
from gossamer.settings.regex import compile_url_regex
from gossamer.urls import InvalidURL, Scope, canonicalize, host_key

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gossamer.fetch.render import RenderingFetcher


def fetch_config(
    settings: CrawlSettings, proxy_check: str | None = None, fallbacks: tuple[str, ...] = ()
) -> FetchConfig:
    """The fetcher's settings; ``proxy_check`` is the URL proxies are checked with, and
    ``fallbacks`` those tried after it (`proxy_check_fallbacks`)."""
    return FetchConfig(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        total_timeout=settings.total_timeout,
        http_client=settings.http_client,
        max_body_bytes=settings.max_body_bytes,
        concurrency=settings.concurrency,
        resolve=tuple(settings.resolve),
        max_bandwidth=settings.max_bandwidth,
        keep_wire=settings.warc,
        proxy_retries=settings.proxy_retries,
        proxy_check_url=proxy_check,
        proxy_check_fallbacks=fallbacks,
    )


def in_scope(scope: Scope, url: str) -> bool:
    """Whether the crawl may visit ``url`` (any form), by its host and port."""
    return scope_refusal(scope, url) is None


def scope_refusal(scope: Scope, url: str) -> str | None:
    """Why the crawl may not visit ``url`` (any form): ``invalid-url``, ``offsite``,
    ``offsite-port`` ... as admission says of a link; None: it may."""
    try:
        return scope.reject_reason(canonicalize(url), 0)
    except InvalidURL:
        return "invalid-url"


def check_given_sitemaps(urls: Sequence[str], scope: Scope) -> None:
    """Raise SettingsError for a ``--sitemap`` URL the crawl could not fetch (out of its
    scope, or invalid): the user asked for it, so a clear error before the crawl starts,
    naming the way in, not a file never read. A cluster worker given a job submitted before
    this check skips such a file with a warning (`gossamer.crawl.sitemapfiles.FileScope`)."""
    for url in urls:
        if (reason := scope_refusal(scope, url)) is None:
            continue
        why = f"invalid setting 'sitemap': {redact_url(url)} is {reason}"
        if reason in ("offsite", "offsite-port"):
            why += ", out of the crawl's scope (give a seed of its host, or --allow-domain"
            why += " / --allow-port)"
        raise SettingsError(why)


def address_guard(
    settings: CrawlSettings, scope: Scope, proxy_check: str | None = None
) -> AddressGuard:
    """The address guard of a crawl: the hosts its user named are the seeds' hosts (those of
    its scope), the allowed domains, the names of ``--resolve`` overrides, the hosts of focus
    examples and ``--sitemap`` URLs and, with proxies,
    the proxies' hosts and that of the URL that checks them (``proxy_check``)."""
    named = _proxy_hosts(settings, proxy_check) | {
        host
        for url in (*settings.focus_examples, *settings.sitemap)
        if (host := urlsplit(url).hostname)
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


def check_proxies(proxies: ProxyPool | None) -> None:
    """Raise CommandError (exit status 1) when every proxy rejected the crawl's credentials
    (`ProxyPool.refused`): the crawl stopped for it, it is not done."""
    if proxies is not None and proxies.refused:
        raise CommandError(proxies.refusal())


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


_CHECK_HOSTS = 3
"""Seed hosts proxies are checked with, at most, when ``--proxy-check-url`` is not given."""
_CHECK_SEEDS = 10_000
"""Seeds looked through for them."""


def proxy_check_fallbacks(
    settings: CrawlSettings, seeds: list[str], check_url: str | None
) -> tuple[str, ...]:
    """The URLs a proxy check tries after ``check_url`` (the first seed) gave no answer
    through a proxy (it may hang for every proxy): a seed of up to two more hosts; none with
    ``--proxy-check-url`` (the user chose the check) or without proxies."""
    if settings.proxy_check_url is not None or check_url is None:
        return ()
    hosts = {host_key(check_url)}
    found: list[str] = []
    for seed in seeds[:_CHECK_SEEDS]:
        if len(hosts) >= _CHECK_HOSTS:
            break
        if (host := host_key(seed)) not in hosts:
            hosts.add(host)
            found.append(seed)
    return tuple(found)


def _proxy_hosts(settings: CrawlSettings, check_url: str | None) -> frozenset[str]:
    """The proxies' hosts (given directly) and the check URL's: hosts the user named."""
    hosts = {parse_proxy(url).host for url in settings.proxies}
    if check_url is not None:
        hosts.add(urlsplit(check_url).hostname or "")
    hosts.discard("")
    return frozenset(hosts)


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
    )

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
    patterns = tuple(compile_url_regex(p) for p in settings.render_url)
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


async def start_renderer(renderer: RenderingFetcher) -> None:
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

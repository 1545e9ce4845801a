"""One function per resource a crawl builds from its settings, outside the fetch stage and its
outputs: logins, rules, robots.txt, politeness, the worker pools, the engine's and the page
stage's configurations."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from gossamer.crawl.fetching import in_scope, scope_refusal
from gossamer.crawl.sitemaps import SitemapStage
from gossamer.crawldb import CrawlDB
from gossamer.engine import EngineConfig, RobotsFetch
from gossamer.fetch.auth import Authenticator, Login, Secret, UserLogin
from gossamer.fetch.cookies import CookieJar, CookieRow, read_cookies_txt
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.proxies import ProxyPool
from gossamer.fetch.tokencache import check_cache
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsCache, RobotsPolicy
from gossamer.hooks import load_hook
from gossamer.outcomes import RetryPolicy
from gossamer.page import PageConfig
from gossamer.settings import AuthSettings, CrawlSettings, SettingsError, read_secret
from gossamer.settings.useragent import borrowed_name
from gossamer.sinks.base import Archive
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.urls import Scope

if TYPE_CHECKING:
    from gossamer.extract.pdf import PdfPool
    from gossamer.extract.rules import RuleSet
    from gossamer.extract.rules.pool import RulePool
    from gossamer.frontier.revisits import BoundsOf
    from gossamer.parse.sandbox import Sandbox

log = logging.getLogger(__name__)


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
    scheme, domain, port = auth.origin()

    def secret(name: str) -> Secret | None:
        if getattr(auth, f"{name}_env") is None and getattr(auth, f"{name}_file") is None:
            return None
        return Secret(read_secret(auth, index, name, env))

    cookies: tuple[CookieRow, ...] = ()
    if auth.cookies_file is not None:
        try:
            cookies = read_cookies_txt(auth.cookies_file, domain)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise SettingsError(f"invalid setting 'auth.{index}.cookies_file': {why}") from None
    user_login = None
    if auth.login_hook is not None:
        try:
            user_login = cast(UserLogin, load_hook(auth.login_hook))
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'auth.{index}.login_hook': {exc}") from None
    login = Login(
        domain=domain,
        scheme=scheme,
        port=port,
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
    if login.kind == "oauth2":
        try:
            check_cache(login)
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'auth.{index}.token_cache': {exc}") from None
    return login


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


def robots_cache(
    settings: CrawlSettings,
    fetch: RobotsFetch,
    scope: Scope,
    db: CrawlDB,
    sitemaps: SitemapStage | None = None,
) -> RobotsCache:
    """The crawl's robots.txt rules, fetched through ``fetch``; ``sitemaps`` reads the
    sitemaps each one names."""
    if (borrowed := borrowed_name(settings.user_agent, settings.robots_token)) is not None:
        log.warning(
            "the crawl goes by %s in robots.txt, X-Robots-Tag and robots meta tags: the rules "
            "sites give that crawler apply to it (--robots-token names it otherwise)",
            borrowed,
            extra={"event": "robots-token-borrowed", "token": borrowed},
        )
    return RobotsCache(
        fetch=fetch,
        token=settings.robots_name,
        retry_interval=settings.robots_retry,
        may_follow=functools.partial(in_scope, scope),
        on_rules=functools.partial(_keep_sitemaps, SQLiteSink(db), sitemaps),
        # More than the hosts a frontier schedules at once (the embedded one's working set,
        # a cluster worker's claimed URLs), so their rules are never evicted before use.
        max_hosts=max(100_000, 2 * settings.queue_memory, 2 * settings.active_hosts),
    )


def _keep_sitemaps(
    journal: SQLiteSink, sitemaps: SitemapStage | None, origin: str, policy: RobotsPolicy
) -> None:
    """Stage the ``Sitemap:`` lines of a robots.txt in crawl.db, whoever asked for it (a
    robots lease, a proxy check, a focus example, a rendered page's subrequest), and have
    ``sitemaps`` read them."""
    if policy.sitemaps:
        journal.stage_sitemaps(origin, policy.sitemaps)
        if sitemaps is not None:
            sitemaps.learned(origin, policy)


def sitemap_stage(
    settings: CrawlSettings,
    fetch: GatedFetch,
    db: CrawlDB,
    archive: Archive | None,
    scope: Scope,
) -> SitemapStage | None:
    """With ``--sitemaps on``: the stage that reads sitemaps and feeds through ``fetch``
    (the host gate's), each answer archived in ``archive``, those of the robots.txt of hosts
    in ``scope``; ``--sitemap`` URLs waiting, and with ``--resume`` those a previous run had
    not finished. A continuous crawl reads each again after its URL's initial revisit
    interval."""
    if not settings.sitemaps:
        return None
    reread = None
    if settings.recrawl:
        from gossamer.crawl.revisiting import revisit_bounds

        reread = functools.partial(_first_interval, revisit_bounds(settings))
    refusal = functools.partial(scope_refusal, scope)
    stage = SitemapStage(fetch, db, archive=archive, refusal=refusal, reread=reread)
    if settings.resume:
        stage.restore()
    stage.given(settings.sitemap)
    return stage


def _first_interval(bounds: BoundsOf, url: str) -> float:
    return bounds(url, None).initial


def politeness_policy(settings: CrawlSettings) -> PolitenessPolicy:
    """The rules every host slot follows. Unless set, a registrable domain's hosts share a
    quarter of the crawl's concurrency (at least one host's): a page naming hundreds of hosts
    of one domain that never answer leaves three quarters to the other sites, and a crawl whose
    sites are each a host or a few (every benchmark web) never meets the cap."""
    per_domain = settings.per_domain or max(settings.per_host, settings.concurrency // 4)
    return PolitenessPolicy(
        per_host=settings.per_host,
        per_domain=per_domain,
        delay=settings.delay,
        slow_latency=settings.adaptive_latency,
        max_delay=settings.max_host_delay,
        max_pause=settings.max_retry_after,
        max_crawl_delay=settings.max_crawl_delay,
    )


def proxies_down(proxies: ProxyPool | None) -> Callable[[], bool] | None:
    """Whether no proxy is live (None without proxies)."""
    return None if proxies is None else lambda: proxies.waiting


def pdf_pool() -> PdfPool:
    """The worker processes PDF text is read in (started at the first PDF)."""
    from gossamer.extract.pdf import PdfPool  # a --no-text crawl never loads the extractors

    return PdfPool(workers=2)


def parse_sandbox(settings: CrawlSettings) -> Sandbox | None:
    """The worker processes big pages are parsed in (started at the first such page), unless
    ``--parse-sandbox off`` or where they cannot be bounded (not Linux); their main text
    extracted there when the crawl keeps it, or judges it (a focus)."""
    from gossamer.parse import sandbox

    if settings.parse_sandbox == "off" or not sandbox.available():
        return None
    from gossamer.page.sandboxed import budget_factor, worker_args

    extractor = settings.extractor if settings.text or settings.focused else None
    return sandbox.Sandbox(
        "gossamer.page.sandboxed",
        worker_args(extractor),
        workers=1,
        budget_factor=budget_factor(extractor),
    )


def rule_pool(settings: CrawlSettings) -> RulePool:
    """The worker processes pages are read by the rules in, in bounded time."""
    from gossamer.extract.rules.pool import RulePool  # a crawl without rules never loads it

    return RulePool(workers=2, timeout=settings.rule_timeout)


def check_extraction(extractor: str) -> None:
    """Find the language model and load the extractor's library now: one missing fails the
    crawl at its start, not every page with an internal error. The model is found, not loaded:
    the crawler loads it at the first text it detects the language of (most pages state
    theirs, and the big ones are read in the parse sandbox's workers)."""
    from gossamer.extract import extract
    from gossamer.extract.lang import model_path

    try:
        model_path()
    except ImportError as exc:
        raise SettingsError(f"{exc}; reinstall gossamer, or crawl with --no-text") from None
    try:
        extract("<p>x</p>", "http://gossamer.invalid/", extractor)
    except ImportError as exc:
        raise SettingsError(
            f"invalid setting 'extractor': {extractor} needs the {exc.name or extractor} "
            "package, which is not installed (see benchmarks/requirements-extract.txt)"
        ) from None


def engine_config(settings: CrawlSettings) -> EngineConfig:
    """The crawl loop's settings."""
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


def page_config(settings: CrawlSettings, rules: RuleSet | None = None) -> PageConfig:
    """The page stage's settings; a ``--hook`` that does not load raises SettingsError."""
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
        robots_token=settings.robots_name,
        ignore_noindex=settings.ignore_noindex,
        archive_noarchive=settings.archive_noarchive,
        canonical=settings.canonical,
    )

"""The crawl's settings models and their checks: :class:`CrawlSettings` (what any crawl can be
told) and :class:`JobSettings` (with what a cluster job adds), the types of their fields and
what their checks (``_check``, run by ``__post_init__``) look at. The errors and the base
model are in ``base``, a login's settings in ``auth``, the cluster's in ``cluster``."""

import re
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta, field
from msgspec.structs import force_setattr

from gossamer import __version__
from gossamer.addresses import ip_literal
from gossamer.proxyurl import ProxyError, parse_proxy
from gossamer.settings.auth import AuthSettings
from gossamer.settings.base import FieldError, SettingsModel
from gossamer.settings.cluster import (
    ClusterAllocator,
    ClusterClaimTimeout,
    ClusterHeartbeat,
    ClusterPartitionBy,
    ClusterPartitions,
    ShippedRules,
)
from gossamer.settings.conninfo import store_url
from gossamer.settings.regex import compile_url_regex
from gossamer.settings.resolve import host_name, parse_resolve_item
from gossamer.settings.revisit import (
    DEFAULT_INITIAL,
    DEFAULT_MAX,
    DEFAULT_MIN,
    RevisitRule,
    Seconds,
    check_intervals,
    rule_intervals,
)
from gossamer.settings.useragent import MAX_TOKEN_CHARS, product_token
from gossamer.tracking import TRACKING_PARAMS
from gossamer.urls import InvalidURL, canonicalize

DEFAULT_SLACK = 0.5
"""How much lower a URL's priority may be than the best queued URL's and still be leased
while the best one's host is not due (see :mod:`gossamer.frontier.bestfirst`; the figures
behind it: ``benchmarks/bench_bestfirst.py``)."""

RenderBlock = Literal["image", "font", "media", "stylesheet"]
"""Kinds of subrequests ``render_block`` may name."""
_BIND = re.compile(r"[A-Za-z0-9.:_-]{1,253}")
_METRICS_HOST = re.compile(r"[A-Za-z0-9_-]([A-Za-z0-9._-]{0,252})")
"""A listening address: an IPv4 or IPv6 address or a host name (the bind reports the rest)."""


class CrawlSettings(SettingsModel, frozen=True, kw_only=True):
    """Everything a crawl can be told. Every field is documented; defaults live here only."""

    seeds: Annotated[list[str], Meta(description="Start URLs.")] = field(default_factory=list)
    seeds_file: Annotated[Path, Meta(description="File with one seed URL per line.")] | None = None
    out: Annotated[Path, Meta(description="Output directory.")] = Path("crawl-out")
    allow_domains: Annotated[
        list[str],
        Meta(description="Domains allowed with all their subdomains, besides the seeds' hosts."),
    ] = field(default_factory=list)
    allow_ports: Annotated[
        list[Annotated[int, Meta(ge=1, le=65_535)]],
        Meta(description="Ports allowed besides the seeds' ports and the defaults (80, 443)."),
    ] = field(default_factory=list)
    max_pages: Annotated[int, Meta(ge=1, description="Stop after this many records.")] | None = None
    max_depth: (
        Annotated[
            int,
            Meta(ge=0, description="Links deeper than this are skipped (a guard against traps)."),
        ]
        | None
    ) = 25
    concurrency: Annotated[
        int, Meta(ge=1, le=100_000, description="Requests in flight, in all.")
    ] = 64
    per_host: Annotated[int, Meta(ge=1, le=1000, description="Requests in flight per host.")] = 2
    per_domain: (
        Annotated[
            int,
            Meta(
                ge=1,
                le=100_000,
                description=(
                    "Requests in flight over all the hosts of one registrable domain (eTLD+1 "
                    "by the Public Suffix List; an IP address is its own); unset: a quarter "
                    "of concurrency, at least per_host."
                ),
            ),
        ]
        | None
    ) = None
    delay: Annotated[
        float,
        Meta(ge=0, le=3600, description="Seconds between request starts on one host (minimum)."),
    ] = 0.0
    user_agent: Annotated[str, Meta(min_length=1, description="User-Agent.")] = (
        f"gossamer/{__version__}"
    )
    robots_token: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=MAX_TOKEN_CHARS,
                description="robots.txt product token: the name robots.txt groups, X-Robots-Tag "
                "and robots meta tags address (default: --user-agent's own product, AcmeBot "
                "for 'AcmeBot/2.0 (+https://acme.example/bot)'; gossamer if it names none).",
            ),
        ]
        | None
    ) = None
    robots: Annotated[bool, Meta(description="Obey robots.txt (disable with --no-robots).")] = True
    robots_retry: Annotated[
        float, Meta(gt=0, description="Seconds before retrying an unreachable robots.txt.")
    ] = 30.0
    # Sitemaps and feeds (gossamer.crawl.sitemaps).
    sitemaps: Annotated[
        bool,
        Meta(
            description=(
                "Read the sitemaps and feeds robots.txt names and --sitemap gives, and queue "
                "their URLs (--sitemaps on|off)."
            )
        ),
    ] = True
    sitemap: Annotated[
        list[str],
        Meta(description="A sitemap or feed URL to read at the start (--sitemap URL, repeatable)."),
    ] = field(default_factory=list)
    resolve: Annotated[
        list[str], Meta(description="HOST=IP overrides (wildcards like *.test allowed).")
    ] = field(default_factory=list)
    allow_private: Annotated[
        bool,
        Meta(
            description=(
                "Let every host reach loopback and private addresses (by default only "
                "the seeds' hosts, --allow-domain domains and --resolve names may)."
            )
        ),
    ] = False
    resume: Annotated[bool, Meta(description="Continue the crawl stored in --out.")] = False
    overwrite: Annotated[bool, Meta(description="Discard a previous crawl stored in --out.")] = (
        False
    )
    quiet: Annotated[bool, Meta(description="No progress line or summary.")] = False
    follow_nofollow: Annotated[bool, Meta(description="Follow rel=nofollow links too.")] = False
    ignore_noindex: Annotated[
        bool,
        Meta(
            description=(
                "Store the content of pages that ask not to be indexed (noindex in "
                "X-Robots-Tag or a robots meta tag) too: the user answers for it."
            )
        ),
    ] = False
    archive_noarchive: Annotated[
        bool,
        Meta(
            description=(
                "Keep the payload of pages that ask not to be archived (noarchive in "
                "X-Robots-Tag or a robots meta tag) in the WARC too: the user answers for it."
            )
        ),
    ] = False
    canonical: Annotated[
        Literal["record", "follow"],
        Meta(
            description=(
                "Canonical links (Link header, <link rel=canonical>): record them, or follow "
                "them too: queue the canonical URL, store no content for the page naming it."
            )
        ),
    ] = "record"
    max_redirects: Annotated[
        int, Meta(ge=0, le=100, description="Redirect hops per URL chain.")
    ] = 10
    max_retries: Annotated[
        int,
        Meta(ge=0, le=100, description="Retries of a failing URL (a 2xx body cut short included)."),
    ] = 3
    retry_backoff: Annotated[
        float,
        Meta(gt=0, description="First retry delay in seconds; doubles per attempt, jittered."),
    ] = 1.0
    max_retry_after: Annotated[
        float, Meta(gt=0, description="Longest Retry-After honoured; longer ones give up the URL.")
    ] = 600.0
    connect_timeout: Annotated[float, Meta(gt=0, description="TCP connect timeout, seconds.")] = (
        10.0
    )
    read_timeout: Annotated[float, Meta(gt=0, description="Longest wait between body bytes.")] = (
        30.0
    )
    total_timeout: Annotated[float, Meta(gt=0, description="Longest a request may take.")] = 60.0
    http_client: Annotated[
        Literal["lean", "aiohttp"],
        Meta(
            description=(
                "HTTP client of direct requests: lean (gossamer's own HTTP/1.1 client, "
                "pooled keep-alive) or aiohttp (every request; proxies and logins always use it)."
            )
        ),
    ] = "lean"
    max_body_bytes: Annotated[
        int, Meta(ge=1024, description="Bodies past this are truncated and flagged.")
    ] = 10 * 1024 * 1024
    max_url_length: Annotated[int, Meta(ge=64, description="Longer URLs are skipped (trap).")] = (
        2048
    )
    max_repeated_segments: Annotated[
        int, Meta(ge=1, description="Paths repeating one segment more often are skipped (trap).")
    ] = 3
    strip_params: Annotated[
        list[str],
        Meta(
            description=(
                "Tracking and session parameters removed from URLs (query and ;name= path "
                "parameters, any case; a trailing * is a prefix), comma-separated; empty: "
                "keep every parameter."
            )
        ),
    ] = field(default_factory=lambda: list(TRACKING_PARAMS))
    trap_guards: Annotated[
        bool,
        Meta(
            description=(
                "Turn away URLs of crawler traps per host: calendars, faceted navigation, "
                "path loops, session ids, hashes breeding hashes (see "
                "gossamer.frontier.traps)."
            )
        ),
    ] = True
    trap_template_budget: Annotated[
        int, Meta(ge=1, description="URLs per host of one URL template (digits, dates folded).")
    ] = 100_000
    trap_query_combos: Annotated[
        int, Meta(ge=1, description="Query parameter name combinations per path (facets).")
    ] = 8
    trap_date_steps: Annotated[
        int,
        Meta(
            ge=0,
            description=(
                "Pages of a dated kind a URL may descend from in a row (a calendar's next "
                "links); without its page, links it may lie deeper than its template's first."
            ),
        ),
    ] = 2
    trap_token_steps: Annotated[
        int,
        Meta(
            ge=0,
            description=(
                "Pages of a kind named by random tokens (hashes, ids) a URL may descend from "
                "in a row."
            ),
        ),
    ] = 1
    trap_max_ids: Annotated[
        int, Meta(ge=0, description="Id segments (tokens, long numbers) one URL path may hold.")
    ] = 2
    max_pages_per_host: (
        Annotated[
            int,
            Meta(
                ge=1,
                description=(
                    "Stop a host at this many recorded pages; its URLs left are recorded as "
                    "'budget' once, never fetched."
                ),
            ),
        ]
        | None
    ) = None
    host_page_budgets: Annotated[
        dict[str, Annotated[int, Meta(ge=1)]],
        Meta(
            description=(
                "Page budgets by host pattern (a glob on the host name, the first match "
                "wins over --max-pages-per-host; a pattern with a wildcard is one budget "
                "shared by all its hosts): a [host_page_budgets] table, or PATTERN=N pairs "
                "comma-separated."
            )
        ),
    ] = field(default_factory=dict)
    adaptive_latency: Annotated[
        float, Meta(gt=0, description="Mean latency (s) above which a host is slowed down.")
    ] = 2.0
    max_host_delay: Annotated[
        float, Meta(gt=0, description="Cap of the adaptive per-host delay, seconds.")
    ] = 60.0
    max_crawl_delay: Annotated[
        float,
        Meta(
            gt=0,
            description=(
                "Cap of a robots.txt Crawl-delay, seconds; a host asking for more is "
                "fetched at the cap."
            ),
        ),
    ] = 60.0
    queue_memory: Annotated[
        int, Meta(ge=100, description="Queued URLs held in memory; the rest wait in crawl.db.")
    ] = 100_000
    active_hosts: Annotated[
        int,
        Meta(
            ge=1,
            le=10_000_000,
            description=(
                "Hosts scheduled at once at most (the embedded frontier's working set; a "
                "cluster worker schedules every host it owns); the others wait in line, and "
                "a registrable domain's hosts past its share of the set (4 x per_domain, at "
                "most half the set unless per_domain is more) wait for one of theirs to leave."
            ),
        ),
    ] = 50_000
    focus_slack: Annotated[
        float,
        Meta(
            ge=0,
            le=1e9,
            description=(
                "How much lower a URL's priority may be than the best queued one's and still be "
                "fetched while the best one's host waits (its Crawl-delay or delay): a share of "
                "the best priority when that is 0.5 or more (0.5: at least half of it), a "
                "difference below; 0 fetches nothing worse meanwhile, a large value never waits. "
                "Priorities are 0..1 in a focused crawl; the default's figures: "
                "benchmarks/bench_bestfirst.py."
            ),
        ),
    ] = DEFAULT_SLACK
    checkpoint_interval: Annotated[
        float, Meta(gt=0, description="Seconds between durable checkpoints of crawl.db.")
    ] = 0.5
    max_bandwidth: (
        Annotated[
            int,
            Meta(ge=1024, description="Most bytes per second this process downloads (all hosts)."),
        ]
        | None
    ) = None
    text: Annotated[
        bool,
        Meta(
            description=(
                "Keep the main text and metadata of HTML, plain-text and PDF pages in "
                "their records (disable with --no-text)."
            )
        ),
    ] = True
    extractor: Annotated[
        Literal["tree", "density", "trafilatura", "readability", "resiliparse"],
        Meta(
            description=(
                "Main-text extractor: tree (gossamer's own, fast and accurate), density "
                "(the text-density model), or trafilatura, readability, resiliparse when those "
                "libraries are installed."
            )
        ),
    ] = "tree"
    max_text_chars: Annotated[
        int, Meta(ge=0, description="Longest main text kept in a record (cut: flag text-cut).")
    ] = 1_000_000
    parse_sandbox: Annotated[
        Literal["on", "off"],
        Meta(
            description=(
                "Parse pages of more than 64 KiB or 4,096 tags (a focused crawl: 16,384 tags "
                "or 1 MiB) in worker processes under a CPU budget and a memory limit (Linux), "
                "instead of guarding their markup in-process; off: every page guarded "
                "in-process."
            )
        ),
    ] = "on"
    digests: Annotated[
        Literal["exact", "near", "off"],
        Meta(
            description=(
                "Find pages whose main text an earlier page had and name that page in "
                "duplicate_of: near copies too (a SimHash, 0.3-1 ms a long page), exact copies "
                "only (a hash of the text, next to free), or off. Needs text extraction; a cluster "
                "job shares them through Redis."
            )
        ),
    ] = "near"
    digest_threshold: Annotated[
        int,
        Meta(
            ge=0,
            le=7,
            description=(
                "With --digests near: bits two main texts' SimHashes may differ in and "
                "still be near duplicates (see benchmarks/bench_digests.py)."
            ),
        ),
    ] = 3
    follow_duplicates: Annotated[
        bool, Meta(description="Follow the links of pages found to be duplicates too.")
    ] = False
    hook: (
        Annotated[
            str,
            Meta(
                description=(
                    "Python function called on every fetched page, as module:function (see "
                    "gossamer.hooks): it may add fields to the record and choose the links to "
                    "follow."
                )
            ),
        ]
        | None
    ) = None
    rule_functions: Annotated[
        dict[str, str],
        Meta(
            description=(
                "Python functions rule documents may call by name ({call = NAME} in a field's "
                "process list), as NAME=module:function pairs (a [rule_functions] table, or "
                "comma-separated on the command line); a rule document itself never holds code."
            )
        ),
    ] = field(default_factory=dict)
    rules: Annotated[
        list[Path],
        Meta(
            description=(
                "Rule documents (files, or directories of *.toml and *.json; see docs/rules.md) "
                "read on every fetched HTML page: their items go to OUT/items.jsonl, crawl.db and "
                "the store, and their link rules choose the links followed."
            )
        ),
    ] = field(default_factory=list)
    rule_timeout: Annotated[
        float,
        Meta(
            gt=0,
            le=3600,
            description=(
                "Seconds a page's rule may take (in a worker process, killed past it): a page "
                "over it gets the rule's error and no items."
            ),
        ),
    ] = 5.0
    shipped_rules: (
        Annotated[
            ShippedRules,
            Meta(
                description=(
                    "The rule documents' texts and digest as a cluster job stores them "
                    "(cluster submit reads them from rules); a worker uses these, not files."
                )
            ),
        ]
        | None
    ) = None
    store: (
        Annotated[
            str,
            Meta(
                description=(
                    "Also write page records to this database: postgres://user@host/db, or "
                    "libpq's key=value connection string (host=h user=u dbname=db)."
                )
            ),
        ]
        | None
    ) = None
    warc: Annotated[
        bool,
        Meta(
            description=(
                "Write every request and response to gzip-compressed WARC files in "
                "OUT/warc/; records name where their response lies."
            )
        ),
    ] = False
    warc_max_bytes: Annotated[
        int, Meta(ge=1024, description="Start a new WARC file once one reaches this size.")
    ] = 1 << 30
    wacz: Annotated[
        bool,
        Meta(
            description=(
                "Implies --warc; when the crawl ends (a --resume run's too), package OUT/warc/ "
                "as OUT/crawl.wacz, a WACZ file replay tools open (docs/wacz.md)."
            )
        ),
    ] = False
    proxies: Annotated[
        list[str],
        Meta(
            description=(
                "Proxies requests go through (http://, https:// or socks5:// URLs, with "
                "user:password@ if needed; --proxy, repeatable): the fastest live ones first, each "
                "domain's requests spread over them."
            )
        ),
    ] = field(default_factory=list)
    proxies_file: (
        Annotated[
            Path,
            Meta(
                description=(
                    "File with one proxy URL per line (# comments), read again whenever it "
                    "changes; its proxies join --proxy ones."
                )
            ),
        ]
        | None
    ) = None
    proxy_check_url: (
        Annotated[
            str,
            Meta(
                description=(
                    "URL asked for through each proxy to check it (default: the first seed, "
                    "as given); a proxy that relays the site's answer, whatever its status, "
                    "passes."
                )
            ),
        ]
        | None
    ) = None
    proxy_check_interval: Annotated[
        float,
        Meta(
            gt=0,
            le=86_400,
            description="Seconds after a live proxy's last check or relayed answer to check it.",
        ),
    ] = 300.0
    proxy_revalidate: Annotated[
        float, Meta(gt=0, le=86_400, description="Seconds before a dead proxy is checked again.")
    ] = 60.0
    proxy_max_failures: Annotated[
        int, Meta(ge=1, le=1000, description="Failures in a row after which a live proxy is dead.")
    ] = 3
    proxy_retries: Annotated[
        int,
        Meta(
            ge=0,
            le=100,
            description=(
                "Further proxies a request tries after its proxy failed (a proxy's "
                "failure does not count against the site)."
            ),
        ),
    ] = 2
    focus_phrase: (
        Annotated[
            str,
            Meta(
                max_length=2000,
                description=(
                    "Focus the crawl on this topic (a phrase; commas separate its facets): "
                    "pages get a relevance, links a priority (see README, Focused crawling)."
                ),
            ),
        ]
        | None
    ) = None
    focus_examples: Annotated[
        list[str],
        Meta(
            description=(
                "Example pages of the topic (--focus-example URL, repeatable), fetched "
                "before the crawl; with the phrase they define the topic."
            )
        ),
    ] = field(default_factory=list)
    focus_threshold: Annotated[
        float, Meta(gt=0, lt=1, description="Relevance from which a page counts as on-topic.")
    ] = 0.5
    focus_mode: Annotated[
        Literal["soft", "hard"],
        Meta(
            description=(
                "soft: relevance only orders the queue; hard: the links of irrelevant "
                "pages are dropped (past --focus-tolerance irrelevant pages in a row)."
            )
        ),
    ] = "soft"
    focus_tolerance: Annotated[
        int,
        Meta(
            ge=0,
            le=10,
            description="Hard mode: irrelevant pages in a row whose links are still followed.",
        ),
    ] = 1
    metrics_port: (
        Annotated[
            int,
            Meta(
                ge=1,
                le=65_535,
                description="Serve Prometheus /metrics and /healthz on this port (see README, "
                "Metrics).",
            ),
        ]
        | None
    ) = None
    metrics_bind: Annotated[
        str,
        Meta(
            description="Address the metrics port listens on (127.0.0.1; 0.0.0.0 in a container)."
        ),
    ] = "127.0.0.1"
    metrics_hosts: Annotated[
        list[str],
        Meta(
            description="Host names the metrics port answers to besides addresses, localhost "
            "and this machine's name, comma-separated (a Kubernetes Service's, e.g. "
            "gossamer-metrics.gossamer.svc); * answers any (see gossamer.metrics.hostcheck)."
        ),
    ] = field(default_factory=list)
    render: Annotated[
        Literal["never", "auto", "always"],
        Meta(
            description=(
                "Render pages in headless Chromium so links and text built by JavaScript are "
                "found: never, auto (pages that ship scripts and look empty without them, learnt "
                "per host) or always (see gossamer.fetch.render)."
            )
        ),
    ] = "never"
    render_url: Annotated[
        list[str],
        Meta(
            description=(
                "Always render URLs matching this regular expression (RE2 syntax, linear "
                "in the URL; --render-url, repeatable), whatever --render says."
            )
        ),
    ] = field(default_factory=list)
    render_browser: Annotated[
        Path, Meta(description="The Chromium (headless shell) rendering runs; never downloaded.")
    ] = Path("/usr/bin/chromium-headless-shell")
    render_concurrency: (
        Annotated[
            int,
            Meta(
                ge=1,
                le=64,
                description="Pages rendered at once (default: from the cores and the memory free).",
            ),
        ]
        | None
    ) = None
    render_timeout: Annotated[
        float, Meta(gt=0, le=600, description="Hard deadline of one page's rendering, seconds.")
    ] = 15.0
    render_load_timeout: Annotated[
        float,
        Meta(gt=0, le=600, description="Longest wait for a rendered page's load event, seconds."),
    ] = 5.0
    render_settle: Annotated[
        float,
        Meta(
            gt=0,
            le=60,
            description=(
                "Seconds without DOM changes and requests in flight after which a "
                "rendered page counts as settled."
            ),
        ),
    ] = 0.3
    render_scroll: Annotated[
        int,
        Meta(ge=0, le=100, description="Scroll a rendered page to its end up to this many times."),
    ] = 0
    render_js_heap_mb: Annotated[
        int, Meta(ge=16, le=16_384, description="JavaScript heap cap of a rendered page, MiB.")
    ] = 512
    render_restart_pages: Annotated[
        int, Meta(ge=1, description="Restart the browser after this many rendered pages.")
    ] = 500
    render_memory_mb: Annotated[
        int, Meta(ge=64, description="Restart the browser once its processes hold this much, MiB.")
    ] = 2048
    render_block: Annotated[
        list[RenderBlock],
        Meta(description="Kinds of subrequests a rendered page is not given (comma-separated)."),
    ] = field(default_factory=lambda: list[RenderBlock](("image", "font", "media")))
    auth: Annotated[
        list[AuthSettings],
        Meta(description="Logins per domain ([[auth]] tables of the config file; never flags)."),
    ] = field(default_factory=list)
    cookies: Annotated[
        Literal["on", "login-only", "off"],
        Meta(
            description=(
                "Cookie jar: on (every in-scope site's cookies kept, in crawl.db, and sent back to "
                "it), login-only (only the [[auth]] domains'), off (none; no cookie or form login "
                "then)."
            )
        ),
    ] = "on"
    recrawl: Annotated[
        bool,
        Meta(
            description="Keep the crawl fresh: fetch each URL again when due, until stopped "
            "or --max-duration (see the revisit settings)."
        ),
    ] = False
    max_duration: (
        Annotated[
            float,
            Meta(gt=0, description="End the crawl (as SIGTERM would) after this many seconds."),
        ]
        | None
    ) = None
    revisit_initial: Annotated[
        Seconds, Meta(description="Seconds before a URL's first revisit (--recrawl).")
    ] = DEFAULT_INITIAL
    revisit_min: Annotated[
        Seconds, Meta(description="Least seconds between revisits of a URL (--recrawl).")
    ] = DEFAULT_MIN
    revisit_max: Annotated[
        Seconds, Meta(description="Most seconds between revisits of a URL (--recrawl).")
    ] = DEFAULT_MAX
    revisit_spare: Annotated[
        float,
        Meta(
            ge=0,
            le=1,
            description="Share of an idle host's free politeness slots that early revisits "
            "may fill (--recrawl; 0: none, 1: all; never faster than the host's delay).",
        ),
    ] = 0.0
    revisit: Annotated[
        list[RevisitRule],
        Meta(description="Intervals by URL pattern or content type ([[revisit]] tables)."),
    ] = field(default_factory=list)

    @property
    def robots_name(self) -> str:
        """The robots.txt product token the crawl goes by: `robots_token`, else the product
        token of `user_agent` (:func:`gossamer.settings.useragent.product_token`)."""
        return self.robots_token or product_token(self.user_agent)

    @property
    def focused(self) -> bool:
        """Whether the crawl is focused (a phrase or example pages given)."""
        return self.focus_phrase is not None or bool(self.focus_examples)

    def _check(self) -> None:
        if self.wacz:
            force_setattr(self, "warc", True)  # a WACZ packages the crawl's WARC files
        for name in ("user_agent", "robots_token"):
            if any(ord(c) < 32 for c in getattr(self, name) or ""):
                raise FieldError(name, "must not contain control characters")
        phrase = self.focus_phrase
        if phrase is not None and any(ord(c) < 32 and c not in "\t\n\r" for c in phrase):
            raise FieldError("focus_phrase", "must not contain control characters")
        _check_functions(self.rule_functions)
        _check_patterns(self.render_url)
        _check_resolve(self.resolve)
        _check_domains(self.allow_domains)
        _check_proxies(self.proxies)
        if self.store is not None:
            force_setattr(self, "store", _store_url(self.store))
        _check_sitemaps(self.sitemap)
        if not _BIND.fullmatch(self.metrics_bind):
            raise FieldError("metrics_bind", "must be an IP address or a host name, e.g. 0.0.0.0")
        for host in self.metrics_hosts:
            if host != "*" and not _METRICS_HOST.fullmatch(host):
                raise FieldError("metrics_hosts", f"{host[:80]!r} is not a host name (or *)")
        domains = [a.origin()[1] for a in self.auth]
        for domain in domains:
            if domains.count(domain) > 1:  # one session (cookies, token) per domain
                raise FieldError("auth", f"two [[auth]] tables for {domain}")
        self._focus_topic()
        self._revisit_intervals()
        if self.cookies == "off":
            for auth in self.auth:
                if auth.type in ("cookies", "form"):
                    problem = (
                        f"[[auth]] {auth.domain}: type {auth.type} needs --cookies on or login-only"
                    )
                    raise FieldError("cookies", problem)

    def _revisit_intervals(self) -> None:
        intervals = (self.revisit_initial, self.revisit_min, self.revisit_max)
        try:
            check_intervals(*intervals)
        except ValueError as exc:
            raise FieldError("revisit_min", str(exc)) from None
        for rule in self.revisit:
            try:
                check_intervals(*rule_intervals(rule, *intervals))
            except ValueError as exc:
                raise FieldError("revisit", str(exc)) from None

    def _focus_topic(self) -> None:
        phrase = self.focus_phrase
        if phrase is not None and not phrase.strip() and not self.focus_examples:
            problem = "empty: give the topic's words or --focus-example"
            raise FieldError("focus_phrase", problem)
        if not self.focused and (self.focus_mode != "soft" or self.focus_threshold != 0.5):
            name = "focus_mode" if self.focus_mode != "soft" else "focus_threshold"
            raise FieldError(name, "needs a focus phrase or example pages")
        for url in self.focus_examples:
            try:
                canonicalize(url)
            except InvalidURL as exc:
                raise FieldError("focus_examples", f"{url[:200]!r}: {exc}") from None


def _check_functions(functions: dict[str, str]) -> None:
    for name, spec in functions.items():
        if not name.isidentifier():
            raise FieldError("rule_functions", f"{name!r} is not a name (letters, digits, _)")
        module, _, function = spec.rpartition(":")
        if not module or not function.isidentifier():
            raise FieldError("rule_functions", f"{name} = {spec!r} is not module:function")


def _check_patterns(patterns: list[str]) -> None:
    for pattern in patterns:
        try:
            compile_url_regex(pattern)
        except ValueError as exc:
            raise FieldError("render_url", str(exc)) from None


def _check_domains(domains: list[str]) -> None:
    for domain in domains:
        if host_name(domain.strip(".")) is None and ip_literal(domain) is None:
            problem = f"{domain[:80]!r} is not a domain name (e.g. example.org, or test)"
            raise FieldError("allow_domains", problem)


def _check_resolve(items: list[str]) -> None:
    for item in items:
        try:
            parse_resolve_item(item)
        except ValueError as exc:
            raise FieldError("resolve", str(exc)) from None


def _check_sitemaps(urls: list[str]) -> None:
    for url in urls:
        try:
            canonicalize(url)
        except InvalidURL as exc:
            raise FieldError("sitemap", f"{url[:200]!r}: {exc}") from None


def _check_proxies(urls: list[str]) -> None:
    if not urls:
        return
    for url in urls:
        try:
            parse_proxy(url)
        except ProxyError as exc:
            raise FieldError("proxies", str(exc)) from None


def _store_url(value: str) -> str:
    """The store's DSN in the URL form (a libpq ``key=value`` string read into it)."""
    try:
        return store_url(value)
    except ValueError as exc:
        raise FieldError("store", str(exc)) from None


class JobSettings(CrawlSettings, frozen=True, kw_only=True):
    """A cluster job: every crawl setting and every cluster setting, flat (the JSON a job
    stores in Redis). The cluster settings are :class:`ClusterSettings`' own."""

    partitions: ClusterPartitions = 4096
    heartbeat_ttl: ClusterHeartbeat = 10.0
    claim_timeout: ClusterClaimTimeout = 60.0
    partition_by: ClusterPartitionBy = "host"
    allocator: ClusterAllocator = "equal"

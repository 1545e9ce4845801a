"""The typed settings models: :class:`CrawlSettings` (what any crawl can be told),
:class:`ClusterSettings` (what only a cluster job adds) and :class:`JobSettings` (both: what
``cluster submit`` stores and every worker of the job reads).

Values come, lowest precedence first, from the defaults below, a TOML file (``--config``;
top-level keys or a ``[crawl]`` table, not both), ``GOSSAMER_<FIELD>`` environment variables
and command line flags. Invalid values raise :class:`SettingsError` naming the field; so does
a seeds file that is not text. One TOML file serves both: a single-process crawl checks its
cluster keys and does not use them.

The models are msgspec Structs: immutable, every key known, keyword arguments only. Types and
bounds are checked when values are converted (:func:`load_model`, :func:`validate_model`,
:func:`settings_from_json`), not when a model is built directly (``CrawlSettings(...)``);
the checks of ``__post_init__`` run in both.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, TypeVar, get_args, get_origin

import msgspec
from msgspec import Meta, field
from msgspec.structs import force_setattr

from gossamer import __version__
from gossamer.frontier.hosts import DEFAULT_SLACK
from gossamer.urls import InvalidURL, Scope, canonicalize


class SettingsError(ValueError):
    """Bad configuration; the message names the offending field."""


class InvalidSetting(SettingsError):
    """A value that fails its setting's checks: ``field`` is its place (``auth.0.type``,
    ``allow_ports.0``; ``settings`` for the whole), ``problem`` what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"invalid setting '{field}': {problem}")
        self.field = field
        self.problem = problem


class _FieldError(ValueError):
    """A ``__post_init__`` check's error about the field ``name`` of its model."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(problem)
        self.name = name


class SettingsModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every settings model (each also says ``frozen=True, kw_only=True``: Structs do
    not inherit ``kw_only``, and mypy wants ``frozen`` on each)."""


ClusterPartitions = Annotated[
    int, Meta(ge=1, le=65_536, description="Virtual partitions the job's hosts map to.")
]
ClusterHeartbeat = Annotated[
    float, Meta(ge=0.5, le=3600, description="Seconds a silent worker counts alive.")
]
ClusterClaimTimeout = Annotated[
    float, Meta(ge=1, le=86_400, description="Seconds a dead worker's URLs stay claimed.")
]
ClusterPartitionBy = Annotated[
    Literal["host", "url"],
    Meta(
        description="Partition by host (one owner per host) or by URL (one host's URLs "
        "spread over every worker; per-host limits kept through Redis)."
    ),
]
ClusterAllocator = Annotated[
    Literal["equal", "weighted", "bpnn-pso", "first-fit", "least-loaded"],
    Meta(description="How partitions are shared among the workers."),
]
"""The cluster settings' types, of :class:`ClusterSettings` and :class:`JobSettings` (a Struct
has one base with fields, so JobSettings declares them again, with the same defaults)."""


class ClusterSettings(SettingsModel, frozen=True, kw_only=True):
    """What a cluster job adds to a crawl's settings (``cluster submit``, ``cluster up``)."""

    partitions: ClusterPartitions = 4096
    heartbeat_ttl: ClusterHeartbeat = 10.0
    claim_timeout: ClusterClaimTimeout = 60.0
    partition_by: ClusterPartitionBy = "host"
    allocator: ClusterAllocator = "equal"


class ShippedDocument(SettingsModel, frozen=True, kw_only=True):
    """A rule document as a cluster job carries it: its file name and text."""

    name: Annotated[str, Meta(description="The document's file name.")]
    text: Annotated[
        str, Meta(description="The document's text (TOML or JSON, by the name's suffix).")
    ]


class ShippedRules(SettingsModel, frozen=True, kw_only=True):
    """The rule documents of a cluster job, with their digest: every worker compiles these
    texts, not files of its own, and checks the digest first."""

    documents: Annotated[list[ShippedDocument], Meta(description="The documents, in order.")]
    digest: Annotated[
        str,
        Meta(pattern=r"\A[0-9a-f]{64}\Z", description="SHA-256 of the documents' names and texts."),
    ]


RenderBlock = Literal["image", "font", "media", "stylesheet"]
"""Kinds of subrequests ``render_block`` may name."""
AuthType = Literal["basic", "bearer", "cookies", "form", "oauth2"]
_SECRETS: dict[str, tuple[str, ...]] = {
    "basic": ("username", "password"),
    "bearer": ("token",),
    "cookies": (),
    "form": (),
    "oauth2": ("client_id", "client_secret"),
}
"""The secrets each kind of login needs (each as ``NAME_env`` or ``NAME_file``)."""
_BIND = re.compile(r"[A-Za-z0-9.:_-]{1,253}")
"""A listening address: an IPv4 or IPv6 address or a host name (the bind reports the rest)."""
_DOMAIN = re.compile(r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_-]{1,63}")


class AuthSettings(SettingsModel, frozen=True, kw_only=True):
    """How the crawl logs in to one domain (an ``[[auth]]`` table of the config file).

    Secrets are named, never given: each as ``NAME_env`` (an environment variable) or
    ``NAME_file`` (a file whose text, less its final newline, is the secret), read once when
    the crawl starts (:func:`read_secret`). The settings themselves hold no secret, so a
    cluster job may store them."""

    domain: Annotated[
        str, Meta(description="The host whose requests carry the login, and its subdomains.")
    ]
    type: Annotated[AuthType, Meta(description="basic | bearer | cookies | form | oauth2.")]
    username_env: Annotated[str, Meta(description="Variable holding the user name.")] | None = None
    username_file: Annotated[Path, Meta(description="File holding the user name.")] | None = None
    password_env: Annotated[str, Meta(description="Variable holding the password.")] | None = None
    password_file: Annotated[Path, Meta(description="File holding the password.")] | None = None
    token_env: Annotated[str, Meta(description="Variable holding the bearer token.")] | None = None
    token_file: Annotated[Path, Meta(description="File holding the bearer token.")] | None = None
    cookies_file: (
        Annotated[
            Path, Meta(description="Cookies in Netscape format (cookies.txt), for type cookies.")
        ]
        | None
    ) = None
    login_url: Annotated[str, Meta(description="Form login: the URL the form posts to.")] | None = (
        None
    )
    username_field: Annotated[str, Meta(description="Form login: the user name's field.")] = (
        "username"
    )
    password_field: Annotated[str, Meta(description="Form login: the password's field.")] = (
        "password"
    )
    fields: Annotated[
        dict[str, str], Meta(description="Form login: further fields posted as they are.")
    ] = field(default_factory=dict)
    logged_out_status: Annotated[
        list[Annotated[int, Meta(ge=100, le=599)]],
        Meta(description="Form login: statuses that mean the session has ended."),
    ] = field(default_factory=lambda: [401, 403])
    logged_out_selector: (
        Annotated[
            str, Meta(description="Form login: a CSS selector found only on logged-out pages.")
        ]
        | None
    ) = None
    login_hook: (
        Annotated[
            str,
            Meta(
                description=(
                    "Form login: module:function that logs in instead of posting the form "
                    "(see gossamer.fetch.auth.UserLogin)."
                )
            ),
        ]
        | None
    ) = None
    token_url: Annotated[str, Meta(description="OAuth 2.0: the token endpoint.")] | None = None
    client_id_env: (
        Annotated[str, Meta(description="OAuth 2.0: variable of the client id.")] | None
    ) = None
    client_id_file: (
        Annotated[Path, Meta(description="OAuth 2.0: file of the client id.")] | None
    ) = None
    client_secret_env: (
        Annotated[str, Meta(description="OAuth 2.0: variable of the secret.")] | None
    ) = None
    client_secret_file: (
        Annotated[Path, Meta(description="OAuth 2.0: file of the secret.")] | None
    ) = None
    scope: Annotated[str, Meta(description="OAuth 2.0: the scope asked for.")] | None = None
    token_cache: (
        Annotated[
            Path,
            Meta(
                description=(
                    "OAuth 2.0: file the token is cached in (mode 0600) until it expires; "
                    "default ~/.cache/gossamer/oauth-<digest of the token URL and client>.json."
                )
            ),
        ]
        | None
    ) = None
    refresh_margin: Annotated[
        float,
        Meta(ge=0, le=86_400, description="OAuth 2.0: seconds before expiry a token is renewed."),
    ] = 60.0

    def __post_init__(self) -> None:
        domain = self.domain.strip().lower().rstrip(".")
        if not _DOMAIN.fullmatch(domain):
            raise _FieldError("domain", f"{domain!r} is not a host name (no scheme, port or path)")
        force_setattr(self, "domain", domain)
        for name in ("login_url", "token_url"):
            url = getattr(self, name)
            if url is not None and not url.lower().startswith(("http://", "https://")):
                raise _FieldError(name, "must be an http:// or https:// URL")
        self._complete()

    def _complete(self) -> None:
        for name in ("username", "password", "token", "client_id", "client_secret"):
            env, file = getattr(self, f"{name}_env"), getattr(self, f"{name}_file")
            if env is not None and file is not None:
                raise ValueError(f"give {name}_env or {name}_file, not both")
        needed = _SECRETS[self.type]
        if self.type == "form" and self.login_hook is None:
            needed = ("username", "password")
            if self.login_url is None:
                raise ValueError("type form needs login_url (or login_hook)")
        for name in needed:
            if getattr(self, f"{name}_env") is None and getattr(self, f"{name}_file") is None:
                raise ValueError(f"type {self.type} needs {name}_env or {name}_file")
        if self.type == "cookies" and self.cookies_file is None:
            raise ValueError("type cookies needs cookies_file")
        if self.type == "oauth2" and self.token_url is None:
            raise ValueError("type oauth2 needs token_url")


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
    delay: Annotated[
        float,
        Meta(ge=0, le=3600, description="Seconds between request starts on one host (minimum)."),
    ] = 0.0
    user_agent: Annotated[str, Meta(min_length=1, description="User-Agent.")] = (
        f"gossamer/{__version__}"
    )
    robots_token: Annotated[str, Meta(min_length=1, description="robots.txt product token.")] = (
        "gossamer"
    )
    robots: Annotated[bool, Meta(description="Obey robots.txt (disable with --no-robots).")] = True
    robots_retry: Annotated[
        float, Meta(gt=0, description="Seconds before retrying an unreachable robots.txt.")
    ] = 30.0
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
    max_redirects: Annotated[
        int, Meta(ge=0, le=100, description="Redirect hops per URL chain.")
    ] = 10
    max_retries: Annotated[int, Meta(ge=0, le=100, description="Retries of a failing URL.")] = 3
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
    max_body_bytes: Annotated[
        int, Meta(ge=1024, description="Bodies past this are truncated and flagged.")
    ] = 10 * 1024 * 1024
    max_url_length: Annotated[int, Meta(ge=64, description="Longer URLs are skipped (trap).")] = (
        2048
    )
    max_repeated_segments: Annotated[
        int, Meta(ge=1, description="Paths repeating one segment more often are skipped (trap).")
    ] = 3
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
    focus_slack: Annotated[
        float,
        Meta(
            ge=0,
            le=1e9,
            description=(
                "How much lower a URL's priority may be than the best queued one's and still be "
                "fetched while the best one's host waits (its Crawl-delay or delay); 0 fetches "
                "nothing worse meanwhile, a large value never waits. Priorities are 0..1 in a "
                "focused crawl; the default's figures: benchmarks/bench_bestfirst.py."
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
                "(P4's text-density model), or trafilatura, readability, resiliparse when those "
                "libraries are installed."
            )
        ),
    ] = "tree"
    max_text_chars: Annotated[
        int, Meta(ge=0, description="Longest main text kept in a record (cut: flag text-cut).")
    ] = 1_000_000
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
            Meta(description="Also write page records to this database (postgres://user@host/db)."),
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
                    "URL fetched through each proxy to check it (default: the first seed); "
                    "a complete 2xx answer passes."
                )
            ),
        ]
        | None
    ) = None
    proxy_check_interval: Annotated[
        float, Meta(gt=0, le=86_400, description="Seconds between checks of a live proxy.")
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
                "Always render URLs matching this regular expression (--render-url, "
                "repeatable), whatever --render says."
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

    @property
    def focused(self) -> bool:
        """Whether the crawl is focused (a phrase or example pages given)."""
        return self.focus_phrase is not None or bool(self.focus_examples)

    def __post_init__(self) -> None:
        for name in ("user_agent", "robots_token"):
            if any(ord(c) < 32 for c in getattr(self, name)):
                raise _FieldError(name, "must not contain control characters")
        phrase = self.focus_phrase
        if phrase is not None and any(ord(c) < 32 and c not in "\t\n\r" for c in phrase):
            raise _FieldError("focus_phrase", "must not contain control characters")
        _check_functions(self.rule_functions)
        _check_patterns(self.render_url)
        _check_proxies(self.proxies)
        if not _BIND.fullmatch(self.metrics_bind):
            raise _FieldError("metrics_bind", "must be an IP address or a host name, e.g. 0.0.0.0")
        domains = [a.domain for a in self.auth]
        for domain in domains:
            if domains.count(domain) > 1:
                raise _FieldError("auth", f"two [[auth]] tables for {domain}")
        self._focus_topic()
        if self.cookies == "off":
            for auth in self.auth:
                if auth.type in ("cookies", "form"):
                    raise ValueError(
                        f"[[auth]] {auth.domain}: type {auth.type} needs --cookies on or login-only"
                    )

    def _focus_topic(self) -> None:
        phrase = self.focus_phrase
        if phrase is not None and not phrase.strip() and not self.focus_examples:
            raise ValueError("focus_phrase is empty: give the topic's words or --focus-example")
        if not self.focused and (self.focus_mode != "soft" or self.focus_threshold != 0.5):
            raise ValueError("focus_mode and focus_threshold need a phrase or example pages")
        for url in self.focus_examples:
            try:
                canonicalize(url)
            except InvalidURL as exc:
                raise ValueError(f"focus_examples: {url[:200]!r}: {exc}") from None


def _check_functions(functions: dict[str, str]) -> None:
    for name, spec in functions.items():
        if not name.isidentifier():
            raise _FieldError("rule_functions", f"{name!r} is not a name (letters, digits, _)")
        module, _, function = spec.rpartition(":")
        if not module or not function.isidentifier():
            raise _FieldError("rule_functions", f"{name} = {spec!r} is not module:function")


def _check_patterns(patterns: list[str]) -> None:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            problem = f"{pattern!r} is not a regular expression: {exc}"
            raise _FieldError("render_url", problem) from None


def _check_proxies(urls: list[str]) -> None:
    if not urls:
        return
    from gossamer.fetch.proxies import ProxyError, parse_proxy

    for url in urls:
        try:
            parse_proxy(url)
        except ProxyError as exc:
            raise _FieldError("proxies", str(exc)) from None


class JobSettings(CrawlSettings, frozen=True, kw_only=True):
    """A cluster job: every crawl setting and every cluster setting, flat (the JSON a job
    stores in Redis). The cluster settings are :class:`ClusterSettings`' own."""

    partitions: ClusterPartitions = 4096
    heartbeat_ttl: ClusterHeartbeat = 10.0
    claim_timeout: ClusterClaimTimeout = 60.0
    partition_by: ClusterPartitionBy = "host"
    allocator: ClusterAllocator = "equal"


Settings = TypeVar("Settings", bound=SettingsModel)

_ENV_PREFIX = "GOSSAMER_"
_TABLE_FIELDS = frozenset({"rule_functions"})
"""Settings whose value is a table: top-level tables of a config file without [crawl]."""
_SPLIT_FIELDS = frozenset(
    {
        "seeds",
        "allow_domains",
        "allow_ports",
        "resolve",
        "rules",
        "proxies",
        "render_block",
        "focus_examples",
    }
)
"""List settings a string (environment, TOML, a flag) gives comma-separated."""
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
"""The strings (any case) a boolean setting takes."""
_MAX_CONFIG_BYTES = 1 << 20
_MAX_SEED_LINE = 64 * 1024
_SEEDS_CHUNK = 1 << 20
_TOO_LONG = "is longer than 64 KiB"
_NOT_TEXT = "is not text (a NUL byte)"
_ERROR_AT = re.compile(r"(?s)(.*) - at `\$(.*)`")
_ERROR_STEP = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")
_ERROR_NAMED = re.compile(r"Object (contains unknown|missing required) field `(.*)`")


def _from_toml(path: Path) -> dict[str, Any]:
    """The settings of a TOML file: its top-level keys or its ``[crawl]`` table, not both;
    a ``[focus]`` table (beside either) holds the ``focus_`` settings without their prefix
    (``phrase``, ``examples``, ``threshold``, ``mode``, ``tolerance``)."""
    data = _read_toml(path)
    focus = data.pop("focus", None)
    if focus is not None and not isinstance(focus, dict):
        raise SettingsError("config: [focus] must be a table")
    focus = {f"focus_{k.replace('-', '_')}": v for k, v in (focus or {}).items()}
    if "focus_example" in focus:
        focus["focus_examples"] = focus.pop("focus_example")
    if "crawl" in data:
        section = data.pop("crawl")
        if not isinstance(section, dict):
            raise SettingsError("config: [crawl] must be a table")
        if "auth" in data and "auth" not in section:  # [[auth]] beside [crawl]
            section["auth"] = data.pop("auth")
        if data:
            stray = ", ".join(sorted(data))
            raise SettingsError(f"config: keys outside [crawl] in {path}: {stray}")
    else:
        section = data
        tables = [k for k, v in data.items() if isinstance(v, dict) and k not in _TABLE_FIELDS]
        if tables:
            raise SettingsError(f"config: unknown table [{tables[0]}] in {path}")
    return {k.replace("-", "_"): v for k, v in section.items()} | focus


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            raw = file.read(_MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"config: cannot read {path}: {exc.strerror}") from exc
    if len(raw) > _MAX_CONFIG_BYTES:
        raise SettingsError(f"config: {path} is larger than {_MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SettingsError(f"config: {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config: {path} is not valid TOML: {exc}") from None


def _from_env(env: Mapping[str, str], model: type[SettingsModel]) -> dict[str, Any]:
    fields = model.__struct_fields__
    values: dict[str, Any] = {}
    for key, value in env.items():
        if key.startswith(_ENV_PREFIX):
            name = key[len(_ENV_PREFIX) :].lower()
            if name in fields:
                values[name] = value
    return values


def load_settings(
    flags: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CrawlSettings:
    """Merge defaults < TOML < environment < flags and validate. Raises SettingsError."""
    return load_model(CrawlSettings, flags, config, env)


def load_model(
    model: type[Settings],
    flags: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Like :func:`load_settings`, for any settings model (:class:`JobSettings`...)."""
    merged: dict[str, Any] = {}
    if config is not None:
        merged.update(_without_cluster_keys(_from_toml(config), model))
    merged.update(_from_env(os.environ if env is None else env, model))
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    return validate_model(model, merged)


def _without_cluster_keys(values: dict[str, Any], model: type[SettingsModel]) -> dict[str, Any]:
    """A config file's values for ``model``: its cluster keys, when ``model`` has none, are
    checked (a bad one is still an error) and left out."""
    cluster = ClusterSettings.__struct_fields__
    if set(cluster) <= set(model.__struct_fields__):
        return values
    validate_model(ClusterSettings, {k: values.pop(k) for k in list(values) if k in cluster})
    return values


def validate_model(model: type[Settings], values: Mapping[str, Any]) -> Settings:
    """The ``model`` settings of ``values`` (strings of the environment, TOML values, flags,
    decoded JSON), converted and checked; a bad value raises :class:`InvalidSetting`."""
    try:
        return msgspec.convert(_prepared(model, values), model, strict=False, dec_hook=_decode)
    except msgspec.ValidationError as exc:
        raise _invalid(exc) from None


def settings_to_dict(settings: SettingsModel) -> dict[str, Any]:
    """The settings as JSON-like values (paths as strings), for :func:`validate_model`."""
    values: dict[str, Any] = msgspec.to_builtins(settings, enc_hook=_encode)
    return values


def settings_to_json(settings: SettingsModel) -> str:
    """The settings as a JSON object (what a cluster job stores)."""
    return msgspec.json.encode(settings, enc_hook=_encode).decode()


def settings_from_json(model: type[Settings], raw: str | bytes) -> Settings:
    """The ``model`` settings of :func:`settings_to_json`'s JSON, checked as any input is
    (the JSON may come from anyone who can write to the job's Redis)."""
    try:
        values = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise _invalid(exc) from None
    if not isinstance(values, dict):
        raise InvalidSetting("settings", f"not a JSON object: {type(values).__name__}")
    return validate_model(model, values)


def _kinds(model: type[SettingsModel]) -> dict[str, Any]:
    """The type of each field of ``model`` without its constraints and ``| None``."""
    kinds = _KINDS.get(model)
    if kinds is None:
        kinds = _KINDS[model] = {
            f.name: setting_type(f.type) for f in msgspec.structs.fields(model)
        }
    return kinds


_KINDS: dict[type[SettingsModel], dict[str, Any]] = {}


def setting_type(annotation: Any) -> Any:
    """The type of a field's annotation less ``Annotated`` and ``| None``: ``int``,
    ``Literal[...]``, ``list[str]``..."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
            continue
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and type(None) in get_args(annotation):
            annotation = args[0]
            continue
        return annotation


def setting_description(annotation: Any) -> str | None:
    """The description of a field's annotation (its ``Meta``), if any."""
    for arg in get_args(annotation):
        if isinstance(arg, Meta) and arg.description is not None:
            return arg.description
        if get_origin(arg) is Annotated or type(None) in get_args(arg):
            found = setting_description(arg)
            if found is not None:
                return found
    return None


def _prepared(model: type[SettingsModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as msgspec converts them: comma-separated strings split into lists, a
    ``render_url`` string one pattern, ``NAME=module:function`` pairs a table, yes/no/on/off
    booleans; a float that is not finite (nan, inf) is an error."""
    kinds = _kinds(model)
    prepared = dict(values)
    for name, value in values.items():
        kind = kinds.get(name)
        if isinstance(value, str):
            if name in _SPLIT_FIELDS:
                prepared[name] = [v.strip() for v in value.split(",") if v.strip()]
            elif name == "render_url":  # a regular expression may hold commas
                prepared[name] = [value]
            elif name == "rule_functions":
                prepared[name] = _function_pairs(value)
            elif kind is bool and value.lower() in _TRUE | _FALSE:
                prepared[name] = value.lower() in _TRUE
        if kind is float and not _finite(value):
            raise InvalidSetting(name, "Input should be a finite number")
    return prepared


def _finite(value: Any) -> bool:
    """False for a number or numeric string that is nan, infinite or an integer too large
    for a float; True for the rest (a value that is no number fails its conversion)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return True
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
    except ValueError:
        return True


def _function_pairs(value: str) -> dict[str, str]:
    pairs = [pair.strip() for pair in value.split(",") if pair.strip()]
    if not all("=" in pair for pair in pairs):
        raise InvalidSetting(
            "rule_functions", "expected NAME=module:function pairs, comma-separated"
        )
    return {n.strip(): f.strip() for n, _, f in (p.partition("=") for p in pairs)}


def _decode(kind: type, value: Any) -> Any:
    if kind is Path:
        if isinstance(value, Path):
            return value
        if isinstance(value, str):
            return Path(value)
        raise ValueError(f"Expected a path, got `{type(value).__name__}`")
    raise NotImplementedError(kind)


def _encode(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(type(value))


def _invalid(error: msgspec.MsgspecError) -> InvalidSetting:
    """The error naming the field as a dotted path (``auth.0.type``; a table's entry is the
    table's)."""
    text = str(error)
    match = _ERROR_AT.fullmatch(text)
    problem, path = (match[1], match[2]) if match else (text, "")
    steps = [name or index for name, index in _ERROR_STEP.findall(path) if index != "..."]
    cause = error.__cause__
    if isinstance(cause, _FieldError):
        steps.append(cause.name)
    elif named := _ERROR_NAMED.fullmatch(problem):
        steps.append(named[2])
        problem = "not a setting" if named[1] == "contains unknown" else "required"
    return InvalidSetting(".".join(steps) or "settings", problem)


def read_secret(auth: AuthSettings, index: int, name: str, env: Mapping[str, str]) -> str:
    """The secret ``name`` (``password``...) of ``auth``, the ``index``-th [[auth]] table,
    from its variable or file. A missing one raises SettingsError naming the variable or
    file, never a value."""
    variable, path = getattr(auth, f"{name}_env"), getattr(auth, f"{name}_file")
    where = f"invalid setting 'auth.{index}.{name}"
    if variable is not None:
        value = env.get(variable)
        if not value:
            raise SettingsError(f"{where}_env': environment variable {variable} is not set")
        return value
    if path is None:
        raise SettingsError(f"{where}': give {name}_env or {name}_file")
    try:
        with Path(path).open("rb") as file:
            raw = file.read(64 * 1024 + 1)
    except OSError as exc:
        raise SettingsError(f"{where}_file': {exc.strerror}: {path}") from None
    try:
        value = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SettingsError(f"{where}_file': {path} is not UTF-8 text") from None
    if not value or len(raw) > 64 * 1024:
        raise SettingsError(f"{where}_file': {path} is empty or larger than 64 KiB")
    return value


def read_seeds(settings: CrawlSettings) -> list[str]:
    """The seeds given directly plus those of ``seeds_file`` (blank and # lines skipped)."""
    seeds = list(settings.seeds)
    if settings.seeds_file is not None:
        seeds.extend(_seed_lines(settings.seeds_file))
    return seeds


def _seed_lines(path: Path) -> Iterator[str]:
    """The seed lines of a file, read a block of whole lines at a time: a line longer than
    64 KiB (``/dev/zero`` has no end of line) or a file that is not UTF-8 text is a settings
    error naming the line."""
    try:
        with path.open("rb") as file:
            before = 0  # lines before the block
            rest = b""
            while chunk := file.read(_SEEDS_CHUNK):
                block = rest + chunk
                end = block.rfind(b"\n") + 1
                rest = block[end:]
                if len(rest) > _MAX_SEED_LINE:
                    line = before + block.count(b"\n", 0, end) + 1
                    _seeds_error(line, _NOT_TEXT if b"\0" in rest else _TOO_LONG)
                if end:
                    yield from _block_lines(block[:end], before)
                    before += block.count(b"\n", 0, end)
            yield from _block_lines(rest, before)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'seeds_file': {exc.strerror}: {path}") from None


def _block_lines(block: bytes, before: int) -> Iterator[str]:
    """The seeds of whole lines; ``before`` lines of the file came before them."""
    if b"\0" in block:
        _seeds_error(before + block.count(b"\n", 0, block.index(b"\0")) + 1, _NOT_TEXT)
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        _seeds_error(before + block.count(b"\n", 0, exc.start) + 1, "is not UTF-8 text")
    if before == 0:
        text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if lines and max(map(len, lines)) > _MAX_SEED_LINE:
        first = next(i for i, line in enumerate(lines) if len(line) > _MAX_SEED_LINE)
        _seeds_error(before + first + 1, _TOO_LONG)
    for line in lines:
        seed = line.strip()
        if seed and seed[0] != "#":
            yield seed


def _seeds_error(line: int, problem: str) -> NoReturn:
    raise SettingsError(f"invalid setting 'seeds_file': line {line} {problem}")


def canonical_seeds(settings: CrawlSettings) -> list[str]:
    """The seeds, canonical; a malformed seed is a settings error."""
    seeds = []
    for seed in read_seeds(settings):
        try:
            seeds.append(canonicalize(seed))
        except InvalidURL as exc:
            raise SettingsError(f"invalid setting 'seeds': {exc}") from None
    if not seeds and not settings.resume:
        raise SettingsError("invalid setting 'seeds': give at least one seed URL")
    return seeds


def crawl_scope(settings: CrawlSettings, seeds: list[str]) -> Scope:
    """The scope of a crawl: the seeds' hosts and ports, allowed domains and ports, and trap
    guards."""
    return Scope.for_seeds(
        seeds,
        settings.allow_domains,
        settings.allow_ports,
        max_depth=settings.max_depth,
        max_url_length=settings.max_url_length,
        max_repeated_segments=settings.max_repeated_segments,
    )

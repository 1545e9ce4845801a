"""The typed settings models: :class:`CrawlSettings` (what any crawl can be told),
:class:`ClusterSettings` (what only a cluster job adds) and :class:`JobSettings` (both: what
``cluster submit`` stores and every worker of the job reads).

Values come, lowest precedence first, from the defaults below, a TOML file (``--config``;
top-level keys or a ``[crawl]`` table, not both), ``GOSSAMER_<FIELD>`` environment variables
and command line flags. Invalid values raise :class:`SettingsError` naming the field; so does
a seeds file that is not text. One TOML file serves both: a single-process crawl checks its
cluster keys and does not use them.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gossamer import __version__
from gossamer.frontier.hosts import DEFAULT_SLACK
from gossamer.urls import InvalidURL, Scope, canonicalize


class SettingsError(ValueError):
    """Bad configuration; the message names the offending field."""


_CONFIG = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)
"""Of every model. allow_inf_nan: a nan slips through every bound (nan <= 3600 is false, so is
nan >= 0) and an inf delay never ends; every float field must be a finite number."""


class ClusterSettings(BaseModel):
    """What a cluster job adds to a crawl's settings (``cluster submit``, ``cluster up``)."""

    model_config = _CONFIG

    partitions: int = Field(
        4096, ge=1, le=65_536, description="Virtual partitions the job's hosts map to."
    )
    heartbeat_ttl: float = Field(
        10.0, ge=0.5, le=3600, description="Seconds a silent worker counts alive."
    )
    claim_timeout: float = Field(
        60.0, ge=1, le=86_400, description="Seconds a dead worker's URLs stay claimed."
    )
    partition_by: Literal["host", "url"] = Field(
        "host",
        description="Partition by host (one owner per host) or by URL (one host's URLs "
        "spread over every worker; per-host limits kept through Redis).",
    )
    allocator: Literal["equal", "weighted", "bpnn-pso", "first-fit", "least-loaded"] = Field(
        "equal", description="How partitions are shared among the workers."
    )


class ShippedDocument(BaseModel):
    """A rule document as a cluster job carries it: its file name and text."""

    model_config = _CONFIG

    name: str = Field(description="The document's file name.")
    text: str = Field(description="The document's text (TOML or JSON, by the name's suffix).")


class ShippedRules(BaseModel):
    """The rule documents of a cluster job, with their digest: every worker compiles these
    texts, not files of its own, and checks the digest first."""

    model_config = _CONFIG

    documents: list[ShippedDocument] = Field(description="The documents, in order.")
    digest: str = Field(
        pattern="^[0-9a-f]{64}$", description="SHA-256 of the documents' names and texts."
    )


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


class AuthSettings(BaseModel):
    """How the crawl logs in to one domain (an ``[[auth]]`` table of the config file).

    Secrets are named, never given: each as ``NAME_env`` (an environment variable) or
    ``NAME_file`` (a file whose text, less its final newline, is the secret), read once when
    the crawl starts (:func:`read_secret`). The settings themselves hold no secret, so a
    cluster job may store them."""

    model_config = _CONFIG

    domain: str = Field(description="The host whose requests carry the login, and its subdomains.")
    type: AuthType = Field(description="basic | bearer | cookies | form | oauth2.")
    username_env: str | None = Field(None, description="Variable holding the user name.")
    username_file: Path | None = Field(None, description="File holding the user name.")
    password_env: str | None = Field(None, description="Variable holding the password.")
    password_file: Path | None = Field(None, description="File holding the password.")
    token_env: str | None = Field(None, description="Variable holding the bearer token.")
    token_file: Path | None = Field(None, description="File holding the bearer token.")
    cookies_file: Path | None = Field(
        None, description="Cookies in Netscape format (cookies.txt), for type cookies."
    )
    login_url: str | None = Field(None, description="Form login: the URL the form posts to.")
    username_field: str = Field("username", description="Form login: the user name's field.")
    password_field: str = Field("password", description="Form login: the password's field.")
    fields: dict[str, str] = Field(
        default_factory=dict, description="Form login: further fields posted as they are."
    )
    logged_out_status: list[Annotated[int, Field(ge=100, le=599)]] = Field(
        default_factory=lambda: [401, 403],
        description="Form login: statuses that mean the session has ended.",
    )
    logged_out_selector: str | None = Field(
        None, description="Form login: a CSS selector found only on logged-out pages."
    )
    login_hook: str | None = Field(
        None,
        description="Form login: module:function that logs in instead of posting the form "
        "(see gossamer.fetch.auth.UserLogin).",
    )
    token_url: str | None = Field(None, description="OAuth 2.0: the token endpoint.")
    client_id_env: str | None = Field(None, description="OAuth 2.0: variable of the client id.")
    client_id_file: Path | None = Field(None, description="OAuth 2.0: file of the client id.")
    client_secret_env: str | None = Field(None, description="OAuth 2.0: variable of the secret.")
    client_secret_file: Path | None = Field(None, description="OAuth 2.0: file of the secret.")
    scope: str | None = Field(None, description="OAuth 2.0: the scope asked for.")
    token_cache: Path | None = Field(
        None,
        description="OAuth 2.0: file the token is cached in (mode 0600) until it expires; "
        "default ~/.cache/gossamer/oauth-<digest of the token URL and client>.json.",
    )
    refresh_margin: float = Field(
        60.0, ge=0, le=86_400, description="OAuth 2.0: seconds before expiry a token is renewed."
    )

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        value = value.strip().lower().rstrip(".")
        if not _DOMAIN.fullmatch(value):
            raise ValueError(f"{value!r} is not a host name (no scheme, port or path)")
        return value

    @field_validator("login_url", "token_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _complete(self) -> AuthSettings:
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
        return self


class CrawlSettings(BaseModel):
    """Everything a crawl can be told. Every field is documented; defaults live here only."""

    model_config = _CONFIG

    seeds: list[str] = Field(default_factory=list, description="Start URLs.")
    seeds_file: Path | None = Field(None, description="File with one seed URL per line.")
    out: Path = Field(Path("crawl-out"), description="Output directory.")
    allow_domains: list[str] = Field(
        default_factory=list,
        description="Domains allowed with all their subdomains, besides the seeds' hosts.",
    )
    allow_ports: list[Annotated[int, Field(ge=1, le=65_535)]] = Field(
        default_factory=list,
        description="Ports allowed besides the seeds' ports and the defaults (80, 443).",
    )
    max_pages: int | None = Field(None, ge=1, description="Stop after this many records.")
    max_depth: int | None = Field(
        25, ge=0, description="Links deeper than this are skipped (a guard against traps)."
    )
    concurrency: int = Field(64, ge=1, le=100_000, description="Requests in flight, in all.")
    per_host: int = Field(2, ge=1, le=1000, description="Requests in flight per host.")
    delay: float = Field(
        0.0, ge=0, le=3600, description="Seconds between request starts on one host (minimum)."
    )
    user_agent: str = Field(f"gossamer/{__version__}", min_length=1, description="User-Agent.")
    robots_token: str = Field("gossamer", min_length=1, description="robots.txt product token.")
    robots: bool = Field(True, description="Obey robots.txt (disable with --no-robots).")
    robots_retry: float = Field(
        30.0, gt=0, description="Seconds before retrying an unreachable robots.txt."
    )
    resolve: list[str] = Field(
        default_factory=list, description="HOST=IP overrides (wildcards like *.test allowed)."
    )
    allow_private: bool = Field(
        False,
        description="Let every host reach loopback and private addresses (by default only "
        "the seeds' hosts, --allow-domain domains and --resolve names may).",
    )
    resume: bool = Field(False, description="Continue the crawl stored in --out.")
    overwrite: bool = Field(False, description="Discard a previous crawl stored in --out.")
    quiet: bool = Field(False, description="No progress line or summary.")
    follow_nofollow: bool = Field(False, description="Follow rel=nofollow links too.")
    max_redirects: int = Field(10, ge=0, le=100, description="Redirect hops per URL chain.")
    max_retries: int = Field(3, ge=0, le=100, description="Retries of a failing URL.")
    retry_backoff: float = Field(
        1.0, gt=0, description="First retry delay in seconds; doubles per attempt, jittered."
    )
    max_retry_after: float = Field(
        600.0, gt=0, description="Longest Retry-After honoured; longer ones give up the URL."
    )
    connect_timeout: float = Field(10.0, gt=0, description="TCP connect timeout, seconds.")
    read_timeout: float = Field(30.0, gt=0, description="Longest wait between body bytes.")
    total_timeout: float = Field(60.0, gt=0, description="Longest a request may take.")
    max_body_bytes: int = Field(
        10 * 1024 * 1024, ge=1024, description="Bodies past this are truncated and flagged."
    )
    max_url_length: int = Field(2048, ge=64, description="Longer URLs are skipped (trap).")
    max_repeated_segments: int = Field(
        3, ge=1, description="Paths repeating one segment more often are skipped (trap)."
    )
    adaptive_latency: float = Field(
        2.0, gt=0, description="Mean latency (s) above which a host is slowed down."
    )
    max_host_delay: float = Field(
        60.0, gt=0, description="Cap of the adaptive per-host delay, seconds."
    )
    max_crawl_delay: float = Field(
        60.0,
        gt=0,
        description="Cap of a robots.txt Crawl-delay, seconds; a host asking for more is "
        "fetched at the cap.",
    )
    queue_memory: int = Field(
        100_000, ge=100, description="Queued URLs held in memory; the rest wait in crawl.db."
    )
    focus_slack: float = Field(
        DEFAULT_SLACK,
        ge=0,
        le=1e9,
        description="How much lower a URL's priority may be than the best queued one's and "
        "still be fetched while the best one's host waits (its Crawl-delay or delay); 0 "
        "fetches nothing worse meanwhile, a large value never waits. Priorities are 0..1 in "
        "a focused crawl; the default's figures: benchmarks/bench_bestfirst.py.",
    )
    checkpoint_interval: float = Field(
        0.5, gt=0, description="Seconds between durable checkpoints of crawl.db."
    )
    max_bandwidth: int | None = Field(
        None, ge=1024, description="Most bytes per second this process downloads (all hosts)."
    )
    text: bool = Field(
        True,
        description="Keep the main text and metadata of HTML, plain-text and PDF pages in "
        "their records (disable with --no-text).",
    )
    extractor: Literal["tree", "density", "trafilatura", "readability", "resiliparse"] = Field(
        "tree",
        description="Main-text extractor: tree (gossamer's own, fast and accurate), density "
        "(P4's text-density model), or trafilatura, readability, resiliparse when those "
        "libraries are installed.",
    )
    max_text_chars: int = Field(
        1_000_000, ge=0, description="Longest main text kept in a record (cut: flag text-cut)."
    )
    digests: Literal["exact", "near", "off"] = Field(
        "near",
        description="Find pages whose main text an earlier page had and name that page in "
        "duplicate_of: near copies too (a SimHash, 0.3-1 ms a long page), exact copies "
        "only (a hash of the text, next to free), or off. Needs text extraction; a cluster "
        "job shares them through Redis.",
    )
    digest_threshold: int = Field(
        3,
        ge=0,
        le=7,
        description="With --digests near: bits two main texts' SimHashes may differ in and "
        "still be near duplicates (see benchmarks/bench_digests.py).",
    )
    follow_duplicates: bool = Field(
        False, description="Follow the links of pages found to be duplicates too."
    )
    hook: str | None = Field(
        None,
        description="Python function called on every fetched page, as module:function "
        "(see gossamer.hooks): it may add fields to the record and choose the links to follow.",
    )
    rule_functions: dict[str, str] = Field(
        default_factory=dict,
        description="Python functions rule documents may call by name ({call = NAME} in a "
        "field's process list), as NAME=module:function pairs (a [rule_functions] table, or "
        "comma-separated on the command line); a rule document itself never holds code.",
    )
    rules: list[Path] = Field(
        default_factory=list,
        description="Rule documents (files, or directories of *.toml and *.json; see "
        "docs/rules.md) read on every fetched HTML page: their items go to OUT/items.jsonl, "
        "crawl.db and the store, and their link rules choose the links followed.",
    )
    shipped_rules: ShippedRules | None = Field(
        None,
        description="The rule documents' texts and digest as a cluster job stores them "
        "(cluster submit reads them from rules); a worker uses these, not files.",
    )
    store: str | None = Field(
        None,
        description="Also write page records to this database (postgres://user@host/db).",
    )
    warc: bool = Field(
        False,
        description="Write every request and response to gzip-compressed WARC files in "
        "OUT/warc/; records name where their response lies.",
    )
    warc_max_bytes: int = Field(
        1 << 30, ge=1024, description="Start a new WARC file once one reaches this size."
    )
    proxies: list[str] = Field(
        default_factory=list,
        description="Proxies requests go through (http://, https:// or socks5:// URLs, with "
        "user:password@ if needed; --proxy, repeatable): the fastest live ones first, each "
        "domain's requests spread over them.",
    )
    proxies_file: Path | None = Field(
        None,
        description="File with one proxy URL per line (# comments), read again whenever it "
        "changes; its proxies join --proxy ones.",
    )
    proxy_check_url: str | None = Field(
        None,
        description="URL fetched through each proxy to check it (default: the first seed); "
        "a complete 2xx answer passes.",
    )
    proxy_check_interval: float = Field(
        300.0, gt=0, le=86_400, description="Seconds between checks of a live proxy."
    )
    proxy_revalidate: float = Field(
        60.0, gt=0, le=86_400, description="Seconds before a dead proxy is checked again."
    )
    proxy_max_failures: int = Field(
        3, ge=1, le=1000, description="Failures in a row after which a live proxy is dead."
    )
    proxy_retries: int = Field(
        2,
        ge=0,
        le=100,
        description="Further proxies a request tries after its proxy failed (a proxy's "
        "failure does not count against the site).",
    )
    focus_phrase: str | None = Field(
        None,
        max_length=2000,
        description="Focus the crawl on this topic (a phrase; commas separate its facets): "
        "pages get a relevance, links a priority (see README, Focused crawling).",
    )
    focus_examples: list[str] = Field(
        default_factory=list,
        description="Example pages of the topic (--focus-example URL, repeatable), fetched "
        "before the crawl; with the phrase they define the topic.",
    )
    focus_threshold: float = Field(
        0.5, gt=0, lt=1, description="Relevance from which a page counts as on-topic."
    )
    focus_mode: Literal["soft", "hard"] = Field(
        "soft",
        description="soft: relevance only orders the queue; hard: the links of irrelevant "
        "pages are dropped (past --focus-tolerance irrelevant pages in a row).",
    )
    focus_tolerance: int = Field(
        1,
        ge=0,
        le=10,
        description="Hard mode: irrelevant pages in a row whose links are still followed.",
    )

    metrics_port: int | None = Field(
        None,
        ge=1,
        le=65_535,
        description="Serve Prometheus /metrics and /healthz on this port (see README, Metrics).",
    )
    metrics_bind: str = Field(
        "127.0.0.1",
        description="Address the metrics port listens on (127.0.0.1; 0.0.0.0 in a container).",
    )

    render: Literal["never", "auto", "always"] = Field(
        "never",
        description="Render pages in headless Chromium so links and text built by JavaScript "
        "are found: never, auto (pages that ship scripts and look empty without them, learnt "
        "per host) or always (see gossamer.fetch.render).",
    )
    render_url: list[str] = Field(
        default_factory=list,
        description="Always render URLs matching this regular expression (--render-url, "
        "repeatable), whatever --render says.",
    )
    render_browser: Path = Field(
        Path("/usr/bin/chromium-headless-shell"),
        description="The Chromium (headless shell) rendering runs; never downloaded.",
    )
    render_concurrency: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Pages rendered at once (default: from the cores and the memory free).",
    )
    render_timeout: float = Field(
        15.0, gt=0, le=600, description="Hard deadline of one page's rendering, seconds."
    )
    render_load_timeout: float = Field(
        5.0, gt=0, le=600, description="Longest wait for a rendered page's load event, seconds."
    )
    render_settle: float = Field(
        0.3,
        gt=0,
        le=60,
        description="Seconds without DOM changes and requests in flight after which a "
        "rendered page counts as settled.",
    )
    render_scroll: int = Field(
        0, ge=0, le=100, description="Scroll a rendered page to its end up to this many times."
    )
    render_js_heap_mb: int = Field(
        512, ge=16, le=16_384, description="JavaScript heap cap of a rendered page, MiB."
    )
    render_restart_pages: int = Field(
        500, ge=1, description="Restart the browser after this many rendered pages."
    )
    render_memory_mb: int = Field(
        2048, ge=64, description="Restart the browser once its processes hold this much, MiB."
    )
    render_block: list[RenderBlock] = Field(
        default_factory=lambda: list[RenderBlock](("image", "font", "media")),
        description="Kinds of subrequests a rendered page is not given (comma-separated).",
    )

    auth: list[AuthSettings] = Field(
        default_factory=list,
        description="Logins per domain ([[auth]] tables of the config file; never flags).",
    )
    cookies: Literal["on", "login-only", "off"] = Field(
        "on",
        description="Cookie jar: on (every in-scope site's cookies kept, in crawl.db, and sent "
        "back to it), login-only (only the [[auth]] domains'), off (none; no cookie or form "
        "login then).",
    )

    @property
    def focused(self) -> bool:
        """Whether the crawl is focused (a phrase or example pages given)."""
        return self.focus_phrase is not None or bool(self.focus_examples)

    @field_validator("focus_phrase")
    @classmethod
    def _phrase_text(cls, value: str | None) -> str | None:
        if value is not None and any(ord(c) < 32 and c not in "\t\n\r" for c in value):
            raise ValueError("must not contain control characters")
        return value

    @model_validator(mode="after")
    def _focus_topic(self) -> CrawlSettings:
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
        return self

    @model_validator(mode="after")
    def _logins_need_cookies(self) -> CrawlSettings:
        if self.cookies == "off":
            for auth in self.auth:
                if auth.type in ("cookies", "form"):
                    raise ValueError(
                        f"[[auth]] {auth.domain}: type {auth.type} needs --cookies on or login-only"
                    )
        return self

    @field_validator("auth")
    @classmethod
    def _one_login_per_domain(cls, value: list[AuthSettings]) -> list[AuthSettings]:
        domains = [a.domain for a in value]
        for domain in domains:
            if domains.count(domain) > 1:
                raise ValueError(f"two [[auth]] tables for {domain}")
        return value

    @field_validator(
        "seeds",
        "allow_domains",
        "allow_ports",
        "resolve",
        "rules",
        "proxies",
        "render_block",
        "focus_examples",
        mode="before",
    )
    @classmethod
    def _split_strings(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("rule_functions", mode="before")
    @classmethod
    def _function_pairs(cls, value: Any) -> Any:
        if isinstance(value, str):
            pairs = [pair.strip() for pair in value.split(",") if pair.strip()]
            if not all("=" in pair for pair in pairs):
                raise ValueError("expected NAME=module:function pairs, comma-separated")
            return {n.strip(): f.strip() for n, _, f in (p.partition("=") for p in pairs)}
        return value

    @field_validator("rule_functions")
    @classmethod
    def _function_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, spec in value.items():
            if not name.isidentifier():
                raise ValueError(f"{name!r} is not a name (letters, digits, _)")
            module, _, function = spec.rpartition(":")
            if not module or not function.isidentifier():
                raise ValueError(f"{name} = {spec!r} is not module:function")
        return value

    @field_validator("render_url", mode="before")
    @classmethod
    def _one_pattern(cls, value: Any) -> Any:
        # a regular expression may hold commas: a string (environment, TOML) is one pattern
        return [value] if isinstance(value, str) else value

    @field_validator("render_url")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return value

    @field_validator("proxies")
    @classmethod
    def _proxy_urls(cls, value: list[str]) -> list[str]:
        from gossamer.fetch.proxies import ProxyError, parse_proxy

        for url in value:
            try:
                parse_proxy(url)
            except ProxyError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("metrics_bind")
    @classmethod
    def _bind_address(cls, value: str) -> str:
        if not _BIND.fullmatch(value):
            raise ValueError("must be an IP address or a host name, e.g. 0.0.0.0")
        return value

    @field_validator("user_agent", "robots_token")
    @classmethod
    def _printable(cls, value: str) -> str:
        if any(ord(c) < 32 for c in value):
            raise ValueError("must not contain control characters")
        return value


class JobSettings(CrawlSettings, ClusterSettings):
    """A cluster job: every crawl setting and every cluster setting, flat (the JSON a job
    stores in Redis)."""


Settings = TypeVar("Settings", bound=BaseModel)

_ENV_PREFIX = "GOSSAMER_"
_TABLE_FIELDS = frozenset({"rule_functions"})
"""Settings whose value is a table: top-level tables of a config file without [crawl]."""
_MAX_CONFIG_BYTES = 1 << 20
_MAX_SEED_LINE = 64 * 1024
_SEEDS_CHUNK = 1 << 20
_TOO_LONG = "is longer than 64 KiB"
_NOT_TEXT = "is not text (a NUL byte)"


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


def _from_env(env: Mapping[str, str], model: type[BaseModel]) -> dict[str, Any]:
    fields = model.model_fields
    values: dict[str, Any] = {}
    for key, value in env.items():
        if key.startswith(_ENV_PREFIX):
            name = key[len(_ENV_PREFIX) :].lower()
            if name in fields:
                values[name] = value
    return values


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "settings"
    return f"invalid setting '{field}': {first['msg']}"


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
    return _validate(model, merged)


def _without_cluster_keys(values: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A config file's values for ``model``: its cluster keys, when ``model`` has none, are
    checked (a bad one is still an error) and left out."""
    if issubclass(model, ClusterSettings):
        return values
    cluster = {k: values.pop(k) for k in list(values) if k in ClusterSettings.model_fields}
    _validate(ClusterSettings, cluster)
    return values


def _validate(model: type[Settings], values: Mapping[str, Any]) -> Settings:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


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

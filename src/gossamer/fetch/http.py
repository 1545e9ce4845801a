"""HTTP fetching: one pooled aiohttp session, capped content decoding, a fetch that never raises.

`Fetcher.fetch` sends one GET, never follows redirects (the crawler sends each target back
through its pipeline) and turns every network, protocol and HTTP problem into a `FetchResult`
whose ``error`` is one short reason:

- ``invalid-url``: unparsable URL, no host, a scheme other than http/https
- ``dns``: the host name did not resolve (or its look-up timed out)
- ``blocked-address``: the address guard (`gossamer.fetch.guard`) forbids every address of
  the host; no connection was attempted
- ``connection-refused``: nothing listens on the port
- ``connect-timeout``: the TCP connect took longer than ``connect_timeout``
- ``connect-error``: any other failure to connect (unreachable network, ...)
- ``tls``: TLS handshake or certificate failure
- ``read-timeout``: no byte arrived for ``read_timeout`` (response head or body)
- ``timeout``: the whole request exceeded ``total_timeout``
- ``server-disconnected``: the connection closed before a complete response head
- ``connection-reset``: the peer reset the connection
- ``incomplete-body``: the connection closed before the announced end of the body
- ``protocol-error``: malformed status line, headers or chunked framing
- ``unsupported-encoding``: a Content-Encoding we cannot decode; the raw body is returned
- ``decode-error``: corrupt gzip/deflate/br/zstd data; the body decoded so far is returned
- ``decompression-bomb``: decoding hit ``max_decoded_bytes`` at a ratio over `BOMB_RATIO`
- ``connection-error``: any other socket error
- ``client-error``: any other aiohttp error
- ``unexpected-error``: a bug; logged with its traceback
- ``socks-error``: a SOCKS5 proxy refused or failed the request
- ``no-proxy``: a proxy pool is set and none of its proxies is live
- ``proxy-error``: every proxy tried failed (see below)

An error after the status line keeps ``status``, ``headers`` and the partial body, with
``truncated=True``. Bodies are capped twice: at most ``max_body_bytes`` are taken from the
wire, and decoding stops once ``max_decoded_bytes`` are produced, so a gzip or brotli bomb
never allocates much more than the cap; either cut sets ``truncated=True`` and closes the
connection instead of draining it. A compressed stream that ends early is also flagged
``truncated``. Codings: identity, gzip, x-gzip, deflate (zlib-wrapped or raw) and br, one at
a time (a stacked ``gzip, br`` counts as unsupported); every member of a multi-member gzip
body is decoded. A decoding fallback is named in ``flags``: ``deflate-raw-fallback`` (raw
deflate that looked zlib-wrapped) and ``trailing-garbage`` (bytes after the compressed data
that are not a further gzip member, left unread; the body decoded before them is kept).

``started_at`` is stamped when aiohttp starts sending the request (`_StampingRequest`), after
DNS, connect and TLS, where its ``on_request_headers_sent`` trace signal would fire, without
the cost of the trace machinery on every request; the head goes out on a later turn of the
event loop (milliseconds later on a busy loop). ``answered_at`` is when the response head
arrived, by which time the request had surely been sent: ``sent_by`` is what the scheduler's
per-host spacing measures from, so the gap the host sees is never short.

``max_bandwidth`` paces body bytes (as received, before decoding) through one
`TokenBucket` shared by every request of the fetcher; a ``meter`` is told of every chunk.
Time a body read spends waiting for the cap is left out of ``elapsed`` (and reported as
``paced``), so the cap does not make hosts look slow to the politeness policy; it still counts
towards ``total_timeout``.

With a `ProxyPool` (``proxies``), each request goes through the proxy the pool picks for its
host. A request that fails at the proxy (`proxy_fault`: no response at all, a 407, or a
gateway error the proxy made itself) is tried again through the next proxy, at most
``proxy_retries`` times; the pool is told of each success and failure. When every try failed
the result's error is ``proxy-error``: the site was not at fault. ``FetchResult.proxy`` names
the proxy of the answer (``scheme://host:port``).

With a host gate (``gate``, :mod:`gossamer.fetch.gated`), the requests the fetcher makes of
its own accord wait for their host's politeness slot like any page: proxy checks, logins and
token requests, and the second fetch of a page after a login.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import email.utils
import errno
import functools
import logging
import re
import time
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC
from types import MappingProxyType
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver
from aiohttp.client_proto import ResponseHandler
from aiohttp.connector import Connection
from aiohttp.http_exceptions import ContentLengthError, HttpProcessingError, TransferEncodingError
from multidict import CIMultiDictProxy
from python_socks import ProxyError as SocksError

from gossamer import tls
from gossamer.fetch.auth import RequestAuth
from gossamer.fetch.decoding import BOMB_RATIO, Body, body_caps
from gossamer.fetch.dns import CachingResolver, parse_resolve_overrides
from gossamer.fetch.exchange import Exchange, PeerResponse, capture, cut_by
from gossamer.fetch.gated import HostPace, leave
from gossamer.fetch.guard import AddressGuard, BlockedAddress, GuardedResolver
from gossamer.fetch.proxies import ProxyPool, proxy_fault
from gossamer.fetch.ratelimit import ByteMeter, TokenBucket
from gossamer.proxyurl import Proxy
from gossamer.redact import redact_url
from gossamer.safe import safe_location, safe_text
from gossamer.urls import host_key, is_plainly_canonical

__all__ = [
    "BOMB_RATIO",
    "DEFAULT_HEADERS",
    "FetchConfig",
    "FetchResult",
    "FetchStats",
    "Fetcher",
    "parse_content_type",
    "parse_retry_after",
]

log = logging.getLogger(__name__)
_TOKEN_CHARS = r"[!#$%&'*+.^_`|~0-9a-z-]"
_MIME = re.compile(f"{_TOKEN_CHARS}{{1,127}}/{_TOKEN_CHARS}{{1,127}}")
_CHARSET = re.compile(f"{_TOKEN_CHARS}{{1,64}}")
Clock = Callable[[], float]


DEFAULT_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Accept-Encoding": "gzip, deflate, br, zstd",
        "Accept-Language": "en;q=0.9,*;q=0.5",
    }
)
_NO_HEADERS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one GET; see the module doc for the ``error`` reasons.

    ``headers`` has lower-cased names; repeated headers are joined with ``", "`` (RFC 9110
    5.3), except ``set-cookie`` whose values are joined with ``"\\n"``. ``body`` is
    content-decoded. ``started_at`` (injected monotonic clock) is when the request head was
    handed to the socket, or when `Fetcher.fetch` began if it never got that far; ``elapsed``
    runs from then to the end of the body or the error, less ``paced``, the seconds the body
    read waited for the bandwidth cap. ``fetched_at`` is wall-clock unix time at the end.
    ``wire_bytes`` counts body bytes received from the network, before content decoding.
    ``retry_after`` is in seconds; ``location`` is set for 3xx only.
    """

    url: str
    status: int | None
    headers: Mapping[str, str]
    body: bytes
    content_type: str | None
    charset: str | None
    truncated: bool
    error: str | None
    started_at: float
    fetched_at: float
    elapsed: float
    wire_bytes: int
    retry_after: float | None
    location: str | None
    paced: float = 0.0
    answered_at: float | None = None
    """When the response head arrived (injected monotonic clock); None without a response."""
    flags: tuple[str, ...] = ()
    """Decoding fallbacks taken (see the module doc); empty for most responses."""
    exchange: Exchange | None = None
    """The exchange as sent and received, with ``keep_wire`` and a response; else None."""
    proxy: str | None = None
    """The proxy the request went through (``scheme://host:port``, no credentials), or None."""
    rendered: bool = False
    """``body`` is the DOM a browser rendered (``gossamer.fetch.render``), not the answer's."""

    @property
    def sent_by(self) -> float:
        """A time by which the request had surely reached the socket: when its answer began,
        else when the fetch ended. ``started_at`` can be early: aiohttp signals the head as
        sent before it writes it (on the event loop's next turns, later under load), so
        politeness spaces requests from this time instead."""
        if self.answered_at is not None:
            return self.answered_at
        return self.started_at + self.elapsed + self.paced

    @property
    def ok(self) -> bool:
        """True for a complete 2xx response without error."""
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def is_redirect(self) -> bool:
        """True for a 3xx response that names a Location."""
        return self.status is not None and 300 <= self.status < 400 and bool(self.location)


@dataclass(frozen=True)
class FetchConfig:
    """Fetcher settings; sizes in bytes, times in seconds.

    ``read_timeout`` is the longest gap between two reads (waiting for the response head
    counts); ``total_timeout`` bounds the whole request once it holds a pool slot.
    ``max_decoded_bytes`` defaults to ``max_body_bytes``. ``concurrency`` is the number of
    connections (and of concurrent fetches; callers beyond it wait for a slot, outside the
    timeouts). ``resolve`` holds ``HOST=IP`` overrides (see `parse_resolve_overrides`).
    ``headers`` are sent with every request, under any per-request headers. ``dns_*``
    configure the `CachingResolver`; ``verify_tls=False`` accepts any
    certificate. Idle keep-alive connections close after ``keepalive_timeout``.
    ``max_bandwidth`` caps the body bytes per second of all requests together (None: no cap).
    ``keep_wire`` makes every result with a response carry its `Exchange` (for ``--warc``).
    With a proxy pool, ``proxy_retries`` bounds the tries through further proxies after a
    proxy failed, and ``proxy_check_url`` is what `Fetcher.check_proxy` fetches.
    """

    user_agent: str = "gossamer/0.1"
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0
    max_body_bytes: int = 10 * 1024 * 1024
    max_decoded_bytes: int | None = None
    concurrency: int = 100
    resolve: tuple[str, ...] = ()
    headers: Mapping[str, str] = field(default_factory=lambda: DEFAULT_HEADERS)
    dns_ttl: float = 300.0
    dns_negative_ttl: float = 10.0
    keepalive_timeout: float = 15.0
    verify_tls: bool = True
    max_bandwidth: int | None = None
    keep_wire: bool = False
    proxy_retries: int = 2
    proxy_check_url: str | None = None

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout", "total_timeout", "keepalive_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.max_body_bytes < 1 or self.decoded_cap < 1 or self.concurrency < 1:
            raise ValueError("max_body_bytes, max_decoded_bytes and concurrency must be >= 1")
        if self.max_bandwidth is not None and self.max_bandwidth < 1:
            raise ValueError("max_bandwidth must be >= 1")
        if self.proxy_retries < 0:
            raise ValueError("proxy_retries must be >= 0")
        parse_resolve_overrides(self.resolve)

    @property
    def decoded_cap(self) -> int:
        """The effective cap on decoded body bytes."""
        return self.max_body_bytes if self.max_decoded_bytes is None else self.max_decoded_bytes


DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the fetch-time histogram in :attr:`FetchStats.durations`."""


@dataclass(frozen=True, slots=True)
class FetchStats:
    """A snapshot of a `Fetcher`'s counters.

    ``responses`` counts by status class (``"2xx"``...), ``errors`` by reason; a response
    whose body failed counts in both. ``wire_bytes``/``body_bytes`` are body bytes before and
    after content decoding. ``waiting`` fetches wait for a pool slot, ``in_flight`` hold one.
    ``latency`` sums the ``elapsed`` of the fetches that got a response, ``paced`` the seconds
    bodies waited for the bandwidth cap.
    """

    requests: int
    in_flight: int
    waiting: int
    responses: Mapping[str, int]
    errors: Mapping[str, int]
    truncated: int
    wire_bytes: int
    body_bytes: int
    latency: float = 0.0
    paced: float = 0.0
    durations: tuple[int, ...] = ()
    """Fetches by ``elapsed``: one count per bound of :data:`DURATION_BUCKETS` (at most that
    many seconds, not cumulative), the last for the slower ones."""
    duration_sum: float = 0.0
    """The ``elapsed`` of every fetch, summed (``latency`` counts answered ones only)."""

    @property
    def mean_latency(self) -> float:
        """Mean ``elapsed`` of the fetches that got a response (0 before the first)."""
        answered = sum(self.responses.values())
        return self.latency / answered if answered else 0.0


class CheckRules(Protocol):
    """The robots.txt rules a proxy check obeys (`gossamer.frontier.robots.RobotsCache`)."""

    def verdict(self, url: str) -> bool | None:
        """Whether the known rules allow ``url``; None when its host's are not known."""
        ...

    async def learn(self, url: str, response: FetchResult) -> bool | None:
        """Take ``url``'s host's rules from its robots.txt ``response``; their verdict on
        ``url``, None when the answer says nothing for sure."""
        ...


class Fetcher:
    """Fetches URLs over one pooled aiohttp session (see the module doc for the contract).

    ``resolver`` replaces the `CachingResolver` built from the config (the caller then owns
    and closes it). ``clock`` (monotonic) stamps ``started_at``/``elapsed``; ``wall_clock``
    stamps ``fetched_at`` and dates ``Retry-After``; ``clock`` also drives the bandwidth cap.
    ``meter`` is told the size of every body chunk received. ``proxies`` sends requests
    through a proxy pool (see the module doc), whose checks the fetcher then makes
    (`check_proxy`). ``auth`` (`gossamer.fetch.auth`) gives each request the headers of its
    own URL's login and may have a page that looked logged out fetched once more after a new
    login (logins and token requests go direct, not through the pool). Use as an async
    context manager or call `close`. The session is created on first use, inside the
    running loop. ``gate`` paces the requests the fetcher makes of its own accord (see the
    module doc).
    """

    def __init__(
        self,
        config: FetchConfig | None = None,
        *,
        resolver: AbstractResolver | None = None,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        meter: ByteMeter | None = None,
        guard: AddressGuard | None = None,
        proxies: ProxyPool | None = None,
        auth: RequestAuth | None = None,
        gate: HostPace | None = None,
    ) -> None:
        self._config = config = config or FetchConfig()
        self._proxies = proxies
        self._auth = auth
        self._gate = gate
        self._check_rules: CheckRules | None = None
        if auth is not None and gate is not None:
            auth.set_gate(gate)
        self._socks: dict[str, aiohttp.ClientSession] = {}
        self._proxied: dict[str, aiohttp.ClientSession] = {}
        """Sessions whose requests go through an HTTP(S) proxy: those logins use."""
        if proxies is not None:
            proxies.set_checker(self.check_proxy)
        self._address_guard = guard
        self._resolver = resolver
        self._owns_resolver = resolver is None
        self._clock = clock
        self._wall_clock = wall_clock
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(config.concurrency)
        self._requests = self._waiting = self._in_flight = self._truncated = 0
        self._wire_bytes = self._body_bytes = 0
        self._latency = self._paced = self._duration_sum = 0.0
        self._by_class = [0] * 6
        self._durations = [0] * (len(DURATION_BUCKETS) + 1)
        self._errors: dict[str, int] = {}
        self._guard = _StuckBodyGuard()
        self._meter = meter
        self._bucket = (
            None if config.max_bandwidth is None else TokenBucket(config.max_bandwidth, clock=clock)
        )
        self._pacing = meter is not None or self._bucket is not None
        self._ca_file_deferred = config.verify_tls and tls.ca_file_deferred()

    @property
    def meter(self) -> ByteMeter | None:
        """The meter told of every body chunk, if any."""
        return self._meter

    @property
    def resolver(self) -> AbstractResolver | None:
        """The resolver in use (None until the session exists, unless injected)."""
        return self._resolver

    async def __aenter__(self) -> Fetcher:
        self._open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def proxies(self) -> ProxyPool | None:
        """The proxy pool requests go through, if any."""
        return self._proxies

    async def close(self) -> None:
        """Close the pool (and the resolver, unless it was injected); a later fetch reopens."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        for session in (*self._socks.values(), *self._proxied.values()):
            await session.close()
        self._socks.clear()
        self._proxied.clear()
        if self._owns_resolver and self._resolver is not None:
            await self._resolver.close()
            self._resolver = None

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        """GET ``url`` without following redirects; never raises for network/HTTP problems."""
        self._requests += 1
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._in_flight += 1
        try:
            if self._auth is None:
                result = await self._send(url, headers)
            else:
                result = await self._fetch_with_auth(self._auth, url, headers)
        finally:
            self._in_flight -= 1
            self._slots.release()
        self._count(result)
        return result

    def set_check_rules(self, rules: CheckRules) -> None:
        """The robots.txt rules proxy checks obey (the crawl's robots cache)."""
        self._check_rules = rules

    async def check_proxy(self, proxy: Proxy) -> float | None:
        """Check ``proxy`` with ``proxy_check_url``: the seconds the check URL's request
        through it took when the proxy relayed the site's answer, whatever its status (a
        redirect, a 404 or a 500 is the site's answer: the proxy works), or None when the
        proxy failed it (`proxy_fault`; no check URL counts as a failed check).

        A check is a request to the site like any other: it waits for the host's slot in
        the gate, and obeys robots.txt. While the host's rules are not known, the check
        first asks for its robots.txt through the proxy (the rules learnt are the crawl's);
        when the rules forbid the check URL, or that answer says nothing for sure about them,
        the robots.txt answer is the check."""
        url = self._config.proxy_check_url
        if url is None or not await self._proxy_listens(proxy):
            return None
        rules = self._check_rules
        allowed = True if rules is None else rules.verdict(url)
        if allowed is None:
            assert rules is not None
            robots, seconds = await self._check_request(host_key(url) + "/robots.txt", proxy)
            if seconds is None or not await rules.learn(url, robots):
                return seconds
        elif not allowed:
            url = host_key(url) + "/robots.txt"
        return (await self._check_request(url, proxy))[1]

    async def _proxy_listens(self, proxy: Proxy) -> bool:
        """Whether ``proxy`` accepts a TCP connection: a proxy that does not is dead without a
        request to the site, so a round of dead proxies takes none of the site's slots (and
        holds none of its pages back)."""
        try:
            async with asyncio.timeout(self._config.connect_timeout):
                _, writer = await asyncio.open_connection(proxy.host, proxy.port)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def _check_request(self, url: str, proxy: Proxy) -> tuple[FetchResult, float | None]:
        """``url`` through ``proxy`` in its host's slot, and the seconds it took (None when
        the proxy failed it)."""
        gate = self._gate
        taken = None if gate is None else await gate.enter(url)
        started = self._clock()
        result = fault = None
        try:
            result = await self._fetch(url, None, proxy)
            fault = proxy_fault(result, proxy)
        finally:
            if gate is not None:  # the proxy's fault tells nothing of the site
                leave(gate, taken, result if fault is None else None)
        return result, None if fault is not None else self._clock() - started

    async def _fetch_proxied(
        self, url: str, headers: Mapping[str, str] | None, pool: ProxyPool
    ) -> FetchResult:
        """``url`` through the pool's proxies for its host, the next one after a proxy fails."""
        domain = _domain(url)
        tried: list[Proxy] = []
        result = None
        for _ in range(self._config.proxy_retries + 1):
            proxy = pool.pick(domain, tried)
            if proxy is None:
                break
            result = await self._fetch(url, headers, proxy)
            reason = proxy_fault(result, proxy)
            if reason is None:
                pool.succeeded(proxy, result.elapsed)
                return result
            pool.failed(proxy, reason)
            tried.append(proxy)
        if result is None:
            return self._failure(url, self._clock(), _NoProxy())
        return replace(result, error="proxy-error")

    def stats(self) -> FetchStats:
        """Return a snapshot of the counters."""
        return FetchStats(
            requests=self._requests,
            in_flight=self._in_flight,
            waiting=self._waiting,
            responses=MappingProxyType(
                {f"{i}xx": n for i, n in enumerate(self._by_class) if n and i}
                | ({"other": self._by_class[0]} if self._by_class[0] else {})
            ),
            errors=MappingProxyType(dict(self._errors)),
            truncated=self._truncated,
            wire_bytes=self._wire_bytes,
            body_bytes=self._body_bytes,
            latency=self._latency,
            paced=self._paced,
            durations=tuple(self._durations),
            duration_sum=self._duration_sum,
        )

    def _count(self, result: FetchResult) -> None:
        if result.status is not None:
            cls = result.status // 100
            self._by_class[cls if 1 <= cls <= 5 else 0] += 1
            self._latency += result.elapsed
        if result.error is not None:
            self._errors[result.error] = self._errors.get(result.error, 0) + 1
        self._truncated += result.truncated
        self._wire_bytes += result.wire_bytes
        self._body_bytes += len(result.body)
        self._paced += result.paced
        self._durations[bisect.bisect_left(DURATION_BUCKETS, result.elapsed)] += 1
        self._duration_sum += result.elapsed

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self._new_session()
        return self._session

    def _new_session(self, proxy: Proxy | None = None) -> aiohttp.ClientSession:
        config = self._config
        if self._resolver is None:
            self._resolver = CachingResolver(
                overrides=config.resolve,
                ttl=config.dns_ttl,
                negative_ttl=config.dns_negative_ttl,
                timeout=config.connect_timeout,
            )
        resolver: AbstractResolver = self._resolver
        if self._address_guard is not None:
            resolver = GuardedResolver(resolver, self._address_guard)
        logs_in = self._auth is not None and self._auth.logs_in
        if self._ca_file_deferred and (logs_in or self._proxies is not None):
            self._load_ca_file()  # logins and HTTPS proxies shake hands outside `_fetch`
        options: dict[str, Any] = {
            "limit": config.concurrency,
            "limit_per_host": 0,
            "resolver": resolver,
            "use_dns_cache": False,
            "keepalive_timeout": config.keepalive_timeout,
            "ssl": tls.verified_context() if config.verify_tls else False,
        }
        socks = proxy is not None and proxy.scheme == "socks5"
        connector = _socks(proxy, options) if socks and proxy else _connector(proxy, options)
        return aiohttp.ClientSession(
            connector=connector,
            headers={**config.headers, "User-Agent": config.user_agent},
            timeout=aiohttp.ClientTimeout(
                total=config.total_timeout,
                sock_connect=config.connect_timeout,
                sock_read=config.read_timeout,
            ),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            proxy=None if proxy is None or socks or proxy is _UNROUTED else proxy.url,
            request_class=_StampingRequest,
            response_class=PeerResponse if config.keep_wire else aiohttp.ClientResponse,
        )

    def _login_session(self, url: str) -> aiohttp.ClientSession:
        """The session logins for ``url`` go out with (form POST, token request, login hook):
        through the proxy the pool gives its host, like its pages; with no live proxy, one
        that reaches nothing (a login never bypasses the pool)."""
        if self._proxies is None:
            return self._open()
        proxy = self._proxies.peek(_domain(url))
        key = "" if proxy is None else proxy.url
        if proxy is not None and proxy.scheme == "socks5":
            return self._route(proxy)[0]
        session = self._proxied.get(key)
        if session is None:
            session = self._proxied[key] = self._new_session(proxy or _UNROUTED)
        return session

    async def _fetch_with_auth(
        self, auth: RequestAuth, url: str, headers: Mapping[str, str] | None
    ) -> FetchResult:
        session = self._login_session(url)
        before = auth.sent
        sent = await auth.prepare(url, session)
        paced = auth.sent != before  # a login went first: the page waits for the host's pace
        result = await self._send(
            url, {**headers, **sent} if headers and sent else sent or headers, paced=paced
        )
        if await auth.check(url, sent, result.status, result.headers, result.body, session):
            self._count(result)  # the logged-out answer counts as a request of its own
            self._requests += 1
            sent = await auth.prepare(url, session)
            result = await self._send(url, {**(headers or {}), **sent}, paced=True)
            await auth.check(
                url, sent, result.status, result.headers, result.body, session, retried=True
            )
        return result

    async def _send(
        self, url: str, headers: Mapping[str, str] | None, *, paced: bool = False
    ) -> FetchResult:
        """Send ``url``'s request; ``paced``: through the host gate, pace only (a second
        request of the same lease: after a login, or the fetch again after a new one)."""
        if paced and self._gate is not None:
            return await self._send_paced(url, headers, self._gate)
        if self._proxies is None:
            return await self._fetch(url, headers)
        return await self._fetch_proxied(url, headers, self._proxies)

    async def _send_paced(
        self, url: str, headers: Mapping[str, str] | None, gate: HostPace
    ) -> FetchResult:
        taken = await gate.enter(url, pace_only=True)
        result = None
        try:
            result = await self._send(url, headers)
        finally:
            leave(gate, taken, result)
        return result

    async def _fetch(
        self, url: str, headers: Mapping[str, str] | None, proxy: Proxy | None = None
    ) -> FetchResult:
        if self._ca_file_deferred and url[:6].lower() == "https:":
            self._load_ca_file()
        probe = _Probe(self._clock)
        if self._address_guard is not None and self._address_guard.check_url(url) is not None:
            return self._failure(url, probe.started_at, BlockedAddress(url))
        session, via = self._route(proxy)
        sending = _SENDING.set(probe)
        try:
            response = await session.get(
                _request_url(url), headers=headers, allow_redirects=False, **via
            )
        except Exception as exc:
            result = self._failure(url, probe.started_at, exc)
        else:
            probe.answered_at = self._clock()
            try:
                result = await self._read(url, probe, response)
            finally:
                response.release()
        finally:
            _SENDING.reset(sending)
        return result if proxy is None else replace(result, proxy=proxy.label)

    def _load_ca_file(self) -> None:
        tls.load_ca_file()
        self._ca_file_deferred = False

    def _route(self, proxy: Proxy | None) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
        """The session for a request through ``proxy`` and the arguments naming it: an HTTP(S)
        proxy is an argument of the shared session, a SOCKS5 one has a session of its own."""
        if proxy is None:
            return self._open(), {}
        if proxy.scheme != "socks5":
            return self._open(), {"proxy": proxy.url}
        session = self._socks.get(proxy.url)
        if session is None:
            session = self._socks[proxy.url] = self._new_session(proxy)
        return session, {}

    async def _read(self, url: str, probe: _Probe, response: aiohttp.ClientResponse) -> FetchResult:
        config = self._config
        raw = response.headers
        keep = config.keep_wire
        wire_cap, decoded_cap = body_caps(url, config.max_body_bytes, config.decoded_cap)
        body = Body(raw.get("Content-Encoding"), wire_cap, decoded_cap, keep_raw=keep)
        error = body.error
        paced = 0.0
        stopped = False  # bytes were left unread: the wire body is cut
        protocol = self._guard.watch(response)
        try:
            content = response.content
            while chunk := await content.readany():
                if self._pacing:
                    paced += await self._pace(len(chunk))
                if not body.feed(chunk):
                    response.close()
                    stopped = True
                    break
            else:
                body.finish()
            error = body.error
        except Exception as exc:
            error = _reason(exc, url)
            body.truncated = stopped = True
            response.close()
        finally:
            self._guard.unwatch(protocol)
        status = response.status
        headers = _header_map(raw)
        content_type, charset = parse_content_type(headers.get("content-type"))
        location = headers.get("location") if 300 <= status < 400 else None
        now = self._wall_clock()
        exchange = None
        if keep:
            cut = cut_by(error, body.truncated) if stopped else None
            exchange = capture(response, body.raw() or b"", cut)
        return FetchResult(
            url=url,
            status=status,
            headers=headers,
            body=body.value(),
            content_type=content_type,
            charset=charset,
            truncated=body.truncated,
            error=error,
            started_at=probe.started_at,
            answered_at=probe.answered_at,
            fetched_at=now,
            elapsed=self._clock() - probe.started_at - paced,
            wire_bytes=body.wire,
            retry_after=parse_retry_after(raw.get("Retry-After"), now, raw.get("Date")),
            location=safe_location(raw.getone("Location")) if location is not None else None,
            paced=paced,
            flags=body.flags,
            exchange=exchange,
        )

    async def _pace(self, size: int) -> float:
        """Tell the meter of a chunk and wait for the cap; returns the seconds waited."""
        if self._meter is not None:
            self._meter.add(size)
        return 0.0 if self._bucket is None else await self._bucket.pay(size)

    def _failure(self, url: str, started_at: float, exc: Exception) -> FetchResult:
        return FetchResult(
            url=url,
            status=None,
            headers=_NO_HEADERS,
            body=b"",
            content_type=None,
            charset=None,
            truncated=False,
            error=_reason(exc, url),
            started_at=started_at,
            fetched_at=self._wall_clock(),
            elapsed=self._clock() - started_at,
            wire_bytes=0,
            retry_after=None,
            location=None,
        )


class _NoProxy(Exception):
    """No live proxy for a request (the error ``no-proxy``)."""


def _domain(url: str) -> str:
    """The host name of ``url`` (lower case), or "" if it has none."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


_UNROUTED = Proxy(url="unrouted://", scheme="unrouted", host="", port=0)
"""Stands for "no live proxy" where a session is made: its requests fail."""


class _Unrouted(aiohttp.TCPConnector):
    """A connector that connects nowhere: a login's session when no proxy is live."""

    async def _create_connection(
        self,
        req: aiohttp.ClientRequest,
        traces: list[Any],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109
    ) -> Any:
        raise aiohttp.ClientConnectionError("no live proxy")


def _connector(proxy: Proxy | None, options: dict[str, Any]) -> aiohttp.TCPConnector:
    if proxy is _UNROUTED:
        return _Unrouted(**options)
    return aiohttp.TCPConnector(**options)


def _socks(proxy: Proxy, options: dict[str, Any]) -> aiohttp.TCPConnector:
    """A connector through a SOCKS5 proxy; the proxy resolves the sites' names."""
    from aiohttp_socks import ProxyConnector, ProxyType

    return ProxyConnector(
        host=proxy.host,
        port=proxy.port,
        proxy_type=ProxyType.SOCKS5,
        username=proxy.login,
        password=proxy.password,
        rdns=True,
        **options,
    )


def _request_url(url: str) -> str | yarl.URL:
    """The URL for aiohttp: a plainly canonical one (:func:`is_plainly_canonical`: safe
    characters only, nothing to encode or remove) as a ready `yarl.URL`, which skips yarl's
    parse and encoding pass, a tenth of aiohttp's work per request; any other as it is."""
    return yarl.URL(url, encoded=True) if is_plainly_canonical(url) else url


class _Probe:
    """One request's times: when `Fetcher._fetch` began it, then when aiohttp started to send
    it (`_StampingRequest`), and when its answer began."""

    __slots__ = ("answered_at", "clock", "started_at")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started_at = clock()
        self.answered_at: float | None = None


_SENDING: ContextVar[_Probe | None] = ContextVar("gossamer_sending", default=None)
"""The probe of the request the current task is making (set by `Fetcher._fetch`)."""


class _StampingRequest(aiohttp.ClientRequest):
    """aiohttp's request, stamping the probe of the task's request with the time it starts
    sending (its connection made: DNS, connect and TLS done)."""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        probe = _SENDING.get()
        if probe is not None:
            probe.started_at = probe.clock()
        return await super().send(conn)


class _StuckBodyGuard:
    """Wakes body readers that aiohttp's C parser leaves waiting on a closed connection.

    On malformed chunked framing mid-body, aiohttp 3.14's C parser drops the body reader
    without feeding it EOF or an error, and stops the read timeout, so reading would hang
    until the total timeout. So: when a connection closes while a body read from it has
    neither EOF nor an error, that body gets a `ClientPayloadError` (a protocol error).
    """

    def __init__(self) -> None:
        self._reading: weakref.WeakKeyDictionary[ResponseHandler, aiohttp.StreamReader] = (
            weakref.WeakKeyDictionary()
        )
        self._hooked: weakref.WeakSet[ResponseHandler] = weakref.WeakSet()

    def watch(self, response: aiohttp.ClientResponse) -> ResponseHandler | None:
        """Start guarding ``response``'s body; pass the result to `unwatch` when done."""
        connection = response.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is None:  # the whole body is already buffered
            return None
        closed = protocol.closed
        if closed is None:  # the connection is already gone
            _unstick(protocol, response.content)
            return None
        if protocol not in self._hooked:
            self._hooked.add(protocol)
            closed.add_done_callback(functools.partial(self._on_closed, protocol))
        self._reading[protocol] = response.content
        return protocol

    def unwatch(self, protocol: ResponseHandler | None) -> None:
        """Stop guarding the body read from ``protocol``."""
        if protocol is not None:
            self._reading.pop(protocol, None)

    def _on_closed(self, protocol: ResponseHandler, closed: asyncio.Future[None]) -> None:
        if not closed.cancelled():
            closed.exception()  # mark it retrieved; the reader reports the failure
        content = self._reading.pop(protocol, None)
        if content is not None:
            _unstick(protocol, content)


def _unstick(protocol: ResponseHandler, content: aiohttp.StreamReader) -> None:
    if not content.is_eof() and content.exception() is None:
        error = aiohttp.ClientPayloadError("connection closed inside a malformed body")
        error.__cause__ = protocol.exception()
        content.set_exception(error)


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """Split a Content-Type header into (lower-case mime type, lower-case charset).

    Either is None unless it is well formed (``type/subtype`` of RFC 9110 token characters; a
    charset of token characters, at most 64): a hostile header yields no value, never an odd
    one.
    """
    if not value:
        return None, None
    mime, _, params = value.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'").strip().lower() or None
            break
    mime = mime.strip().lower()
    if charset is not None and not _CHARSET.fullmatch(charset):
        charset = None
    return (mime if _MIME.fullmatch(mime) else None), charset


def parse_retry_after(value: str | None, now: float, date: str | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or None.

    An HTTP-date is measured against the response's ``Date`` header when it parses (so
    clock skew between us and the server does not matter), else against ``now`` (unix time).
    Dates in the past give 0.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    when = _http_date(value)
    if when is None:
        return None
    reference = _http_date(date) if date else None
    return max(0.0, when - (now if reference is None else reference))


def _http_date(value: str) -> float | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


_LINE_JOINED = frozenset({"set-cookie", "x-robots-tag"})
"""Headers whose repeated values are joined one per line, not by commas: a cookie's date
holds a comma, and an ``X-Robots-Tag`` user-agent prefix holds to the end of its header."""


def _header_map(raw: CIMultiDictProxy[str]) -> Mapping[str, str]:
    """The headers, names lower-cased, names and values made valid text (`safe_text`)."""
    headers: dict[str, str] = {}
    for name, value in raw.items():
        key = safe_text(name.lower())
        value = safe_text(value)
        previous = headers.get(key)
        if previous is None:
            headers[key] = value
        else:
            headers[key] = f"{previous}{chr(10) if key in _LINE_JOINED else ', '}{value}"
    return MappingProxyType(headers)


def _reason(exc: BaseException, url: str) -> str:
    """Map an exception raised while fetching to a short reason (see the module doc)."""
    match exc:
        case aiohttp.InvalidURL() | aiohttp.NonHttpUrlClientError():
            return "invalid-url"
        case aiohttp.ConnectionTimeoutError():
            return "connect-timeout"
        case aiohttp.ServerTimeoutError():
            return "read-timeout"
        case TimeoutError():
            return "timeout"
        case BlockedAddress():
            return "blocked-address"
        case aiohttp.ClientConnectorDNSError() if isinstance(exc.os_error, BlockedAddress):
            return "blocked-address"
        case aiohttp.ClientConnectorDNSError():
            return "dns"
        case aiohttp.ClientSSLError() | aiohttp.ClientConnectorCertificateError():
            return "tls"
        case aiohttp.ClientConnectorError():
            refused = exc.os_error.errno == errno.ECONNREFUSED
            return "connection-refused" if refused else "connect-error"
        case aiohttp.ServerDisconnectedError():
            return "server-disconnected"
        case aiohttp.ClientPayloadError() | HttpProcessingError():
            return _body_reason(exc)
        case aiohttp.ClientResponseError():
            return "protocol-error"
        case ConnectionResetError():
            return "connection-reset"
        case OSError() if exc.errno == errno.ECONNRESET:
            return "connection-reset"
        case OSError():
            return "connection-error"
        case aiohttp.ClientError():
            return "client-error"
        case SocksError():
            return "socks-error"
        case _NoProxy():
            return "no-proxy"
    log.warning(
        "unexpected error fetching %s",
        redact_url(url),
        exc_info=exc,
        extra={"event": "fetch-unexpected-error", "url": redact_url(url)},
    )
    return "unexpected-error"


def _body_reason(exc: Exception) -> str:
    # aiohttp records a reset that cut a body only in the payload error's message
    if "ConnectionResetError" in str(exc):
        return "connection-reset"
    cause = exc if isinstance(exc, HttpProcessingError) else exc.__cause__
    if isinstance(cause, ContentLengthError) or (
        isinstance(cause, TransferEncodingError) and "Not enough data" in cause.message
    ):
        return "incomplete-body"
    return "protocol-error"

"""HTTP fetching: pooled connections, capped content decoding, a fetch that never raises.

Direct requests go over the lean HTTP/1.1 client (`gossamer.fetch.lean`); requests through a
proxy, logins and token requests, and every request with ``http_client="aiohttp"``, over one
pooled aiohttp session (aiohttp is imported when the first of those is made). Both give the
same results, error reasons and exchanges.

`Fetcher.fetch` sends one GET, never follows redirects (the crawler sends each target back
through its pipeline) and turns every network, protocol and HTTP problem into a `FetchResult`
whose ``error`` is one short reason (`gossamer.fetch.reasons`; ``proxy-error`` below).

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

``started_at`` is stamped when the client starts sending the request, after DNS, connect
and TLS (aiohttp: `StampingRequest`, where its ``on_request_headers_sent`` signal would fire).
``answered_at`` is when the response head arrived (the request surely sent): ``sent_by``,
what the scheduler's per-host spacing measures from.

``max_bandwidth`` paces body bytes (as received, before decoding) through one
`TokenBucket` shared by every request of the fetcher; a ``meter`` is told of every chunk.
Time waiting for the cap is left out of ``elapsed`` (reported as ``paced``): the cap does not
make hosts look slow to the politeness policy; it still counts towards ``total_timeout``.

With a `ProxyPool` (``proxies``), each request goes through the proxy the pool picks for its
host; one that fails at the proxy (`proxy_fault`) is tried again through the next, at most
``proxy_retries`` times, the pool told of each outcome (`gossamer.fetch.proxyfault.
fetch_through`, which also tells the proxy's failures from the site's). When every try failed
(or no other proxy could vouch for a 404) the result is ``proxy-error``, no status: the site
was not at fault. ``FetchResult.proxy`` names the answer's proxy (``scheme://host:port``).

With a host gate (``gate``, :mod:`gossamer.fetch.gated`), the requests the fetcher makes of
its own accord wait for their host's politeness slot like any page: proxy checks, logins and
token requests, and the second fetch of a page after a login.
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import logging
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from gossamer import eventloop, tls
from gossamer.fetch.auth import RequestAuth
from gossamer.fetch.decoding import BOMB_RATIO, Body, body_caps
from gossamer.fetch.dns import CachingResolver, Resolver
from gossamer.fetch.exchange import cut_by
from gossamer.fetch.gated import HostPace, leave
from gossamer.fetch.guard import AddressGuard, BlockedAddress, GuardedResolver
from gossamer.fetch.headers import parse_content_type, parse_retry_after, retry_after
from gossamer.fetch.hostnames import HostNames
from gossamer.fetch.lean import Answer, LeanClient, Probe, idle_limit
from gossamer.fetch.proxies import ProxyPool, fetch_through, proxy_fault, proxy_listens
from gossamer.fetch.proxyfault import EITHER_FAULTS
from gossamer.fetch.ratelimit import ByteMeter, TokenBucket
from gossamer.fetch.reasons import NoProxy, reason
from gossamer.fetch.result import (
    DEFAULT_HEADERS,
    DURATION_BUCKETS,
    CheckRules,
    FetchConfig,
    FetchResult,
    FetchStats,
)
from gossamer.proxyurl import Proxy
from gossamer.safe import safe_location
from gossamer.urls import host_key

if TYPE_CHECKING:
    import aiohttp

    from gossamer.fetch.stuck import StuckBodyGuard

__all__ = [
    "BOMB_RATIO",
    "DEFAULT_HEADERS",
    "DURATION_BUCKETS",
    "CheckRules",
    "FetchConfig",
    "FetchResult",
    "FetchStats",
    "Fetcher",
    "parse_content_type",
    "parse_retry_after",
]

log = logging.getLogger(__name__)
Clock = Callable[[], float]


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})


class Fetcher:
    """Fetches URLs over pooled connections (the module doc holds the contract). ``resolver``
    replaces the config's `CachingResolver` (the caller owns it); ``clock`` (monotonic)
    stamps ``started_at``/``elapsed`` and drives the bandwidth cap, ``wall_clock`` stamps
    ``fetched_at`` and dates ``Retry-After``; ``meter`` is told every body chunk's size;
    ``proxies``: a pool the fetcher checks (`check_proxy`); ``auth`` (`gossamer.fetch.auth`)
    gives each request its login's headers and may fetch a logged-out page once more after
    a new login (logins and tokens go direct); ``gate`` paces the fetcher's own requests.
    An async context manager (or call `close`); the session is made on first use."""

    def __init__(
        self,
        config: FetchConfig | None = None,
        *,
        resolver: Resolver | None = None,
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
        self._check_first: str | None = None
        if auth is not None and gate is not None:
            auth.set_gate(gate)
        self._socks: dict[str, aiohttp.ClientSession] = {}
        self._proxied: dict[str, aiohttp.ClientSession] = {}
        """Sessions whose requests go through an HTTP(S) proxy: those logins use."""
        if proxies is not None:
            proxies.set_checker(self.check_proxy, config.proxy_check_url, config.connect_timeout)
        self._address_guard = guard
        self._resolver = resolver
        self._owns_resolver = resolver is None
        self._clock = clock
        self._wall_clock = wall_clock
        self._session: aiohttp.ClientSession | None = None
        self._lean: LeanClient | None = None
        self._lean_client = config.http_client == "lean"
        self._slots = asyncio.Semaphore(config.concurrency)
        self._requests = self._waiting = self._in_flight = self._truncated = 0
        self._wire_bytes = self._body_bytes = 0
        self._latency = self._paced = self._duration_sum = 0.0
        self._by_class = [0] * 6
        self._durations = [0] * (len(DURATION_BUCKETS) + 1)
        self._errors: dict[str, int] = {}
        self._guard: StuckBodyGuard | None = None
        """Made with the first aiohttp session."""
        self._hosts = HostNames()
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
    def resolver(self) -> Resolver | None:
        """The resolver in use (None until the session exists, unless injected)."""
        return self._resolver

    async def __aenter__(self) -> Fetcher:
        if self._lean_client:
            self._open_lean()
        else:
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
        if self._lean is not None:
            self._lean.close()
            self._lean = None
        for session in (*self._socks.values(), *self._proxied.values()):
            await session.close()
        self._socks.clear()
        self._proxied.clear()
        if self._owns_resolver and self._resolver is not None:
            await self._resolver.close()
            self._resolver = None

    async def fetch(
        self, url: str, *, headers: Mapping[str, str] | None = None, cookies: bool = True
    ) -> FetchResult:
        """GET ``url`` without following redirects; never raises for network/HTTP problems.
        Without ``cookies`` (robots.txt: no page of the site's session) it sends no cookie
        and keeps none its answer sets."""
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
                result = await self._fetch_with_auth(self._auth, url, headers, cookies)
        finally:
            self._in_flight -= 1
            self._slots.release()
        self._count(result)
        return result

    def set_check_rules(self, rules: CheckRules) -> None:
        """The robots.txt rules proxy checks obey (the crawl's robots cache)."""
        self._check_rules = rules

    async def check_proxy(self, proxy: Proxy) -> float | str:
        """Check ``proxy`` with ``proxy_check_url``: the seconds its request through it took
        when the proxy relayed the site's answer, whatever its status (a redirect, a 404 or a
        500: the proxy works), or why the proxy failed it (`proxy_fault`, ``no-connection``;
        no check URL: ``no-check-url``). A failure the site could cause (`EITHER_FAULTS`: a
        hang, a malformed head) has ``proxy_check_fallbacks`` tried in turn, the last URL
        that passed first: one site that hangs cannot fail every proxy. A check waits for
        its host's slot in the gate and obeys robots.txt: unknown rules are asked for through
        the proxy first; the robots.txt answer is the check when they forbid the URL or it
        says nothing for sure of them."""
        config = self._config
        urls = [u for u in (config.proxy_check_url, *config.proxy_check_fallbacks) if u]
        if not urls or not await proxy_listens(proxy, config.connect_timeout):
            return "no-connection" if urls else "no-check-url"
        urls.sort(key=lambda url: url != self._check_first)
        found: float | str = "no-check-url"
        for url in urls:
            found = await self._check_with(url, proxy)
            if not isinstance(found, str):
                self._check_first = url
            if not isinstance(found, str) or found not in EITHER_FAULTS:
                break
        return found

    async def _check_with(self, url: str, proxy: Proxy) -> float | str:
        rules = self._check_rules
        allowed = True if rules is None else rules.verdict(url)
        if allowed is None:
            assert rules is not None
            robots, seconds = await self._check_request(host_key(url) + "/robots.txt", proxy)
            if isinstance(seconds, str) or not await rules.learn(url, robots):
                return seconds
        elif not allowed:
            url = host_key(url) + "/robots.txt"
        return (await self._check_request(url, proxy))[1]

    async def _check_request(self, url: str, proxy: Proxy) -> tuple[FetchResult, float | str]:
        """``url`` through ``proxy`` in its host's slot, and its seconds (or why it failed)."""
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
        return result, fault if fault is not None else self._clock() - started

    async def _fetch_proxied(
        self, url: str, headers: Mapping[str, str] | None, pool: ProxyPool, host: str | None
    ) -> FetchResult:
        """``url`` through the pool's proxies for its host, the next one after a proxy fails."""
        domain = self._hosts(url) if host is None else host
        tries = self._config.proxy_retries + 1
        found = await fetch_through(pool, domain, tries, lambda p: self._fetch(url, headers, p))
        if found is None:
            return self._failure(url, self._clock(), NoProxy())
        if found[1]:  # relayed
            return found[0]
        return msgspec.structs.replace(found[0], status=None, error="proxy-error")

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

    def _guarded_resolver(self) -> Resolver:
        """The resolver new connections use: the DNS cache, through the address guard."""
        config = self._config
        if self._resolver is None:
            self._resolver = CachingResolver(
                overrides=config.resolve,
                ttl=config.dns_ttl,
                negative_ttl=config.dns_negative_ttl,
                timeout=config.connect_timeout,
            )
        resolver: Resolver = self._resolver
        if self._address_guard is not None:
            resolver = GuardedResolver(resolver, self._address_guard)
        return resolver

    def _open_lean(self) -> LeanClient:
        config = self._config
        self._lean = LeanClient(
            self._guarded_resolver().resolve,
            headers={**config.headers, "User-Agent": config.user_agent},
            ssl_context=tls.verified_context() if config.verify_tls else tls.unverified_context(),
            connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout,
            total_timeout=config.total_timeout,
            keepalive_timeout=config.keepalive_timeout,
            limit=idle_limit(config.concurrency, loop=eventloop.running()),
        )
        return self._lean

    def _new_session(self, proxy: Proxy | None = None) -> aiohttp.ClientSession:
        tls.import_aiohttp()  # the first session: aiohttp's import skips the CA file too
        from gossamer.fetch.sending import new_session
        from gossamer.fetch.stuck import StuckBodyGuard

        if self._guard is None:
            self._guard = StuckBodyGuard()
        logs_in = self._auth is not None and self._auth.logs_in
        if self._ca_file_deferred and (logs_in or self._proxies is not None):
            self._load_ca_file()  # logins and HTTPS proxies shake hands outside `_fetch`
        return new_session(self._config, self._guarded_resolver(), proxy)

    def _login_session(self, host: str) -> aiohttp.ClientSession:
        """The session logins for ``url`` go out with (form POST, token request, login hook):
        through the proxy the pool gives its host, like its pages; with no live proxy, one
        that reaches nothing (a login never bypasses the pool)."""
        if self._proxies is None:
            return self._open()
        proxy = self._proxies.peek(host)
        key = "" if proxy is None else proxy.url
        if proxy is not None and proxy.scheme == "socks5":
            return self._route(proxy)[0]
        session = self._proxied.get(key)
        if session is None:
            tls.import_aiohttp()
            from gossamer.fetch.sending import UNROUTED

            session = self._proxied[key] = self._new_session(proxy or UNROUTED)
        return session

    async def _fetch_with_auth(
        self, auth: RequestAuth, url: str, headers: Mapping[str, str] | None, cookies: bool
    ) -> FetchResult:
        host = self._hosts(url)
        session = functools.partial(self._login_session, host)
        before = auth.sent
        sent = await auth.prepare(url, session, host=host)
        if not cookies:
            sent = {name: value for name, value in sent.items() if name != "Cookie"}
        paced = auth.sent != before  # a login went first: the page waits for the host's pace
        result = await self._send(
            url,
            {**headers, **sent} if headers and sent else sent or headers,
            paced=paced,
            host=host,
        )
        if not paced and self._gate is not None:  # a login next: spaced from its real start
            self._gate.started(url, result.sent_by)
        checked = result.status, result.headers, result.body, session
        if cookies and await auth.check(url, sent, *checked, host=host):
            self._count(result)  # the logged-out answer counts as a request of its own
            self._requests += 1
            sent = await auth.prepare(url, session, host=host)
            result = await self._send(url, {**(headers or {}), **sent}, paced=True, host=host)
            checked = result.status, result.headers, result.body, session
            await auth.check(url, sent, *checked, retried=True, host=host)
        return result

    async def _send(
        self,
        url: str,
        headers: Mapping[str, str] | None,
        *,
        paced: bool = False,
        host: str | None = None,
    ) -> FetchResult:
        """Send ``url``'s request; ``paced``: through the host gate, pace only (a second
        request of the same lease: after a login, or the fetch again after a new one).
        ``host`` is the URL's host name when the caller has it already."""
        if paced and self._gate is not None:
            return await self._send_paced(url, headers, self._gate, host)
        if self._proxies is None:
            return await self._fetch(url, headers)
        return await self._fetch_proxied(url, headers, self._proxies, host)

    async def _send_paced(
        self, url: str, headers: Mapping[str, str] | None, gate: HostPace, host: str | None
    ) -> FetchResult:
        taken = await gate.enter(url, pace_only=True)
        result = None
        try:
            result = await self._send(url, headers, host=host)
        finally:
            leave(gate, taken, result)
        return result

    async def _fetch(
        self, url: str, headers: Mapping[str, str] | None, proxy: Proxy | None = None
    ) -> FetchResult:
        if self._ca_file_deferred and url[:6].lower() == "https:":
            self._load_ca_file()
        probe = Probe(self._clock)
        if self._address_guard is not None and self._address_guard.check_url(url) is not None:
            return self._failure(url, probe.started_at, BlockedAddress(url))
        if proxy is None and self._lean_client:
            return await self._fetch_lean(url, headers, probe)
        result = await self._fetch_aiohttp(url, headers, probe, proxy)
        return result if proxy is None else msgspec.structs.replace(result, proxy=proxy.label)

    async def _fetch_aiohttp(
        self, url: str, headers: Mapping[str, str] | None, probe: Probe, proxy: Proxy | None
    ) -> FetchResult:
        from gossamer.fetch.sending import SENDING, AiohttpAnswer, request_url

        session, via = self._route(proxy)
        guard = self._guard
        assert guard is not None  # made with the session
        sending = SENDING.set(probe)
        try:
            response = await session.get(
                request_url(url), headers=headers, allow_redirects=False, **via
            )
        except Exception as exc:
            return self._failure(url, probe.started_at, exc)
        else:
            probe.answered_at = self._clock()
            protocol = guard.watch(response)
            try:
                return await self._read(url, probe, AiohttpAnswer(response))
            finally:
                guard.unwatch(protocol)
                response.release()
        finally:
            SENDING.reset(sending)

    async def _fetch_lean(
        self, url: str, headers: Mapping[str, str] | None, probe: Probe
    ) -> FetchResult:
        client = self._lean or self._open_lean()
        try:
            response = await client.get(url, headers, probe.stamp)
        except Exception as exc:
            return self._failure(url, probe.started_at, exc)
        probe.answered_at = self._clock()
        try:
            return await self._read(url, probe, response)
        finally:
            response.release()

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

    async def _read(self, url: str, probe: Probe, response: Answer) -> FetchResult:
        config = self._config
        keep = config.keep_wire
        wire_cap, decoded_cap = body_caps(url, config.max_body_bytes, config.decoded_cap)
        headers = response.headers()  # a header on several lines: one comma list (RFC 9110 5.3)
        body = Body(headers.get("content-encoding"), wire_cap, decoded_cap, keep_raw=keep)
        error = body.error
        paced = 0.0
        stopped = False  # bytes were left unread: the wire body is cut
        try:
            while chunk := await response.readany():
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
            error = reason(exc, url)
            body.truncated = stopped = True
            response.close()
        status = response.status
        content_type, charset = parse_content_type(headers.get("content-type"))
        location = response.header(b"location") if 300 <= status < 400 else None
        now = self._wall_clock()
        exchange = None
        if keep:
            cut = cut_by(error, body.truncated) if stopped else None
            exchange = response.exchange(body.raw() or b"", cut)
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
            retry_after=retry_after(response.header, now),
            location=safe_location(location) if location is not None else None,
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
            error=reason(exc, url),
            started_at=started_at,
            fetched_at=self._wall_clock(),
            elapsed=self._clock() - started_at,
            wire_bytes=0,
            retry_after=None,
            location=None,
        )

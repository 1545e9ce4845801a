"""Whose fault a failed request through a proxy is: `proxy_fault` tells the proxy's own
failures (the pool counts them against it, `gossamer.fetch.proxies`) from the site's answers
it relayed, whatever their status; `fetch_through` asks another proxy where it cannot tell
(`either_fault`, and 404s the pool `doubts`); `proxy_listens` finds a proxy that takes no
connection before any request."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Protocol, TypeVar

from gossamer.fetch.exchange import cut_by
from gossamer.proxyurl import Proxy

__all__ = [
    "EITHER_FAULTS",
    "NOT_FOUND",
    "REJECTED",
    "Pool",
    "ProxyAnswer",
    "TimedAnswer",
    "either_fault",
    "fetch_through",
    "proxy_fault",
    "proxy_listens",
]

REJECTED = "proxy-auth"
"""The `proxy_fault` of a 407: the proxy rejected the crawl's credentials."""
NOT_FOUND = "proxy-404"
"""A proxy's failure to relay: it answered 404 where another proxy relayed the site's other
answer (`fetch_through`)."""


class ProxyAnswer(Protocol):
    """What `proxy_fault` reads of a fetch result (`gossamer.fetch.http.FetchResult`)."""

    @property
    def url(self) -> str: ...
    @property
    def status(self) -> int | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def headers(self) -> Mapping[str, str]: ...


class TimedAnswer(ProxyAnswer, Protocol):
    """What the pool's `gossamer.fetch.proxies.fetch_through` reads of a fetch result."""

    @property
    def elapsed(self) -> float: ...


class Pool(Protocol):
    """What `fetch_through` asks of the pool (`gossamer.fetch.proxies.ProxyPool`)."""

    def pick(self, domain: str, exclude: Iterable[Proxy] = ()) -> Proxy | None: ...
    def succeeded(self, proxy: Proxy, elapsed: float, status: int | None = None) -> None: ...
    def failed(self, proxy: Proxy, reason: str) -> None: ...
    def check_soon(self, proxy: Proxy) -> None: ...
    def doubts(self, proxy: Proxy, domain: str) -> bool: ...
    def vouched(self, proxy: Proxy) -> None: ...


_A = TypeVar("_A", bound=TimedAnswer)
_CHARGE = {"404": NOT_FOUND}
"""What a proxy is charged with when another relayed a whole answer, by what it got."""
_NOT_PROXY_FAULTS = frozenset({"invalid-url", "blocked-address"})
_MALFORMED = frozenset({"protocol-error", "headers-too-long"})
"""A head no client may accept (`gossamer.outcomes`): the site's, when a proxy relayed it."""

_HUNG = frozenset(
    {"read-timeout", "timeout", "server-disconnected", "connection-reset", "incomplete-body"}
)
"""No head in time, or the connection closed before one: the proxy's failure, or the site's
that the proxy passed on."""

EITHER_FAULTS = _HUNG | _MALFORMED
"""Reasons of a failure through a proxy that the site could cause as well as the proxy."""

_GATEWAY_ERRORS = frozenset({500, 502, 503, 504})
"""What a proxy answers itself when it cannot reach the site (tinyproxy's "Unable to
connect" is a 500; Squid's and most others' a 502, 503 or 504)."""


def proxy_fault(result: ProxyAnswer | None, proxy: Proxy | None = None) -> str | None:
    """Why ``result`` through ``proxy`` counts as the proxy's failure, or None when the
    proxy relayed the site's answer, whatever its status.

    The proxy's failures: no answer at all (a connection refused or reset, a timeout, a TLS
    or SOCKS failure, a CONNECT the proxy refused or failed: aiohttp raises for a CONNECT
    that does not answer 200, a 407 there ``proxy-auth``), but for faults of the URL itself,
    and for a malformed head a proxy relayed: a SOCKS5 proxy past its handshake (whose
    failures are ``socks-error``) and an HTTP(S) proxy's CONNECT tunnel (a CONNECT it
    refused or garbled is ``proxy-connect-error``) pass the site's bytes on as they came,
    and the site would send the same again through any proxy; a 407 to a plain-HTTP URL
    through an HTTP(S) proxy (in a tunnel, the site's answer); and an error answer the proxy
    made itself: one it names its own (`_names_itself`: Squid's 403 ``ERR_ACCESS_DENIED`` to
    every request), or a gateway error without its ``Via`` (`_made_by_proxy`)."""
    if result is None:
        return "no-answer"
    if result.status is None:
        if result.error in _NOT_PROXY_FAULTS:
            return None
        relayed = proxy is not None and (proxy.scheme == "socks5" or _tunnelled(result))
        return None if relayed and result.error in _MALFORMED else result.error
    if result.status == 407:  # inside an HTTPS tunnel or through SOCKS: the site's own
        by_proxy = result.url[:5].lower() == "http:" and (proxy is None or proxy.scheme != "socks5")
        return "proxy-auth" if by_proxy else None
    if result.status < 400 or proxy is None:
        return None
    if _names_itself(result, proxy) or (
        result.status in _GATEWAY_ERRORS and _made_by_proxy(result, proxy)
    ):
        return f"proxy-{result.status}"
    return None


def either_fault(result: ProxyAnswer, proxy: Proxy) -> str | None:
    """What of ``result``'s failure through ``proxy`` could be the proxy's or the site's
    (`proxy_fault` counts it the proxy's; `gossamer.fetch.proxies.fetch_through` asks another
    proxy before it does): ``malformed``, a malformed head an HTTP(S) proxy wrote for a
    plain-HTTP URL from the site's answer; ``hung``, no head in time or a connection closed
    before it, which a proxy passes on from a site that hangs or closes (any proxy); ``cut``,
    a 2xx whose body the connection cut short (any proxy); else None."""
    if result.status is not None:
        cut = 200 <= result.status < 300 and cut_by(result.error, True) == "disconnect"
        return "cut" if cut else None
    if result.error in _HUNG:
        return "hung"
    if result.error in _MALFORMED and proxy.scheme != "socks5" and not _tunnelled(result):
        return "malformed"
    return None


def _made_by_proxy(result: ProxyAnswer, proxy: Proxy) -> bool:
    """Whether an error answer is the proxy's own rather than the site's, relayed.

    Only a plain-HTTP URL through an HTTP(S) proxy can get one: an HTTPS URL goes through a
    CONNECT tunnel and a SOCKS5 proxy relays bytes, so what comes back is the site's (a
    CONNECT the proxy fails is an error, not an answer). A proxy names its own errors with
    a ``Proxy-Status`` carrying ``error=`` (RFC 9209) or Squid's ``X-Squid-Error``; and it
    adds ``Via`` to every answer it relays (RFC 9110, 7.6.3) but not to the ones it makes
    (tinyproxy's "Unable to connect" has none): a gateway error without ``Via`` is the
    proxy's own. A site's 500, 502 or 503 relayed comes with the proxy's ``Via``."""
    if proxy.scheme == "socks5" or result.url[:5].lower() != "http:":
        return False
    return _names_itself(result, proxy) or "via" not in result.headers


def _names_itself(result: ProxyAnswer, proxy: Proxy) -> bool:
    """Whether an error answer to a plain-HTTP URL through an HTTP(S) proxy says it is the
    proxy's own: a ``Proxy-Status`` carrying ``error=`` (RFC 9209) or Squid's
    ``X-Squid-Error``, which a proxy adds to the error pages it makes, not to the site's."""
    if proxy.scheme == "socks5" or result.url[:5].lower() != "http:":
        return False
    headers = result.headers
    return "error=" in headers.get("proxy-status", "").lower() or "x-squid-error" in headers


def _written(result: ProxyAnswer, proxy: Proxy) -> bool:
    """Whether the proxy wrote the answer's head (a plain-HTTP URL through an HTTP(S) proxy)
    rather than passed the site's bytes on (SOCKS5, a CONNECT tunnel): only then may it be
    the proxy's own."""
    return proxy.scheme != "socks5" and not _tunnelled(result)


def _tunnelled(result: ProxyAnswer) -> bool:
    """Whether ``result`` came through a CONNECT tunnel (an HTTPS URL through an HTTP(S)
    proxy), where TLS keeps the proxy from changing a byte."""
    return result.url[:6].lower() == "https:"


async def fetch_through(
    pool: Pool, domain: str, tries: int, attempt: Callable[[Proxy], Awaitable[_A]]
) -> tuple[_A, bool] | None:
    """``attempt`` through the pool's proxies for ``domain``, the next after a proxy fails,
    ``tries`` at most, the pool told of each outcome: the last result, and whether a proxy
    relayed it (else every try failed at its proxy); None: no proxy live.

    A failure that may be the proxy's or the site's (`either_fault`: a malformed head, a
    hang, a body cut short; a 404 the pool `doubts` where the proxy wrote the head: it may
    answer 404 to everything)
    is tried through the next proxy and charged only if another relays a whole answer (a
    404's, `NOT_FOUND`); the same failure through two proxies is the site's (a 404 vouches
    for both), and a hang has both proxies checked at once (`ProxyPool.check_soon`:
    proxies that all hang fail their checks). Left undecided (no other proxy), the proxy is
    checked (not for a 404: its checks pass) and the URL tried again later (a cut answer is
    kept: it is retried as any cut body is)."""
    tried: list[Proxy] = []
    result: _A | None = None
    pending: list[tuple[Proxy, _A, str]] = []
    for _ in range(tries):
        proxy = pool.pick(domain, tried)
        if proxy is None:
            break
        result = await attempt(proxy)
        reason = proxy_fault(result, proxy)
        kind = either_fault(result, proxy)
        if reason is None and kind is None and result.status == 404 and _written(result, proxy):
            again = any(seen == "404" for _, _, seen in pending)
            kind = "404" if again or pool.doubts(proxy, domain) else None
        if reason is None and kind is None:
            pool.succeeded(proxy, result.elapsed, result.status)
            for other, failed, seen in pending:  # another proxy relayed a whole answer
                pool.failed(other, failed.error or _CHARGE.get(seen, "proxy-error"))
            return result, True
        tried.append(proxy)
        if kind is None:
            pool.failed(proxy, reason or "proxy-error")
            continue
        if any(seen == kind for _, _, seen in pending):  # twice the same: the site's
            for other, failed, seen in (*pending, (proxy, result, kind)):
                if seen == "hung":
                    pool.check_soon(other)
                else:  # an answer came through it
                    pool.succeeded(other, failed.elapsed)
                if seen == "404" == kind:
                    pool.vouched(other)
            return result, True
        pending.append((proxy, result, kind))
    for other, _, seen in pending:  # no other proxy to ask: the proxy checked
        if seen != "404":
            pool.check_soon(other)
    if pending:  # a cut answer is kept as one (retried, as a cut body is); else tried later
        return pending[-1][1], pending[-1][2] == "cut"
    return None if result is None else (result, False)


async def proxy_listens(proxy: Proxy, connect_timeout: float) -> bool:
    """Whether ``proxy`` accepts a TCP connection within ``connect_timeout`` seconds: one that
    does not is dead without a request to the site, so a round of dead proxies takes none
    of the site's slots (and holds none of its pages back)."""
    try:
        async with asyncio.timeout(connect_timeout):
            _, writer = await asyncio.open_connection(proxy.host, proxy.port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True

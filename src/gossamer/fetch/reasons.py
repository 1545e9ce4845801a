"""The error reasons of a fetch: every exception a request can raise, as one short reason.

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
- ``protocol-error``: malformed status line, headers or chunked framing: bytes no client may
  accept (a NUL byte in a header, a header line without a colon, an invalid Content-Length
  or chunk size, ...). Without a status (the head was malformed) it is not asked for again,
  and the host is not slowed down for it: a server sends the same head each time (see
  `gossamer.outcomes`); with one, the body broke off there and the answer is kept, truncated
- ``headers-too-long``: a response head line (status line or one header) over aiohttp's
  limit of 8,190 bytes; the answer is refused unread, and not asked for again, as above
- ``unsupported-encoding``: a Content-Encoding we cannot decode; the raw body is returned
- ``decode-error``: corrupt gzip/deflate/br/zstd data; the body decoded so far is returned
- ``decompression-bomb``: decoding hit ``max_decoded_bytes`` at a ratio over `BOMB_RATIO`
- ``connection-error``: any other socket error
- ``client-error``: any other aiohttp error
- ``unexpected-error``: a bug; logged with its traceback
- ``socks-error``: a SOCKS5 proxy refused or failed the request
- ``no-proxy``: a proxy pool is set and none of its proxies is live
- ``proxy-error``: every proxy tried failed (see `gossamer.fetch.http`)
- ``proxy-connect-error``: an HTTP(S) proxy answered the CONNECT of an HTTPS URL with
  garbage, or refused it otherwise than with a 407 (``proxy-auth``): the proxy's failure; a
  malformed head that comes through the tunnel is the site's ``protocol-error``

The three decoding reasons come from `gossamer.fetch.decoding`, ``proxy-error`` from the
fetcher; `reason` gives the others, from `reasons()`: the first row whose exception type
matches decides, so a subclass comes before its base. The lean client's errors
(`gossamer.fetch.wire.WireError`) carry their reason.
"""

from __future__ import annotations

import errno
import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from gossamer.fetch.decoding import BOMB_RATIO
from gossamer.fetch.guard import BlockedAddress
from gossamer.fetch.wire import WireError
from gossamer.redact import redact_url

__all__ = ["BOMB_RATIO", "NoProxy", "reason", "reasons"]

log = logging.getLogger(__name__)


class NoProxy(Exception):
    """No live proxy for a request (the error ``no-proxy``)."""


def _dns(exc: Any) -> str:
    return "blocked-address" if isinstance(exc.os_error, BlockedAddress) else "dns"


def _connect(exc: Any) -> str:
    return "connection-refused" if exc.os_error.errno == errno.ECONNREFUSED else "connect-error"


def _socket(exc: Any) -> str:
    return "connection-reset" if exc.errno == errno.ECONNRESET else "connection-error"


def _body(exc: Any) -> str:
    from aiohttp.http_exceptions import (
        ContentLengthError,
        HttpProcessingError,
        TransferEncodingError,
    )

    # aiohttp records a reset that cut a body only in the payload error's message
    if "ConnectionResetError" in str(exc):
        return "connection-reset"
    cause = exc if isinstance(exc, HttpProcessingError) else exc.__cause__
    if isinstance(cause, ContentLengthError) or (
        isinstance(cause, TransferEncodingError) and "Not enough data" in cause.message
    ):
        return "incomplete-body"
    return "protocol-error"


def _head(exc: BaseException) -> str:
    from aiohttp.http_exceptions import LineTooLong

    if getattr(getattr(exc, "request_info", None), "method", None) == "CONNECT":
        return "proxy-connect-error"  # the proxy's answer to the CONNECT, not the site's
    # aiohttp wraps the parser's error in a ClientResponseError, its cause a copy of it
    seen: BaseException | None = exc
    for _ in range(4):  # the chain is short; bounded all the same
        if seen is None:
            break
        if isinstance(seen, LineTooLong):
            return "headers-too-long"
        seen = seen.__cause__
    return "protocol-error"


def _connect_refused(exc: BaseException) -> str:
    """A CONNECT the proxy answered otherwise than 200: a 407 is the proxy refusing the
    crawl's credentials (``proxy-auth``, as `gossamer.fetch.proxyfault.proxy_fault` names
    it), any other its ``proxy-connect-error``."""
    return "proxy-auth" if getattr(exc, "status", None) == 407 else _head(exc)


def _wire(exc: WireError) -> str:
    return exc.reason


_Kinds = type[BaseException] | tuple[type[BaseException], ...]
_Why = str | Callable[[Any], str]
_Rows = tuple[tuple[_Kinds, _Why], ...]
_LEAN: _Rows = (
    (WireError, _wire),
    (TimeoutError, "timeout"),
    (BlockedAddress, "blocked-address"),
    (ConnectionResetError, "connection-reset"),
    (OSError, _socket),
    (NoProxy, "no-proxy"),
)
"""The rows of the errors a request raises when aiohttp played no part in it."""


@functools.cache
def reasons() -> _Rows:
    """Exception types and their reason (or the function that tells it), the first match
    wins; a SOCKS proxy's errors (:func:`_socks_error`) are matched after them. Built on the
    first error of a request aiohttp made (aiohttp is imported only when a request uses it)."""
    import aiohttp
    from aiohttp.http_exceptions import HttpProcessingError

    return (
        (WireError, _wire),
        ((aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError), "invalid-url"),
        (aiohttp.ConnectionTimeoutError, "connect-timeout"),
        (aiohttp.ServerTimeoutError, "read-timeout"),
        (TimeoutError, "timeout"),
        (BlockedAddress, "blocked-address"),
        (aiohttp.ClientConnectorDNSError, _dns),
        ((aiohttp.ClientSSLError, aiohttp.ClientConnectorCertificateError), "tls"),
        (aiohttp.ClientConnectorError, _connect),
        (aiohttp.ServerDisconnectedError, "server-disconnected"),
        ((aiohttp.ClientPayloadError, HttpProcessingError), _body),
        (aiohttp.ClientHttpProxyError, _connect_refused),
        (aiohttp.ClientResponseError, _head),
        (ConnectionResetError, "connection-reset"),
        (OSError, _socket),
        (aiohttp.ClientError, "client-error"),
        (NoProxy, "no-proxy"),
    )


def _socks_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a SOCKS proxy's error. ``python_socks`` is looked up, not imported:
    only a SOCKS proxy's connector (``aiohttp_socks``) loads it, and until one has, no error
    can be its; a crawl through no SOCKS proxy never pays its import."""
    module = sys.modules.get("python_socks")
    return module is not None and isinstance(exc, module.ProxyError)


def reason(exc: BaseException, url: str) -> str:
    """The reason for ``exc``, raised while fetching ``url`` (see the module doc); an
    exception no row names is a bug, logged with its traceback."""
    rows = reasons() if "aiohttp" in sys.modules else _LEAN
    for kinds, why in rows:
        if isinstance(exc, kinds):
            return why if isinstance(why, str) else why(exc)
    if _socks_error(exc):
        return "socks-error"
    log.warning(
        "unexpected error fetching %s",
        redact_url(url),
        exc_info=exc,
        extra={"event": "fetch-unexpected-error", "url": redact_url(url)},
    )
    return "unexpected-error"

"""How a request goes out: the connectors a session is made with (direct, through a SOCKS5
proxy, or to nowhere when no proxy is live), the URL as aiohttp takes it, the request
class that stamps the moment a request starts to be sent (`Probe`), and the response
protocol of every connection (`NotModifiedGuard`: a 304 that a server sends a body with is
taken as the 304 it is)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import aiohttp
import yarl
from aiohttp.client_proto import ResponseHandler
from aiohttp.connector import Connection

from gossamer import tls
from gossamer.fetch.exchange import Exchange, masked
from gossamer.fetch.headers import header_map
from gossamer.fetch.lean import Probe
from gossamer.proxyurl import Proxy
from gossamer.urls import is_plainly_canonical

if TYPE_CHECKING:
    from gossamer.fetch.dns import Resolver
    from gossamer.fetch.result import FetchConfig

__all__ = [
    "SENDING",
    "UNROUTED",
    "AiohttpAnswer",
    "NotModifiedGuard",
    "PeerResponse",
    "Probe",
    "StampingRequest",
    "Unrouted",
    "capture",
    "direct_connector",
    "new_session",
    "request_url",
    "socks_connector",
]


UNROUTED = Proxy(url="unrouted://", scheme="unrouted", host="", port=0)
"""Stands for "no live proxy" where a session is made: its requests fail."""


class Unrouted(aiohttp.TCPConnector):
    """A connector that connects nowhere: a login's session when no proxy is live."""

    async def _create_connection(
        self,
        req: aiohttp.ClientRequest,
        traces: list[Any],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109
    ) -> Any:
        raise aiohttp.ClientConnectionError("no live proxy")


_NOT_MODIFIED = re.compile(rb"HTTP/1\.[01] 304[ \r]")
_BODY_SIGN = re.compile(rb"\r\n(?:content-length: *0*[1-9]|transfer-encoding:)", re.IGNORECASE)
_HEAD_MOST = 128 * 8192
"""Bytes of a 304's head gathered at most (aiohttp's header limits: 128 lines of 8190)."""


class NotModifiedGuard(ResponseHandler):
    """aiohttp's response protocol, for a 304 a server sends a body with anyway.

    A 304 has no body (RFC 9110 15.4.5), so aiohttp parses what follows its head as the next
    response: a body there fails the exchange as a protocol error (retried, four requests
    for one revisit), or, arriving later, the next request on the connection. Here a 304's
    head is handed to the parser alone (gathered first if it comes in pieces), every byte
    after it is dropped, and a connection whose 304 had bytes after its head, or announced a
    body (``Content-Length`` over 0, ``Transfer-Encoding``), is closed instead of reused. So
    the 304 is the answer, its body ignored, as browsers and curl take it.

    The read timeout (``sock_read``) is aiohttp's, kept with one timer per response: aiohttp
    cancels its timer and makes a new one on every chunk received; here a chunk moves the
    deadline only, and the timer, when it fires before the deadline, waits out the rest.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head = b""
        """A 304's head so far (until its blank line comes)."""
        self._spent = False
        """A 304 came with a body (sent or announced): nothing more is read here."""
        self._read_deadline = 0.0
        """When the read timeout expires (loop time), pushed back by every chunk."""
        self._read_timer_at = 0.0
        """What the read timer was set for (not its ``when()``: uvloop's timers count whole
        milliseconds, and one due now is a plain handle)."""

    def _reschedule_timeout(self) -> None:
        timeout = self._read_timeout
        if not timeout:
            self._drop_timeout()
            return
        loop = self._loop
        self._read_deadline = deadline = loop.time() + timeout
        if self._read_timeout_handle is None:
            self._read_timeout_handle = loop.call_at(deadline, self._read_timer)
            self._read_timer_at = deadline

    def _read_timer(self) -> None:
        handle = self._read_timeout_handle
        self._read_timeout_handle = None
        if handle is not None and self._read_deadline > self._read_timer_at:
            # data came since the timer was set: wait for what is left of the timeout
            self._read_timer_at = self._read_deadline
            self._read_timeout_handle = self._loop.call_at(self._read_deadline, self._read_timer)
            return
        self._on_read_timeout()

    def data_received(self, data: bytes) -> None:
        if self._spent:
            return  # the body of a 304: no answer to anything; the connection closes
        if not self._head and not (_NOT_MODIFIED.match(data) and self._idle()):
            super().data_received(data)
            return
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0 and len(head) < _HEAD_MOST:
            self._head = head
            return
        self._head = b""
        if end < 0:  # too long for a head: the parser says so
            super().data_received(head)
            return
        super().data_received(head[: end + 4])
        if len(head) > end + 4 or _BODY_SIGN.search(head, 0, end + 2):
            self._spent = True
            self._should_close = True

    def _idle(self) -> bool:
        """Between two answers: what comes next begins a response head."""
        payload = self._payload
        return (
            self._parser is not None
            and self._payload_parser is None
            and not self._upgraded
            and not self._tail
            and (payload is None or payload.is_eof())
        )


def _guarded(connector: aiohttp.TCPConnector) -> aiohttp.TCPConnector:
    """``connector`` making its connections with `NotModifiedGuard` (aiohttp names the
    protocol class in ``_factory`` alone, plain and TLS connections alike; pinned aiohttp)."""
    factory = functools.partial(NotModifiedGuard, loop=connector._loop)
    connector._factory = cast("functools.partial[ResponseHandler]", factory)
    return connector


def direct_connector(proxy: Proxy | None, options: dict[str, Any]) -> aiohttp.TCPConnector:
    if proxy is UNROUTED:
        return Unrouted(**options)
    return _guarded(aiohttp.TCPConnector(**options))


def socks_connector(proxy: Proxy, options: dict[str, Any]) -> aiohttp.TCPConnector:
    """A connector through a SOCKS5 proxy; the proxy resolves the sites' names."""
    from aiohttp_socks import ProxyConnector, ProxyType

    return _guarded(
        ProxyConnector(
            host=proxy.host,
            port=proxy.port,
            proxy_type=ProxyType.SOCKS5,
            username=proxy.login,
            password=proxy.password,
            rdns=True,
            **options,
        )
    )


def request_url(url: str) -> str | yarl.URL:
    """The URL for aiohttp: a plainly canonical one (:func:`is_plainly_canonical`: safe
    characters only, nothing to encode or remove) as a ready `yarl.URL`, which skips yarl's
    parse and encoding pass, a tenth of aiohttp's work per request; any other as it is."""
    return yarl.URL(url, encoded=True) if is_plainly_canonical(url) else url


SENDING: ContextVar[Probe | None] = ContextVar("gossamer_sending", default=None)
"""The probe of the request the current task is making (set by `Fetcher._fetch`)."""


class StampingRequest(aiohttp.ClientRequest):
    """aiohttp's request, stamping the probe of the task's request with the time it starts
    sending (its connection made: DNS, connect and TLS done)."""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        probe = SENDING.get()
        if probe is not None:
            probe.started_at = probe.clock()
        return await super().send(conn)


class AiohttpAnswer:
    """An aiohttp response as `gossamer.fetch.lean.Answer`, what the fetcher reads."""

    __slots__ = ("response",)

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    @property
    def status(self) -> int:
        """The status code."""
        return self.response.status

    def header(self, name: bytes) -> str | None:
        """The first value of the header ``name``, or None."""
        return self.response.headers.get(name.decode("ascii"))

    def headers(self) -> Mapping[str, str]:
        """The headers as `gossamer.fetch.headers.header_map` gives them."""
        return header_map(self.response.headers.items())

    async def readany(self) -> bytes:
        """The next body bytes; ``b""`` at the end."""
        return await self.response.content.readany()

    def close(self) -> None:
        """Stop reading: the connection closes."""
        self.response.close()

    def exchange(self, body: bytes, cut: str | None) -> Exchange:
        """The exchange as sent and received, whose wire body was ``body``."""
        return capture(self.response, body, cut)


class PeerResponse(aiohttp.ClientResponse):
    """A response that notes the peer's IP address while its connection is open (a small
    body may be read, and its connection closed, before `aiohttp.ClientSession.get` returns).
    """

    peer: str | None = None

    async def start(self, connection: Connection) -> aiohttp.ClientResponse:
        transport = connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
            self.peer = peer[0]
        return await super().start(connection)


def capture(response: aiohttp.ClientResponse, body: bytes, cut: str | None) -> Exchange:
    """The `Exchange` of ``response`` whose wire body was ``body`` (``cut`` for why not all)."""
    info = response.request_info
    version = response.version
    return Exchange(
        method=info.method,
        target=info.url.raw_path_qs or "/",
        request_headers=masked(tuple(info.headers.items())),
        version=f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1",
        status=response.status,
        reason=response.reason or "",
        response_headers=tuple(response.raw_headers),
        body=body,
        peer=response.peer if isinstance(response, PeerResponse) else None,
        cut=cut,
    )


def new_session(
    config: FetchConfig, resolver: Resolver, proxy: Proxy | None = None
) -> aiohttp.ClientSession:
    """A session for direct requests (``proxy`` None), requests through an HTTP(S) proxy
    (named per request) or a SOCKS5 one, or none (`UNROUTED`), resolving with ``resolver``."""
    options: dict[str, Any] = {
        "limit": config.concurrency,
        "limit_per_host": 0,
        "resolver": resolver,
        "use_dns_cache": False,
        "keepalive_timeout": config.keepalive_timeout,
        "ssl": tls.verified_context() if config.verify_tls else False,
    }
    socks = proxy is not None and proxy.scheme == "socks5"
    if socks and proxy is not None:
        connector = socks_connector(proxy, options)
    else:
        connector = direct_connector(proxy, options)
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
        proxy=None if proxy is None or socks or proxy is UNROUTED else proxy.url,
        request_class=StampingRequest,
        response_class=PeerResponse if config.keep_wire else aiohttp.ClientResponse,
    )

"""How a request goes out: the connectors a session is made with (direct, through a SOCKS5
proxy, or to nowhere when no proxy is live), the URL as aiohttp takes it, and the request
class that stamps the moment a request starts to be sent (`Probe`)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import aiohttp
import yarl
from aiohttp.connector import Connection

from gossamer.proxyurl import Proxy
from gossamer.urls import is_plainly_canonical

__all__ = [
    "SENDING",
    "UNROUTED",
    "Probe",
    "StampingRequest",
    "Unrouted",
    "direct_connector",
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


def direct_connector(proxy: Proxy | None, options: dict[str, Any]) -> aiohttp.TCPConnector:
    if proxy is UNROUTED:
        return Unrouted(**options)
    return aiohttp.TCPConnector(**options)


def socks_connector(proxy: Proxy, options: dict[str, Any]) -> aiohttp.TCPConnector:
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


def request_url(url: str) -> str | yarl.URL:
    """The URL for aiohttp: a plainly canonical one (:func:`is_plainly_canonical`: safe
    characters only, nothing to encode or remove) as a ready `yarl.URL`, which skips yarl's
    parse and encoding pass, a tenth of aiohttp's work per request; any other as it is."""
    return yarl.URL(url, encoded=True) if is_plainly_canonical(url) else url


class Probe:
    """One request's times: when `Fetcher._fetch` began it, then when aiohttp started to send
    it (`StampingRequest`), and when its answer began."""

    __slots__ = ("answered_at", "clock", "started_at")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started_at = clock()
        self.answered_at: float | None = None


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

"""What a fetch gives and takes: `FetchResult`, `FetchConfig`, `FetchStats` and the headers
sent with every request (`DEFAULT_HEADERS`). `gossamer.fetch.http` re-exports them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

import msgspec

from gossamer.fetch.dns import parse_resolve_overrides
from gossamer.fetch.exchange import Exchange

__all__ = [
    "DEFAULT_HEADERS",
    "DURATION_BUCKETS",
    "CheckRules",
    "FetchConfig",
    "FetchResult",
    "FetchStats",
]

DEFAULT_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Accept-Encoding": "gzip, deflate, br, zstd",
        "Accept-Language": "en;q=0.9,*;q=0.5",
    }
)


class FetchResult(msgspec.Struct, frozen=True, gc=False):
    """The outcome of one GET; see `gossamer.fetch.reasons` for the ``error`` reasons.

    ``headers`` has lower-cased names; repeated headers are joined with ``", "`` (RFC 9110 5.3),
    except ``set-cookie`` and ``x-robots-tag`` whose values are joined with ``"\\n"``. ``body``
    is content-decoded. ``started_at`` (injected monotonic clock) is when the request head was
    handed to the socket, or when `Fetcher.fetch` began if it never got that far; ``elapsed``
    runs from then to the end of the body or the error, less ``paced``, the seconds the body
    read waited for the bandwidth cap. ``fetched_at`` is wall-clock unix time at the end.
    ``wire_bytes`` counts body bytes received from the network, before content decoding.
    ``retry_after`` is in seconds; ``location`` is set for 3xx only. A `msgspec.Struct`
    (one per response: cheaper to make than a frozen dataclass); change a copy with
    `msgspec.structs.replace`.
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
    served: bytes | None = None
    """A rendered page's body as the answer served it (its robots meta tags still hold)."""
    served_charset: str | None = None
    """The charset of ``served``, as the answer named it."""

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
    def latency(self) -> float:
        """Seconds the host took to answer: from sending to the response head (``elapsed``
        when no head came). What politeness learns a host's pace from: the body's time is the
        body's size over the bandwidth, or a server dripping it, not the host's load, and a
        sitemap of 50 MB, or a body cut at ``total_timeout``, would slow every later request
        to the host."""
        if self.answered_at is not None:
            return max(0.0, self.answered_at - self.started_at)
        return self.elapsed

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
    proxy_check_fallbacks: tuple[str, ...] = ()
    """Check URLs tried in turn when the proxy check URL gives no answer through a proxy."""
    http_client: str = "lean"
    """``lean`` (`gossamer.fetch.lean`: direct requests) or ``aiohttp`` (every request)."""

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


class FetchStats(msgspec.Struct, frozen=True):
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

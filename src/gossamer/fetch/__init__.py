"""The fetch stage: DNS caching and overrides (``dns``), the address guard (``guard``), pooled
HTTP with capped decoding (``http``, ``decoding``; direct requests over the lean HTTP/1.1
client, ``lean`` on ``wire``, the others over aiohttp), what a fetch gives and takes (``result``),
its error reasons (``reasons``), response headers made safe (``headers``), the connectors and
request class a request goes out with (``sending``), the stuck-body guard (``stuck``), a
request's host name parsed once per host (``hostnames``), the bandwidth cap (``ratelimit``),
the wire capture for WARC (``exchange``), the proxy pool (``proxies``), host pacing of the
fetcher's own requests (``gated``), logins per domain (``auth``, with ``login``,
``tokencache`` and ``cookies``) and rendering in headless Chromium (``render``, a package).

This package may import the standard library, aiohttp (lazily: only a request through a
proxy, a login or ``http_client="aiohttp"`` loads it), httptools, brotli, aiohttp-socks and
python-socks (SOCKS5 proxies), selectolax, psutil, playwright (in ``render``, lazily),
``gossamer.redact``, ``gossamer.proxyurl`` (proxy URLs), ``gossamer.safe``, ``gossamer.tls``,
``gossamer.urls``, ``gossamer.addresses`` (IP literals), ``gossamer.eventloop`` (which loop
runs), ``gossamer.settings`` (the parser of ``--resolve`` items) and ``gossamer.parse`` (its
guarded parse: ``render``'s ``auto`` reads every page it considers, ``auth`` a page a
``logged_out_selector`` is matched on); it knows no other stage
(the engine hands it URLs and reads its results).
"""

from gossamer.fetch.dns import (
    CachingResolver,
    DnsStats,
    ResolveOverrides,
    parse_resolve_overrides,
)
from gossamer.fetch.http import (
    FetchConfig,
    Fetcher,
    FetchResult,
    FetchStats,
    parse_content_type,
    parse_retry_after,
)

__all__ = [
    "CachingResolver",
    "DnsStats",
    "FetchConfig",
    "FetchResult",
    "FetchStats",
    "Fetcher",
    "ResolveOverrides",
    "parse_content_type",
    "parse_resolve_overrides",
    "parse_retry_after",
]

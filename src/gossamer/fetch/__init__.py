"""The fetch stage: DNS caching and overrides, pooled HTTP with capped decoding."""

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

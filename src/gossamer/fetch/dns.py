"""DNS for the fetch stage: a caching, coalescing resolver with curl-style overrides.

`CachingResolver` serves the lean client (`gossamer.fetch.lean`) and plugs into aiohttp's
`TCPConnector` alike (build the connector with ``use_dns_cache=False`` so that this is the
only cache); it has aiohttp's resolver interface (`Resolver`) without importing aiohttp. In
front of a real resolver it:

- answers from a per-(host, family) cache for ``ttl`` seconds (getaddrinfo does not expose
  record TTLs, so one fixed TTL applies to every name);
- caches failures for ``negative_ttl`` seconds, so a dead domain with thousands of queued URLs
  costs one query, not thousands;
- coalesces concurrent look-ups: one query in flight per (host, family), every other caller
  waits for it (cancelling a waiter never cancels the shared query);
- answers names matched by `ResolveOverrides` (``HOST=IP`` like curl's ``--resolve``) without
  touching the real resolver.

Failures surface as `socket.gaierror` (an `OSError`), which aiohttp turns into
`aiohttp.ClientConnectorDNSError` (the lean client into the error ``dns``); a look-up that
exceeds ``timeout`` fails the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TypedDict

import msgspec

from gossamer.settings.resolve import IPAddress, normalize_host, parse_resolve_item

__all__ = [
    "CachingResolver",
    "DnsStats",
    "IPAddress",
    "ResolveOverrides",
    "ResolveResult",
    "Resolver",
    "SystemResolver",
    "normalize_host",
    "parse_resolve_overrides",
]

Clock = Callable[[], float]

_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class ResolveResult(TypedDict):
    """One address of a host, as aiohttp's resolvers give it (``aiohttp.abc.ResolveResult``)."""

    hostname: str
    host: str
    port: int
    family: int
    proto: int
    flags: int


class Resolver(Protocol):
    """What resolves host names for a connection: aiohttp's ``AbstractResolver`` interface."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host``."""
        ...

    async def close(self) -> None:
        """Release what the resolver holds."""
        ...


class SystemResolver:
    """The system's resolver (getaddrinfo in the loop's threads: hosts file, nsswitch), as
    aiohttp's ``ThreadedResolver`` asks it."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host``; raises `socket.gaierror` when it has none."""
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, family=family, flags=socket.AI_ADDRCONFIG
        )
        results = []
        for af, _, proto, _, address in infos:
            if af == socket.AF_INET6 and len(address) > 3 and address[3]:
                continue  # a link-local address with a scope: never crawled
            if af in (socket.AF_INET, socket.AF_INET6):
                ip = str(address[0])
                results.append(_result(host, ip, port, af, proto, _NUMERIC_FLAGS))
        return results

    async def close(self) -> None:
        """Nothing to release."""


class ResolveOverrides(msgspec.Struct, frozen=True):
    """Fixed answers for some host names, like curl's ``--resolve``.

    ``exact`` maps a normalized name to its addresses. ``wildcards`` holds ``(suffix,
    addresses)`` pairs, longest suffix first: the entry ``*.test`` is stored as ``.test`` and
    matches ``a.test`` and ``a.b.test`` but not ``test``; a bare ``*`` is stored as ``""`` and
    matches every name. An exact entry beats any wildcard; a longer wildcard beats a shorter one.
    """

    exact: Mapping[str, tuple[IPAddress, ...]]
    wildcards: tuple[tuple[str, tuple[IPAddress, ...]], ...]

    def lookup(self, host: str) -> tuple[IPAddress, ...] | None:
        """Return the override addresses for ``host``, or None when no entry matches."""
        name = normalize_host(host)
        addresses = self.exact.get(name)
        if addresses is not None:
            return addresses
        for suffix, addresses in self.wildcards:
            if name.endswith(suffix) and len(name) > len(suffix):
                return addresses
        return None

    def __len__(self) -> int:
        return len(self.exact) + len(self.wildcards)


def parse_resolve_overrides(items: Iterable[str]) -> ResolveOverrides:
    """Parse ``HOST=IP[,IP...]`` strings into `ResolveOverrides`.

    HOST is an exact name (``example.com``), a wildcard (``*.test``: any subdomain of
    ``test``, not ``test`` itself) or ``*`` (every name). IP is an IPv4 or IPv6 literal; IPv6
    may be written in brackets (``[::1]``). Repeated HOSTs accumulate their addresses.
    Raises `ValueError` naming the offending item when one is malformed.
    """
    exact: dict[str, list[IPAddress]] = {}
    wildcards: dict[str, list[IPAddress]] = {}
    for item in items:
        pattern, addresses = parse_resolve_item(item)
        if pattern == "*":
            table, key = wildcards, ""
        elif pattern.startswith("*."):
            table, key = wildcards, pattern[1:]
        else:
            table, key = exact, pattern
        known = table.setdefault(key, [])
        known.extend(a for a in addresses if a not in known)
    ordered = sorted(wildcards.items(), key=lambda kv: len(kv[0]), reverse=True)
    return ResolveOverrides(
        exact={name: tuple(addrs) for name, addrs in exact.items()},
        wildcards=tuple((suffix, tuple(addrs)) for suffix, addrs in ordered),
    )


class DnsStats(msgspec.Struct, frozen=True):
    """A snapshot of a `CachingResolver`'s counters.

    Every `resolve` call counts once, as one of: ``hits`` (fresh cache entry, positive or
    negative), ``misses`` (started a real look-up), ``coalesced`` (joined a look-up already
    in flight) or ``overrides`` (answered by an override). ``failures`` counts real look-ups
    that failed; ``entries`` is the current cache size; ``in_flight`` the running look-ups.
    """

    hits: int
    misses: int
    failures: int
    entries: int
    coalesced: int
    overrides: int
    in_flight: int


class _Entry(msgspec.Struct, frozen=True):
    expires: float
    results: tuple[ResolveResult, ...]
    error: tuple[int, str] | None

    def answer(self, host: str, port: int) -> list[ResolveResult]:
        if self.error is not None:
            raise socket.gaierror(*self.error)
        return [
            _result(host, r["host"], port, r["family"], r["proto"], r["flags"])
            for r in self.results
        ]


def _result(host: str, ip: str, port: int, family: int, proto: int, flags: int) -> ResolveResult:
    return ResolveResult(hostname=host, host=ip, port=port, family=family, proto=proto, flags=flags)


class CachingResolver:
    """A TTL cache with negative caching, look-up coalescing and overrides (see module doc).

    ``resolver`` is the real resolver; by default one is created lazily (inside the running
    loop): `SystemResolver` (getaddrinfo in threads, as the system resolves: hosts file,
    nsswitch). The cache closes only a resolver it created.
    ``overrides`` takes parsed `ResolveOverrides` or raw ``HOST=IP`` strings. ``clock``
    (monotonic seconds) is injectable for tests.
    """

    def __init__(
        self,
        resolver: Resolver | None = None,
        *,
        overrides: ResolveOverrides | Iterable[str] = (),
        ttl: float = 300.0,
        negative_ttl: float = 10.0,
        timeout: float = 10.0,
        max_entries: int = 100_000,
        clock: Clock = time.monotonic,
    ) -> None:
        if ttl < 0 or negative_ttl < 0 or timeout <= 0 or max_entries < 1:
            raise ValueError("ttl/negative_ttl must be >= 0, timeout > 0, max_entries >= 1")
        if not isinstance(overrides, ResolveOverrides):
            overrides = parse_resolve_overrides(overrides)
        self._resolver = resolver
        self._owns_resolver = resolver is None
        self._overrides = overrides
        self._ttl = ttl
        self._negative_ttl = negative_ttl
        self._timeout = timeout
        self._max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[tuple[str, int], _Entry] = OrderedDict()
        """Answers, the oldest first (a dict would find its oldest key by scanning past every
        key deleted before it)."""
        self._in_flight: dict[tuple[str, int], asyncio.Task[_Entry]] = {}
        self._hits = self._misses = self._failures = self._coalesced = self._override_hits = 0

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Return the addresses of ``host`` (see the class and module docs)."""
        name = normalize_host(host)
        if self._overrides:
            addresses = self._overrides.lookup(name)
            if addresses is not None:
                self._override_hits += 1
                return _override_results(host, port, family, addresses)
        key = (name, int(family))
        entry = self._cache.get(key)
        if entry is not None:
            if entry.expires > self._clock():
                self._hits += 1
                return entry.answer(host, port)
            del self._cache[key]
        task = self._in_flight.get(key)
        if task is None:
            self._misses += 1
            task = asyncio.create_task(self._lookup(key, host, family))
            self._in_flight[key] = task
        else:
            self._coalesced += 1
        entry = await asyncio.shield(task)
        return entry.answer(host, port)

    async def _lookup(self, key: tuple[str, int], host: str, family: int) -> _Entry:
        try:
            async with asyncio.timeout(self._timeout):
                results = await self._real().resolve(host, 0, socket.AddressFamily(family))
            if not results:
                raise socket.gaierror(socket.EAI_NONAME, f"no addresses for {host}")
            entry = _Entry(self._clock() + self._ttl, tuple(results), None)
        except OSError as exc:
            self._failures += 1
            entry = _Entry(self._clock() + self._negative_ttl, (), _describe(exc, host))
        finally:
            self._in_flight.pop(key, None)
        self._store(key, entry)
        return entry

    def _real(self) -> Resolver:
        if self._resolver is None:
            self._resolver = SystemResolver()
        return self._resolver

    def _store(self, key: tuple[str, int], entry: _Entry) -> None:
        self._cache[key] = entry
        if len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)

    def clear(self) -> None:
        """Forget every cached answer (positive and negative)."""
        self._cache.clear()

    def stats(self) -> DnsStats:
        """Return a snapshot of the counters."""
        return DnsStats(
            hits=self._hits,
            misses=self._misses,
            failures=self._failures,
            entries=len(self._cache),
            coalesced=self._coalesced,
            overrides=self._override_hits,
            in_flight=len(self._in_flight),
        )

    async def close(self) -> None:
        """Cancel running look-ups and close the real resolver if this cache created it."""
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._owns_resolver and self._resolver is not None:
            await self._resolver.close()
            self._resolver = None


def _describe(exc: OSError, host: str) -> tuple[int, str]:
    if isinstance(exc, TimeoutError):
        return socket.EAI_AGAIN, f"DNS look-up of {host} timed out"
    code = exc.errno if exc.errno is not None else socket.EAI_FAIL
    return code, exc.strerror or str(exc) or f"DNS look-up of {host} failed"


def _override_results(
    host: str, port: int, family: int, addresses: tuple[IPAddress, ...]
) -> list[ResolveResult]:
    results = []
    for address in addresses:
        af = socket.AF_INET if address.version == 4 else socket.AF_INET6
        if family in (socket.AF_UNSPEC, af):
            results.append(_result(host, str(address), port, af, 0, _NUMERIC_FLAGS))
    if not results:
        raise socket.gaierror(
            socket.EAI_NONAME, f"no override address of family {family} for {host}"
        )
    return results

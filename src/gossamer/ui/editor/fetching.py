"""How the editor reads sample pages: gossamer's fetcher, robots.txt, ``--resolve``, behind
an address guard that keeps the editor from being turned against this machine.

A browser can ask the editor to fetch any URL, so the editor's guard is stricter than a
crawl's: no host is trusted because it was typed in. Loopback and private addresses are
refused unless ``gossamer ui --editor-allow`` names them: best with a port
(``127.0.0.1:8642``, ``[::1]:8642``, ``site.test:8642``, ``*.test:8642``: that port only),
else an address, a network such as ``10.0.0.0/8``, or a host name, ``*.test`` for a domain's
hosts (every port: Redis's and every other local service's too). Link-local and metadata
addresses are refused always, and so is the UI's own port (on any host: a name can point
anywhere). Redirect targets and the pages a preview reads are checked the same way; a
preview's pages also stay on the origin of the sample they are linked from
(:func:`origin_of`) unless the user widens it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import msgspec

from gossamer.addresses import ip_literal
from gossamer.crawl import (
    authenticator,
    politeness_policy,
    proxy_check_url,
    proxy_pool,
    rendering_fetcher,
    renders,
)
from gossamer.errors import CommandError
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.guard import AddressGuard, IPAddress
from gossamer.fetch.http import Fetcher
from gossamer.frontier.gate import HostGate
from gossamer.frontier.robots import RobotsCache
from gossamer.robots_fetch import NoCookies
from gossamer.rules_cli import fetch_config, fetch_following
from gossamer.settings import CrawlSettings, SettingsError, crawl_scope
from gossamer.urls import InvalidURL, canonicalize

__all__ = ["EditorGuard", "Page", "PageFetcher", "origin_of", "suggest_pattern"]

log = logging.getLogger(__name__)

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Origin = tuple[str, str, int]
"""A URL's scheme, host and port."""
_NAME = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class EditorGuard(AddressGuard):
    """A crawl's guard naming only the hosts of ``--editor-allow``, and allowing the
    addresses of its networks and its ``HOST:PORT`` endpoints."""

    networks: tuple[_Network, ...] = ()
    own_port: int = 0
    """The UI's port: refused on every host, whatever a URL's host resolves to (a rendered
    page's subrequests included)."""
    endpoints: frozenset[tuple[str, int]] = frozenset()
    """``--editor-allow HOST:PORT``: (an address, a host name or ``*.domain``, a port)."""

    @classmethod
    def from_allow(cls, allow: Iterable[str]) -> EditorGuard:
        """The guard of ``--editor-allow`` values; SettingsError for one that is neither an
        address, a network nor a host name, with or without a port."""
        networks: list[_Network] = []
        hosts: set[str] = set()
        subdomains: set[str] = set()
        endpoints: set[tuple[str, int]] = set()
        for item in allow:
            value, port = _split_port(item.strip().lower())
            if port is not None:
                endpoints.add((_allowed_host(value, item), port))
                continue
            address = ip_literal(value)
            try:
                network = value if address is None else _unmapped(address)
                networks.append(ipaddress.ip_network(network, strict=False))
                continue
            except ValueError:
                pass
            name = _allowed_host(value, item)
            if name.startswith("*."):
                subdomains.add(name[2:])
            else:
                hosts.add(name)
        return cls(
            frozenset(hosts),
            named_subdomains=frozenset(subdomains),
            networks=tuple(networks),
            endpoints=frozenset(endpoints),
        )

    def check_url(self, url: str) -> str | None:
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            host = parts.hostname
        except ValueError:
            return "not a URL"
        if self.own_port and port == self.own_port:
            return f"the UI's own port {port} is never read"
        # A zone id (``fe80::1%eth0``, which no URL the editor fetches carries) is cut off,
        # not let through as a name: the address before it is judged.
        ip = ip_literal((host or "").partition("%")[0])
        if ip is None:
            return None  # a name: the addresses it resolves to are judged, with the port
        return self.verdict(host or "", ip, port)

    def verdict(self, host: str, address: str | IPAddress, port: int = 0) -> str | None:
        never = AddressGuard(allow_private=True).verdict(host, address)
        if never is not None:
            return never
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if any(_within(ip, net) for net in self.networks):
            return None
        if port and self._endpoint(host, ip, port):
            return None
        verdict = AddressGuard.verdict(self, host, address)
        if verdict is not None:
            where = f"{host}:{port}" if port else host
            return (
                f"{verdict} ({where}: gossamer ui --editor-allow HOST:PORT names what the "
                "editor may read)"
            )
        return None

    def _endpoint(self, host: str, ip: IPAddress, port: int) -> bool:
        name = host.lower().strip("[]").rstrip(".")
        for allowed, allowed_port in self.endpoints:
            if allowed_port != port:
                continue
            if allowed in (name, ip.compressed, _unmapped(ip).compressed):
                return True
            if allowed.startswith("*.") and name.endswith(allowed[1:]):
                return True
        return False


def _split_port(value: str) -> tuple[str, int | None]:
    """``HOST:PORT``, ``[v6]:PORT``, ``[v6]``, a bare v6 address or network, or ``HOST``
    -> (host, port or None); SettingsError for a port that is not one."""
    host, port = value, ""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise _bad_allow(value)
        port = rest[1:]
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    if not port:
        return host, None
    if not port.isdigit() or not 0 < int(port) < 65_536:
        raise _bad_allow(value)
    return host, int(port)


def _allowed_host(value: str, given: str) -> str:
    """An address (in its usual form: ``127.1`` is ``127.0.0.1``) or a host name (``*.domain``
    too) of ``--editor-allow``."""
    address = ip_literal(value)
    if address is not None:
        return _unmapped(address).compressed
    if not _NAME.fullmatch(value):
        raise _bad_allow(given)
    return value


def _bad_allow(given: str) -> SettingsError:
    return SettingsError(
        f"invalid setting 'editor_allow': {given[:80]!r} is not an address, a network or a "
        "host name, with or without :PORT"
    )


def origin_of(url: str) -> Origin | None:
    """``url``'s origin: scheme, host and port (the scheme's default if none); None for a
    URL without one."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.rstrip("."), port


@dataclass(frozen=True, slots=True)
class Page:
    """A page the editor read."""

    url: str
    body: bytes
    charset: str | None


@dataclass(slots=True)
class PageFetcher:
    """Fetches sample pages one at a time, logged in as the settings' ``[[auth]]`` tables
    say (cookies kept in memory). Every request, robots.txt, proxy checks, logins and a
    rendered page's subrequests included, waits for its host's pace in one host gate kept
    across fetches: at least ``delay`` seconds apart, or the settings' delay or the host's
    Crawl-delay when longer."""

    @classmethod
    def for_settings(
        cls, settings: CrawlSettings, guard: EditorGuard, own_port: int
    ) -> PageFetcher:
        """SettingsError for logins whose secrets cannot be read."""
        return cls(settings, guard, own_port, auth=authenticator(settings, None))

    settings: CrawlSettings
    guard: EditorGuard
    own_port: int
    """The UI's port: never fetched."""
    delay: float = 0.2
    auth: Any = None
    """The settings' [[auth]] logins (an Authenticator), kept across fetches."""
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _gate: HostGate | None = None

    def check(self, url: str) -> None:
        """CommandError unless ``url`` is an http(s) URL off the UI's own port."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise CommandError(f"bad URL {url[:200]!r}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CommandError("give an http:// or https:// URL")
        if _canonical(url) is None:
            raise CommandError(f"bad URL {url[:200]!r}")
        if port == self.own_port:
            raise CommandError(f"{url[:200]}: the UI's own port {port} is never read")
        verdict = self.guard.check_url(url)
        if verdict is not None:
            raise CommandError(f"{url[:200]}: {verdict}")

    def check_within(self, origins: frozenset[Origin], url: str) -> None:
        """:meth:`check`, and CommandError unless ``url`` is on one of ``origins``."""
        self.check(url)
        if origin_of(url) not in origins:
            raise CommandError(
                f"{url[:200]}: not on the sample's origin (a preview stays there unless "
                "widened to the pattern's other sites)"
            )

    async def fetch(
        self, urls: list[str], within: frozenset[Origin] | None = None
    ) -> list[Page | str]:
        """Each URL's page, or why it could not be had, in order; with ``within``, only
        pages on those origins (redirects included)."""
        if not urls:
            return []
        check = self.check if within is None else functools.partial(self.check_within, within)
        async with self._lock, self._fetchers(urls) as (fetcher, robots):
            found: list[Page | str] = []
            for url in urls:
                try:
                    target, body, charset = await fetch_following(
                        fetcher, robots, url, self.settings.max_redirects, check
                    )
                except CommandError as exc:
                    found.append(str(exc)[:500])
                    continue
                found.append(Page(target, body, charset))
            return found

    @contextlib.asynccontextmanager
    async def _fetchers(self, urls: list[str]) -> AsyncIterator[tuple[Any, RobotsCache | None]]:
        """The fetcher of ``urls`` (through the proxies and, when the settings render, the
        browser of ``--render``) and the robots.txt cache, closed after."""
        settings = self.settings
        seeds = [u for u in (_canonical(url) for url in urls) if u is not None]
        check_url = proxy_check_url(settings, seeds)
        config = replace(
            fetch_config(settings),
            proxy_retries=settings.proxy_retries,
            proxy_check_url=check_url,
        )
        proxies = proxy_pool(settings)
        gate = self._gate_of(settings)
        fetcher = Fetcher(config, guard=self.guard, proxies=proxies, auth=self.auth, gate=gate)
        robots = None
        if settings.robots:
            cookieless = GatedFetch(NoCookies(fetcher), gate)
            robots = RobotsCache(cookieless.fetch, token=settings.robots_name)
            gate.use_rules(robots.known)
            fetcher.set_check_rules(robots)
        renderer = None
        try:
            if proxies is not None:
                await proxies.start()
            if renders(settings):
                renderer = rendering_fetcher(
                    settings,
                    fetcher,
                    crawl_scope(settings, seeds),
                    robots or _no_robots(fetcher),
                    gate,
                )
                await _start(renderer)
            yield GatedFetch(renderer or fetcher, gate), robots
        finally:
            if renderer is not None:
                await renderer.close()
            if proxies is not None:
                await proxies.close()
            await fetcher.close()

    def _gate_of(self, settings: CrawlSettings) -> HostGate:
        """The editor's host gate (made at the first fetch, kept for the next ones)."""
        if self._gate is None:
            policy = politeness_policy(settings)
            self._gate = HostGate(
                msgspec.structs.replace(policy, delay=max(policy.delay, self.delay))
            )
        return self._gate


def _canonical(url: str) -> str | None:
    try:
        return canonicalize(url)
    except InvalidURL:
        return None


def _no_robots(fetcher: Fetcher) -> RobotsCache:
    return RobotsCache(fetcher.fetch)  # unused: rendering asks robots only when they are obeyed


async def _start(renderer: Any) -> None:
    try:
        await renderer.start()
    except Exception as exc:  # RenderUnavailable, or playwright's errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CommandError(f"the rendering browser did not start: {first}") from None


_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]+")


def suggest_pattern(url: str) -> str:
    """A URL pattern for pages like ``url``: digits generalised in the host name (never in
    an address, nor in the port, which stays as it is: another port is another service),
    and path segments holding digits made letters-and-digits patterns (``/shop/city-3/`` ->
    ``/shop/[a-z]+-\\d+/``)."""
    try:
        url = canonicalize(url)
    except InvalidURL:
        return "^" + re.escape(url) + "$"
    parts = urlsplit(url)
    name = parts.hostname or ""
    host = re.escape(parts.netloc.rpartition("@")[2].rsplit(":", 1)[0] if parts.port else name)
    if ip_literal(name) is None:
        host = _DIGITS.sub(r"\\d+", host)
    if parts.port:
        host += f":{parts.port}"
    segments = [_segment(segment) for segment in parts.path.split("/")]
    query = r"\?" + _segment(parts.query) if parts.query else ""
    pattern = f"^{re.escape(parts.scheme)}://{host}{'/'.join(segments)}{query}$"
    return pattern.replace(r"\-", "-")


def _within(ip: IPAddress, network: _Network) -> bool:
    """Whether ``ip``, or the IPv4 address an IPv4-mapped ``ip`` is, lies in ``network``."""
    return any(a in network for a in (ip, _unmapped(ip)) if a.version == network.version)


def _unmapped(ip: IPAddress) -> IPAddress:
    """The IPv4 address of an IPv4-mapped IPv6 one (``::ffff:127.0.0.1`` is a socket to
    ``127.0.0.1``, the same endpoint), else ``ip``."""
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip if mapped is None else mapped


def _segment(segment: str) -> str:
    if not any(c.isdigit() for c in segment):
        return re.escape(segment)
    out = []
    for piece in _WORD.findall(segment):
        if piece.isdigit():
            out.append(r"\d+")
        elif piece.isalpha():
            out.append("[a-z]+" if piece.islower() else "[A-Za-z]+")
        else:
            out.append(re.escape(piece))
    return "".join(out)

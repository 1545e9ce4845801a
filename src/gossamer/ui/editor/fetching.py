"""How the editor reads sample pages: gossamer's fetcher, robots.txt, ``--resolve``, behind
an address guard that keeps the editor from being turned against this machine.

A browser can ask the editor to fetch any URL, so the editor's guard is stricter than a
crawl's: no host is trusted because it was typed in. Loopback and private addresses are
refused unless ``gossamer ui --editor-allow`` names them (an address, a network such as
``127.0.0.0/8``, or a host name, ``*.test`` for a domain's hosts); link-local and metadata
addresses are refused always, and so is the UI's own port (on any host: a name can point
anywhere). Redirect targets and the pages a preview reads are checked the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

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
from gossamer.rules_cli import fetch_config, fetch_following
from gossamer.settings import CrawlSettings, SettingsError, crawl_scope
from gossamer.urls import InvalidURL, canonicalize

__all__ = ["EditorGuard", "Page", "PageFetcher", "suggest_pattern"]

log = logging.getLogger(__name__)

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_NAME = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class EditorGuard(AddressGuard):
    """A crawl's guard naming only the hosts of ``--editor-allow``, and allowing the
    addresses of its networks."""

    networks: tuple[_Network, ...] = ()
    own_port: int = 0
    """The UI's port: refused on every host, whatever a URL's host resolves to (a rendered
    page's subrequests included)."""

    @classmethod
    def from_allow(cls, allow: Iterable[str]) -> EditorGuard:
        """The guard of ``--editor-allow`` values; SettingsError for one that is neither an
        address, a network nor a host name."""
        networks: list[_Network] = []
        hosts: set[str] = set()
        subdomains: set[str] = set()
        for item in allow:
            value = item.strip().lower().strip("[]")
            try:
                networks.append(ipaddress.ip_network(value, strict=False))
                continue
            except ValueError:
                pass
            if not _NAME.fullmatch(value):
                raise SettingsError(
                    f"invalid setting 'editor_allow': {item[:80]!r} is not an address, a "
                    "network or a host name"
                )
            if value.startswith("*."):
                subdomains.add(value[2:])
            else:
                hosts.add(value)
        return cls(
            frozenset(hosts), named_subdomains=frozenset(subdomains), networks=tuple(networks)
        )

    def check_url(self, url: str) -> str | None:
        if self.own_port:
            try:
                parts = urlsplit(url)
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                return "not a URL"
            if port == self.own_port:
                return f"the UI's own port {port} is never read"
        return AddressGuard.check_url(self, url)

    def verdict(self, host: str, address: str | IPAddress) -> str | None:
        never = AddressGuard(allow_private=True).verdict(host, address)
        if never is not None:
            return never
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if any(ip in net for net in self.networks if net.version == ip.version):
            return None
        verdict = AddressGuard.verdict(self, host, address)
        if verdict is not None:
            return f"{verdict} (gossamer ui --editor-allow names what the editor may read)"
        return None


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
        if port == self.own_port:
            raise CommandError(f"{url[:200]}: the UI's own port {port} is never read")
        verdict = self.guard.check_url(url)
        if verdict is not None:
            raise CommandError(f"{url[:200]}: {verdict}")

    async def fetch(self, urls: list[str]) -> list[Page | str]:
        """Each URL's page, or why it could not be had, in order."""
        if not urls:
            return []
        async with self._lock, self._fetchers(urls) as (fetcher, robots):
            found: list[Page | str] = []
            for url in urls:
                try:
                    target, body, charset = await fetch_following(
                        fetcher, robots, url, self.settings.max_redirects, self.check
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
            robots = RobotsCache(GatedFetch(fetcher, gate).fetch, token=settings.robots_token)
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
            self._gate = HostGate(replace(policy, delay=max(policy.delay, self.delay)))
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
    """A URL pattern for pages like ``url``: digits generalised in the host, and path
    segments holding digits made letters-and-digits patterns (``/shop/city-3/`` ->
    ``/shop/[a-z]+-\\d+/``)."""
    try:
        url = canonicalize(url)
    except InvalidURL:
        return "^" + re.escape(url) + "$"
    parts = urlsplit(url)
    name = parts.hostname or ""
    host = re.escape(parts.netloc.rpartition("@")[2].rsplit(":", 1)[0] if parts.port else name)
    if not _is_address(name):
        host = _DIGITS.sub(r"\\d+", host)
    if parts.port:
        host += r":\d+"
    segments = [_segment(segment) for segment in parts.path.split("/")]
    query = r"\?" + _segment(parts.query) if parts.query else ""
    pattern = f"^{re.escape(parts.scheme)}://{host}{'/'.join(segments)}{query}$"
    return pattern.replace(r"\-", "-")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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

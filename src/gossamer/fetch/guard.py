"""The address guard: which IP addresses a crawl may connect to.

A page can link to any address and a DNS name can resolve to any address (and to another one
a minute later: DNS rebinding), so the guard checks the address a connection is really about
to use, every time one is opened: on the resolver's answers (`GuardedResolver`, which the
connector uses for every new connection, robots.txt and redirect targets included) and on IP
literals in URLs, which aiohttp connects to without asking a resolver (`AddressGuard.check_url`).

Rules (`AddressGuard.verdict`):

- **never**: unspecified (``0.0.0.0/8``, ``::``), link-local (``169.254.0.0/16``, which holds
  the cloud metadata services at ``169.254.169.254``, and ``fe80::/10``), multicast,
  broadcast and reserved ranges, and the other known metadata addresses (``fd00:ec2::254``,
  ``100.100.100.200``);
- **only for hosts the user named**: loopback (``127.0.0.0/8``, ``::1``) and private ranges
  (``10/8``, ``172.16/12``, ``192.168/16``, ``100.64/10``, ``fc00::/7``, ...). Named hosts are
  the seeds' hosts, ``--allow-domain`` domains with their subdomains and the names of
  ``--resolve`` overrides (wildcards included); ``--allow-private`` allows them for every host;
- everything else (public addresses) is allowed.

IPv4 addresses embedded in IPv6 ones (``::ffff:127.0.0.1``, NAT64 ``64:ff9b::/96``, 6to4) are
judged as the IPv4 address they carry.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gossamer.addresses import domain_key, ip_literal
from gossamer.fetch.dns import Resolver, ResolveResult

__all__ = ["AddressGuard", "BlockedAddress", "GuardedResolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(*cidrs: str) -> tuple[_Network, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


_VERDICTS = 4096
"""Verdicts `AddressGuard.check_url` remembers (emptied when full)."""
_NEVER = _networks(
    "0.0.0.0/8",
    "169.254.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
    "100.100.100.200/32",
    "192.0.0.192/32",
    "::/128",
    "fe80::/10",
    "ff00::/8",
    "fd00:ec2::254/128",
)
_PRIVATE = _networks(
    "127.0.0.0/8",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "192.0.0.0/24",
    "198.18.0.0/15",
    "::1/128",
    "fc00::/7",
    "fec0::/10",
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class BlockedAddress(OSError):
    """A connection to an address the guard forbids (an ``OSError``: aiohttp reports it as a
    failed look-up, which the fetcher turns into the error ``blocked-address``)."""


@dataclass(frozen=True, slots=True)
class AddressGuard:
    """Judges addresses for one crawl (see the module doc for the rules)."""

    named_hosts: frozenset[str] = frozenset()
    """Host names (and IP literals, without brackets) the user named, lower case."""
    named_domains: frozenset[str] = frozenset()
    """Domains whose subdomains the user named too; ``""`` names every host."""
    allow_private: bool = False
    named_subdomains: frozenset[str] = frozenset()
    """Domains whose subdomains only the user named (``--resolve '*.test=...'``)."""
    _verdicts: dict[str, str | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def for_crawl(
        cls,
        seed_hosts: Iterable[str],
        allow_domains: Iterable[str] = (),
        resolve: Iterable[str] = (),
        *,
        allow_private: bool = False,
    ) -> AddressGuard:
        """The guard of a crawl: ``resolve`` holds ``HOST=IP`` overrides as given (``*.test``
        names the domain ``test``, a bare ``*`` every host)."""
        hosts = {_host_name(h) for h in seed_hosts}
        domains = {domain_key(d) for d in allow_domains}
        subdomains: set[str] = set()
        for item in resolve:
            name = item.partition("=")[0].strip().lower().rstrip(".")
            if name == "*":
                domains.add("")
            elif name.startswith("*."):
                subdomains.add(name[2:])
            elif name:
                hosts.add(name)
        named: frozenset[str]
        if isinstance(seed_hosts, frozenset) and hosts == seed_hosts:
            named = seed_hosts  # 200,000 seed hosts cost 20 MB: the caller's set serves
        else:
            named = frozenset(hosts)
        return cls(named, frozenset(domains), allow_private, frozenset(subdomains))

    def named(self, host: str) -> bool:
        """Whether the user named ``host`` (a seed host, an allowed domain, a --resolve)."""
        host = host.lower().strip("[]").rstrip(".")
        if host in self.named_hosts or "" in self.named_domains:
            return True
        if ip_literal(host) is not None:
            return host in self.named_domains  # an address is no domain's subdomain
        labels = host.split(".")
        if any(".".join(labels[i:]) in self.named_subdomains for i in range(1, len(labels))):
            return True
        return any(".".join(labels[i:]) in self.named_domains for i in range(len(labels)))

    def verdict(self, host: str, address: str | IPAddress, port: int = 0) -> str | None:
        """None when ``host`` may be reached at ``address``; else why not. ``port`` (0:
        unknown) is the one connected to: a crawl's guard judges addresses only, a stricter
        guard (the rule editor's) may judge the port too."""
        try:
            ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        except ValueError:
            return "not an IP address"
        ip = _embedded_ipv4(ip)
        if any(ip in net for net in _NEVER if net.version == ip.version):
            return f"{ip} is never crawled (link-local, metadata, multicast or reserved)"
        if self.allow_private:
            return None
        private = any(ip in net for net in _PRIVATE if net.version == ip.version)
        if private and not self.named(host):
            return f"{ip} is private or loopback and {host} was not named by the user"
        return None

    def check_url(self, url: str) -> str | None:
        """The verdict on a URL whose host is an IP literal (None for host names, which the
        resolver's answers are checked for); remembered by the URL's start up to its path
        (which fixes the host), as the fetcher asks once per request."""
        end = url.find("/", url.find("//") + 2)
        start = url if end < 0 else url[:end]
        verdicts = self._verdicts
        try:
            return verdicts[start]
        except KeyError:
            pass
        if len(verdicts) >= _VERDICTS:
            verdicts.clear()
        verdict = verdicts[start] = self._check_url(url)
        return verdict

    def _check_url(self, url: str) -> str | None:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return None
        if not host or not (host[0].isdigit() or ":" in host):
            return None
        ip = ip_literal(host.partition("%")[0])  # a zone id cut off, the address judged
        return None if ip is None else self.verdict(host, ip)


def _host_name(host: str) -> str:
    """``host`` lower case, without IPv6 brackets or a final dot: the same string when it is
    so already (a crawl's seed hosts are kept once, not copied)."""
    name = host.lower().strip("[]").rstrip(".")
    return host if name == host else name


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        packed = ip.packed
        if packed[:12] == bytes(12) and int(ip) > 1:  # IPv4-compatible ::a.b.c.d
            return ipaddress.IPv4Address(packed[12:])
    return ip


class GuardedResolver:
    """A resolver whose answers pass the guard: forbidden addresses are dropped, and a name
    left with none fails with `BlockedAddress`."""

    def __init__(self, inner: Resolver, guard: AddressGuard) -> None:
        self.inner = inner
        self._guard = guard
        self.blocked = 0
        """Look-ups that failed because every address was forbidden."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The inner resolver's answers that the guard allows."""
        results = await self.inner.resolve(host, port, family)
        guard = self._guard
        allowed = [r for r in results if guard.verdict(host, r["host"], port) is None]
        if not allowed:
            self.blocked += 1
            reason = guard.verdict(host, results[0]["host"], port) if results else "no address"
            raise BlockedAddress(f"{host}: {reason}")
        return allowed

    async def close(self) -> None:
        """Close the inner resolver."""
        await self.inner.close()

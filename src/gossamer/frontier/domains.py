"""The registrable domains' share of the slots of :class:`~gossamer.frontier.hosts.HostScheduler`:
at most ``per_domain`` leases in flight over all the hosts of one registrable domain (eTLD+1,
:func:`gossamer.addresses.registrable_domain`), above each host's ``per_host``.

Host names cost nothing to make (wildcard DNS): one page naming 300 subdomains of one domain
that accept connections and never answer would otherwise take every slot of the crawl
(``--concurrency``), wave after wave, each for a read timeout and its retries, while the
other sites' pages wait. With the share, that domain holds ``per_domain`` of them; the rest
go to the other sites.

A host whose domain is full is not due (:class:`~gossamer.frontier.ready.ReadyHeap`): it is
*parked* on the domain, out of the ready heap, and each request of the domain that ends hands
its slot to the host parked longest (back to the ready heap), so the domain's hosts take
turns. Requests outside the leases (the host gate:
sitemaps, proxy checks, a rendered page's subrequests) count on the domain too, but never wait
for it: they are few, bounded per host, and not the crawl's slots.

Which domain a host is in: an IPv4 literal is its own, an IPv6 literal is in its /64 network
(the least a site is given: counted by address, one server could be 2**64 domains, and 40 of
its addresses queued first filled the working set ahead of every other site; loopback,
IPv4-mapped and NAT64 addresses stay their own); a name is in its registrable domain by the
Public Suffix List, its own when it has none (``localhost``, a bare TLD). The list costs some
0.4 s and 3 MB to read, and most crawls never need it: only names that end in the same two
labels can share a domain. So until two such hosts come, each host's domain is named by its
last two labels; when they come the list is read, and the domains known are named again
by it (each held one host until then, so none merges).

Each host's slot points at its domain (``HostSlot.domain``), and the policy counts a request
on both (:meth:`~gossamer.frontier.politeness.PolitenessPolicy.on_lease`,
:meth:`~gossamer.frontier.politeness.PolitenessPolicy.on_finish`, which wakes the domain's
parked hosts) and gives a host no more room than its domain has
(:meth:`~gossamer.frontier.politeness.PolitenessPolicy.room`: the Redis frontier's two-step
rounds). Domains with nothing in
flight, nothing parked and no host in the working set (nor waiting to join it: the set's share
per domain, :mod:`gossamer.frontier.workingset`, counts on the same ``DomainSlot``) are
dropped when the table has doubled since the last sweep; a slot that points at a dropped one
takes the live one at its next request.

In a cluster the share is each worker's: a domain whose hosts several workers own may have
``per_domain`` in flight from each of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic

from gossamer.addresses import address_domain, registrable_domain
from gossamer.frontier.hostqueue import E, Host
from gossamer.frontier.politeness import DomainSlot, HostSlot

__all__ = ["DomainShare", "domain_host"]

log = logging.getLogger(__name__)

_SWEEP_AT = 1024
"""Domains kept at least before idle ones are dropped."""


def domain_host(key: str) -> str:
    """The host of a host key (``scheme://host[:port]``), lower case, without the brackets of
    an IPv6 address or a final dot."""
    authority = key.partition("://")[2]
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0].rstrip(".") if ":" in authority else authority.rstrip(".")


def _name(host: str) -> str:
    """A host's domain by the Public Suffix List, an IP literal's by `address_domain`."""
    return address_domain(host) or registrable_domain(host)


def _last_two(host: str) -> str:
    """A name's domain until the Public Suffix List is read: its last two labels (every host
    of a registrable domain ends in the same two)."""
    head, dot, last = host.rpartition(".")
    return head.rpartition(".")[2] + dot + last if dot else host


class DomainShare(Generic[E]):
    """The domains of ``hosts`` (the scheduler's table, read only), each at most ``most``
    leases in flight; ``schedule`` puts a host whose domain has room again where it waits its
    turn. See the module docstring."""

    __slots__ = ("_domains", "_hosts", "_most", "_read", "_schedule", "_sweep_at")

    def __init__(
        self, most: int, hosts: dict[str, Host[E]], schedule: Callable[[str, Host[E]], None]
    ) -> None:
        if most < 1:
            raise ValueError(f"per_domain must be at least 1, not {most}")
        self._most = most
        self._hosts = hosts
        self._schedule = schedule
        self._domains: dict[str, DomainSlot] = {}
        self._read = False
        """The Public Suffix List names the domains (see the module docstring)."""
        self._sweep_at = _SWEEP_AT

    @property
    def most(self) -> int:
        """Requests in flight over one domain's hosts at most (``per_domain``)."""
        return self._most

    def attach(self, key: str, slot: HostSlot) -> DomainSlot:
        """The domain of host ``key``, its ``slot`` pointed at it."""
        domain = slot.domain
        if domain is None or domain.gone:
            domain = slot.domain = self._named(domain_host(key))
        return domain

    def of(self, key: str, slot: HostSlot | None) -> DomainSlot:
        """The domain of host ``key``: its ``slot``'s, pointed at it, or without a slot (a
        host waiting to join the working set has none yet) named from the key alone."""
        if slot is not None:
            return self.attach(key, slot)
        return self._named(domain_host(key))

    def full(self, key: str, slot: HostSlot) -> bool:
        """Whether host ``key``'s domain has all its requests in flight."""
        domain = slot.domain
        if domain is None or domain.gone:
            domain = self.attach(key, slot)
        return domain.active >= self._most

    def parks(self, key: str, host: Host[E]) -> bool:
        """Whether host ``key`` must wait for its domain: then it is parked on it until one of
        the domain's requests ends."""
        if not self.full(key, host.slot):
            return False
        domain = host.slot.domain
        assert domain is not None
        if domain.parked is None:
            domain.parked = {}
            log.info(
                "%s has %d requests in flight over its hosts (per_domain); its other hosts "
                "wait their turn",
                domain.name,
                domain.active,
                extra={"event": "domain-full", "domain": domain.name, "active": domain.active},
            )
        domain.parked[key] = None
        return True

    def _wake(self, domain: DomainSlot) -> None:
        """One of ``domain``'s requests ended (``DomainSlot.wake``): its hosts parked longest
        take the room it left, back to the ready heap."""
        parked, hosts = domain.parked, self._hosts
        room = self._most - domain.active
        while room > 0 and parked:
            key = next(iter(parked))
            del parked[key]
            host = hosts.get(key)
            if host is not None and host.waiting and host.slot.domain is domain:
                self._schedule(key, host)
                room -= 1

    def _named(self, host: str) -> DomainSlot:
        """The live domain of ``host``, made if there is none."""
        domains = self._domains
        name = address_domain(host)  # an address's: no list to read
        if name is None and self._read:
            name = registrable_domain(host)
        elif name is None:
            name = _last_two(host)
            found = domains.get(name)
            if found is not None and found.host != host:
                self._read_list()  # two hosts that may share a domain: name them by the list
                name = registrable_domain(host)
        domain = domains.get(name)
        if domain is None:
            if len(domains) >= self._sweep_at:
                self._sweep()
            domain = domains[name] = DomainSlot(name, host, wake=self._wake)
        return domain

    def _read_list(self) -> None:
        """Name every domain known by the Public Suffix List from now on."""
        self._read = True
        renamed: dict[str, DomainSlot] = {}
        for domain in self._domains.values():
            domain.name = _name(domain.host)
            renamed[domain.name] = domain
        self._domains = renamed

    def _sweep(self) -> None:
        """Drop the domains with nothing in flight, nothing parked, no host in the working
        set and none waiting to join it."""
        kept: dict[str, DomainSlot] = {}
        for name, domain in self._domains.items():
            if domain.active or domain.parked or domain.members or domain.joining:
                kept[name] = domain
            else:
                domain.gone = True
        self._domains = kept
        self._sweep_at = max(_SWEEP_AT, 2 * len(kept))

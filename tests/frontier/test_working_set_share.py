"""A registrable domain's share of the working set (``per_domain`` capped): its hosts hold at
most a few times ``per_domain`` places of the set, the others wait on the domain and take the
place of one that leaves, ahead of newer hosts; nothing is lost. All on a fake clock."""

from __future__ import annotations

from collections import Counter

import pytest

from gossamer.frontier.base import Feedback, Lease
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import host_key


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock, *, max_active: int, per_domain: int = 1, delay: float = 0.0
) -> HostScheduler[Queued]:
    policy = PolitenessPolicy(per_host=1, per_domain=per_domain, delay=delay)
    return HostScheduler(policy, max_active=max_active, clock=clock)


def push(hosts: HostScheduler[Queued], *urls: str) -> None:
    for url in urls:
        hosts.push(host_key(url), Queued(url, 0, 0, 0))


def swamp(first: int, last: int, pages: int = 1) -> list[str]:
    return [f"http://h{i}.swamp.test/{j}" for i in range(first, last) for j in range(pages)]


def ack(hosts: HostScheduler[Queued], leases: list[Lease]) -> None:
    for lease in leases:
        hosts.finish(lease, Feedback(started_at=0.0))


@pytest.mark.parametrize(
    ("per_domain", "max_active", "share"),
    [(1, 8, 4), (2, 10, 5), (16, 20, 16), (16, 50_000, 64)],
)
def test_a_domains_hosts_hold_a_few_times_per_domain_of_the_set_never_less(
    per_domain: int, max_active: int, share: int
) -> None:
    """4 x ``per_domain``, at most half the set unless ``per_domain`` is more."""
    hosts = make(Clock(), max_active=max_active, per_domain=per_domain)
    push(hosts, *swamp(0, 100))
    assert len(hosts.lease(1000).leases) == per_domain
    assert hosts.active == share


def test_another_site_queued_behind_a_flood_joins_beside_it_and_nothing_is_lost() -> None:
    hosts = make(Clock(), max_active=8)
    good = [f"http://good.test/{i}" for i in range(3)]
    push(hosts, *swamp(0, 40), *good)
    first = hosts.lease(64).leases
    assert [lease.url for lease in first] == ["http://h0.swamp.test/0", good[0]]
    assert hosts.active == 5  # the swamp's share and good.test
    leased = [lease.url for lease in first]
    ack(hosts, first)
    for _ in range(1000):
        if not (batch := hosts.lease(64).leases):
            break
        assert hosts.active <= 8
        leased += [lease.url for lease in batch]
        ack(hosts, batch)
    assert Counter(leased) == Counter([*swamp(0, 40), *good])
    assert max(leased.index(url) for url in good) < 6  # beside the swamp's first hosts
    assert hosts.active == 0 and hosts.queued == 0


def test_a_host_waiting_on_its_domain_takes_the_place_of_one_that_leaves() -> None:
    """h3 and h4 wait on swamp.test while h0-h2 hold its share; h0 ends, and h3 takes its
    place at once, ahead of the other sites' hosts that came after it and still wait."""
    hosts = make(Clock(), max_active=6)  # share 3
    others = [f"http://o{i}.test/0" for i in range(6)]
    push(hosts, *swamp(0, 5), *others)
    batch = hosts.lease(64).leases
    assert [lease.url for lease in batch] == ["http://h0.swamp.test/0", *others[:3]]
    assert hosts.active == 6  # h0-h2, o0-o2
    ack(hosts, batch[:1])  # h0 leaves; h3 takes its place, before o3 (in line) may join
    assert hosts.active == 6
    ack(hosts, batch[1:])
    order = []
    for _ in range(100):
        if not (batch := hosts.lease(1).leases):
            break
        order += [lease.url for lease in batch]
        ack(hosts, batch)
    assert [url for url in order if "swamp" in url] == swamp(1, 5)
    assert sorted(order) == sorted([*swamp(1, 5), *others[3:]])
    assert hosts.active == 0


def test_a_domain_with_hosts_in_the_set_is_not_swept_while_idle() -> None:
    """swamp.test's four hosts wait out their delay in the set, nothing in flight; a sweep
    of idle domains (2,000 other sites) keeps its count, so h4-h7 still wait on it."""
    clock = Clock()
    hosts = make(clock, max_active=5000, delay=10.0)  # share 4
    push(hosts, *swamp(0, 4, pages=2))
    for _ in range(4):  # one at a time (per_domain 1): each host's first page
        ack(hosts, hosts.lease(64).leases)
    assert hosts.active == 4
    push(hosts, *(f"http://site{i}.test/0" for i in range(2000)))
    ack(hosts, hosts.lease(5000).leases)
    push(hosts, *swamp(4, 8))
    assert [lease.url for lease in hosts.lease(5000).leases] == []
    clock.now += 10.0
    assert [lease.url for lease in hosts.lease(5000).leases] == ["http://h0.swamp.test/1"]


def test_the_addresses_of_one_ipv6_network_hold_one_share_of_the_set() -> None:
    """40 addresses of one /64 queued first, their requests hanging: another site leases
    beside them at once (before, each address was a domain: they held the whole set)."""
    hosts = make(Clock(), max_active=8)
    flood = [f"http://[2001:db8::{i:x}]/" for i in range(1, 41)]
    good = [f"http://good.test/{i}" for i in range(3)]
    push(hosts, *flood, *good)
    first = hosts.lease(64).leases
    assert [lease.url for lease in first] == [flood[0], good[0]]
    assert hosts.active == 5  # the network's share and good.test
    leased = [lease.url for lease in first]
    ack(hosts, [lease for lease in first if lease.url in good])
    while batch := [lease for lease in hosts.lease(64).leases if lease.url in good]:
        leased += [lease.url for lease in batch]
        ack(hosts, batch)
    assert leased == [flood[0], *good]  # good.test done, the flood's one request hanging

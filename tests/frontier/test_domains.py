"""The registrable domains' share of the host scheduler's slots (``per_domain``), on a fake
clock: the cap counted over a domain's hosts, in both lease paths, handed on in turn, given
back by every way a request ends, and which hosts are one domain (IP literals, localhost, the
Public Suffix List read only when two hosts may share one)."""

from __future__ import annotations

import pytest

from gossamer.frontier.base import Feedback, Lease
from gossamer.frontier.domains import DomainShare, domain_host
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import host_key


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock, *, per_host: int = 2, per_domain: int = 2, **kw: object
) -> HostScheduler[Queued]:
    policy = PolitenessPolicy(per_host=per_host, per_domain=per_domain)
    return HostScheduler(policy, clock=clock, **kw)  # type: ignore[arg-type]


def push(hosts: HostScheduler[Queued], *urls: str) -> None:
    for url in urls:
        hosts.push(host_key(url), Queued(url, 0, 0, 0))


def hosts_of(leases: list[Lease]) -> list[str]:
    return [lease.host for lease in leases]


def swamp(count: int, pages: int = 1) -> list[str]:
    return [f"http://h{i}.swamp.test/{j}" for i in range(count) for j in range(pages)]


def test_the_hosts_of_a_domain_share_per_domain_and_other_sites_go_beside() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2, per_domain=3)
    push(hosts, *swamp(40), "http://good.test/0", "http://good.test/1", "http://good.test/2")
    leases = hosts.lease(64).leases
    assert hosts_of(leases).count("http://good.test") == 2  # its own per_host
    assert len([lease for lease in leases if "swamp" in lease.host]) == 3
    assert hosts.lease(64).leases == []


def test_a_domain_full_of_hanging_hosts_leaves_the_rest_of_the_concurrency() -> None:
    """The red team's trap, scaled down: 40 hosts of one domain first in line, then a good
    host with 20 pages; concurrency 8, and every swamp request hangs (never finished)."""
    clock = Clock()
    hosts = make(clock, per_host=2, per_domain=2)
    push(hosts, *swamp(40), *(f"http://good.test/{i}" for i in range(20)))
    out: list[Lease] = []
    fetched = 0
    while fetched < 20:
        busy = len(out)
        leases = hosts.lease(8 - busy).leases
        assert leases, "the good host got no slot"
        out += leases
        for lease in [lease for lease in out if lease.host == "http://good.test"]:
            out.remove(lease)
            hosts.finish(lease, Feedback(started_at=clock.now))
            fetched += 1
    assert len(out) == 2  # the swamp's share, hanging all along


def test_a_freed_slot_goes_to_the_host_parked_longest() -> None:
    clock = Clock()
    hosts = make(clock, per_host=1, per_domain=1)
    push(hosts, *swamp(4))
    (first,) = hosts.lease(10).leases
    assert first.host == "http://h0.swamp.test"
    assert hosts.lease(10).leases == []  # h1, h2, h3 parked, in that order
    order = [first.host]
    lease = first
    for _ in range(3):
        hosts.finish(lease, Feedback(started_at=clock.now))
        (lease,) = hosts.lease(10).leases
        order.append(lease.host)
    assert order == [f"http://h{i}.swamp.test" for i in range(4)]


@pytest.mark.parametrize(
    "feedback",
    [Feedback(started_at=1.0), Feedback(started_at=1.0, failed=True), None],
    ids=["success", "error-or-timeout", "cancelled"],
)
def test_every_end_of_a_lease_gives_its_domain_slot_back(feedback: Feedback | None) -> None:
    clock = Clock()
    hosts = make(clock, per_host=1, per_domain=1)
    push(hosts, *swamp(3))
    for _ in range(3):
        (lease,) = hosts.lease(10).leases
        assert hosts.lease(10).leases == []
        hosts.finish(lease, feedback)
    assert hosts.lease(10).leases == [] and hosts.queued == 0


def test_robots_leases_count_on_the_domain() -> None:
    clock = Clock()
    hosts = make(clock, per_host=1, per_domain=1, rules=lambda key: None)
    push(hosts, *swamp(2))
    (robots,) = hosts.lease(10).leases
    assert robots.kind == "robots"
    assert hosts.lease(10).leases == []  # h1's robots.txt waits for h0's
    hosts.rules(robots, RobotsPolicy.allow_all(), Feedback(started_at=clock.now))
    assert [lease.kind for lease in hosts.lease(10).leases] == ["robots"]


def test_due_and_take_keep_the_cap_over_a_round() -> None:
    """The Redis frontier by URL: hosts of one domain named in one round may not take more
    than the domain's share between them, whatever the shared limiter grants."""
    clock = Clock()
    hosts = make(clock, per_host=2, per_domain=3)
    push(hosts, *swamp(3, pages=2))
    round_ = hosts.due(10)
    taken = [hosts.take(want, want.count) for want in round_.wants]
    assert sum(used for _, used in taken) == 3
    assert hosts.due(10).wants == []


def test_requests_outside_the_leases_count_on_the_domain_but_never_wait_for_it() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2, per_domain=1)
    push(hosts, "http://h0.swamp.test/0")
    assert hosts.claims.claim("http://h1.swamp.test") == 0.0  # a sitemap of h1: it goes
    assert hosts.lease(10).leases == []  # and h0's page waits for it
    assert hosts.claims.claim("http://h2.swamp.test") == 0.0  # the gate never waits here
    hosts.claims.unclaim("http://h1.swamp.test", Feedback(started_at=clock.now))
    assert hosts.lease(10).leases == []  # h2's request is still out
    hosts.claims.unclaim("http://h2.swamp.test", None)
    assert hosts_of(hosts.lease(10).leases) == ["http://h0.swamp.test"]


@pytest.mark.parametrize(
    ("key", "host"),
    [
        ("http://www.example.co.uk", "www.example.co.uk"),
        ("https://a.test:8443", "a.test"),
        ("http://127.0.0.1:8080", "127.0.0.1"),
        ("http://[::1]:8080", "::1"),
        ("http://[2001:db8::1]", "2001:db8::1"),
        ("http://localhost:3000", "localhost"),
    ],
)
def test_domain_host_reads_the_host_of_a_key(key: str, host: str) -> None:
    assert domain_host(key) == host


def names(share: DomainShare[Queued], *keys: str) -> list[str]:
    return [share.attach(key, HostSlot()).name for key in keys]


def test_an_address_and_localhost_are_each_their_own_domain() -> None:
    share: DomainShare[Queued] = DomainShare(2, {}, lambda key, host: None)
    keys = [
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
        "http://10.0.0.1",
        "http://127.0.0.2",
        "http://[::1]:1",
        "http://localhost:1",
        "http://localhost:2",
        "http://test",
    ]
    assert names(share, *keys) == [
        "127.0.0.1",
        "127.0.0.1",  # one address, two ports: one server
        "10.0.0.1",  # the same last two numbers: another address all the same
        "127.0.0.2",
        "::1",
        "localhost",
        "localhost",
        "test",
    ]
    assert not share._read  # no two names that may share a domain: the list not read


def test_the_public_suffix_list_names_domains_once_two_hosts_may_share_one() -> None:
    share: DomainShare[Queued] = DomainShare(2, {}, lambda key, host: None)
    first = HostSlot()
    assert share.attach("http://a.example.co.uk", first).name == "co.uk"  # a stand-in
    assert not share._read
    assert names(share, "http://b.example.co.uk", "http://other.co.uk") == [
        "example.co.uk",
        "other.co.uk",
    ]
    assert share._read
    assert first.domain is not None and first.domain.name == "example.co.uk"  # renamed
    assert share.attach("http://b.example.co.uk", HostSlot()) is first.domain
    assert names(share, "http://x.github.io", "http://y.github.io") == [
        "x.github.io",
        "y.github.io",
    ]


def test_idle_domains_are_dropped_and_a_slot_takes_the_live_one() -> None:
    share: DomainShare[Queued] = DomainShare(2, {}, lambda key, host: None)
    slot = HostSlot()
    old = share.attach("http://h0.site0.test", slot)
    for i in range(1, 2000):
        share.attach(f"http://h0.site{i}.test", HostSlot())
    assert old.gone and len(share._domains) < 2000
    assert share.attach("http://h0.site0.test", slot) is not old
    assert slot.domain is not None and not slot.domain.gone


def test_a_round_leases_nothing_of_a_host_whose_domain_was_dropped_meanwhile() -> None:
    """Between a round's ``due`` and its ``take`` (the shared limiter's answer awaited) the
    idle domains may be swept: the host is looked at again, under the live domain."""
    clock = Clock()
    hosts = make(clock, per_host=2, per_domain=2)
    push(hosts, "http://h0.swamp.test/0")
    (want,) = hosts.due(10).wants
    for i in range(2000):  # requests outside the leases to other sites: a sweep
        hosts.claims.claim(f"http://site{i}.test")
    assert hosts.take(want, 1) == ([], 0)
    (again,) = hosts.due(10).wants
    leases, used = hosts.take(again, 1)
    assert used == 1 and hosts_of(leases) == ["http://h0.swamp.test"]
    slot = hosts.slot("http://h0.swamp.test")
    assert slot is not None and slot.domain is not None
    assert not slot.domain.gone and slot.domain.active == 1


def test_an_ipv6_address_is_in_its_64_network_others_their_own() -> None:
    """A server can name itself by every address of its /64: one domain, not 2**64."""
    share: DomainShare[Queued] = DomainShare(2, {}, lambda key, host: None)
    keys = [
        "http://[2001:db8::1]",
        "http://[2001:db8::ffff:1]:8080",
        "http://[2001:db8:0:1::1]",
        "http://[::1]",
        "http://[::ffff:7f00:1]",
        "http://[64:ff9b::102:304]",
        "http://[64:ff9b::102:305]",
    ]
    assert names(share, *keys) == [
        "2001:db8::/64",
        "2001:db8::/64",
        "2001:db8:0:1::/64",
        "::1",
        "::ffff:7f00:1",
        "64:ff9b::102:304",  # NAT64: an IPv4 address, its own
        "64:ff9b::102:305",
    ]
    assert not share._read  # addresses: no list to read
    slot = HostSlot()
    assert share.attach("http://a.example.co.uk", slot).name == "co.uk"
    assert names(share, "http://b.example.co.uk", "http://[2001:db8::2]") == [
        "example.co.uk",
        "2001:db8::/64",  # named again when the list is read: still its network
    ]

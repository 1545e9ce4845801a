"""Best first across hosts in the host scheduler: synchronous, on a fake clock, exact.

The due host whose next URL is best goes first; while the best queued URL's host is not due,
only URLs within ``slack`` of it go out (a share of its priority from even odds up);
politeness is kept; a breadth-first crawl (every priority 0) keeps its order and never turns
the ranking on.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from gossamer.frontier.base import Feedback, Lease
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import fingerprint, host_key

A, B, C, D = "http://a.test", "http://b.test", "http://c.test", "http://d.test"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock, *, per_host: int = 1, delay: float = 0.0, **kw: Any
) -> HostScheduler[Queued]:
    return HostScheduler(PolitenessPolicy(per_host=per_host, delay=delay), clock=clock, **kw)


def entry(url: str, priority: float = 0.0) -> Queued:
    return Queued(url, fingerprint(url), 0, 0, priority=priority)


def push(hosts: HostScheduler[Queued], url: str, priority: float = 0.0) -> None:
    hosts.push(host_key(url), entry(url, priority))


def urls(leases: list[Lease]) -> list[str]:
    return [lease.url for lease in leases]


def one_by_one(hosts: HostScheduler[Queued], clock: Clock, steps: int = 50) -> list[str]:
    """Lease one URL at a time and end it at once, the clock moving 1 s when nothing is due."""
    order: list[str] = []
    for _ in range(steps):
        leases = hosts.lease(1).leases
        if not leases and not hosts.queued and not hosts.delayed:
            break
        for lease in leases:
            order.append(lease.url)
            hosts.finish(lease, Feedback(started_at=clock.now))
        if not leases:
            clock.now += 1.0
    return order


def crawl_delays(delays: dict[str, float]) -> Any:
    """A rules lookup: every host allows everything, with the given Crawl-delays."""
    table = {
        key: RobotsPolicy.parse(f"User-agent: *\nCrawl-delay: {delay}\n".encode())
        for key, delay in delays.items()
    }
    plain = RobotsPolicy.allow_all()
    return lambda key: table.get(key, plain)


# -- the order -----------------------------------------------------------------------------------


def test_all_priorities_zero_keep_the_ready_order_and_no_ranking() -> None:
    clock = Clock()
    hosts = make(clock)
    for url in (f"{A}/0", f"{A}/1", f"{B}/0", f"{C}/0", f"{B}/1"):
        push(hosts, url)
    assert urls(hosts.lease(10).leases) == [f"{A}/0", f"{B}/0", f"{C}/0"]
    assert not hosts.ranked  # the breadth-first path: no best-first order at all
    assert hosts._best is None


def test_the_due_host_with_the_best_next_url_goes_first() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2, slack=math.inf)
    push(hosts, f"{A}/low", 0.2)
    push(hosts, f"{B}/top", 0.9)
    push(hosts, f"{C}/mid", 0.5)
    push(hosts, f"{A}/best", 1.0)
    push(hosts, f"{D}/zero")
    assert urls(hosts.lease(10).leases) == [
        f"{A}/best",
        f"{B}/top",
        f"{C}/mid",
        f"{A}/low",
        f"{D}/zero",
    ]


def test_negative_priorities_come_after_zero() -> None:
    clock = Clock()
    hosts = make(clock, slack=math.inf)
    push(hosts, f"{A}/cold", -1.0)
    push(hosts, f"{B}/plain")
    push(hosts, f"{C}/warm", 0.1)
    assert urls(hosts.lease(10).leases) == [f"{C}/warm", f"{B}/plain", f"{A}/cold"]


def test_equal_priorities_go_in_the_order_hosts_became_due() -> None:
    clock = Clock()
    hosts = make(clock, delay=1.0)
    for i in range(2):
        for host in (A, B, C):
            push(hosts, f"{host}/{i}", 0.5)
    first = hosts.lease(10).leases
    assert urls(first) == [f"{A}/0", f"{B}/0", f"{C}/0"]
    for lease in reversed(first):
        hosts.finish(lease, Feedback(started_at=clock.now))
    clock.now += 1.0
    assert urls(hosts.lease(10).leases) == [f"{A}/1", f"{B}/1", f"{C}/1"]


def test_a_lease_takes_one_url_per_due_host_in_turn() -> None:
    clock = Clock()
    hosts = make(clock, per_host=3, slack=math.inf)
    for i in range(3):
        push(hosts, f"{A}/{i}", 0.9 - i / 10)
    push(hosts, f"{B}/0", 0.75)
    assert urls(hosts.lease(10).leases) == [f"{A}/0", f"{A}/1", f"{B}/0", f"{A}/2"]


# -- the slack -----------------------------------------------------------------------------------


def test_while_the_best_host_waits_only_urls_within_the_slack_go() -> None:
    clock = Clock()
    hosts = make(clock, slack=0.2, rules=crawl_delays({A: 5.0}))
    push(hosts, f"{A}/0", 0.9)
    push(hosts, f"{A}/1", 0.9)
    push(hosts, f"{B}/0", 0.75)
    push(hosts, f"{B}/1", 0.75)
    push(hosts, f"{C}/0", 0.5)
    first = hosts.lease(10).leases
    assert urls(first) == [f"{A}/0", f"{B}/0"]  # c.test's 0.5 is below 0.9 less 0.2 of it (0.72)
    for lease in first:
        hosts.finish(lease, Feedback(started_at=clock.now))
    assert hosts.next_ready() == 0.0  # b.test's 0.75 is due and within the slack
    assert urls(hosts.lease(10).leases) == [f"{B}/1"]
    assert hosts.lease(10).leases == []
    assert hosts.next_ready() == 5.0  # held until a.test is due, not a busy loop
    clock.now += 5.0
    assert urls(hosts.lease(10).leases) == [f"{A}/1", f"{C}/0"]


@pytest.mark.parametrize(
    ("slack", "first"),
    [
        (0.0, ["a/0"]),
        (0.3, ["a/0", "b/0"]),
        (0.5, ["a/0", "b/0"]),
        (math.inf, ["a/0", "b/0", "c/0"]),
    ],
)
def test_the_slack_sets_how_much_worse_may_go_meanwhile(slack: float, first: list[str]) -> None:
    clock = Clock()
    hosts = make(clock, slack=slack, rules=crawl_delays({A: 10.0}))
    push(hosts, f"{A}/0", 1.0)
    push(hosts, f"{A}/1", 1.0)
    push(hosts, f"{B}/0", 0.7)
    push(hosts, f"{C}/0", 0.1)
    got = hosts.lease(10).leases
    assert [url.split("//")[1].replace(".test", "") for url in urls(got)] == first


@pytest.mark.parametrize(
    ("best", "ready", "goes"),
    [
        (0.8, 0.45, True),  # at least half of 0.8
        (0.8, 0.35, False),  # within 0.5 of 0.8, but less than half of it
        (0.6, 0.2, False),
        (0.4, 0.0, True),  # below even odds the slack is a difference: 0.4 less 0.5
        (0.2, 0.0, True),
    ],
)
def test_from_even_odds_up_the_slack_is_a_share_of_the_best_priority(
    best: float, ready: float, goes: bool
) -> None:
    clock = Clock()
    hosts = make(clock, slack=0.5, rules=crawl_delays({A: 10.0}))
    push(hosts, f"{A}/0", best)
    push(hosts, f"{A}/1", best)
    push(hosts, f"{B}/0", ready)
    assert urls(hosts.lease(10).leases) == [f"{A}/0", f"{B}/0"][: 2 if goes else 1]


def test_a_best_host_at_its_connection_limit_holds_worse_urls_back() -> None:
    clock = Clock()
    hosts = make(clock, slack=0.1)
    push(hosts, f"{A}/0", 0.9)
    push(hosts, f"{A}/1", 0.9)
    push(hosts, f"{B}/0", 0.3)
    (lease,) = hosts.lease(10).leases
    assert lease.url == f"{A}/0"
    assert hosts.lease(10).leases == []  # a.test full (per_host 1), b.test far worse
    assert hosts.next_ready() == 1.0  # a poll: a.test's time comes when its request ends
    hosts.finish(lease, Feedback(started_at=clock.now))
    assert urls(hosts.lease(10).leases) == [f"{A}/1", f"{B}/0"]


def test_the_slack_must_be_a_number_at_least_zero() -> None:
    for bad in (-0.1, math.nan):
        with pytest.raises(ValueError, match="slack"):
            make(Clock(), slack=bad)


# -- politeness ----------------------------------------------------------------------------------


def test_priorities_never_break_a_hosts_delay_or_limit() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2, delay=3.0, slack=math.inf)
    for i in range(4):
        push(hosts, f"{A}/{i}", 1.0)
    push(hosts, f"{B}/0", 0.1)
    starts: list[tuple[float, str]] = []
    for _ in range(20):
        for lease in hosts.lease(10).leases:
            starts.append((clock.now, lease.url))
            hosts.finish(lease, Feedback(started_at=clock.now))
        clock.now += 0.5
    a_times = [t for t, url in starts if url.startswith(A)]
    assert len(a_times) == 4
    assert all(b - a >= 3.0 for a, b in itertools.pairwise(a_times))
    assert starts[:2] == [(100.0, f"{A}/0"), (100.0, f"{B}/0")]  # slack inf: b goes meanwhile


def test_robots_lease_of_the_best_host_comes_first() -> None:
    clock = Clock()
    known: dict[str, RobotsPolicy] = {}
    hosts = make(clock, per_host=1, slack=math.inf, rules=known.get)
    push(hosts, f"{A}/0", 0.1)
    push(hosts, f"{B}/0", 0.9)
    leases = hosts.lease(1).leases
    assert [(lease.kind, lease.url) for lease in leases] == [("robots", f"{B}/robots.txt")]


def test_a_retried_url_comes_back_with_its_priority_at_the_front_of_it() -> None:
    clock = Clock()
    hosts = make(clock, slack=math.inf)
    push(hosts, f"{A}/0", 0.5)
    push(hosts, f"{A}/1", 0.5)
    push(hosts, f"{B}/0", 0.4)
    (lease, other) = hosts.lease(2).leases
    done = hosts.finish(lease, Feedback(started_at=clock.now))
    assert done is not None
    hosts.delay(A, done, clock.now + 2.0)
    hosts.finish(other, Feedback(started_at=clock.now))
    assert one_by_one(hosts, clock) == [f"{A}/1", f"{A}/0"]  # a/0 back after 2 s


def test_a_released_url_goes_to_the_front_of_its_priority() -> None:
    clock = Clock()
    hosts = make(clock, slack=math.inf)
    push(hosts, f"{A}/0", 0.5)
    push(hosts, f"{A}/1", 0.5)
    push(hosts, f"{A}/top", 0.8)
    (lease,) = hosts.lease(1).leases
    assert lease.url == f"{A}/top"
    back = hosts.finish(lease, None)
    assert back is not None
    hosts.push(A, back, front=True)
    (lease,) = hosts.lease(1).leases
    hosts.push(A, hosts.finish(lease, None) or back, front=True)
    assert one_by_one(hosts, clock) == [f"{A}/top", f"{A}/0", f"{A}/1"]


def test_the_working_set_still_lets_hosts_join_when_none_is_due() -> None:
    clock = Clock()
    hosts = make(clock, max_active=1, slack=0.0)
    push(hosts, f"{A}/0", 0.1)
    push(hosts, f"{B}/0", 0.9)  # in line: the set is full
    (lease,) = hosts.lease(10).leases
    assert lease.url == f"{A}/0"
    hosts.finish(lease, Feedback(started_at=clock.now))
    assert urls(hosts.lease(10).leases) == [f"{B}/0"]


# -- rerank --------------------------------------------------------------------------------------


def test_rerank_reorders_queued_urls_across_and_inside_hosts() -> None:
    clock = Clock()
    hosts = make(clock, per_host=4, slack=math.inf)
    for url in (f"{A}/0", f"{A}/1", f"{B}/0", f"{C}/0"):
        push(hosts, url)
    new = {A: {fingerprint(f"{A}/1"): 0.9}, C: {fingerprint(f"{C}/0"): 0.5}}
    changed = hosts.rerank(new)
    assert sorted(e.url for e in changed) == [f"{A}/1", f"{C}/0"]
    assert hosts.ranked
    # b.test has been due since its first URL came, a.test since its lease a moment ago
    assert urls(hosts.lease(10).leases) == [f"{A}/1", f"{C}/0", f"{B}/0", f"{A}/0"]


def test_rerank_counts_only_changes_and_skips_leased_and_unknown() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0", 0.3)
    push(hosts, f"{A}/1", 0.2)
    (lease,) = hosts.lease(1).leases
    new = {
        A: {fingerprint(f"{A}/0"): 0.1, fingerprint(f"{A}/1"): 0.2, 7: 1.0},
        D: {fingerprint(f"{D}/x"): 1.0},
    }
    assert hosts.rerank(new) == []  # a/0 is leased, a/1 unchanged, the rest unknown
    assert lease.url == f"{A}/0"


def test_rerank_keeps_arrival_order_among_new_equals_and_reaches_delayed() -> None:
    clock = Clock()
    hosts = make(clock, per_host=5, slack=math.inf)
    for i in range(4):
        push(hosts, f"{A}/{i}")
    waiting = entry(f"{B}/retry", 0.1)
    hosts.delay(B, waiting, clock.now + 1.0)
    new = {A: {fingerprint(f"{A}/{i}"): 0.5 for i in (3, 1)}, B: {waiting.fp: 0.7}}
    assert len(hosts.rerank(new)) == 3
    assert waiting.priority == 0.7
    clock.now += 1.0
    assert urls(hosts.lease(10).leases) == [f"{B}/retry", f"{A}/1", f"{A}/3", f"{A}/0", f"{A}/2"]


def test_rerank_to_a_worse_priority_moves_a_due_host_down() -> None:
    clock = Clock()
    hosts = make(clock, slack=math.inf)
    push(hosts, f"{A}/0", 0.9)
    push(hosts, f"{B}/0", 0.5)
    assert hosts.next_ready() == 0.0  # both hosts moved to the due heap
    hosts.rerank({A: {fingerprint(f"{A}/0"): 0.1}})
    assert urls(hosts.lease(10).leases) == [f"{B}/0", f"{A}/0"]


# -- against a model -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_every_lease_is_the_best_allowed_by_a_model(seed: int) -> None:
    """Random hosts, Crawl-delays, priorities, adds and request lengths: each ``lease(1)``
    hands out what a plain model of the rule says (the best due host's next URL unless its
    priority is below the best queued URL's less the slack: a share of it from 0.5 up), and
    no host starts requests less than its Crawl-delay apart."""
    rng = random.Random(seed)
    clock = Clock()
    slack = rng.choice([0.0, 0.1, 0.3, 0.5, math.inf])
    keys = [f"http://h{i}.test" for i in range(rng.randint(2, 6))]
    delays = {key: rng.choice([0.0, 0.0, 1.0, 2.5]) for key in keys}
    policy = PolitenessPolicy(per_host=1)
    hosts: HostScheduler[Queued] = HostScheduler(
        policy, rules=crawl_delays(delays), slack=slack, clock=clock
    )
    queued: dict[str, list[float]] = {key: [] for key in keys}
    out: list[tuple[float, Lease]] = []  # (ends at, lease)
    last_start: dict[str, float] = {}
    made = 0
    for _ in range(300):
        if rng.random() < 0.3:
            for _ in range(rng.randint(1, 4)):
                key = rng.choice(keys)
                priority = rng.choice([0.0, 0.2, 0.5, 0.55, 0.9, rng.random()])
                hosts.push(key, entry(f"{key}/{made}", priority))
                queued[key].append(priority)
                made += 1
        for ends, lease in [item for item in out if item[0] <= clock.now]:
            out.remove((ends, lease))
            hosts.finish(lease, Feedback(started_at=ends - 0.1))
        due = {
            key: max(queue)
            for key, queue in queued.items()
            if queue and ((slot := hosts.slot(key)) is None or policy.ready_at(slot) <= clock.now)
        }
        best = max((max(q) for q in queued.values() if q), default=None)
        got = hosts.lease(1).leases
        if best is None or slack == math.inf:
            floor = -math.inf
        else:
            floor = best - slack * best if best >= 0.5 else best - slack
        if not due or best is None or max(due.values()) < floor:
            assert got == [], (seed, clock.now, due, best)
        else:
            (lease,) = got
            top = max(due.values())
            assert lease.host in due and due[lease.host] == top
            queued[lease.host].remove(top)
            if lease.host in last_start:
                assert clock.now - last_start[lease.host] >= delays[lease.host] - 1e-9
            last_start[lease.host] = clock.now
            out.append((clock.now + rng.choice([0.1, 0.3, 1.5]), lease))
        clock.now += rng.choice([0.0, 0.1, 0.5])

"""The host scheduler both frontiers share, on its own: synchronous, on a fake clock, exact.

Ready order, the per-host limit, delays and Retry-After, retries, reclaim, priorities, the
working set, the robots.txt stage and the two-step lease of the Redis frontier by URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gossamer.frontier.base import Feedback, Lease
from gossamer.frontier.hostqueue import section_of
from gossamer.frontier.hosts import HostQueue, HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import host_key

A, B, C = "http://a.test", "http://b.test", "http://c.test"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def queued(url: str, priority: float = 0.0) -> Queued:
    return Queued(url, 0, 0, 0, priority=priority)


def make(
    clock: Clock, *, per_host: int = 1, delay: float = 0.0, **kw: Any
) -> HostScheduler[Queued]:
    policy = PolitenessPolicy(per_host=per_host, delay=delay)
    return HostScheduler(policy, clock=clock, **kw)


def push(hosts: HostScheduler[Queued], *urls: str, priority: float = 0.0) -> None:
    for url in urls:
        hosts.push(host_key(url), queued(url, priority=priority))


def urls(leases: list[Lease]) -> list[str]:
    return [lease.url for lease in leases]


def kinds(leases: list[Lease]) -> list[tuple[str, str]]:
    return [(lease.kind, lease.url) for lease in leases]


def lookup(table: dict[str, RobotsPolicy]) -> Callable[[str], RobotsPolicy | None]:
    return table.get


ALLOW_ALL = RobotsPolicy.allow_all()
UNREACHABLE = RobotsPolicy.disallow_all()


def started(clock: Clock) -> Feedback:
    return Feedback(started_at=clock.now)


# -- ready order, limits, delays ----------------------------------------------------------------


def test_due_hosts_take_turns_and_each_keeps_its_order() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2)
    push(hosts, f"{A}/0", f"{A}/1", f"{A}/2", f"{B}/0", f"{C}/0")
    assert urls(hosts.lease(3).leases) == [f"{A}/0", f"{B}/0", f"{C}/0"]
    assert urls(hosts.lease(3).leases) == [f"{A}/1"]  # a.test is full, the others empty
    assert hosts.queued == 1 and hosts.leased == 4


def test_the_per_host_limit_frees_a_slot_per_finished_lease() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2)
    push(hosts, *(f"{A}/{i}" for i in range(5)))
    first, _ = hosts.lease(10).leases
    assert hosts.lease(10).leases == []
    assert hosts.next_ready() is None  # full: nothing is due until a lease ends
    assert hosts.finish(first, started(clock)) == queued(f"{A}/0")
    assert urls(hosts.lease(10).leases) == [f"{A}/2"]


def test_a_delay_spaces_starts_from_the_real_start_time() -> None:
    clock = Clock()
    hosts = make(clock, delay=2.0)
    push(hosts, f"{A}/0", f"{A}/1")
    (lease,) = hosts.lease(5).leases
    clock.now += 0.5
    hosts.finish(lease, Feedback(started_at=clock.now, elapsed=0.1))
    assert hosts.next_ready() == 2.0
    clock.now += 1.999
    assert hosts.lease(5).leases == []
    clock.now += 0.001
    assert urls(hosts.lease(5).leases) == [f"{A}/1"]


def test_retry_after_pauses_the_host_and_a_retry_waits_then_goes_first() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0", f"{A}/1")
    (lease,) = hosts.lease(1).leases
    entry = hosts.finish(lease, Feedback(started_at=clock.now, retry_after=30.0))
    assert entry is not None
    entry.attempts += 1
    hosts.delay(A, entry, clock.now + 1.0)
    assert hosts.delayed == 1 and hosts.next_ready() == 1.0
    clock.now += 29.9
    assert hosts.lease(1).leases == []  # the entry is back in its queue; the host paused
    assert hosts.delayed == 0 and hosts.queued == 2
    clock.now += 0.1
    (again,) = hosts.lease(1).leases
    assert (again.url, again.attempts) == (f"{A}/0", 1)


def test_a_retry_after_beyond_the_cap_pauses_nothing() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0", f"{A}/1")
    (lease,) = hosts.lease(1).leases
    hosts.finish(lease, Feedback(started_at=clock.now, retry_after=10_000.0))
    assert urls(hosts.lease(1).leases) == [f"{A}/1"]


def test_a_released_entry_goes_back_to_the_front() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0", f"{A}/1")
    (lease,) = hosts.lease(1).leases
    entry = hosts.finish(lease, None)
    assert entry is not None
    hosts.push(A, entry, front=True)
    assert urls(hosts.lease(1).leases) == [f"{A}/0"]


# -- leases: tokens, deadlines, reclaim ---------------------------------------------------------


def test_expired_leases_are_listed_and_end_once() -> None:
    clock = Clock()
    hosts = make(clock, lease_timeout=10.0)
    push(hosts, f"{A}/0")
    (lease,) = hosts.lease(1).leases
    assert lease.deadline == 110.0
    assert hosts.expired() == []
    clock.now += 0.5
    assert hosts.expired() == []  # not looked at again within a second
    clock.now += 9.5
    assert hosts.expired() == [lease]
    entry = hosts.finish(lease, None)
    assert entry is not None
    hosts.push(A, entry, front=True)
    (again,) = hosts.lease(1).leases
    assert again.token != lease.token
    assert hosts.finish(lease, None) is None  # the stale lease ends nothing
    assert hosts.leased == 1


# -- priorities -----------------------------------------------------------------------------


def test_higher_priorities_first_and_arrival_order_among_equals() -> None:
    clock = Clock()
    hosts = make(clock, per_host=10)
    push(hosts, f"{A}/0", f"{A}/1")
    push(hosts, f"{A}/hot0", priority=5)
    push(hosts, f"{A}/2")
    push(hosts, f"{A}/hot1", priority=5)
    push(hosts, f"{A}/warm", priority=1.5)
    push(hosts, f"{A}/cold", priority=-1)
    leases = hosts.lease(10).leases
    assert urls(leases) == [
        f"{A}/hot0",
        f"{A}/hot1",
        f"{A}/warm",
        f"{A}/0",
        f"{A}/1",
        f"{A}/2",
        f"{A}/cold",
    ]


def test_an_entry_back_from_a_lease_goes_first_among_its_priority() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0")
    push(hosts, f"{A}/hot", priority=2)
    push(hosts, f"{A}/1")
    (hot,) = hosts.lease(1).leases
    hosts.finish(hot, None)
    (zero,) = hosts.lease(1).leases
    assert (hot.url, zero.url) == (f"{A}/hot", f"{A}/0")
    back = hosts.finish(zero, None)
    assert back is not None
    hosts.push(A, back, front=True)
    push(hosts, f"{A}/hot2", priority=2)
    order = []
    for _ in range(3):
        (lease,) = hosts.lease(1).leases
        order.append(lease.url)
        hosts.finish(lease, None)
    assert order == [f"{A}/hot2", f"{A}/0", f"{A}/1"]


@pytest.mark.parametrize("length", [1, 15, 16, 17, 40])
def test_a_queue_keeps_its_order_whatever_its_length(length: int) -> None:
    """Short queues are lists, long ones deques: the same order either way, front pushes,
    removals and a priority arriving late included."""
    queue: HostQueue[Queued] = HostQueue()
    for i in range(length):
        queue.push(queued(f"{A}/{i}"))
    queue.push(queued(f"{A}/back"), front=True)
    assert queue.remove(lambda entry: entry.url == f"{A}/0") == [queued(f"{A}/0")]
    assert len(queue) == length
    assert queue.peek().url == f"{A}/back"
    taken = [queue.pop().url]
    queue.push(queued(f"{A}/again"), front=True)
    queue.push(queued(f"{A}/hot", priority=1))
    taken += [queue.pop().url for _ in range(len(queue))]
    rest = [f"{A}/{i}" for i in range(1, length)]
    assert taken == [f"{A}/back", f"{A}/hot", f"{A}/again", *rest]


# -- the working set ----------------------------------------------------------------------


def test_hosts_join_the_working_set_in_arrival_order_only_when_needed() -> None:
    clock = Clock()
    hosts = make(clock, max_active=2, delay=1.0)
    push(hosts, f"{A}/0", f"{A}/1", f"{B}/0", f"{C}/0")
    assert urls(hosts.lease(10).leases) == [f"{A}/0", f"{B}/0"]
    assert hosts.active == 2
    assert hosts.next_ready() is None  # both full, c.test waits for room
    assert hosts.lease(10).leases == []
    for lease in hosts_out(hosts):
        hosts.finish(lease, started(clock))
    assert hosts.active == 1  # b.test had nothing left: it left the set
    assert hosts.next_ready() == 0.0  # room: c.test may join now
    assert urls(hosts.lease(10).leases) == [f"{C}/0"]  # a.test is not due for a second
    clock.now += 1.0
    assert urls(hosts.lease(10).leases) == [f"{A}/1"]


def hosts_out(hosts: HostScheduler[Queued]) -> list[Lease]:
    return [lease for lease, _ in hosts.out()]


def test_a_host_back_from_a_retry_joins_before_hosts_waiting_longer() -> None:
    clock = Clock()
    hosts = make(clock, max_active=1)
    push(hosts, f"{A}/0", f"{B}/0", f"{C}/0")
    (a,) = hosts.lease(1).leases
    entry = hosts.finish(a, started(clock))
    assert entry is not None and hosts.active == 0
    hosts.delay(A, entry, clock.now)
    assert urls(hosts.lease(1).leases) == [f"{A}/0"]


# -- storage: stored URLs, dry hosts, refill ------------------------------------------------


def test_a_due_host_with_its_urls_in_storage_is_handed_back_dry() -> None:
    clock = Clock()
    hosts = make(clock)
    hosts.store(A)
    hosts.store(A)
    assert (hosts.stored, hosts.stored_of(A), hosts.queued) == (2, 2, 0)
    batch = hosts.lease(5)
    assert (batch.leases, batch.dry) == ([], [A])
    hosts.refill(A, [queued(f"{A}/0"), queued(f"{A}/1")])
    assert (hosts.stored, hosts.queued) == (0, 2)
    assert urls(hosts.lease(5).leases) == [f"{A}/0"]


def test_remove_and_forget_take_entries_and_hosts_out() -> None:
    clock = Clock()
    hosts = make(clock, per_host=2)
    push(hosts, f"{A}/0", f"{A}/1", f"{B}/0")
    (lease,) = hosts.lease(1).leases
    hosts.delay(B, queued(f"{B}/later"), clock.now + 5)
    gone = hosts.remove(lambda item: item.url.startswith(A) or "later" in item.url)
    assert sorted(item.url for item in gone) == [f"{A}/1", f"{B}/later"]
    assert (hosts.queued, hosts.delayed) == (1, 0)
    host = hosts.forget(A)
    assert host is not None and host.slot.active == 1
    assert hosts.finish(lease, started(clock)) == queued(f"{A}/0")  # ends on the old slot
    assert host.slot.active == 0
    assert urls(hosts.lease(5).leases) == [f"{B}/0"]


# -- the robots.txt stage -------------------------------------------------------------------


def test_a_host_of_unknown_rules_gets_one_robots_lease_first() -> None:
    clock = Clock()
    known: dict[str, RobotsPolicy] = {}
    hosts = make(clock, per_host=2, rules=lookup(known))
    push(hosts, f"{A}/0", f"{A}/1")
    (robots,) = hosts.lease(5).leases
    assert kinds([robots]) == [("robots", f"{A}/robots.txt")]
    assert hosts.lease(5).leases == []  # its URLs wait, and no second robots lease
    assert hosts.next_ready() is None
    known[A] = RobotsPolicy.parse(b"User-agent: *\nCrawl-delay: 3\n")
    assert hosts.rules(robots, known[A], Feedback(started_at=clock.now, crawl_delay=3.0))
    assert hosts.rules(robots, known[A], None) is False  # once
    assert hosts.lease(5).leases == []  # the Crawl-delay counts from robots.txt's start
    clock.now += 3.0
    assert kinds(hosts.lease(5).leases) == [("page", f"{A}/0")]  # one at a time now


def test_urls_the_rules_forbid_go_out_blocked_without_a_slot() -> None:
    clock = Clock()
    policy = RobotsPolicy.parse(b"User-agent: *\nDisallow: /private\n")
    hosts = make(clock, rules=lookup({A: policy}))
    push(hosts, f"{A}/private-0", f"{A}/private-1", f"{A}/open", f"{A}/private-2")
    leases = hosts.lease(1).leases
    assert kinds(leases) == [
        ("blocked", f"{A}/private-0"),
        ("blocked", f"{A}/private-1"),
        ("page", f"{A}/open"),
    ]
    for lease in leases[:2]:
        hosts.finish(lease, None)
    slot = hosts.slot(A)
    assert slot is not None and slot.active == 1


def test_reported_rules_serve_once_when_the_cache_has_dropped_them() -> None:
    """An unreachable verdict cached for less than the host's delay must not send the host
    back for robots.txt at every look: the report itself is used."""
    clock = Clock()
    hosts = make(clock, delay=5.0, rules=lookup({}))
    push(hosts, f"{A}/0", f"{A}/1")
    (robots,) = hosts.lease(1).leases
    hosts.rules(robots, UNREACHABLE, started(clock))
    clock.now += 5.0
    leases = hosts.lease(1).leases
    assert kinds(leases) == [("unreachable", f"{A}/0"), ("unreachable", f"{A}/1")]
    assert hosts.queued == 0 and hosts.leased == 2
    slot = hosts.slot(A)
    assert slot is not None and slot.active == 0  # no slot used
    for lease in leases:  # retried by the engine after --robots-retry
        entry = hosts.finish(lease, None)
        assert entry is not None
        hosts.delay(A, entry, clock.now + 30.0)
    clock.now += 30.0
    assert kinds(hosts.lease(1).leases) == [("robots", f"{A}/robots.txt")]  # asked again


def test_a_released_robots_lease_is_handed_out_again() -> None:
    clock = Clock()
    hosts = make(clock, rules=lookup({}))
    push(hosts, f"{A}/0")
    (robots,) = hosts.lease(1).leases
    assert hosts.rules(robots, None, None)
    (again,) = hosts.lease(1).leases
    assert again.kind == "robots" and again.token != robots.token


def test_an_expired_robots_lease_frees_its_host() -> None:
    clock = Clock()
    hosts = make(clock, rules=lookup({}), lease_timeout=10.0)
    push(hosts, f"{A}/0")
    (robots,) = hosts.lease(1).leases
    clock.now += 10.0
    assert hosts.expired() == [robots]
    assert hosts.finish(robots, None) is None
    assert kinds(hosts.lease(1).leases) == [("robots", f"{A}/robots.txt")]


def test_a_cached_crawl_delay_spaces_the_host_without_a_robots_lease() -> None:
    clock = Clock()
    policy = RobotsPolicy.parse(b"User-agent: *\nCrawl-delay: 2\n")
    hosts = make(clock, per_host=4, rules=lookup({A: policy}))
    push(hosts, f"{A}/0", f"{A}/1")
    (lease,) = hosts.lease(5).leases
    hosts.finish(lease, started(clock))
    assert hosts.next_ready() == 2.0


# -- leasing in two steps (the Redis frontier's shared limiter) ------------------------------


def test_due_names_hosts_and_counts_take_leases_what_was_granted() -> None:
    clock = Clock()
    hosts = make(clock, per_host=3)
    push(hosts, *(f"{A}/{i}" for i in range(5)), f"{B}/0")
    due = hosts.due(10)
    assert [(want.key, want.count) for want in due.wants] == [(A, 3), (B, 1)]
    a, b = due.wants
    leases, used = hosts.take(a, 2)
    assert (urls(leases), used) == ([f"{A}/0", f"{A}/1"], 2)
    hosts.defer(B, clock.now + 0.05)  # the limiter refused b.test
    assert hosts.take(b, 0) == ([], 0)
    due = hosts.due(10)
    assert [(want.key, want.count) for want in due.wants] == [(A, 1)]
    clock.now += 0.05
    assert [want.key for want in hosts.due(10).wants] == [B]


def test_due_hands_out_blocked_urls_and_asks_one_slot_for_robots() -> None:
    clock = Clock()
    policy = RobotsPolicy.parse(b"User-agent: *\nDisallow: /private\n")
    hosts = make(clock, per_host=2, rules=lookup({A: policy}))
    push(hosts, f"{A}/private", f"{A}/open", f"{B}/0")
    due = hosts.due(10)
    assert kinds(due.leases) == [("blocked", f"{A}/private")]
    assert [(w.key, w.count, w.rules is None) for w in due.wants] == [(A, 1, False), (B, 1, True)]
    leases, used = hosts.take(due.wants[1], 1)
    assert (kinds(leases), used) == ([("robots", f"{B}/robots.txt")], 1)


def test_take_leases_nothing_of_a_host_dropped_meanwhile() -> None:
    clock = Clock()
    hosts = make(clock)
    push(hosts, f"{A}/0")
    (want,) = hosts.due(1).wants
    hosts.remove(lambda item: True)
    hosts.forget(A)
    assert hosts.take(want, 1) == ([], 0)


@pytest.mark.parametrize("hosts_count", [1, 50])
def test_every_url_once_per_host_in_order(hosts_count: int) -> None:
    clock = Clock()
    hosts = make(clock, per_host=2, max_active=7, rules=lookup({}))
    expected = [f"http://h{h}.test/{i}" for i in range(20) for h in range(hosts_count)]
    push(hosts, *expected)
    seen: list[str] = []
    for _ in range(10_000):
        if not (hosts.queued or hosts.leased):
            break
        for lease in hosts.lease(5).leases:
            if lease.kind == "robots":
                hosts.rules(lease, ALLOW_ALL, started(clock))
            else:
                seen.append(lease.url)
                hosts.finish(lease, started(clock))
    assert sorted(seen) == sorted(expected)
    for h in range(hosts_count):
        mine = [url for url in seen if url.startswith(f"http://h{h}.test/")]
        assert mine == [f"http://h{h}.test/{i}" for i in range(20)]
    assert hosts.active == 0


# -- what holds hosts back (the dashboard's list) ---------------------------------------------


def test_held_back_names_each_host_and_what_it_waits_on() -> None:
    clock = Clock()
    hosts = make(clock, delay=0.5)
    push(hosts, f"{A}/0", f"{A}/1", f"{B}/0", f"{B}/1", f"{C}/0", f"{C}/1")
    leases = hosts.lease(3).leases
    assert hosts.held_back() == []  # each waits for its one request out to end
    for lease in leases:
        if lease.host == host_key(A):
            hosts.finish(lease, Feedback(started_at=clock.now, retry_after=30.0))
        elif lease.host == host_key(B):
            hosts.finish(lease, Feedback(started_at=clock.now, crawl_delay=5.0))
        else:
            hosts.finish(lease, started(clock))
    clock.now += 0.1
    held = {h.host: h for h in hosts.held_back()}
    assert held[host_key(A)].reason == "retry-after" and held[host_key(A)].wait == 29.9
    assert held[host_key(B)].reason == "crawl-delay" and held[host_key(B)].wait == 4.9
    assert held[host_key(C)].reason == "delay" and held[host_key(C)].wait == 0.4
    assert [h.host for h in hosts.held_back(2)] == [host_key(A), host_key(B)]  # longest first
    assert all(h.queued == 1 and h.in_flight == 0 for h in held.values())
    clock.now += 30
    assert hosts.held_back() == []


# -- sections of a host's queue --------------------------------------------------------------


def queued_entry(url: str, priority: float = 0.0) -> Queued:
    return Queued(url, hash(url), 1, 0, priority=priority)


def test_sections_of_a_host_take_turns() -> None:
    queue: HostQueue[Queued] = HostQueue()
    for i in range(50):  # a trap's pages, queued first
        queue.push(queued_entry(f"{A}/topics/w{i}.html"))
    queue.push(queued_entry(f"{A}/real/one.html"))
    queue.push(queued_entry(f"{A}/Real/two.html"))  # one section whatever the case
    queue.push(queued_entry(f"{A}/about"))
    order = [queue.pop().url for _ in range(len(queue))]
    assert order[:6] == [
        f"{A}/topics/w0.html",
        f"{A}/real/one.html",
        f"{A}/about",
        f"{A}/topics/w1.html",
        f"{A}/Real/two.html",
        f"{A}/topics/w2.html",
    ]


def test_priority_goes_before_sections_and_the_front_before_both() -> None:
    queue: HostQueue[Queued] = HostQueue()
    queue.push(queued_entry(f"{A}/a/1"))
    queue.push(queued_entry(f"{A}/b/1"))
    queue.push(queued_entry(f"{A}/a/2", priority=1.0))
    queue.push(queued_entry(f"{A}/c/back"), front=True)
    order = [queue.pop().url for _ in range(len(queue))]
    assert order == [f"{A}/a/2", f"{A}/c/back", f"{A}/a/1", f"{A}/b/1"]


def test_sections_beyond_the_bound_share_one() -> None:
    queue: HostQueue[Queued] = HostQueue()
    queue.push(queued_entry(f"{A}/real/one"))
    for i in range(200):  # a first segment new on every link: with a digit, then words
        queue.push(queued_entry(f"{A}/s{i}x/page"))
        queue.push(queued_entry(f"{A}/{chr(97 + i % 26)}{chr(97 + i // 26)}w/page"))
    assert section_of(f"{A}/s1x/page") == "#"
    queue.push(queued_entry(f"{A}/real/two"))
    order = [queue.pop().url for _ in range(len(queue))]
    assert order.index(f"{A}/real/two") < 70  # after the first of each section, not 400


@pytest.mark.parametrize(
    ("path", "section"),
    [
        ("/library/os.html", "library"),
        ("/C-API/x", "c-api"),
        ("/v2/x", "#"),
        ("/\u0663rd/x", "#"),  # an Arabic-Indic digit
        ("/\u00b2nd/x", "#"),  # a superscript: a digit to str.isdigit
        ("/\u4e00/x", "\u4e00"),  # a CJK numeral is a letter, no digit
        ("/Ab;jsessionid=1/x", "ab"),
        ("/page", "/"),
        ("//x", ""),
    ],
)
def test_a_section_is_the_first_segment_or_hash_for_a_digit(path: str, section: str) -> None:
    assert section_of(f"{A}{path}") == section


def test_a_host_forgotten_and_made_again_keeps_its_slot() -> None:
    """A host forgotten (its partition given away) with a request in flight, then queued
    again (the partition back): its next URL waits for that request, as its slot says, and
    goes once it ends and the delay has passed; the host is not left unscheduled."""
    clock = Clock()
    hosts = make(clock, delay=1.0, rules=lookup({A: ALLOW_ALL}))
    push(hosts, f"{A}/1")
    (first,) = hosts.lease(5).leases
    assert hosts.forget(A) is not None
    push(hosts, f"{A}/2")
    clock.now += 2.0
    assert hosts.lease(5).leases == []  # the request in flight holds the host's one slot
    hosts.finish(first, Feedback(started_at=clock.now))
    assert hosts.lease(5).leases == []  # spaced from its start
    clock.now += 1.0
    assert urls(hosts.lease(5).leases) == [f"{A}/2"]

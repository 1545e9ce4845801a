"""Hosts waiting for their time, as ``/metrics`` shows them: at their polite pace, or backing
off (a Retry-After pause); on a fake clock, exact."""

from __future__ import annotations

from gossamer.frontier.base import POLITE_REASONS, WAIT_REASONS, Feedback, waiting
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.urls import host_key

A, B, C = "http://a.test", "http://b.test", "http://c.test"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_polite_and_backing_off_hosts_are_told_apart() -> None:
    clock = Clock()
    hosts: HostScheduler[Queued] = HostScheduler(
        PolitenessPolicy(per_host=1, delay=1.0), clock=clock
    )
    for base in (A, B, C):
        for i in range(2):
            hosts.push(host_key(base), Queued(f"{base}/{i}", 0, 0, 0))
    assert waiting(hosts.held_back(None)) == (0, 0)  # all three are due now
    leases = hosts.lease(3).leases
    assert len(leases) == 3
    assert waiting(hosts.held_back(None)) == (0, 0)  # busy, not waiting: their slot is full
    a, b, _ = leases
    hosts.finish(a, Feedback(started_at=clock.now, elapsed=0.05))
    hosts.finish(b, Feedback(started_at=clock.now, elapsed=0.05, retry_after=30))
    clock.now += 0.1
    # a.test at its pace of 1 s, b.test paused for 30 s
    assert waiting(hosts.held_back(None)) == (1, 1)
    clock.now += 1.0
    assert waiting(hosts.held_back(None)) == (0, 1)  # a.test is due again; b.test still paused
    clock.now += 30
    assert waiting(hosts.held_back(None)) == (0, 0)


def test_every_reason_is_one_of_a_closed_set_shown_as_before() -> None:
    policy = PolitenessPolicy(per_host=1, delay=1.0)
    slots = {
        "delay": HostSlot(),
        "crawl-delay": HostSlot(crawl_delay=5.0),
        "back-off": HostSlot(error_rate=0.9),  # 4.5 s for its errors
        "retry-after": HostSlot(next_start=10.0, paused_until=10.0),
    }
    assert {name: policy.why_waiting(slot) for name, slot in slots.items()} == {
        name: name for name in slots
    }
    assert PolitenessPolicy(delay=0.0).why_waiting(HostSlot()) == "limit"
    assert {"retry-after", "crawl-delay", "back-off", "delay", "limit", "limiter"} == WAIT_REASONS
    assert {"delay", "crawl-delay", "limit"} == POLITE_REASONS
    clock = Clock()
    hosts: HostScheduler[Queued] = HostScheduler(policy, clock=clock)
    hosts.push(host_key(A), Queued(f"{A}/0", 0, 0, 0))
    hosts.defer(host_key(A), clock.now + 5)  # the cluster's shared limiter refused a slot
    (held,) = hosts.held_back(None)
    assert (held.reason, held.wait) == ("limiter", 5.0)
    assert waiting([held]) == (0, 1)

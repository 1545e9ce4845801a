"""Hosts waiting for their time, as ``/metrics`` shows them: at their polite pace, or backing
off (a Retry-After pause); on a fake clock, exact."""

from __future__ import annotations

from gossamer.frontier.base import Feedback, waiting
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
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

"""Politeness slots: delays, Crawl-delay, adaptive slow-down, Retry-After."""

import math

from gossamer.frontier.base import Feedback
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy


def test_full_slot_is_never_ready() -> None:
    policy = PolitenessPolicy(per_host=1)
    slot = HostSlot()
    policy.on_lease(slot, 0.0)
    assert policy.ready_at(slot) == math.inf
    policy.on_finish(slot, Feedback(started_at=0.0), 0.1)
    assert policy.ready_at(slot) == 0.0


def test_delay_is_largest_of_configured_crawl_delay_and_adaptive() -> None:
    policy = PolitenessPolicy(delay=0.5)
    slot = HostSlot()
    assert policy.delay_of(slot) == 0.5
    slot.crawl_delay = 2.0
    assert policy.delay_of(slot) == 2.0


def test_failures_slow_a_host_down_and_successes_recover() -> None:
    policy = PolitenessPolicy(max_delay=8.0)
    slot = HostSlot()
    delays = []
    for _ in range(5):
        policy.on_lease(slot, 0.0)
        policy.on_finish(slot, Feedback(started_at=0.0, failed=True), 0.0)
        delays.append(policy.delay_of(slot))
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    for _ in range(12):
        policy.on_lease(slot, 0.0)
        policy.on_finish(slot, Feedback(started_at=0.0, elapsed=0.01), 0.0)
    assert policy.delay_of(slot) == 0.0


def test_slow_host_gets_one_request_per_latency() -> None:
    policy = PolitenessPolicy(slow_latency=1.0)
    slot = HostSlot()
    policy.on_lease(slot, 0.0)
    policy.on_finish(slot, Feedback(started_at=0.0, elapsed=0.2), 0.2)
    assert policy.delay_of(slot) == 0.0
    for _ in range(10):
        policy.on_lease(slot, 0.0)
        policy.on_finish(slot, Feedback(started_at=0.0, elapsed=3.0), 3.0)
    assert 2.5 < policy.delay_of(slot) <= 3.0


def test_retry_after_pauses_the_host() -> None:
    policy = PolitenessPolicy()
    slot = HostSlot()
    policy.on_lease(slot, 10.0)
    policy.on_finish(slot, Feedback(started_at=10.0, failed=True, retry_after=30.0), 10.5)
    assert policy.ready_at(slot) == 40.5

"""Politeness slots: delays, Crawl-delay, adaptive slow-down, Retry-After."""

import itertools
import math

import pytest

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


def _finish(policy: PolitenessPolicy, slot: HostSlot, failed: bool) -> float:
    policy.on_lease(slot, 0.0)
    policy.on_finish(slot, Feedback(started_at=0.0, elapsed=0.01, failed=failed), 0.0)
    return policy.delay_of(slot)


def test_delay_follows_the_error_rate() -> None:
    policy = PolitenessPolicy(failure_delay=0.5, max_delay=8.0)
    slot = HostSlot()
    delays = [_finish(policy, slot, failed=True) for _ in range(30)]
    assert delays == sorted(delays) and delays[0] > 0
    assert delays[-1] == 8.0  # capped
    for _ in range(40):
        last = _finish(policy, slot, failed=False)
    assert last == 0.0


def test_occasional_failures_barely_slow_a_host() -> None:
    policy = PolitenessPolicy(failure_delay=0.5)
    slot = HostSlot()
    delays = [_finish(policy, slot, failed=i % 10 == 0) for i in range(100)]
    assert max(delays) < 0.2
    half = HostSlot()
    rates = [_finish(policy, half, failed=i % 2 == 0) for i in range(200)]
    assert 0.3 < rates[-1] < 0.8  # about failure_delay at a 50% error rate


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


def test_a_delayed_host_runs_one_request_at_a_time() -> None:
    policy = PolitenessPolicy(per_host=4)
    slot = HostSlot()
    policy.on_lease(slot, 0.0)
    assert policy.ready_at(slot) == 0.0  # no delay: up to per_host at once
    slot.crawl_delay = 1.0
    assert policy.ready_at(slot) == math.inf


def test_crawl_delay_is_capped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    policy = PolitenessPolicy(max_crawl_delay=0.2)
    slot = HostSlot()
    now = 0.0
    starts = []
    for _ in range(3):
        assert policy.ready_at(slot) <= now + 0.2
        now = policy.ready_at(slot)
        starts.append(now)
        policy.on_lease(slot, now)
        feedback = Feedback(started_at=now, elapsed=0.01, crawl_delay=86_400)
        policy.on_finish(slot, feedback, now + 0.01, "http://slow.test")
    assert policy.delay_of(slot) == 0.2
    assert [round(b - a, 6) for a, b in itertools.pairwise(starts)] == [0.2, 0.2]
    capped = [r.getMessage() for r in caplog.records if "Crawl-delay" in r.getMessage()]
    assert capped == [
        "http://slow.test asks for a Crawl-delay of 86400s; fetching it every 0.2s "
        "(--max-crawl-delay)"
    ]


def test_crawl_delay_under_the_cap_is_obeyed() -> None:
    policy = PolitenessPolicy(max_crawl_delay=60.0)
    slot = HostSlot()
    policy.on_lease(slot, 0.0)
    policy.on_finish(slot, Feedback(started_at=0.0, crawl_delay=30.0), 0.1)
    assert policy.delay_of(slot) == 30.0
    assert policy.ready_at(slot) == 30.0

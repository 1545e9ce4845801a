"""The host gate: requests outside the leases take the same host slot as pages, spaced by the
host's delay and Crawl-delay, and hold the host's pages back while they wait (a fake clock
that moves when slept on: the waits are exact and instant)."""

from __future__ import annotations

import asyncio

import pytest

from gossamer.frontier.base import Feedback
from gossamer.frontier.gate import HostGate
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy

HOST = "http://site.test"


class Clock:
    """Moves only when slept on; a sleep lets the other tasks run."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def _setup(
    policy: PolitenessPolicy, crawl_delay: float | str | None = None
) -> tuple[Clock, HostScheduler[Queued], HostGate]:
    clock = Clock()
    rules = RobotsPolicy.allow_all("ok", "gossamer")
    if crawl_delay is not None:
        rules = RobotsPolicy.parse(
            f"User-agent: *\nCrawl-delay: {crawl_delay}\n".encode(), "gossamer"
        )
    scheduler: HostScheduler[Queued] = HostScheduler(policy, rules=lambda key: rules, clock=clock)
    gate = HostGate(policy, clock=clock, sleep=clock.sleep)
    gate.bind(scheduler.claims)
    return clock, scheduler, gate


@pytest.mark.parametrize("crawl_delay", ["inf", "Infinity", "1e400", "1e308"])
async def test_an_endless_crawl_delay_spaces_at_the_cap(crawl_delay: str) -> None:
    clock, _, gate = _setup(PolitenessPolicy(max_crawl_delay=7.0), crawl_delay=crawl_delay)
    starts = []
    for path in ("/robots.txt", "/example", "/check"):
        taken = await gate.enter(HOST + path)
        starts.append(clock())
        gate.leave(taken, clock(), elapsed=0.0, status=200)
    assert starts == pytest.approx([0.0, 7.0, 14.0])


async def test_requests_outside_the_leases_keep_the_hosts_crawl_delay() -> None:
    clock, _, gate = _setup(PolitenessPolicy(), crawl_delay=0.5)
    starts = []
    for path in ("/robots.txt", "/example", "/login", "/check"):
        taken = await gate.enter(HOST + path, pace_only=path == "/login")
        starts.append(clock())
        clock.now += 0.01  # the answer takes a while; the next start is spaced from this one
        gate.leave(taken, clock() - 0.01, elapsed=0.01, status=200)
    assert starts == pytest.approx([0.0, 0.5, 1.0, 1.5])
    assert gate.stats().waited == 3


async def test_pages_and_out_of_band_requests_share_one_pace() -> None:
    clock, scheduler, gate = _setup(PolitenessPolicy(delay=1.0))
    for n in range(3):
        scheduler.push(HOST, Queued(f"{HOST}/p{n}", n, 0, 0))
    (page,) = scheduler.lease(5).leases  # at 0: the host's next start is 1.0
    taken = await gate.enter(HOST + "/check")  # waits for it (the page is still out: per_host 2)
    assert clock() == 1.0
    assert scheduler.lease(5).leases == []  # the check's slot: no page before 2.0
    scheduler.finish(page, Feedback(started_at=0.0))
    gate.leave(taken, clock(), status=200)
    assert scheduler.lease(5).leases == []
    clock.now = 2.0
    assert [lease.url for lease in scheduler.lease(5).leases] == [f"{HOST}/p1"]


async def test_a_waiting_request_holds_the_hosts_pages_back() -> None:
    """The host's one connection is busy with a page: the gate waits for it, and the next
    page due meanwhile is not leased ahead of the waiting request."""
    clock, scheduler, gate = _setup(PolitenessPolicy(per_host=1))
    for n in range(3):
        scheduler.push(HOST, Queued(f"{HOST}/p{n}", n, 0, 0))
    (page,) = scheduler.lease(5).leases
    waiting = asyncio.create_task(gate.enter(HOST + "/check"))
    await asyncio.sleep(0)
    assert not waiting.done() and gate.stats().waiting == 1
    scheduler.finish(page, Feedback(started_at=clock()))
    assert scheduler.lease(5).leases == []  # held back for the waiting check
    taken = await waiting
    assert scheduler.lease(5).leases == []  # the check holds the connection
    gate.leave(taken, clock(), status=200)
    assert [lease.url for lease in scheduler.lease(5).leases] == [f"{HOST}/p1"]


async def test_a_pace_only_request_does_not_wait_for_a_connection() -> None:
    """A rendered page's subrequest runs under its page's lease: it waits for the pace only."""
    clock, scheduler, gate = _setup(PolitenessPolicy(per_host=1, delay=0.2))
    scheduler.push(HOST, Queued(f"{HOST}/p", 1, 0, 0))
    (page,) = scheduler.lease(5).leases
    gate.started(HOST + "/p", 0.05)  # the page's request really started a little later
    taken = await gate.enter(HOST + "/app.js", pace_only=True)
    assert clock() == pytest.approx(0.25)
    gate.leave(taken, clock(), status=200)
    scheduler.finish(page, Feedback(started_at=0.05))


async def test_a_cancelled_wait_lets_the_pages_go() -> None:
    _, scheduler, gate = _setup(PolitenessPolicy(per_host=1))
    scheduler.push(HOST, Queued(f"{HOST}/p0", 0, 0, 0))
    scheduler.push(HOST, Queued(f"{HOST}/p1", 1, 0, 0))
    (page,) = scheduler.lease(5).leases
    waiting = asyncio.create_task(gate.enter(HOST + "/check"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    scheduler.finish(page, Feedback(started_at=0.0))
    assert [lease.url for lease in scheduler.lease(5).leases] == [f"{HOST}/p1"]

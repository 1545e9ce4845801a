"""The host gate's aside passes (a sitemap's or a feed's fetch) take turns with the host's
pages: a page first when one is queued, then the aside request, then a page again; one whose
host's pages are not leased still goes once the page's turn lapses. A fake clock that moves
when slept on makes the waits exact and instant."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from tests.frontier.test_gate import HOST, _setup

from gossamer.frontier.base import Feedback
from gossamer.frontier.hosts import Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.slotclaims import TURN_GRACE


async def test_aside_requests_take_turns_with_the_hosts_pages() -> None:
    clock, scheduler, gate = _setup(PolitenessPolicy(delay=1.0))
    for n in range(3):
        scheduler.push(HOST, Queued(f"{HOST}/p{n}", n, 0, 0))
    order: list[tuple[str, float]] = []
    for turn in range(2):
        entering = asyncio.create_task(gate.enter(f"{HOST}/map{turn}.xml", aside=True))
        await asyncio.sleep(0)
        assert not entering.done()  # a page is owed the slot: the sitemap does not hold it
        (page,) = scheduler.lease(5).leases
        order.append((page.url.rsplit("/", 1)[1], clock()))
        scheduler.finish(page, Feedback(started_at=clock()))
        taken = await entering
        order.append((f"map{turn}", clock()))
        assert scheduler.lease(5).leases == []  # the sitemap has the host's one request
        gate.leave(taken, clock(), status=200)
        clock.now = scheduler.next_ready() + clock()  # type: ignore[operator]
    assert [name for name, _ in order] == ["p0", "map0", "p1", "map1"]
    starts = [at for _, at in order]  # one request per delay (give or take a poll)
    assert starts[0] <= 0.05
    assert all(0.999 < b - a < 1.051 for a, b in itertools.pairwise(starts)), starts


async def test_the_first_request_of_a_host_with_nothing_queued_is_not_held() -> None:
    clock, _, gate = _setup(PolitenessPolicy(delay=1.0))
    taken = await gate.enter(f"{HOST}/sitemap.xml", aside=True)
    assert clock() == 0.0
    gate.leave(taken, clock(), status=200)


async def test_a_pages_turn_lapses_when_none_is_leased() -> None:
    """The crawl's concurrency is all in use, say: the host's pages wait, the sitemap goes."""
    clock, scheduler, gate = _setup(PolitenessPolicy(delay=1.0))
    scheduler.push(HOST, Queued(f"{HOST}/p0", 0, 0, 0))
    taken = await gate.enter(f"{HOST}/sitemap.xml", aside=True)
    assert clock() == pytest.approx(TURN_GRACE)
    gate.leave(taken, clock(), status=200)
    clock.now += 1.0
    assert [lease.url for lease in scheduler.lease(5).leases] == [f"{HOST}/p0"]

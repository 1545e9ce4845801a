"""The host gate of a cluster worker by host: an aside pass (a sitemap's fetch) goes only to
a host the worker owns, and one whose host is given away while it waits takes no slot (a
fake clock that moves when slept on: the waits are exact and instant)."""

from __future__ import annotations

import asyncio

import pytest

from gossamer.frontier.gate import HostGate, NotOwned
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy

HOST = "http://site.test"


class Clock:
    """Moves only when slept on; ``on_sleep`` runs at each sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.on_sleep = lambda: None

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.on_sleep()
        await asyncio.sleep(0)


def _setup(owned: set[str]) -> tuple[Clock, HostScheduler[Queued], HostGate]:
    clock = Clock()
    policy = PolitenessPolicy(delay=1.0)
    rules = RobotsPolicy.allow_all("ok", "gossamer")
    scheduler: HostScheduler[Queued] = HostScheduler(policy, rules=lambda key: rules, clock=clock)
    gate = HostGate(policy, clock=clock, sleep=clock.sleep)
    gate.bind(scheduler.claims)
    gate.own(owned.__contains__)
    return clock, scheduler, gate


async def test_an_aside_pass_goes_to_an_owned_host_only() -> None:
    _, _, gate = _setup(set())
    with pytest.raises(NotOwned):
        await gate.enter(HOST + "/sitemap.xml", aside=True)
    taken = await gate.enter(HOST + "/check")  # another out-of-band request goes
    gate.leave(taken, 0.0, status=200)
    assert not gate.owns(HOST + "/")


async def test_an_aside_pass_whose_host_is_given_away_while_it_waits_takes_no_slot() -> None:
    owned = {HOST}
    clock, scheduler, gate = _setup(owned)
    scheduler.push(HOST, Queued(f"{HOST}/p0", 0, 0, 0))
    (_page,) = scheduler.lease(1).leases  # the host's next start is 1.0
    clock.on_sleep = owned.clear  # the partition moves while the sitemap's fetch waits
    with pytest.raises(NotOwned):
        await gate.enter(HOST + "/sitemap.xml", aside=True)
    slot = scheduler.slot(HOST)
    assert slot is not None and slot.active == 1  # the page's only
    assert gate.stats().waiting == 0

"""A cluster worker's requests through the host gate to a host whose partition it just gave
away (host mode, a real redis-server and a real server on loopback): the worker forgets the
host, but not when it last sent it a request, so its next request still waits the host's
delay (as measured on the server's arrival times), whether the request before was done or
in flight at the hand-over."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import web
from redis.asyncio import Redis
from tests.local_app import serve

from gossamer.frontier.gate import HostGate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontier, RedisFrontierConfig
from gossamer.urls import Scope

DELAY = 0.5
SPACED = 0.8 * DELAY
"""The least gap between two arrivals that counts as spaced: the gate spaces the requests'
starts, and a loaded machine may deliver the first later than it started (before the fix the
second came 2.6-7.4 ms after the first)."""
POLICY = PolitenessPolicy(per_host=1, delay=DELAY)
EVERY, NONE = Ownership(frozenset(range(8))), Ownership(frozenset(), 1)


class Site:
    """Records when each request arrives; holds its answer while ``held`` is clear."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.arrived = asyncio.Event()
        self.held = asyncio.Event()
        self.held.set()

    async def handle(self, request: web.Request) -> web.Response:
        self.arrivals.append(time.monotonic())
        self.arrived.set()
        await self.held.wait()
        return web.Response(text="ok")


async def fetch(gate: HostGate, url: str) -> None:
    """One request through the gate, on a connection of its own."""
    taken = await gate.enter(url)
    started = gate.now()
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session, session.get(url) as answer:
        await answer.read()
    gate.leave(taken, started, elapsed=gate.now() - started, status=answer.status)


def worker(client: Redis) -> tuple[RedisFrontier, HostGate]:
    frontier = RedisFrontier(
        client, "gate", Scope.for_seeds([], ["test"]), POLICY, ownership=EVERY,
        config=RedisFrontierConfig(partitions=8),
    )  # fmt: skip
    gate = HostGate(POLICY)
    gate.bind(frontier.slots)
    return frontier, gate


async def test_a_request_after_the_hand_over_waits_the_delay_after_the_one_before(
    client: Redis,
) -> None:
    site = Site()
    frontier, gate = worker(client)
    async with serve(site.handle) as port:
        url = f"http://127.0.0.1:{port}/check"
        await fetch(gate, url)
        await frontier.own(NONE)  # the host's partition goes to another worker
        await fetch(gate, url)
    first, second = site.arrivals
    assert second - first >= SPACED, second - first


async def test_a_request_in_flight_at_the_hand_over_spaces_the_next(client: Redis) -> None:
    site = Site()
    frontier, gate = worker(client)
    async with serve(site.handle) as port:
        url = f"http://127.0.0.1:{port}/check"
        site.held.clear()
        in_flight = asyncio.create_task(fetch(gate, url))
        await site.arrived.wait()
        await frontier.own(NONE)  # while the request is in flight
        site.held.set()
        await in_flight
        await asyncio.wait_for(fetch(gate, url), 10 * DELAY)  # not waiting for room forever
    first, second = site.arrivals
    assert second - first >= SPACED, second - first

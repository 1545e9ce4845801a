"""A robots.txt that redirects, fetched under its host's robots lease with a delay: the
redirect's next hop starts at least the delay after the first request really started, not
after the lease was granted (a real server on 127.0.0.1 stamps each request's arrival)."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.http import FetchConfig, Fetcher, FetchResult
from gossamer.frontier.gate import HostGate
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsCache
from gossamer.robots_fetch import RobotsFetch
from gossamer.urls import host_key

pytestmark = pytest.mark.timeout(30)

DELAY = 0.2
LAG = 0.1
"""Seconds between the robots lease's grant and its request's start (a busy crawl loop)."""
JITTER = 0.01


class Late:
    """``fetcher``, each request sent ``LAG`` seconds after it is asked for."""

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher

    async def fetch(self, url: str) -> FetchResult:
        await asyncio.sleep(LAG)
        return await self._fetcher.fetch(url)


async def test_a_robots_redirect_hop_is_spaced_from_the_first_requests_start() -> None:
    arrivals: list[tuple[str, float]] = []

    async def site(request: web.Request) -> web.StreamResponse:
        arrivals.append((request.path, time.monotonic()))
        if request.path == "/robots.txt":
            raise web.HTTPMovedPermanently("/robots-real.txt")
        return web.Response(text="User-agent: *\nDisallow: /private/\n")

    async with serve(site) as port:
        origin = f"http://127.0.0.1:{port}"
        policy = PolitenessPolicy(delay=DELAY)
        scheduler: HostScheduler[Queued] = HostScheduler(policy, rules=lambda key: None)
        gate = HostGate(policy)
        gate.bind(scheduler.claims)
        scheduler.push(host_key(origin), Queued(f"{origin}/page", 1, 0, 0))
        (lease,) = scheduler.lease(1).leases
        assert lease.kind == "robots"
        async with Fetcher(FetchConfig(total_timeout=5.0)) as fetcher:
            fetch = RobotsFetch(
                Late(fetcher),
                gated=GatedFetch(fetcher, gate, pace_only=True),
                started=gate.started,
            )
            fetch.leased(lease.host)
            rules = await RobotsCache(fetch).get(lease.url)
            fetch.ended(lease.host)

    assert not rules.allowed(f"{origin}/private/x")  # the rules behind the redirect
    assert [path for path, _ in arrivals] == ["/robots.txt", "/robots-real.txt"]
    gap = arrivals[1][1] - arrivals[0][1]
    assert gap >= DELAY - JITTER, gap

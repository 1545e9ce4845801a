"""A page answered logged out under its lease is fetched again after a new login: the
login's request starts at least the host's delay after the page's request really started,
not after its lease was granted (a real server on 127.0.0.1 stamps each request's arrival)."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from tests.fetch.test_auth import FAST, PASSWORD, USER, Clock, form_login

from gossamer.fetch.auth import Authenticator
from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.frontier.base import Feedback
from gossamer.frontier.gate import HostGate
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsPolicy
from gossamer.urls import host_key

pytestmark = pytest.mark.timeout(30)

DELAY = 0.3
LAG = 0.15
"""Seconds between the page's lease and its request (a busy crawl loop)."""
JITTER = 0.01


class Site:
    """``/private`` for a live session only (a redirect to the login form else); ``POST
    /login`` opens one. Every request's arrival is logged."""

    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.log: list[tuple[str, float]] = []

    async def login(self, request: web.Request) -> web.Response:
        self.log.append(("login", time.monotonic()))
        form = await request.post()
        if form.get("user") != USER or form.get("pass") != PASSWORD:
            return web.Response(status=403)
        sid = f"sid{len(self.sessions) + 1}"
        self.sessions.add(sid)
        response = web.Response(status=302, headers={"Location": "/private"})
        response.set_cookie("sid", sid, path="/")
        return response

    async def private(self, request: web.Request) -> web.Response:
        self.log.append(("private", time.monotonic()))
        if request.cookies.get("sid") not in self.sessions:
            return web.Response(status=302, headers={"Location": "/login"})
        return web.Response(text="<p>members only</p>", content_type="text/html")


async def test_a_relogin_is_spaced_from_the_real_start_of_the_pages_request() -> None:
    site = Site()
    app = web.Application()
    app.router.add_post("/login", site.login)
    app.router.add_get("/private", site.private)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = runner.addresses[0][1]
    url = f"http://intranet.test:{port}/private"
    policy = PolitenessPolicy(delay=DELAY)
    rules = RobotsPolicy.allow_all("ok", "gossamer")
    scheduler: HostScheduler[Queued] = HostScheduler(policy, rules=lambda key: rules)
    gate = HostGate(policy)
    gate.bind(scheduler.claims)
    clock = Clock()
    auth = Authenticator([form_login(port)], clock=clock)
    config = FetchConfig(resolve=("intranet.test=127.0.0.1",), **FAST)  # type: ignore[arg-type]
    try:
        async with Fetcher(config, auth=auth, gate=gate) as fetcher:
            assert (await fetcher.fetch(url)).ok  # logs in first
            site.sessions.clear()  # the server ends the session
            clock.later()
            await asyncio.sleep(DELAY)
            scheduler.push(host_key(url), Queued(url, 1, 0, 0))
            (lease,) = scheduler.lease(1).leases
            site.log.clear()
            await asyncio.sleep(LAG)
            again = await fetcher.fetch(url)
            scheduler.finish(lease, Feedback(started_at=again.sent_by))
    finally:
        await runner.cleanup()
    assert again.ok
    assert [what for what, _ in site.log] == ["private", "login", "private"]
    gap = site.log[1][1] - site.log[0][1]
    assert gap >= DELAY - JITTER, gap

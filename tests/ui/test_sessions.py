"""The dashboard's sessions: the cookie holds a session id, never the token; sessions expire
and end at logout. A real Chromium shows what another local server receives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from playwright.async_api import async_playwright
from tests.ui.server import dashboard
from tests.ui.test_browser import ARGS, CHROMIUM

from gossamer.ui.sessions import Sessions

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_sessions_expire_when_idle_and_at_their_lifetime_and_end_at_logout() -> None:
    clock = Clock()
    sessions = Sessions(clock, idle=60, lifetime=300, limit=3)
    first = sessions.start()
    assert sessions.check(first) and not sessions.check("x" * 43) and not sessions.check(None)
    clock.now += 59
    assert sessions.check(first)  # each use restarts the idle time
    clock.now += 61
    assert not sessions.check(first) and len(sessions) == 0  # idle too long
    second = sessions.start()
    for _ in range(6):
        clock.now += 50
        assert sessions.check(second)
    clock.now += 1
    assert not sessions.check(second)  # 301 s after the login, used or not
    kept = [sessions.start() for _ in range(4)]
    assert not sessions.check(kept[0]) and all(sessions.check(k) for k in kept[1:])  # limit
    assert sessions.end(kept[1]) and not sessions.check(kept[1]) and not sessions.end(kept[1])


@asynccontextmanager
async def other_server() -> AsyncIterator[tuple[str, list[str]]]:
    """Another web server on this machine (another port): the Cookie headers it receives."""
    received: list[str] = []

    async def page(request: web.Request) -> web.Response:
        received.append(request.headers.get("Cookie", ""))
        return web.Response(text="<p>another local server</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", received
    finally:
        await runner.cleanup()


@pytest.mark.slow
async def test_another_local_server_receives_no_token_and_a_session_that_logout_ends(
    tmp_path: Path,
) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium-headless-shell is not installed")
    async with (
        dashboard([tmp_path]) as served,
        other_server() as (other, received),
        async_playwright() as playwright,
    ):
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await chromium.new_page()
            page.set_default_timeout(20_000)
            await page.goto(served.login_url)
            await page.wait_for_selector("#crawl-list")
            await page.goto(other + "/")
            assert len(received) == 1 and served.guard.cookie in received[0]  # sent to it
            assert served.guard.token not in received[0]  # but not the token
            replay = {"Cookie": received[0]}
            async with aiohttp.ClientSession() as http:
                async with http.get(served.base + "/api/overview", headers=replay) as response:
                    assert response.status == 200  # the limit: a live session id is one
                await page.goto(served.base + "/")
                await page.click("#logout")
                await page.wait_for_function("() => document.body.innerText.includes('token')")
                async with http.get(served.base + "/api/overview", headers=replay) as response:
                    assert response.status == 401  # logged out: worth nothing any more
        finally:
            await chromium.close()

"""What the pool spends of a site on proxy checks: proxies that take a connection are used on
trial before any check (their first relayed answer is their check), and checks go one at a
time within `CHECK_SHARE` of the time."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from tests.clock import SleepClock
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.local_app import serve

from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.proxies import CHECK_SHARE, ProxyPool
from gossamer.proxyurl import Proxy, parse_proxy

pytestmark = pytest.mark.timeout(30)

FAST = {"connect_timeout": 1.0, "read_timeout": 1.0, "total_timeout": 3.0}


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=f"<p>page {request.path}</p>", content_type="text/html")

    async with serve(page) as port:
        yield f"http://127.0.0.1:{port}"


async def test_proxies_that_listen_are_used_on_trial_and_their_answers_are_their_checks(
    origin: str,
) -> None:
    """The start checks one proxy through the site; the others that take a connection serve
    at once, the first answer of each making it live. One whose first request fails (here a
    407 of its own) is dead and the page is fetched through the next: no URL lost."""
    good = [await HttpProxy().start() for _ in range(3)]
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    closed = f"http://127.0.0.1:{guarded.port}"  # its credentials not given
    dead = f"http://127.0.0.1:{dead_port()}"
    urls = [*(p.url for p in good), closed, dead]
    pool = ProxyPool([parse_proxy(u) for u in urls])
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.start(tick=60)
        states = pool.states()
        assert list(states.values()).count("live") == 1
        assert states[dead] == "dead"
        results = [await fetcher.fetch(f"{origin}/p{i}") for i in range(6)]
        assert all(r.ok for r in results)
        assert {r.proxy for r in results} == {p.url for p in good}
        states = pool.states()
        assert [states[p.url] for p in good] == ["live"] * 3
        assert states[closed] == "dead"
        checks = sum(p.targets.count(f"{origin}/check") for p in good)
        assert checks == 1  # one check: the others' first answers were theirs
    finally:
        await pool.close()
        await fetcher.close()
        for proxy in (*good, guarded):
            await proxy.stop()


async def test_checks_go_one_at_a_time_each_waiting_nine_times_the_one_before() -> None:
    """A check that took 2 s (waiting for the site's slot, mostly) has the next wait 18 s:
    checks take a tenth of the time at most, whatever the number of proxies."""
    clock = SleepClock()
    running: list[str] = []

    async def checker(proxy: Proxy) -> float:
        assert not running  # one at a time
        running.append(proxy.host)
        await clock.sleep(2.0)
        running.clear()
        return 0.01

    pool = ProxyPool(
        [parse_proxy(f"http://p{i}:8080") for i in range(4)],
        checker=checker,
        clock=clock,
        sleep=clock.sleep,
    )
    await pool.check_due()
    assert set(pool.states().values()) == {"live"}
    gaps = [s for s in clock.slept if s != 2.0]
    assert gaps == [pytest.approx(2.0 * (1 / CHECK_SHARE - 1))] * 3
    assert CHECK_SHARE == 0.1

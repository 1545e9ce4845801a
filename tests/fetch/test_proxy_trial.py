"""What the pool spends of a site on proxy checks, and the 404s it trusts: proxies that take a
connection are used on trial before any check (their first relayed answer is their check),
checks go one at a time within `CHECK_SHARE` of the time, and a 404 through a proxy not yet
vouched for is asked of another proxy, within a budget a site of real 404s cannot double."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from tests.clock import SleepClock
from tests.fetch.proxy_servers import HttpProxy, Socks5Proxy, dead_port
from tests.local_app import serve

from gossamer.fetch.checkshare import CheckShare
from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.proxies import CHECK_SHARE, ProxyPool
from gossamer.proxyurl import Proxy, parse_proxy

pytestmark = pytest.mark.timeout(30)

FAST = {"connect_timeout": 1.0, "read_timeout": 1.0, "total_timeout": 3.0}


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        if request.path.startswith("/gone"):
            raise web.HTTPNotFound()
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


async def test_a_site_s_real_404s_are_asked_again_within_half_its_requests(origin: str) -> None:
    """Every page a 404 of the site's: the first 404s of proxies not vouched for are asked of
    another, which vouches for both; no proxy is charged, every 404 is returned, and the
    extra requests stay within one plus half the others."""
    proxies = [await HttpProxy().start() for _ in range(3)]
    pool = ProxyPool([parse_proxy(p.url) for p in proxies])
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.check_due()
        before = sum(p.requests for p in proxies)
        results = [await fetcher.fetch(f"{origin}/gone{i}") for i in range(20)]
        sent = sum(p.requests for p in proxies) - before
    finally:
        await fetcher.close()
        for proxy in proxies:
            await proxy.stop()
    assert [(r.status, r.error) for r in results] == [(404, None)] * 20
    assert 20 < sent <= 20 + 1 + 20 // 2
    assert sum(p.failures for p in pool.stats().proxies) == 0
    assert set(pool.states().values()) == {"live"}


async def test_a_lone_proxy_s_404_is_recorded_as_it_came(origin: str) -> None:
    """With one proxy nothing can be compared: its 404 is the answer (documented)."""
    liar = await HttpProxy(not_found=True).start()
    pool = ProxyPool([parse_proxy(liar.url)])
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.check_due()
        result = await fetcher.fetch(f"{origin}/p")
    finally:
        await fetcher.close()
        await liar.stop()
    assert (result.status, result.error, result.proxy) == (404, None, liar.url)
    assert pool.states()[liar.url] == "live"


async def test_a_proxy_answering_404_to_everything_is_charged_and_dies(origin: str) -> None:
    """Its 404s are refuted by another proxy's answer (``proxy-404``): every page comes back
    whole, through the other proxies, and the liar dies."""
    liar = await HttpProxy(not_found=True).start()
    good = [await HttpProxy().start() for _ in range(2)]
    pool = ProxyPool([parse_proxy(p.url) for p in (liar, *good)], max_failures=2)
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.check_due()
        assert set(pool.states().values()) == {"live"}  # it relays an answer: its check passes
        results = [await fetcher.fetch(f"{origin}/p{i}") for i in range(9)]
    finally:
        await fetcher.close()
        for proxy in (liar, *good):
            await proxy.stop()
    assert [(r.status, r.error) for r in results] == [(200, None)] * 9
    assert {r.proxy for r in results} == {p.url for p in good}
    assert pool.states()[liar.url] == "dead"
    stats = {p.proxy: p for p in pool.stats().proxies}
    assert stats[liar.url].failures == 2


async def test_a_vouched_proxy_that_turns_is_caught_at_its_second_404_in_a_row(
    origin: str,
) -> None:
    """Vouched for by a real 404, then answering 404 to everything: the first of its run is
    taken as it came, the second is asked of another proxy, and from then on every one."""
    turning, other = await HttpProxy().start(), await HttpProxy().start()
    pool = ProxyPool([parse_proxy(turning.url), parse_proxy(other.url)], max_failures=2)
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.check_due()
        gone = [await fetcher.fetch(f"{origin}/gone{i}") for i in range(4)]
        assert [r.status for r in gone] == [404] * 4
        turning.not_found = True
        results = [await fetcher.fetch(f"{origin}/p{i}") for i in range(6)]
    finally:
        await fetcher.close()
        await turning.stop()
        await other.stop()
    wrong = [r for r in results if r.status == 404]
    assert len(wrong) <= 1 and all(r.proxy == turning.url for r in wrong)
    assert pool.states()[turning.url] == "dead"


async def test_a_404_no_other_proxy_could_vouch_for_is_tried_again_later(origin: str) -> None:
    """The other proxy fails itself: the 404 is left undecided, ``proxy-error`` without a
    status (retried by the crawl, as any proxy error), never a 404 recorded as the site's."""
    liar, other = await HttpProxy(not_found=True).start(), await HttpProxy().start()
    pool = ProxyPool([parse_proxy(liar.url), parse_proxy(other.url)], max_failures=3)
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.check_due()
        await other.stop()
        result = await fetcher.fetch(f"{origin}/p")
    finally:
        await fetcher.close()
        await liar.stop()
    assert (result.status, result.error) == (None, "proxy-error")


async def test_a_404_through_socks5_is_the_site_s_bytes_and_never_asked_again() -> None:
    """A SOCKS5 proxy passes the site's bytes on: no 404 through it is doubted."""
    asked: list[str] = []

    async def gone(request: web.Request) -> web.Response:
        asked.append(request.path)
        raise web.HTTPNotFound()

    proxies = [await Socks5Proxy().start() for _ in range(2)]
    pool = ProxyPool([parse_proxy(p.url) for p in proxies])
    try:
        async with serve(gone) as port:
            config = FetchConfig(**FAST, proxy_check_url=f"http://127.0.0.1:{port}/check")
            async with Fetcher(config, proxies=pool) as fetcher:
                await pool.check_due()
                asked.clear()
                results = [await fetcher.fetch(f"http://127.0.0.1:{port}/g{i}") for i in range(6)]
    finally:
        for proxy in proxies:
            await proxy.stop()
    assert [r.status for r in results] == [404] * 6
    assert len(asked) == 6


def test_while_the_crawl_sends_the_check_host_pages_a_check_waits_for_nine_of_them() -> None:
    """A quick check (the host was due) still takes one of the host's slots: while pages of
    the check host go out, one check per nine of them; once none has gone for a minute, the
    time spacing alone; with no proxy live, at once."""
    share = CheckShare()
    share.host = "site.test"
    share.checked(0.0, 0.01, asked_site=True, live=True)  # next by time: 0.1
    for second in range(1, 9):
        share.requested("site.test", float(second))
        share.requested("other.test", float(second))  # another host's pages do not count
        assert not share.allows(second + 0.5, live=True)
    assert not share.allows(8.5, live=True)
    assert share.allows(8.5, live=False)
    share.requested("site.test", 9.0)
    assert share.allows(9.5, live=True)  # the ninth page of the host
    share.checked(10.0, 10.02, asked_site=True, live=True)
    share.requested("site.test", 10.5)
    assert not share.allows(11.0, live=True)
    assert share.allows(10.5 + 60.0, live=True)  # the host idle a minute: time alone

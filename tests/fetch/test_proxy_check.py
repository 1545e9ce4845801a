"""Proxy checks against a real tinyproxy and dead ports: a proxy that relays the site's answer
is live whatever its status; the proxy's own errors (it cannot reach the site, it wants
credentials) are failures; a check obeys robots.txt and waits for its host's pace."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.fetch.tinyproxy import tinyproxy
from tests.local_app import serve

from gossamer.fetch.http import FetchConfig, Fetcher, FetchResult
from gossamer.fetch.proxies import ProxyPool, proxy_fault
from gossamer.frontier.gate import HostGate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.robots import RobotsCache
from gossamer.proxyurl import parse_proxy

pytestmark = pytest.mark.timeout(30)

FAST = {"connect_timeout": 1.0, "read_timeout": 2.0, "total_timeout": 4.0}


def _site(root: int, log: list[tuple[float, str]], robots: str = "") -> web.Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        log.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            if robots:
                return web.Response(text=robots)
            raise web.HTTPNotFound()
        if request.path == "/":
            if root == 301:
                raise web.HTTPMovedPermanently("/a")
            return web.Response(status=root, text="root")
        return web.Response(text="<html><body>a</body></html>", content_type="text/html")

    return handler


@pytest.mark.parametrize("root", [200, 301, 403, 404, 500])
async def test_a_proxy_that_relays_the_sites_answer_is_live(tmp_path: Path, root: int) -> None:
    log: list[tuple[float, str]] = []
    dead = f"http://127.0.0.1:{dead_port()}"
    async with serve(_site(root, log)) as port, tinyproxy(tmp_path) as proxy:
        pool = ProxyPool([parse_proxy(proxy.url), parse_proxy(dead)])
        config = FetchConfig(proxy_check_url=f"http://127.0.0.1:{port}/", **FAST)
        async with Fetcher(config, proxies=pool):
            await pool.check_due()
    assert dict(pool.states()) == {proxy.url: "live", dead: "dead"}
    assert [path for _, path in log] == ["/"]  # asked once, through the live proxy
    assert not pool.stats().waiting


async def test_the_proxys_own_errors_fail_the_check(tmp_path: Path) -> None:
    """tinyproxy's "500 Unable to connect" for a site it cannot reach has no Via (a site's
    500 relayed has one); an HTTP proxy's 407 is its own."""
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    try:
        async with tinyproxy(tmp_path) as proxy:
            unauthenticated = f"http://127.0.0.1:{guarded.port}"
            pool = ProxyPool([parse_proxy(proxy.url), parse_proxy(unauthenticated)])
            config = FetchConfig(proxy_check_url=f"http://127.0.0.1:{dead_port()}/", **FAST)
            async with Fetcher(config, proxies=pool):
                await pool.check_due()
    finally:
        await guarded.stop()
    assert dict(pool.states()) == {proxy.url: "dead", unauthenticated: "dead"}
    assert pool.stats().waiting


def _answer(
    url: str, status: int | None, headers: dict[str, str], error: str | None = None
) -> FetchResult:
    return FetchResult(
        url=url,
        status=status,
        headers=headers,
        body=b"",
        content_type=None,
        charset=None,
        truncated=False,
        error=error,
        started_at=0.0,
        fetched_at=0.0,
        elapsed=0.0,
        wire_bytes=0,
        retry_after=None,
        location=None,
    )


def test_how_a_proxys_errors_are_told_from_the_sites() -> None:
    proxy = parse_proxy("http://127.0.0.1:3128")
    via = {"via": "1.1 proxy (tinyproxy/1.11.1)"}
    site = "http://site.test/"
    assert proxy_fault(_answer(site, 502, via), proxy) is None  # the site's, relayed
    assert proxy_fault(_answer(site, 500, {}), proxy) == "proxy-500"  # made by the proxy
    assert proxy_fault(_answer(site, 503, via | {"x-squid-error": "ERR_CONNECT_FAIL 111"}), proxy)
    status = {"proxy-status": "squid; error=connection_refused"}
    assert proxy_fault(_answer(site, 502, via | status), proxy) == "proxy-502"
    assert proxy_fault(_answer(site, 407, via), proxy) == "proxy-auth"
    assert proxy_fault(_answer(site, 404, {}), proxy) is None  # any other answer is the site's
    # an error page the proxy names its own, whatever its status (Squid's ERR_ACCESS_DENIED)
    denied = via | {"x-squid-error": "ERR_ACCESS_DENIED 0"}
    assert proxy_fault(_answer(site, 403, denied), proxy) == "proxy-403"
    assert proxy_fault(_answer(site, 404, {"proxy-status": "p; error=dns_error"}), proxy)
    assert proxy_fault(_answer(site, 403, via), proxy) is None  # the site's 403, relayed
    assert proxy_fault(_answer("https://site.test/", 403, denied), proxy) is None  # tunnel
    assert proxy_fault(_answer("https://site.test/", 502, {}), proxy) is None  # in a tunnel
    socks = parse_proxy("socks5://127.0.0.1:1080")
    assert proxy_fault(_answer(site, 502, {}), socks) is None
    # a malformed head: an HTTP proxy's own garbage; relayed as it came through SOCKS5
    for error in ("protocol-error", "headers-too-long"):
        assert proxy_fault(_answer(site, None, {}, error), proxy) == error
        assert proxy_fault(_answer(site, None, {}, error), socks) is None
    assert proxy_fault(_answer(site, None, {}, "server-disconnected"), socks)
    # in a CONNECT tunnel, the site's too (the CONNECT's own garbage has a reason of its own)
    tunnelled = _answer("https://site.test/", None, {}, "protocol-error")
    assert proxy_fault(tunnelled, proxy) is None
    connect = _answer("https://site.test/", None, {}, "proxy-connect-error")
    assert proxy_fault(connect, proxy) == "proxy-connect-error"


async def test_a_check_obeys_robots_txt_and_its_hosts_pace(tmp_path: Path) -> None:
    """The check learns the host's rules through the proxy (robots.txt first, the check URL
    after the host's Crawl-delay), and the crawl's robots cache keeps them."""
    log: list[tuple[float, str]] = []
    rules = "User-agent: *\nCrawl-delay: 0.3\nDisallow: /private\n"
    async with serve(_site(200, log, rules)) as port, tinyproxy(tmp_path) as proxy:
        origin = f"http://127.0.0.1:{port}"
        gate = HostGate(PolitenessPolicy())
        pool = ProxyPool([parse_proxy(proxy.url)])
        config = FetchConfig(proxy_check_url=origin + "/a", **FAST)
        async with Fetcher(config, proxies=pool, gate=gate) as fetcher:
            robots = RobotsCache(fetcher.fetch)
            gate.use_rules(robots.known)
            fetcher.set_check_rules(robots)
            await pool.check_due()
            assert robots.known(origin + "/a") is not None
            assert robots.stats().fetches == 0  # learnt by the check, not fetched again
            pool = ProxyPool([parse_proxy(proxy.url)])
            async with Fetcher(
                FetchConfig(proxy_check_url=origin + "/private", **FAST), proxies=pool, gate=gate
            ) as forbidden:
                forbidden.set_check_rules(robots)
                await pool.check_due()
    assert dict(pool.states()) == {proxy.url: "live"}
    paths = [path for _, path in log]
    assert paths == ["/robots.txt", "/a", "/robots.txt"]  # never /private
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(log)]
    assert min(gaps) >= 0.3


async def test_a_dead_proxy_takes_no_slot_of_the_site() -> None:
    """A proxy that accepts no connection is dead before any request to the site: a round of
    dead proxies neither waits for the site's pace nor holds its pages back."""
    log: list[tuple[float, str]] = []
    async with serve(_site(200, log, "User-agent: *\nCrawl-delay: 5\n")) as port:
        gate = HostGate(PolitenessPolicy())
        dead = [parse_proxy(f"http://127.0.0.1:{dead_port()}") for _ in range(20)]
        pool = ProxyPool(dead)
        config = FetchConfig(proxy_check_url=f"http://127.0.0.1:{port}/a", **FAST)
        async with Fetcher(config, proxies=pool, gate=gate):
            started = time.monotonic()
            await pool.check_due()
            assert time.monotonic() - started < 10  # 20 checks at a 5 s Crawl-delay: 100 s
    assert set(dict(pool.states()).values()) == {"dead"}
    assert gate.stats().requests == 0 and log == []

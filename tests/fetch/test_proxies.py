"""The proxy pool: URL parsing, the ring and the manager (with an injected clock and checker),
and the fetcher through real proxy servers on 127.0.0.1 (dead, slow, corrupting, with
credentials, SOCKS5) in front of a real origin server."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiohttp import web
from tests.clock import SleepClock
from tests.fetch.proxy_servers import HttpProxy, Socks5Proxy, dead_port
from tests.local_app import serve

from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.proxies import ProxyPool, proxy_fault, read_proxies_file
from gossamer.outcomes import is_failure
from gossamer.proxyurl import Proxy, ProxyError, parse_proxy

FAST = {"connect_timeout": 1.0, "read_timeout": 1.0, "total_timeout": 3.0}

# --- parsing ------------------------------------------------------------------------------


def test_parse_proxy_schemes_and_credentials() -> None:
    proxy = parse_proxy("http://alice:s%40cret@proxy.example:3128")
    assert (proxy.scheme, proxy.host, proxy.port) == ("http", "proxy.example", 3128)
    assert (proxy.login, proxy.password) == ("alice", "s@cret")
    assert proxy.label == "http://proxy.example:3128"
    assert "cret" not in repr(proxy)
    assert parse_proxy("https://p.example").port == 443
    assert parse_proxy("socks5://[::1]:1080").label == "socks5://[::1]:1080"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://u:hunter2@p.example:21", "scheme must be one of"),
        ("http://u:hunter2@:3128", "no host"),
        ("http://u:hunter2@p.example:3128/path", "no path"),
        ("socks5://u:hunter2@p.example", "needs a port"),
        ("http://u:hunter2@p.example:99999", "out of range"),
        ("http://:hunter2@p.example:1", "without a user name"),
    ],
)
def test_parse_proxy_errors_name_the_problem_not_the_password(url: str, problem: str) -> None:
    with pytest.raises(ProxyError, match=problem) as info:
        parse_proxy(url)
    assert "hunter2" not in str(info.value)


def test_proxies_file_skips_comments_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("# collected\nhttp://a.example:1\n\nsocks5://b.example:2\n")
    assert [p.label for p in read_proxies_file(path)] == [
        "http://a.example:1",
        "socks5://b.example:2",
    ]
    path.write_text("http://a.example:1\ngopher://u:pw@b.example:2\n")
    with pytest.raises(ProxyError, match="line 2") as info:
        read_proxies_file(path)
    assert ":pw@" not in str(info.value)


# --- the pool, with a scripted checker ------------------------------------------------------


class Checks:
    """A checker answering from a table: a response time, or why the check failed (None:
    no reason known)."""

    def __init__(self, **times: float | str | None) -> None:
        self.times = times
        self.calls: list[str] = []

    async def __call__(self, proxy: Proxy) -> float | str | None:
        self.calls.append(proxy.host)
        return self.times[proxy.host]


def _proxies(*hosts: str) -> list[Proxy]:
    return [parse_proxy(f"http://{host}:8080") for host in hosts]


async def test_ring_orders_live_proxies_by_response_time_and_each_domain_walks_it() -> None:
    checks = Checks(fast=0.01, mid=0.05, slow=0.5, dead=None)
    pool = ProxyPool(_proxies("slow", "dead", "fast", "mid"), checker=checks, clock=SleepClock())
    assert pool.pick("a.example") is None  # nothing checked yet: nothing used
    await pool.check_due()
    assert [p.proxy for p in pool.stats().proxies] == [
        "http://fast:8080",
        "http://mid:8080",
        "http://slow:8080",
        "http://dead:8080",
    ]
    assert pool.states()["http://dead:8080"] == "dead"
    walk_a = [pool.pick("a.example").host for _ in range(4)]  # type: ignore[union-attr]
    walk_b = [pool.pick("b.example").host for _ in range(2)]  # type: ignore[union-attr]
    assert walk_a == ["fast", "mid", "slow", "fast"]
    assert walk_b == ["fast", "mid"]  # another domain starts at the head
    fast = pool.pick("c.example")
    assert fast is not None
    assert pool.pick("c.example", exclude=[fast]).host == "slow"  # type: ignore[union-attr]


async def test_failures_kill_a_proxy_and_a_later_check_brings_it_back() -> None:
    clock = SleepClock()
    checks = Checks(a=0.01, b=0.02)
    pool = ProxyPool(
        _proxies("a", "b"),
        checker=checks,
        clock=clock,
        max_failures=2,
        check_interval=100,
        revalidate=10,
    )
    await pool.check_due()
    a = pool.pick("x")
    assert a is not None
    assert a.host == "a"
    pool.failed(a, "connection-refused")
    assert pool.states()["http://a:8080"] == "live"  # one failure in a row: still live
    pool.succeeded(a, 0.2)
    pool.failed(a, "connection-refused")
    assert pool.states()["http://a:8080"] == "live"  # the success reset the count
    pool.failed(a, "read-timeout")
    assert pool.states()["http://a:8080"] == "dead"
    assert [pool.pick("y").host for _ in range(2)] == ["b", "b"]  # type: ignore[union-attr]
    checks.calls.clear()
    clock.now += 5
    await pool.check_due()
    assert checks.calls == []  # not due yet
    clock.now += 5
    await pool.check_due()
    assert checks.calls == ["a"]
    assert pool.states()["http://a:8080"] == "live"
    stats = {p.proxy: p for p in pool.stats().proxies}["http://a:8080"]
    assert (stats.requests, stats.failures, stats.mean_latency) == (4, 3, 0.2)


async def test_proxies_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("http://a:8080\n")
    checks = Checks(a=0.01, b=0.02, given=0.03)
    pool = ProxyPool(_proxies("given"), file=path, checker=checks, clock=SleepClock())
    await pool.check_due()
    assert sorted(pool.states()) == ["http://a:8080", "http://given:8080"]
    path.write_text("http://b:8080\n")
    os.utime(path, (1, 1))
    await pool.check_due()
    assert sorted(pool.states()) == ["http://b:8080", "http://given:8080"]
    assert pool.states()["http://b:8080"] == "live"
    path.write_text("not a proxy\n")
    os.utime(path, (2, 2))
    await pool.check_due()  # a bad file leaves the pool as it was
    assert sorted(pool.states()) == ["http://b:8080", "http://given:8080"]


async def test_requests_answered_407_never_refuse_the_pool() -> None:
    """A site may answer 407 itself (relayed by the proxy, or inside a tunnel): requests
    failing so kill a proxy until its next check, which alone can refuse the pool."""
    checks = Checks(a=0.05, b=0.05)
    pool = ProxyPool(_proxies("a", "b"), checker=checks, revalidate=10)
    stops: list[str] = []
    pool.on_refused(lambda: stops.append("stop"))
    await pool.check_due()
    for _ in range(5):
        for proxy in _proxies("a", "b"):
            pool.failed(proxy, "proxy-auth")
    assert pool.waiting and not pool.refused and stops == []


@pytest.mark.parametrize(
    ("url", "proxy", "fault"),
    [
        ("http://site.test/", "http://u:p@127.0.0.1:3128", "proxy-auth"),
        ("https://site.test/", "http://u:p@127.0.0.1:3128", None),  # in the tunnel: the site's
        ("http://site.test/", "socks5://u:p@127.0.0.1:1080", None),  # relayed bytes
    ],
)
def test_a_407_is_the_proxy_s_only_where_the_proxy_answers(
    url: str, proxy: str, fault: str | None
) -> None:
    answer = SimpleNamespace(status=407, error=None, url=url, headers={})
    assert proxy_fault(answer, parse_proxy(proxy)) == fault


async def test_every_proxy_rejecting_the_credentials_refuses_the_pool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = SleepClock()
    checks = Checks(a="proxy-auth", b="read-timeout")
    pool = ProxyPool(_proxies("a", "b"), checker=checks, clock=clock, revalidate=10)
    stops: list[str] = []
    pool.on_refused(lambda: stops.append("stop"))
    with caplog.at_level(logging.WARNING, "gossamer.fetch.proxies"):
        await pool.check_due()
        assert pool.waiting and not pool.refused  # b may come back: the crawl waits
        checks.times["b"] = "proxy-auth"
        clock.now += 10
        await pool.check_due()
    assert pool.refused and stops == ["stop"]
    assert pool.refusal() == (
        "every proxy rejected the crawl's credentials (407 Proxy Authentication Required): "
        "http://a:8080, http://b:8080; the queued URLs are kept: fix the proxies' "
        "user:password and run again with --resume"
    )
    pool.on_refused(lambda: stops.append("late"))  # told at once
    assert stops == ["stop", "late"]
    said = [r.getMessage() for r in caplog.records]
    rejected = "rejected: credentials (407 Proxy Authentication Required)"
    assert said[:3] == [
        f"proxy http://a:8080 {rejected} (1 failure(s) in a row); checked again in 10s",
        "proxy http://b:8080 failing: read-timeout (1 failure(s) in a row); checked again in 10s",
        f"no proxy live (1 {rejected}, 1 failing: read-timeout): the crawl waits for the next "
        "proxy check (in 10s at most; a check URL that hangs or fails fails every proxy: "
        "--proxy-check-url)",
    ]
    assert said[3:] == [  # each check that a 407 fails says so again
        f"proxy http://a:8080 {rejected} (2 failure(s) in a row); checked again in 10s",
        f"proxy http://b:8080 {rejected} (2 failure(s) in a row); checked again in 10s",
        "every proxy rejected the crawl's credentials (407): the crawl stops",
    ]


async def test_a_proxies_file_may_bring_new_credentials_so_the_pool_waits(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("http://u:old@a:8080\n")
    pool = ProxyPool(file=path, checker=Checks(a="proxy-auth"), clock=SleepClock())
    await pool.check_due()
    assert pool.waiting and not pool.refused


def test_proxy_errors_do_not_count_against_the_site() -> None:
    assert not is_failure(None, "proxy-error")
    assert not is_failure(None, "no-proxy")
    assert is_failure(None, "connection-refused")


# --- the fetcher through real proxies -------------------------------------------------------


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=f"<p>page {request.path}</p>", content_type="text/html")

    async with serve(page) as port:
        yield f"http://127.0.0.1:{port}"


async def _pool(origin: str, *urls: str, **options: float) -> tuple[Fetcher, ProxyPool]:
    pool = ProxyPool([parse_proxy(u) for u in urls], **options)  # type: ignore[arg-type]
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    await pool.check_due()
    return fetcher, pool


async def test_dead_corrupting_and_slow_proxies(origin: str) -> None:
    good, slow = await HttpProxy().start(), await HttpProxy(delay=0.3).start()
    corrupt = await HttpProxy(corrupt=True).start()
    dead = f"http://127.0.0.1:{dead_port()}"
    fetcher, pool = await _pool(origin, slow.url, dead, corrupt.url, good.url)
    try:
        states = pool.states()
        assert states[f"http://127.0.0.1:{good.port}"] == "live"
        assert states[f"http://127.0.0.1:{slow.port}"] == "live"
        assert states[dead] == "dead"
        assert states[f"http://127.0.0.1:{corrupt.port}"] == "dead"
        ring = [p.proxy for p in pool.stats().proxies[:2]]
        assert ring == [f"http://127.0.0.1:{good.port}", f"http://127.0.0.1:{slow.port}"]
        results = [await fetcher.fetch(f"{origin}/p{i}") for i in range(4)]
        assert all(r.ok for r in results)
        assert results[0].body == b"<p>page /p0</p>"
        used = [r.proxy for r in results]
        assert used == [ring[0], ring[1], ring[0], ring[1]]  # the domain walks the ring
        assert good.requests >= 3 and slow.requests >= 3  # checks + requests
    finally:
        await fetcher.close()
        for server in (good, slow, corrupt):
            await server.stop()


async def test_a_proxy_that_dies_is_skipped_and_comes_back(origin: str) -> None:
    first, second = await HttpProxy().start(), await HttpProxy().start()
    fetcher, pool = await _pool(
        origin, first.url, second.url, max_failures=1, revalidate=0.1, check_interval=60
    )
    try:
        head = pool.pick("other")
        assert head is not None
        victim = first if head.port == first.port else second
        await victim.stop()
        result = await fetcher.fetch(f"{origin}/a")  # the head is dead: the next one answers
        assert result.ok
        assert result.proxy == f"http://127.0.0.1:{(second if victim is first else first).port}"
        assert pool.states()[head.label] == "dead"
        assert pool.stats().retries == 1
        await victim.start()  # same port
        await asyncio.sleep(0.15)
        await pool.check_due()
        assert pool.states()[head.label] == "live"
    finally:
        await fetcher.close()
        await first.stop()
        await second.stop()


async def test_every_proxy_failing_is_a_proxy_error(origin: str) -> None:
    proxy = await HttpProxy().start()
    fetcher, pool = await _pool(origin, proxy.url, max_failures=5)
    try:
        await proxy.stop()
        result = await fetcher.fetch(f"{origin}/a")
        assert result.error == "proxy-error"
        assert result.proxy == f"http://127.0.0.1:{proxy.port}"
        for _ in range(4):
            await fetcher.fetch(f"{origin}/a")
        result = await fetcher.fetch(f"{origin}/a")
        assert result.error == "no-proxy"
        assert pool.stats().unserved == 1
    finally:
        await fetcher.close()


async def test_proxy_credentials_are_sent_and_never_shown(
    origin: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    guarded = await HttpProxy(credentials=("alice", "hunter2")).start()
    wrong = f"http://alice:wrong-pw@127.0.0.1:{guarded.port}"
    fetcher, pool = await _pool(origin, guarded.url)
    try:
        result = await fetcher.fetch(f"{origin}/secret")
        assert result.ok
        assert result.proxy == f"http://127.0.0.1:{guarded.port}"
        assert "hunter2" not in repr(pool.stats())
        refused, refusing_pool = await _pool(origin, wrong)
        assert refusing_pool.states()[result.proxy] == "dead"  # its check got a 407
        await refused.close()
    finally:
        await fetcher.close()
        await guarded.stop()
    assert "hunter2" not in caplog.text
    assert "wrong-pw" not in caplog.text


async def test_a_connect_answered_407_is_the_proxy_refusing_the_credentials() -> None:
    """An HTTPS URL goes through a CONNECT: the proxy's 407 to it is a refusal (a 407
    inside the tunnel would be the site's)."""
    guarded = await HttpProxy(credentials=("alice", "hunter2")).start()
    pool = ProxyPool([parse_proxy(f"http://alice:wrong-pw@127.0.0.1:{guarded.port}")])
    check = "https://127.0.0.1:9/check"  # never reached: the CONNECT is refused first
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=check), proxies=pool)
    try:
        await pool.check_due()
        assert pool.refused
    finally:
        await fetcher.close()
        await guarded.stop()


@pytest.fixture(scope="module")
def tls_context(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for 127.0.0.1 (openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_https_proxy_with_credentials(origin: str, tls_context: ssl.SSLContext) -> None:
    proxy = HttpProxy(credentials=("dave", "tls-pw"))
    proxy.tls = tls_context
    await proxy.start()
    pool = ProxyPool([parse_proxy(proxy.url)])
    config = FetchConfig(**FAST, proxy_check_url=f"{origin}/check", verify_tls=False)
    fetcher = Fetcher(config, proxies=pool)
    try:
        await pool.check_due()
        result = await fetcher.fetch(f"{origin}/t")
        assert result.ok
        assert result.body == b"<p>page /t</p>"
        assert result.proxy == f"https://127.0.0.1:{proxy.port}"
    finally:
        await fetcher.close()
        await proxy.stop()


async def test_a_malformed_head_in_a_connect_tunnel_is_the_sites(
    tls_context: ssl.SSLContext, caplog: pytest.LogCaptureFixture
) -> None:
    """Through an HTTP proxy's CONNECT tunnel the site's malformed head comes as the site
    sent it (TLS keeps the proxy from changing a byte): no failure of the proxy, which
    stays live. A proxy garbling its answer to the CONNECT is at fault."""

    async def nul(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nhi")
        await writer.drain()
        writer.close()

    site = await asyncio.start_server(nul, "127.0.0.1", 0, ssl=tls_context)
    url = f"https://127.0.0.1:{site.sockets[0].getsockname()[1]}/nul"
    relaying, garbling = HttpProxy(), HttpProxy(corrupt=True)
    await relaying.start()
    await garbling.start()
    config = FetchConfig(**FAST, proxy_check_url=url, verify_tls=False, proxy_retries=0)
    try:
        pool = ProxyPool([parse_proxy(relaying.url)], max_failures=1)
        async with Fetcher(config, proxies=pool) as fetcher:
            await pool.check_due()  # the check URL's malformed head: the proxy relayed it
            results = [await fetcher.fetch(url) for _ in range(3)]
        assert [(r.status, r.error) for r in results] == [(None, "protocol-error")] * 3
        assert pool.states()[relaying.url] == "live"
        pool = ProxyPool([parse_proxy(garbling.url)], max_failures=1)
        async with Fetcher(config, proxies=pool):
            await pool.check_due()
        assert pool.states()[garbling.url] == "dead"
        assert "failing: proxy-connect-error" in caplog.text
    finally:
        await relaying.stop()
        await garbling.stop()
        site.close()
        await site.wait_closed()


async def test_socks5_proxy_with_credentials(origin: str) -> None:
    socks = await Socks5Proxy(credentials=("bob", "s3cret")).start()
    fetcher, pool = await _pool(origin, socks.url)
    try:
        assert pool.states()[f"socks5://127.0.0.1:{socks.port}"] == "live"
        result = await fetcher.fetch(f"{origin}/s")
        assert result.ok
        assert result.body == b"<p>page /s</p>"
        assert result.proxy == f"socks5://127.0.0.1:{socks.port}"
        assert socks.targets[-1] == origin.removeprefix("http://")
    finally:
        await fetcher.close()
        await socks.stop()


async def test_manager_runs_in_the_background(origin: str) -> None:
    proxy = await HttpProxy().start()
    pool = ProxyPool([parse_proxy(proxy.url)], check_interval=0.05)
    fetcher = Fetcher(FetchConfig(**FAST, proxy_check_url=f"{origin}/check"), proxies=pool)
    try:
        await pool.start(tick=0.02)
        assert pool.states()[f"http://127.0.0.1:{proxy.port}"] == "live"
        await asyncio.sleep(0.2)
        assert proxy.requests >= 3  # checked again while live
    finally:
        await pool.close()
        await fetcher.close()
        await proxy.stop()


@pytest.fixture
async def garbage_site() -> AsyncIterator[str]:
    """A plain-HTTP site whose every answer has a NUL byte in a header."""

    async def nul(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nhi")
        await writer.drain()
        writer.close()

    site = await asyncio.start_server(nul, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{site.sockets[0].getsockname()[1]}"
    finally:
        site.close()


async def test_a_site_s_malformed_head_through_plain_http_proxies_is_the_site_s(
    origin: str, garbage_site: str
) -> None:
    """Two proxies relay the same malformed head: the site's, recorded ``protocol-error``
    and not tried again; no proxy is charged, so a site of garbage cannot kill the pool."""
    first, second = await HttpProxy().start(), await HttpProxy().start()
    fetcher, pool = await _pool(origin, first.url, second.url, max_failures=1)
    try:
        results = [await fetcher.fetch(f"{garbage_site}/p{i}") for i in range(4)]
        assert [(r.status, r.error) for r in results] == [(None, "protocol-error")] * 4
        assert set(pool.states().values()) == {"live"}
        assert sum(p.failures for p in pool.stats().proxies) == 0
    finally:
        await fetcher.close()
        await first.stop()
        await second.stop()


async def test_a_lone_proxy_relaying_a_malformed_head_is_checked_not_charged(
    origin: str, garbage_site: str
) -> None:
    """No other proxy to ask: the proxy is not charged but checked at once (it relays the
    check URL whole, so it stays live), and the URL is tried again later (a proxy garbling
    everything would lose no URL)."""
    only = await HttpProxy().start()
    fetcher, pool = await _pool(origin, only.url, max_failures=1, check_interval=3600)
    try:
        checks = only.targets.count(f"{origin}/check")
        result = await fetcher.fetch(f"{garbage_site}/p")
        assert (result.status, result.error) == (None, "proxy-error")
        await pool.check_due()
        assert only.targets.count(f"{origin}/check") == checks + 1
        assert pool.states()[only.url] == "live"
    finally:
        await fetcher.close()
        await only.stop()


async def test_a_proxy_in_use_is_not_checked_until_it_has_been_idle_a_check_interval() -> None:
    """Its relayed answers prove it works; checks would take the check URL's host's slots,
    which the crawl of that host needs."""
    now = [0.0]
    checks: list[str] = []

    async def checker(proxy: Proxy) -> float:
        checks.append(proxy.url)
        return 0.01

    proxy = parse_proxy("http://127.0.0.1:3128")
    pool = ProxyPool([proxy], check_interval=10, checker=checker, clock=lambda: now[0])
    await pool.check_due()
    assert len(checks) == 1
    now[0] = 9.0
    pool.succeeded(proxy, 0.1)
    now[0] = 12.0
    await pool.check_due()
    assert len(checks) == 1  # answered at 9: next check at 19
    now[0] = 19.5
    await pool.check_due()
    assert len(checks) == 2


@pytest.fixture
async def hung_site() -> AsyncIterator[str]:
    """A plain-HTTP site that reads each request and never answers."""
    handlers: set[asyncio.Task[None]] = set()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await reader.read()
        finally:
            writer.close()

    site = await asyncio.start_server(hang, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{site.sockets[0].getsockname()[1]}"
    finally:
        site.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await site.wait_closed()


async def test_a_site_that_hangs_through_two_proxies_is_the_site_s(
    origin: str, hung_site: str
) -> None:
    """Both proxies pass the silence on: the site's timeout (retried as one, counted against
    the host), no proxy charged, both checked at once; a hung site cannot kill the pool."""
    first, second = await HttpProxy().start(), await HttpProxy().start()
    fetcher, pool = await _pool(origin, first.url, second.url, max_failures=1)
    try:
        checks = first.targets.count(f"{origin}/check")
        result = await fetcher.fetch(f"{hung_site}/p")
        assert (result.status, result.error) == (None, "read-timeout")
        assert set(pool.states().values()) == {"live"}
        assert sum(p.failures for p in pool.stats().proxies) == 0
        await pool.check_due()
        assert first.targets.count(f"{origin}/check") == checks + 1
    finally:
        await fetcher.close()
        await first.stop()
        await second.stop()


async def test_a_body_cut_through_two_proxies_is_the_site_s(origin: str) -> None:
    """Both proxies cut it: the site's answer, kept as a cut body is (retried by the crawl);
    no proxy charged."""
    first, second = HttpProxy(cut_paths=("/p",)), HttpProxy(cut_paths=("/p",))
    await first.start()
    await second.start()
    fetcher, pool = await _pool(origin, first.url, second.url, max_failures=1)
    try:
        result = await fetcher.fetch(f"{origin}/p")
        assert (result.status, result.error) == (200, "incomplete-body")
        assert set(pool.states().values()) == {"live"}
        assert sum(p.failures for p in pool.stats().proxies) == 0
    finally:
        await fetcher.close()
        await first.stop()
        await second.stop()


@pytest.mark.parametrize("fault", ["corrupt_paths", "hang_paths", "cut_paths"])
async def test_a_proxy_failing_where_another_relays_a_whole_answer_is_charged(
    origin: str, fault: str
) -> None:
    """A malformed head, a hang or a body cut short: the proxy's or the site's, until another
    proxy relays the same page whole."""
    bad = await HttpProxy(**{fault: ("/p",)}).start()  # its checks pass
    good = await HttpProxy().start()
    fetcher, pool = await _pool(origin, bad.url, good.url, max_failures=1)
    try:
        assert set(pool.states().values()) == {"live"}
        results = [await fetcher.fetch(f"{origin}/p{i}") for i in range(3)]
        assert all(r.ok and r.error is None for r in results)
        assert {r.proxy for r in results} == {good.url}
        assert pool.states()[bad.url] == "dead"
    finally:
        await fetcher.close()
        await bad.stop()
        await good.stop()

"""The crawl's cookie jar: RFC 6265 rules (host-only and domain cookies, paths, Secure,
expiry, prefixes), hostile input bounded, and, against real loopback servers (http and
https), cookies kept per site and never sent to another host: not on a redirect, not to an
uncovered subdomain, not over plain http when Secure."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from tests.tls_certs import TlsFiles

from gossamer.fetch.auth import Authenticator
from gossamer.fetch.cookies import (
    MAX_COOKIE_BYTES,
    MAX_COOKIES,
    MAX_HEADER_BYTES,
    MAX_PER_DOMAIN,
    CookieJar,
    parse_set_cookie,
)
from gossamer.fetch.http import FetchConfig, Fetcher

FAST = {"connect_timeout": 2.0, "read_timeout": 2.0, "total_timeout": 5.0}
NOW = 1_440_000_000.0


def _everywhere(domain: str) -> bool:
    return True


def _set(url: str, line: str, allow: Callable[[str], bool] = _everywhere) -> object:
    return parse_set_cookie(url, line, allow, NOW)


def test_host_only_and_domain_cookies() -> None:
    jar = CookieJar(clock=lambda: NOW)
    jar.add(
        jar.parse(
            "http://www.site.test/a/b", ["h=1", "d=2; Domain=.site.test; Path=/"], _everywhere
        )
    )
    assert jar.header("http://www.site.test/a/x") == "h=1; d=2"
    assert jar.header("http://sub.www.site.test/a/") == "d=2"  # h is host-only
    assert jar.header("http://other.site.test/a/") == "d=2"
    assert jar.header("http://www.site.test/") == "d=2"  # h's default path is /a
    assert jar.header("http://evilsite.test/a/") is None
    assert jar.header("http://site.test.evil/a/") is None


def test_domains_refused_or_narrowed() -> None:
    assert _set("http://www.site.test/", "a=1; Domain=other.test") is None
    assert _set("http://www.site.test/", "a=1; Domain=test") is None  # no dot: a TLD
    assert _set("http://127.0.0.1/", "a=1; Domain=0.0.1") is None
    narrowed = _set("http://www.site.test/", "a=1; Domain=site.test", lambda d: False)
    assert narrowed == ("www.site.test", "/", "a", "1", False, None, True)


def test_secure_expiry_and_prefixes() -> None:
    assert _set("http://a.test/", "s=1; Secure") is None  # set over http
    assert _set("https://a.test/", "s=1; Secure; Max-Age=10; Expires=Wed, 21 Oct 2015 07:28:00 GMT")
    row = _set("https://a.test/", "s=1; Secure; Max-Age=10; Expires=Wed, 21 Oct 2015 07:28:00 GMT")
    assert row == ("a.test", "/", "s", "1", True, NOW + 10, True)  # Max-Age wins
    dashed = _set("http://a.test/", "e=1; Expires=Wed, 21-Oct-2015 07:28:00 GMT")
    assert dashed is not None and dashed[5] == 1445412480.0  # type: ignore[index]
    far = _set("http://a.test/", "e=1; Max-Age=999999999999")
    assert far is not None and far[5] == NOW + 400 * 86_400  # type: ignore[index]
    assert _set("https://a.test/", "__Secure-x=1") is None
    assert _set("https://a.test/", "__Host-x=1; Secure; Domain=a.test") is None
    assert _set("https://a.test/", "__Host-x=1; Secure; Path=/")
    jar = CookieJar(clock=lambda: NOW)
    jar.add(jar.parse("https://a.test/", ["s=1; Secure", "p=2"], _everywhere))
    assert jar.header("https://a.test/") == "s=1; p=2"
    assert jar.header("http://a.test/") == "p=2"
    assert jar.parse("http://a.test/", ["s=evil"], _everywhere) == []  # secure left alone
    jar.add(jar.parse("http://a.test/", ["p=gone; Max-Age=0"], _everywhere))
    assert jar.header("https://a.test/") == "s=1"


def test_hostile_values_refused() -> None:
    for line in ("a=b\x00c", "a=b\rX-Injected: 1", "a b=1", "=nameless", "novalue", "a=ü"):
        assert _set("http://a.test/", line) is None, line
    assert _set("http://a.test/", "a=" + "v" * MAX_COOKIE_BYTES) is None
    assert _set("http://a.test/", 'q="quoted value"') is not None
    jar = CookieJar([("a.test", "/", "bad\r\n", "x", False, None)])
    assert len(jar) == 0  # stored rows are checked too


def test_bounds_per_domain_and_in_all() -> None:
    jar = CookieJar()
    jar.add(
        (f"d{i}.test", "/", f"c{j}", "v", False, None, True) for i in range(20) for j in range(200)
    )
    assert len(jar) == MAX_COOKIES  # the least recently set made room
    assert jar.header("http://d0.test/") is None and jar.header("http://d19.test/")
    jar.add(("d19.test", "/", f"more{j}", "v", False, None, True) for j in range(10))
    assert len(jar.header("http://d19.test/") or "") > 0
    assert sum(1 for r in jar.rows() if r[0] == "d19.test") == MAX_PER_DOMAIN
    lines = [f"c{i}=v" for i in range(10_000)]
    assert len(jar.parse("http://x.test/", lines, _everywhere)) == 100


@pytest.mark.parametrize(("sites", "per_site"), [(1, MAX_PER_DOMAIN), (20, MAX_COOKIES // 20)])
def test_a_cookie_set_again_counts_as_the_newest(sites: int, per_site: int) -> None:
    """The site (one site full) or the jar (20 sites) full: c0 of d0 set again goes last, and
    a new cookie evicts c1 of d0 (the least recently set), not c0."""
    jar = CookieJar(clock=lambda: NOW)
    jar.add(
        (f"d{i}.test", "/", f"c{j}", "v", False, None, True)
        for i in range(sites)
        for j in range(per_site)
    )
    jar.add([("d0.test", "/", "c0", "again", False, None, True)])
    jar.add([("d0.test", "/", "new", "v", False, None, True)])
    kept = {(row[0], row[2]) for row in jar.rows()}
    assert ("d0.test", "c0") in kept and ("d0.test", "new") in kept
    assert ("d0.test", "c1") not in kept
    assert len(kept) == sites * per_site


@pytest.mark.parametrize(
    ("host", "suffix"),
    [
        ("evil.co.uk", "co.uk"),  # the list's ICANN section
        ("evil.github.io", "github.io"),  # its private section, as browsers count it
        ("a.b.blogspot.com", "blogspot.com"),
        ("www.site.test", "test"),  # a name under no rule: its last label
    ],
)
def test_a_public_suffix_is_never_a_cookie_domain(host: str, suffix: str) -> None:
    assert _set(f"http://{host}/", f"a=1; Domain={suffix}") is None
    assert _set(f"http://{host}/", f"a=1; Domain=.{suffix.upper()}") is None
    # the suffix itself as a host: kept for that host only (RFC 6265 5.3 step 5)
    assert _set(f"http://{suffix}/", f"a=1; Domain={suffix}") == (
        (suffix, "/", "a", "1", False, None, True)
    )
    jar = CookieJar([(suffix, "/", "old", "1", False, None)])  # stored as a domain cookie
    assert jar.header(f"http://{host}/") is None
    assert jar.header(f"http://{suffix}/") == "old=1"


def test_an_ip_address_sets_no_domain_cookie() -> None:
    assert _set("http://127.0.0.1/", "a=1; Domain=127.0.0.1") == (
        ("127.0.0.1", "/", "a", "1", False, None, True)
    )
    assert _set("http://[::1]/", "a=1; Domain=::1") == ("::1", "/", "a", "1", False, None, True)


def test_a_site_is_capped_with_all_its_hosts_and_evicts_only_its_own() -> None:
    stored: dict[tuple[str, str, str], object] = {}

    def update(rows: list[tuple[object, ...]], removed: list[tuple[str, str, str]]) -> None:
        for key in removed:
            del stored[key]
        stored.update({row[:3]: row for row in rows})  # type: ignore[misc]

    jar = CookieJar(clock=lambda: NOW, on_update=update)
    jar.add(jar.parse("http://www.shop.test/", ["sid=1"], _everywhere))
    for i in range(36):  # 3,600 cookies of one site: more than the jar holds
        lines = [f"c{j}=v" for j in range(100)]
        jar.add(jar.parse(f"http://h{i}.farm.test/", lines, _everywhere))
    assert jar.header("http://www.shop.test/") == "sid=1"
    farm = [row for row in jar.rows() if row[0].endswith(".farm.test")]
    assert len(farm) == MAX_PER_DOMAIN and len(jar) == MAX_PER_DOMAIN + 1
    assert jar.header("http://h0.farm.test/") is None  # the site's least recently set went
    assert jar.header("http://h35.farm.test/") == "; ".join(f"c{j}=v" for j in range(100))
    assert set(stored) == {row[:3] for row in jar.rows()}  # the store saw the same


def test_a_cookie_header_is_bounded_the_most_specific_cookies_first() -> None:
    """A sibling host's 200 cookies of 3.9 KB (781 KB in all) leave www's header within
    `MAX_HEADER_BYTES`: longer paths first, then the earlier set (a cookie set again keeps
    its place), and what does not fit is left out."""
    jar = CookieJar(clock=lambda: NOW)
    jar.add(jar.parse("http://www.example.test/", ["sid=1", "pref=a; Path=/shop"], _everywhere))
    big = [f"c{i}={'v' * 3900}; Domain=example.test; Path=/" for i in range(100)]
    for page in range(2):
        jar.add(jar.parse(f"http://evil.example.test/{page}", big, _everywhere))
    jar.add(jar.parse("http://www.example.test/", ["sid=2"], _everywhere))
    header = jar.header("http://www.example.test/shop/cart") or ""
    assert len(header) <= MAX_HEADER_BYTES
    assert header.split("; ")[:3] == ["pref=a", "sid=2", f"c0={'v' * 3900}"]
    assert len(jar) == 2 + 100  # the jar keeps them all: only the header leaves them out
    assert len(jar.header("http://evil.example.test/") or "") <= MAX_HEADER_BYTES
    small = CookieJar(clock=lambda: NOW)
    small.add(small.parse("http://x.test/", [f"k{i}=v" for i in range(100)], _everywhere))
    assert small.header("http://x.test/") == "; ".join(f"k{i}=v" for i in range(100))


@dataclass
class Site:
    """Sets cookies on /set (with the query's Set-Cookie lines); echoes what it was sent."""

    seen: list[tuple[str, str, str | None]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.host.split(":")[0], request.path, request.headers.get("Cookie")))
        if request.path == "/set":
            response = web.Response(text="set")
            for line in request.query.getall("c", []):
                response.headers.add("Set-Cookie", line)
            return response
        if request.path == "/away":
            return web.Response(status=302, headers={"Location": request.query["to"]})
        return web.json_response({"cookie": request.headers.get("Cookie")})


@pytest.fixture
async def servers(tls_files: TlsFiles) -> AsyncIterator[tuple[Site, int, int]]:
    site = Site()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls_files.server_cert, tls_files.server_key)
    plain = web.TCPSite(runner, "127.0.0.1", 0)
    secure = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await plain.start()
    await secure.start()
    ports = [a[1] for a in runner.addresses]
    try:
        yield site, ports[0], ports[1]
    finally:
        await runner.cleanup()


HOSTS = ("www.site.test", "a.www.site.test", "site.test", "other.test", "shop.test")


def fetcher(auth: Authenticator) -> Fetcher:
    resolve = tuple(f"{h}=127.0.0.1" for h in HOSTS)
    config = FetchConfig(resolve=resolve, verify_tls=False, **FAST)  # type: ignore[arg-type]
    return Fetcher(config, auth=auth)


def _cookie(body: bytes) -> str | None:
    value = json.loads(body)["cookie"]
    return value if isinstance(value, str) else None


async def test_every_site_keeps_its_session_and_no_other_gets_it(
    servers: tuple[Site, int, int],
) -> None:
    port = servers[1]
    in_scope: Callable[[str], bool] = lambda url: "other.test" not in url  # noqa: E731
    auth = Authenticator([], cookies="on", in_scope=in_scope)
    www = f"http://www.site.test:{port}"
    async with fetcher(auth) as f:
        await f.fetch(f"{www}/set?c=sid%3Dabc&c=wide%3D1%3B%20Domain%3Dsite.test")
        assert _cookie((await f.fetch(f"{www}/echo")).body) == "sid=abc; wide=1"
        assert _cookie((await f.fetch(f"http://a.www.site.test:{port}/echo")).body) == "wide=1"
        assert _cookie((await f.fetch(f"http://site.test:{port}/echo")).body) == "wide=1"
        hop = await f.fetch(f"{www}/away?to=http://other.test:{port}/echo")
        assert hop.location is not None
        assert _cookie((await f.fetch(hop.location)).body) is None
        # an out-of-scope site sets nothing
        await f.fetch(f"http://other.test:{port}/set?c=t%3D1")
        assert _cookie((await f.fetch(f"http://other.test:{port}/echo")).body) is None
    assert auth.stats().cookies == 2


async def test_a_secure_cookie_never_goes_over_plain_http(
    servers: tuple[Site, int, int],
) -> None:
    _, port, tls_port = servers
    auth = Authenticator([], cookies="on")
    async with fetcher(auth) as f:
        await f.fetch(f"https://shop.test:{tls_port}/set?c=s%3D1%3B%20Secure&c=p%3D2")
        assert _cookie((await f.fetch(f"https://shop.test:{tls_port}/echo")).body) == "s=1; p=2"
        hop = await f.fetch(f"https://shop.test:{tls_port}/away?to=http://shop.test:{port}/echo")
        assert hop.location is not None and hop.location.startswith("http://")
        assert _cookie((await f.fetch(hop.location)).body) == "p=2"
        await f.fetch(f"http://shop.test:{port}/set?c=s%3Devil")  # cannot replace it
        assert _cookie((await f.fetch(f"https://shop.test:{tls_port}/echo")).body) == "s=1; p=2"


@pytest.mark.parametrize("mode", ["login-only", "off"])
async def test_no_site_cookie_unless_on(servers: tuple[Site, int, int], mode: str) -> None:
    port = servers[1]
    auth = Authenticator([], cookies=mode)
    async with fetcher(auth) as f:
        await f.fetch(f"http://www.site.test:{port}/set?c=sid%3Dabc")
        assert _cookie((await f.fetch(f"http://www.site.test:{port}/echo")).body) is None
    assert len(auth.jar) == 0


def test_the_public_suffix_list_is_read_on_the_first_cookie_not_with_the_jar() -> None:
    from gossamer.fetch import cookies

    cookies._public_suffixes.cache_clear()
    cookies.is_public_suffix.cache_clear()
    try:
        jar = CookieJar()
        assert jar.header("http://a.example/") is None
        assert cookies._public_suffixes.cache_info().currsize == 0  # a crawl without cookies
        jar.add(jar.parse("http://www.a.example/", ["id=1; Domain=a.example"], _everywhere))
        assert cookies._public_suffixes.cache_info().currsize == 1
        assert jar.header("http://b.a.example/") == "id=1"
    finally:
        cookies._public_suffixes.cache_clear()
        cookies.is_public_suffix.cache_clear()

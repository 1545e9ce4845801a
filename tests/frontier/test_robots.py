"""robots.txt fetching, caching and matching (RFC 9309) against real local HTTP servers."""

from __future__ import annotations

import asyncio
import itertools
import socket
import string
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from protego import Protego

from gossamer.frontier.robots import (
    MAX_ROBOTS_BYTES,
    MAX_ROBOTS_WAIT,
    MAX_WILDCARD_RULES,
    RobotsCache,
    RobotsPolicy,
    RobotsReply,
    RobotsResponse,
    robots_origin,
)

DAY = 24 * 3600.0


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    location: str | None = None
    delay: float = 0.0


@dataclass
class Site:
    """A real HTTP server whose responses a test sets per path; counts requests per path."""

    server: TestServer
    routes: dict[str, Route] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)

    @property
    def origin(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    def url(self, path: str) -> str:
        return self.origin + path

    def robots(self, text: str, status: int = 200) -> None:
        self.routes["/robots.txt"] = Route(status, text.encode())


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _start_site() -> Site:
    site: Site

    async def handle(request: web.Request) -> web.StreamResponse:
        site.hits[request.path] += 1
        route = site.routes.get(request.path, Route(404, b"not found"))
        if route.delay:
            await asyncio.sleep(route.delay)
        headers = {"Location": route.location} if route.location else None
        return web.Response(status=route.status, body=route.body, headers=headers)

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    site = Site(server)
    return site


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    started = await _start_site()
    yield started
    await started.server.close()


@pytest.fixture
async def other_site() -> AsyncIterator[Site]:
    started = await _start_site()
    yield started
    await started.server.close()


@pytest.fixture
async def fetch() -> AsyncIterator[Callable[[str], Awaitable[RobotsResponse]]]:
    """A fetch function like the crawler's: one GET, no redirects followed, errors raised."""
    async with aiohttp.ClientSession() as session:

        async def get(url: str) -> RobotsResponse:
            async with session.get(url, allow_redirects=False) as response:
                body = b""
                async for chunk in response.content.iter_chunked(64 * 1024):
                    body += chunk
                    if len(body) > MAX_ROBOTS_BYTES:
                        break
                return RobotsReply(response.status, body, response.headers.get("Location"))

        yield get


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cache(fetch: Callable[[str], Awaitable[RobotsResponse]], clock: FakeClock) -> RobotsCache:
    return RobotsCache(fetch, clock=clock, retry_interval=60.0)


RULES = """\
User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*.gif$
Disallow: /search*q=
Allow: /docs/
Disallow: /docs/internal
"""


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/", True),
        ("/index.html", True),
        ("/private/", False),
        ("/private/secret.html", False),
        ("/private/public/", True),
        ("/private/public/page", True),
        ("/image.gif", False),
        ("/dir/image.gif", False),
        ("/image.gif?size=2", True),
        ("/image.gifs", True),
        ("/search?lang=en&q=x", False),
        ("/search?lang=en", True),
        ("/docs/", True),
        ("/docs/internal/x", False),
        ("/robots.txt", True),
    ],
)
async def test_rules_longest_match_and_wildcards(
    site: Site, cache: RobotsCache, path: str, allowed: bool
) -> None:
    site.robots(RULES)
    policy = await cache.get(site.url("/"))
    assert policy.status == "ok"
    assert policy.allowed(site.url(path)) is allowed


GROUPS = """\
User-agent: *
Disallow: /
Crawl-delay: 7

User-agent: Gossamer
Disallow: /not-for-gossamer
Crawl-delay: 2.5

Sitemap: http://example.com/sitemap.xml
Sitemap: http://example.com/news.xml
"""


async def test_product_token_group_beats_star_group(site: Site, cache: RobotsCache) -> None:
    site.robots(GROUPS)
    policy = await cache.get(site.url("/"))
    assert policy.allowed(site.url("/page"))
    assert not policy.allowed(site.url("/not-for-gossamer/x"))
    assert policy.crawl_delay == 2.5
    assert policy.sitemaps == ("http://example.com/sitemap.xml", "http://example.com/news.xml")


async def test_other_token_falls_back_to_star_group(
    site: Site, fetch: Callable[[str], Awaitable[RobotsResponse]]
) -> None:
    site.robots(GROUPS)
    policy = await RobotsCache(fetch, token="otherbot").get(site.url("/"))
    assert policy.token == "otherbot"
    assert not policy.allowed(site.url("/page"))
    assert policy.crawl_delay == 7.0


async def test_token_group_without_crawl_delay_does_not_inherit_star_delay(
    site: Site, cache: RobotsCache
) -> None:
    site.robots("User-agent: *\nCrawl-delay: 9\n\nUser-agent: gossamer\nDisallow: /x\n")
    policy = await cache.get(site.url("/"))
    assert policy.crawl_delay is None  # one group applies (RFC 9309 §2.2.1)
    assert not policy.allowed(site.url("/x"))


@pytest.mark.parametrize(
    ("value", "delay"),
    [
        ("inf", 1e308),  # endless: the longest delay, which the politeness policy caps
        ("Infinity  # forever", 1e308),
        ("+INF\r", 1e308),
        ("1e400", 1e308),  # overflows to inf
        ("1" + "0" * 400, 1e308),
        ("1e308", 1e308),
        ("2.5", 2.5),
        ("NaN", None),
        ("-inf", None),
        ("-1", None),
        ("inf seconds", None),  # not a number: no delay, as protego reads it
    ],
)
async def test_an_endless_crawl_delay_is_the_longest(
    site: Site, cache: RobotsCache, value: str, delay: float | None
) -> None:
    site.robots(f"User-agent: *\nDisallow: /x\nCrawl-delay: {value}\n")
    policy = await cache.get(site.url("/"))
    assert policy.crawl_delay == delay
    assert not policy.allowed(site.url("/x"))
    spelt = RobotsPolicy.parse(f"user-agent: *\n  crawl delay {value}\n".encode())
    assert spelt.crawl_delay == delay


@pytest.mark.parametrize(
    "body",
    [
        b"User-agent: *\rCrawl-delay: inf\r",  # lines ended by CR alone
        b"User-agent: *\nCrawl-delay:\xc2\xa0inf\n",  # a no-break space before the value
        b"User-agent: *\nCrawl-delay: inf\x0b\n",  # a vertical tab after it
        b"User-agent: *\xc2\x85Crawl-delay: inf",  # NEL: a line break to str.splitlines
    ],
)
def test_an_endless_crawl_delay_is_found_where_protego_reads_a_line(body: bytes) -> None:
    """Protego splits lines as ``str.splitlines`` does and strips every space: an endless
    delay must be found on each line it reads."""
    assert RobotsPolicy.parse(body).crawl_delay == 1e308


async def test_token_matching_is_case_insensitive_and_whole_token(
    site: Site, fetch: Callable[[str], Awaitable[RobotsResponse]]
) -> None:
    site.robots("User-agent: GOSSAMER\nDisallow: /a\n\nUser-agent: gossamerbot\nDisallow: /b\n")
    policy = await RobotsCache(fetch, token="gossamer").get(site.url("/"))
    assert not policy.allowed(site.url("/a"))
    assert policy.allowed(site.url("/b"))


@pytest.mark.parametrize(
    "group", ["Gossamer/1.0", "gossamer/0.1.0 (+https://bot.test)", "GOSSAMER/2 # us"]
)
def test_a_group_named_with_its_version_is_the_crawlers(group: str) -> None:
    """Owners copy the name from their logs, version and all: the product token is the name
    before the slash (RFC 9309 2.2.1, as Google reads it)."""
    body = f"User-agent: {group}\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n".encode()
    policy = RobotsPolicy.parse(body, "gossamer")
    assert not policy.allowed("http://h.test/a")
    assert policy.allowed("http://h.test/b")


def _wildcards(count: int) -> str:
    names = ("".join(letters) for letters in itertools.product(string.ascii_uppercase, repeat=4))
    return "".join(f"Disallow: /*{name}\n" for name in itertools.islice(names, count))


def test_a_group_of_too_many_wildcard_rules_forbids_the_host() -> None:
    """Each wildcard rule costs a search of the URL on every check: 30,000 of them cost 50 ms
    a URL, on the crawl's loop. Past `MAX_WILDCARD_RULES` the host is not crawled at all."""
    many = RobotsPolicy.parse(f"User-agent: *\n{_wildcards(MAX_WILDCARD_RULES + 1)}".encode())
    assert many.status == "too-complex"
    assert not many.allowed("http://h.test/" + "a" * 2_000)
    started = time.perf_counter()
    few = RobotsPolicy.parse(f"User-agent: *\n{_wildcards(MAX_WILDCARD_RULES)}".encode())
    assert few.status == "ok" and few.allowed("http://h.test/a")
    assert not few.allowed("http://h.test/aAAAA")
    assert time.perf_counter() - started < 2
    # long rules count by their wildcards: 690 rules of 240 cost as much as 30,000 of one
    long = "".join(f"Disallow: /{'*a' * 240}{n}\n" for n in range(10))
    assert RobotsPolicy.parse(f"User-agent: *\n{long}".encode()).status == "too-complex"
    # only the group that applies counts: another crawler's rules cost this one nothing
    other = f"User-agent: otherbot\n{_wildcards(5_000)}\nUser-agent: *\nDisallow: /x\n"
    assert RobotsPolicy.parse(other.encode()).status == "ok"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 431])
async def test_4xx_means_allow_all(site: Site, cache: RobotsCache, status: int) -> None:
    """RFC 9309 2.3.1.3, 400 and 431 too: a request of ours too big for the server (a sibling
    host's cookies) cannot cause one, as robots.txt requests carry no cookie."""
    site.robots("User-agent: *\nDisallow: /\n", status=status)
    policy = await cache.get(site.url("/"))
    assert policy.status == "missing"
    assert policy.allowed(site.url("/anything"))
    assert policy.crawl_delay is None


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_5xx_and_429_mean_disallow_all_then_retry(
    site: Site, cache: RobotsCache, clock: FakeClock, status: int
) -> None:
    site.robots("User-agent: *\nDisallow: /\n", status=status)
    policy = await cache.get(site.url("/page"))
    assert policy.status == "unreachable"
    assert not policy.allowed(site.url("/page"))
    clock.now += 59
    assert cache.known(site.url("/other")) is policy
    assert site.hits["/robots.txt"] == 1
    clock.now += 2
    assert cache.known(site.url("/other")) is None
    site.robots("User-agent: *\nDisallow: /private\n")
    retried = await cache.get(site.url("/page"))
    assert retried.status == "ok"
    assert retried.allowed(site.url("/page"))
    assert site.hits["/robots.txt"] == 2
    assert cache.stats().unreachable == 1


async def test_connection_refused_means_unreachable(cache: RobotsCache) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    policy = await cache.get(f"http://127.0.0.1:{port}/page")
    assert policy.status == "unreachable"
    assert not policy.allowed(f"http://127.0.0.1:{port}/page")
    assert cache.stats().unreachable == 1


async def test_fetch_reporting_an_error_means_unreachable() -> None:
    async def failing(url: str) -> RobotsResponse:
        return RobotsReply(None, error="timeout")

    policy = await RobotsCache(failing).get("http://example.com/")
    assert policy.status == "unreachable"


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (RobotsReply(200, b"User-agent: *\nDisallow: /a", error="incomplete-body"), "unreachable"),
        (RobotsReply(404, b"", error="incomplete-body"), "missing"),
        (RobotsReply(503, b"", error="read-timeout"), "unreachable"),
    ],
)
async def test_errors_after_the_status_line(reply: RobotsReply, status: str) -> None:
    async def answer(url: str) -> RobotsResponse:
        return reply

    assert (await RobotsCache(answer).get("http://example.com/")).status == status


async def test_redirect_chain_of_five_is_followed(
    site: Site, other_site: Site, cache: RobotsCache
) -> None:
    site.routes["/robots.txt"] = Route(301, location="/r1")
    site.routes["/r1"] = Route(302, location="r2")  # relative to /r1
    site.routes["/r2"] = Route(307, location=other_site.url("/x/r3"))
    other_site.routes["/x/r3"] = Route(308, location="../r4")
    other_site.routes["/r4"] = Route(303, location=site.url("/final.txt"))
    site.routes["/final.txt"] = Route(200, b"User-agent: *\nDisallow: /blocked\n")
    policy = await cache.get(site.url("/"))
    assert policy.status == "ok"
    # the rules apply to the original origin
    assert not policy.allowed(site.url("/blocked"))
    assert cache.known(site.url("/")) is policy
    assert cache.known(other_site.url("/")) is None
    assert cache.stats().requests == 6


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("\\moved\\robots.txt", "http://a.test/moved/robots.txt"),  # backslashes: slashes
        ("//B\u00dcCHER.test/robots.txt", "http://xn--bcher-kva.test/robots.txt"),  # IDNA
        ("/a b/robots.txt", "http://a.test/a%20b/robots.txt"),  # a space percent-encoded
        ("//a.test:80/r.txt", "http://a.test/r.txt"),  # the default port dropped
    ],
)
async def test_a_redirect_resolves_as_links_do(location: str, target: str) -> None:
    """The Location of a robots.txt redirect is resolved by WHATWG rules, as a page's links."""
    asked: list[str] = []

    async def fetch(url: str) -> RobotsResponse:
        asked.append(url)
        if url == "http://a.test/robots.txt":
            return RobotsReply(301, location=location)
        return RobotsReply(200, b"User-agent: *\nDisallow: /x\n")

    policy = await RobotsCache(fetch).get("http://a.test/")
    assert asked == ["http://a.test/robots.txt", target]
    assert policy.status == "ok" and not policy.allowed("http://a.test/x")


async def test_more_than_five_redirects_means_allow_all(site: Site, cache: RobotsCache) -> None:
    site.routes["/robots.txt"] = Route(301, location="/r1")
    for hop in range(1, 7):
        site.routes[f"/r{hop}"] = Route(301, location=f"/r{hop + 1}")
    site.routes["/r7"] = Route(200, b"User-agent: *\nDisallow: /\n")
    policy = await cache.get(site.url("/"))
    assert policy.status == "redirect-loop"
    assert policy.allowed(site.url("/anything"))
    assert site.hits["/r5"] == 1
    assert site.hits["/r6"] == 0


async def test_redirect_loop_means_allow_all(site: Site, cache: RobotsCache) -> None:
    site.routes["/robots.txt"] = Route(302, location="/a")
    site.routes["/a"] = Route(302, location="/robots.txt")
    policy = await cache.get(site.url("/"))
    assert policy.status == "redirect-loop"
    assert policy.allowed(site.url("/x"))
    assert sum(site.hits.values()) == 2


async def test_redirect_without_location_means_allow_all(site: Site, cache: RobotsCache) -> None:
    site.routes["/robots.txt"] = Route(302)
    assert (await cache.get(site.url("/"))).status == "missing"


async def test_concurrent_callers_share_one_fetch(site: Site, cache: RobotsCache) -> None:
    site.routes["/robots.txt"] = Route(200, b"User-agent: *\nDisallow: /x\n", delay=0.1)
    policies = await asyncio.gather(*(cache.get(site.url(f"/p{i}")) for i in range(10)))
    assert site.hits["/robots.txt"] == 1
    assert all(policy is policies[0] for policy in policies)
    stats = cache.stats()
    assert (stats.fetches, stats.coalesced, stats.requests) == (1, 9, 1)
    assert stats.in_flight == 0


async def test_cancelled_caller_does_not_cancel_the_shared_fetch(
    site: Site, cache: RobotsCache
) -> None:
    site.routes["/robots.txt"] = Route(200, b"User-agent: *\nDisallow: /x\n", delay=0.1)
    first = asyncio.create_task(cache.get(site.url("/")))
    second = asyncio.create_task(cache.get(site.url("/")))
    await asyncio.sleep(0.02)
    first.cancel()
    policy = await second
    assert first.cancelled()
    assert policy.status == "ok"
    assert site.hits["/robots.txt"] == 1


async def test_ttl_expiry_refetches(site: Site, cache: RobotsCache, clock: FakeClock) -> None:
    site.robots("User-agent: *\nDisallow: /old\n")
    first = await cache.get(site.url("/"))
    clock.now += DAY - 1
    assert cache.known(site.url("/a")) is first
    assert await cache.get(site.url("/a")) is first
    clock.now += 1
    assert cache.known(site.url("/a")) is None
    site.robots("User-agent: *\nDisallow: /new\n")
    second = await cache.get(site.url("/a"))
    assert second.allowed(site.url("/old"))
    assert not second.allowed(site.url("/new"))
    assert site.hits["/robots.txt"] == 2


async def test_missing_is_cached_for_the_full_ttl(
    site: Site, cache: RobotsCache, clock: FakeClock
) -> None:
    await cache.get(site.url("/"))
    clock.now += DAY / 2
    assert cache.known(site.url("/")) is not None
    assert site.hits["/robots.txt"] == 1


async def test_body_is_parsed_only_up_to_500_kib(site: Site, cache: RobotsCache) -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 98 + b"\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - len(head)) // len(filler) - 1)
    # a rule cut by the limit is dropped rather than read as a shorter prefix
    straddling = b"Disallow: /abcdef\n"
    body += b"#" * (MAX_ROBOTS_BYTES - len(body) - 15) + b"\n" + straddling
    body += b"Disallow: /late\n" + filler * 2000
    assert body[:MAX_ROBOTS_BYTES].endswith(b"\nDisallow: /abc")
    site.routes["/robots.txt"] = Route(200, body)
    policy = await cache.get(site.url("/"))
    assert not policy.allowed(site.url("/early"))
    assert policy.allowed(site.url("/abc"))
    assert policy.allowed(site.url("/late"))


async def test_large_rule_set_is_parsed(site: Site, cache: RobotsCache) -> None:
    rules = "".join(f"Disallow: /dir{i}/\n" for i in range(20_000))
    site.robots("User-agent: *\n" + rules)
    policy = await cache.get(site.url("/"))
    assert not policy.allowed(site.url("/dir19999/x"))
    assert policy.allowed(site.url("/dir20000/x"))


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /bom\n",
        b"User-agent: *\r\nDisallow: /bom\r\n",
        b"User-agent: *\nDisallow: /bom\n\xff\xfe\x00garbage\x00\nAllow: /\xc3(\n",
        b"User-agent: *\n<html>not robots</html>\nDisallow: /bom # comment\n",
    ],
)
async def test_bom_crlf_and_garbage_are_tolerated(
    site: Site, cache: RobotsCache, body: bytes
) -> None:
    site.routes["/robots.txt"] = Route(200, body)
    policy = await cache.get(site.url("/"))
    assert policy.status == "ok"
    assert not policy.allowed(site.url("/bom"))
    assert policy.allowed(site.url("/other"))


def test_binary_garbage_parses_to_allow_all() -> None:
    policy = RobotsPolicy.parse(bytes(range(256)) * 100)
    assert policy.allowed("http://example.com/x")


async def test_stats_count_checks_and_hosts(site: Site, cache: RobotsCache) -> None:
    site.robots("User-agent: *\nDisallow: /no\n")
    assert await cache.allowed(site.url("/yes"))
    assert not await cache.allowed(site.url("/no"))
    policy = cache.known(site.url("/"))
    assert policy is not None
    assert policy.allowed(site.url("/yes/2"))
    stats = cache.stats()
    assert (stats.allowed, stats.disallowed) == (2, 1)
    assert (stats.hosts_cached, stats.fetches, stats.unreachable) == (1, 1, 0)
    with pytest.raises(AttributeError):
        stats.allowed = 0  # type: ignore[misc]


async def test_oldest_hosts_are_evicted(
    site: Site, other_site: Site, fetch: Callable[[str], Awaitable[RobotsResponse]]
) -> None:
    cache = RobotsCache(fetch, max_hosts=1)
    await cache.get(site.url("/"))
    await cache.get(other_site.url("/"))
    assert cache.known(site.url("/")) is None
    assert cache.known(other_site.url("/")) is not None
    assert cache.stats().hosts_cached == 1


async def test_close_cancels_fetches_in_flight(site: Site, cache: RobotsCache) -> None:
    site.routes["/robots.txt"] = Route(200, b"", delay=5)
    waiter = asyncio.create_task(cache.get(site.url("/")))
    await asyncio.sleep(0.05)
    await cache.aclose()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert cache.stats().in_flight == 0


def test_policies_without_rules() -> None:
    assert RobotsPolicy.allow_all().allowed("http://example.com/x")
    assert not RobotsPolicy.disallow_all().allowed("http://example.com/x")


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://example.com/a?b#c", "http://example.com"),
        ("HTTP://Example.COM:80/x", "http://example.com"),
        ("https://example.com:443", "https://example.com"),
        ("https://example.com:8443/x", "https://example.com:8443"),
        ("http://user:pw@example.com/x", "http://example.com"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("http://example.com?q", "http://example.com"),
    ],
)
def test_origin_key(url: str, origin: str) -> None:
    assert robots_origin(url) == origin


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "example.com/x", "http://", "http://host:99999/", "http://[::1/"]
)
def test_origin_key_rejects_non_http_urls(url: str) -> None:
    with pytest.raises(ValueError):
        robots_origin(url)


async def test_redirect_the_crawl_may_not_follow_is_not_requested(
    site: Site, other_site: Site, fetch: Callable[[str], Awaitable[RobotsResponse]]
) -> None:
    site.routes["/robots.txt"] = Route(301, location=other_site.url("/robots.txt"))
    other_site.robots("User-agent: *\nDisallow: /\n")
    refused: list[str] = []

    def may_follow(url: str) -> bool:
        if url.startswith(site.origin + "/"):
            return True
        refused.append(url)
        return False

    policy = await RobotsCache(fetch, may_follow=may_follow).get(site.url("/"))
    assert policy.status == "redirect-offsite"
    assert policy.allowed(site.url("/anything"))
    assert refused == [other_site.url("/robots.txt")]
    assert other_site.hits == {}
    # the contrast: a cache that may follow it gets the other site's rules
    followed = await RobotsCache(fetch, may_follow=lambda url: True).get(site.url("/"))
    assert followed.status == "ok" and not followed.allowed(site.url("/anything"))
    assert other_site.hits["/robots.txt"] == 1


async def test_a_body_the_parser_fails_on_means_invalid_and_allow_all(
    site: Site, cache: RobotsCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Protego.parse`` is made to raise: no real input that crashes it is known."""

    def crash(text: str) -> Protego:
        raise RecursionError("parser bug")

    monkeypatch.setattr(Protego, "parse", crash)
    site.robots("User-agent: *\nDisallow: /\n")
    policy = await cache.get(site.url("/"))
    assert policy.status == "invalid"
    assert policy.allowed(site.url("/private"))


async def test_known_keeps_the_recently_used_origins() -> None:
    """LRU by use: with room for three, using A before D is loaded evicts B, not A."""

    async def missing(url: str) -> RobotsResponse:
        return RobotsReply(404)

    cache = RobotsCache(missing, max_hosts=3)
    for name in "abc":
        await cache.get(f"http://{name}.test/")
    assert cache.known("http://a.test/page") is not None  # A used
    await cache.get("http://d.test/")
    assert cache.known("http://b.test/") is None
    for name in "acd":
        assert cache.known(f"http://{name}.test/") is not None, name
    assert cache.stats().hosts_cached == 3


async def test_an_origin_loaded_again_counts_as_the_newest(clock: FakeClock) -> None:
    """Expired and loaded again, A goes after B and C: loading D evicts B."""

    async def missing(url: str) -> RobotsResponse:
        return RobotsReply(404)

    cache = RobotsCache(missing, clock=clock, ttl=10.0, max_hosts=3)
    await cache.get("http://a.test/")
    clock.now += 5
    for name in "bc":
        await cache.get(f"http://{name}.test/")
    clock.now += 5
    await cache.get("http://a.test/")  # expired: loaded again
    await cache.get("http://d.test/")
    assert cache.known("http://b.test/") is None
    for name in "acd":
        assert cache.known(f"http://{name}.test/") is not None, name


async def test_a_host_the_address_guard_blocks_is_allowed_and_soon_asked_again(
    clock: FakeClock,
) -> None:
    """Every page fetch of such a host is refused the same way and ends as its own record;
    disallowing would keep its URLs waiting for robots.txt retries."""
    answers = {"http://blocked.test/robots.txt": RobotsReply(None, error="blocked-address")}
    answers["http://redirect.test/robots.txt"] = RobotsReply(
        301, location="http://blocked.test/robots.txt"
    )

    async def fetch(url: str) -> RobotsResponse:
        return answers[url]

    cache = RobotsCache(fetch, clock=clock, retry_interval=60.0)
    policy = await cache.get("http://blocked.test/")
    assert policy.status == "blocked"
    assert policy.allowed("http://blocked.test/page")
    clock.now += 61
    assert cache.known("http://blocked.test/") is None
    # the host asked did answer; only the place it sends us to is blocked
    assert (await cache.get("http://redirect.test/")).status == "unreachable"


def test_a_sitemap_line_with_credentials_is_dropped() -> None:
    """Credentials are the user's to give: a site naming a sitemap with a user name (to have
    the crawler send it, or keep it as its own) gets it neither fetched nor kept."""
    body = (
        b"User-agent: *\nDisallow: /x\n"
        b"Sitemap: http://u5:pw@h.test/a.xml\nSitemap: http:\\\\u:pw@h.test\\b.xml\n"
        b"Sitemap: https://h.test/c.xml?by=a@b\nSitemap: http://h.test/d@e.xml\n"
    )
    assert RobotsPolicy.parse(body).sitemaps == (
        "https://h.test/c.xml?by=a@b",
        "http://h.test/d@e.xml",
    )


@pytest.mark.parametrize("newline", [b"\r", b"\n", b"\r\n", b"\x0c"])
def test_a_file_cut_at_the_limit_keeps_its_rules_whatever_its_line_breaks(newline: bytes) -> None:
    """A file over `MAX_ROBOTS_BYTES` is cut at its last line break: one of CR alone lost
    every rule (cut at the last LF, which it has none of), and allowed everything."""
    lines = [b"User-agent: *", b"Disallow: /private", *[b"# padding comment line"] * 30_000]
    body = newline.join(lines) + newline
    assert len(body) > MAX_ROBOTS_BYTES
    assert not RobotsPolicy.parse(body).allowed("http://h.test/private/x")


class _Answer(msgspec.Struct, frozen=True):
    """A robots.txt answer as the crawl's fetcher gives it: its ``Retry-After`` too."""

    status: int | None
    body: bytes = b""
    location: str | None = None
    error: str | None = None
    truncated: bool = False
    retry_after: float | None = None


@pytest.mark.parametrize(
    ("status", "retry_after", "left_alone"),
    [(503, 3600.0, 3600.0), (429, 10.0, 60.0), (503, 1e9, MAX_ROBOTS_WAIT), (500, None, 60.0)],
)
async def test_an_unreachable_robots_txt_is_asked_again_when_its_site_says(
    clock: FakeClock, status: int, retry_after: float | None, left_alone: float
) -> None:
    """A 429 or 503 saying ``Retry-After: 3600`` was asked again every ``--robots-retry``
    (30 s): it is left alone as long as it asks (`MAX_ROBOTS_WAIT` at most), never less than
    the retry interval."""
    asked: list[str] = []

    async def fetch(url: str) -> RobotsResponse:
        asked.append(url)
        return _Answer(status, retry_after=retry_after)

    cache = RobotsCache(fetch, clock=clock, retry_interval=60.0)
    policy = await cache.get("http://a.test/page")
    assert policy.status == "unreachable" and not policy.allowed("http://a.test/page")
    clock.now += left_alone - 1
    assert cache.known("http://a.test/other") is policy
    clock.now += 2
    assert cache.known("http://a.test/other") is None
    assert asked == ["http://a.test/robots.txt"]

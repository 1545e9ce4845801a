"""The walk over sitemaps against real HTTP servers on loopback, fetched with aiohttp."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from tests.discover.bounded import bounded
from tests.local_app import serve

from gossamer.discover import (
    Body,
    Entry,
    FileResult,
    Flag,
    Format,
    Limits,
    Reply,
    SitemapFetch,
    SitemapScope,
    read_sitemaps,
)


@dataclass
class Site:
    """A local site: path -> (status, headers, body); every request counted."""

    pages: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    asked: Counter[str] = field(default_factory=Counter)
    port: int = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def add(self, path: str, body: bytes, status: int = 200, **headers: str) -> None:
        self.pages[path] = (status, headers, body)

    async def handle(self, request: web.Request) -> web.Response:
        self.asked[request.path] += 1
        status, headers, body = self.pages.get(request.path, (404, {}, b"not here"))
        return web.Response(status=status, headers=headers, body=body)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    async with serve(site.handle) as port:
        site.port = port
        yield site


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as session:
        yield session


def aiohttp_fetch(session: aiohttp.ClientSession) -> SitemapFetch:
    """The simplest fetch: a 2xx body streamed in chunks, anything else read whole."""

    async def fetch(url: str) -> Reply:
        try:
            response = await session.get(url, allow_redirects=False)
        except aiohttp.ClientError:
            return None, {}, b""
        if not 200 <= response.status < 300:
            async with response:
                return response.status, response.headers, await response.read()

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.content.iter_chunked(65536):
                    yield chunk
            finally:
                response.close()

        body: Body = chunks()
        return response.status, response.headers, body

    return fetch


async def walk(*args: object, **kwargs: object) -> tuple[list[Entry], dict[str, FileResult]]:
    entries: list[Entry] = []
    results: dict[str, FileResult] = {}
    async for item in read_sitemaps(*args, **kwargs):  # type: ignore[arg-type]
        if isinstance(item, FileResult):
            assert item.url not in results  # each file read once
            results[item.url] = item
        else:
            entries.append(item)
    return entries, results


def urlset(*urls: str) -> bytes:
    rows = "".join(f"<url><loc>{url}</loc><lastmod>2024-05-06</lastmod></url>" for url in urls)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'.encode()


def index(*urls: str) -> bytes:
    rows = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return f"<sitemapindex>{rows}</sitemapindex>".encode()


async def test_an_index_named_by_robots_txt_is_walked_each_file_once(
    site: Site, session: aiohttp.ClientSession
) -> None:
    u = site.url
    site.add(
        "/sitemap_index.xml",
        index(
            u("/sitemaps/posts.xml.gz"),
            u("/sitemaps/pages.txt"),
            u("/feeds/rss"),
            u("/feeds/atom"),
            u("/sitemaps/missing.xml"),
            u("/sitemap_index.xml"),  # itself: not read again
            u("/sitemaps/pages.txt"),  # twice: read once
            "http://elsewhere.test/sitemap.xml",  # another site: dropped, never asked
        ),
    )
    posts = urlset(u("/2024/p1"), u("/2024/p2"), "http://elsewhere.test/p")
    site.add(
        "/sitemaps/posts.xml.gz", gzip.compress(posts), **{"Content-Type": "application/x-gzip"}
    )
    site.add("/sitemaps/pages.txt", f"{u('/about')}\n{u('/contact')}\n".encode())
    rss = f"<rss><channel><item><link>{u('/news/1')}</link></item></channel></rss>"
    site.add("/feeds/rss", rss.encode())
    atom = f'<feed><entry><link href="{u("/news/2")}"/></entry></feed>'
    site.add("/feeds/atom", atom.encode())
    scope = SitemapScope({site.origin: [u("/sitemap_index.xml")]})

    entries, results = await walk([u("/sitemap_index.xml")], aiohttp_fetch(session), scope=scope)

    assert sorted(e.url for e in entries) == sorted(
        u(p) for p in ("/2024/p1", "/2024/p2", "/about", "/contact", "/news/1", "/news/2")
    )
    assert {e.source for e in entries if e.url == u("/2024/p1")} == {u("/sitemaps/posts.xml.gz")}
    assert next(e for e in entries if e.url == u("/2024/p1")).lastmod == 1714953600.0
    assert site.asked == Counter(
        {p: 1 for p in ("/sitemap_index.xml", "/sitemaps/posts.xml.gz", "/sitemaps/pages.txt")}
        | {p: 1 for p in ("/feeds/rss", "/feeds/atom", "/sitemaps/missing.xml")}
    )
    shape = {
        url.removeprefix(site.origin): (r.status, r.format, r.count, r.dropped, r.flags, r.depth)
        for url, r in results.items()
    }
    assert shape == {
        "/sitemap_index.xml": (200, Format.INDEX, 7, 1, (Flag.OUT_OF_SCOPE,), 0),
        "/sitemaps/posts.xml.gz": (200, Format.URLSET, 2, 1, (Flag.OUT_OF_SCOPE,), 1),
        "/sitemaps/pages.txt": (200, Format.TEXT, 2, 0, (), 1),
        "/feeds/rss": (200, Format.RSS, 1, 0, (), 1),
        "/feeds/atom": (200, Format.ATOM, 1, 0, (), 1),
        "/sitemaps/missing.xml": (404, Format.UNKNOWN, 0, 0, (Flag.HTTP_ERROR,), 1),
    }


async def test_without_robots_txt_a_sitemap_keeps_to_its_directory(
    site: Site, session: aiohttp.ClientSession
) -> None:
    u = site.url
    site.add("/sitemaps/posts.xml", urlset(u("/sitemaps/a"), u("/2024/p1"), u("/2024/p2")))
    entries, results = await walk([u("/sitemaps/posts.xml")], aiohttp_fetch(session))
    assert [e.url for e in entries] == [u("/sitemaps/a")]
    result = results[u("/sitemaps/posts.xml")]
    assert (result.count, result.dropped, result.flags) == (1, 2, (Flag.OUT_OF_SCOPE,))


async def test_cross_site_entries_need_the_listed_sites_robots_txt(
    site: Site, session: aiohttp.ClientSession
) -> None:
    other = Site()
    async with serve(other.handle) as port:
        other.port = port
        sitemap = site.url("/sitemap.xml")
        site.add("/sitemap.xml", urlset(site.url("/a"), other.url("/b")))
        fetch = aiohttp_fetch(session)
        entries, _ = await walk([sitemap], fetch)
        assert [e.url for e in entries] == [site.url("/a")]
        site.asked.clear()
        entries, _ = await walk([sitemap], fetch, scope=SitemapScope({other.origin: [sitemap]}))
        assert [e.url for e in entries] == [site.url("/a"), other.url("/b")]
        assert other.asked == Counter()  # entries are handed on, not fetched


async def test_indexes_nest_only_to_the_depth_limit(
    site: Site, session: aiohttp.ClientSession
) -> None:
    for level in range(6):
        site.add(
            f"/i{level}.xml", index(site.url(f"/i{level + 1}.xml"), site.url(f"/u{level}.xml"))
        )
        site.add(f"/u{level}.xml", urlset(site.url(f"/page{level}")))
    entries, results = await walk(
        [site.url("/i0.xml")], aiohttp_fetch(session), limits=Limits(max_depth=2)
    )
    assert sorted(e.url for e in entries) == [site.url(f"/page{n}") for n in range(2)]
    assert sorted(site.asked) == ["/i0.xml", "/i1.xml", "/i2.xml", "/u0.xml", "/u1.xml"]
    assert results[site.url("/i2.xml")].flags == (Flag.DEPTH,)
    assert results[site.url("/i2.xml")].depth == 2


async def test_the_walk_fetches_at_most_max_files(
    site: Site, session: aiohttp.ClientSession
) -> None:
    site.add("/index.xml", index(*(site.url(f"/s{n}.xml") for n in range(20))))
    for n in range(20):
        site.add(f"/s{n}.xml", urlset(site.url(f"/p{n}")))
    entries, results = await walk(
        [site.url("/index.xml")], aiohttp_fetch(session), limits=Limits(max_files=4)
    )
    assert sum(site.asked.values()) == 4
    assert len(entries) == 3
    assert Flag.TOO_MANY_FILES in results[site.url("/index.xml")].flags


async def test_redirects_are_followed_a_bounded_number_of_times(
    site: Site, session: aiohttp.ClientSession
) -> None:
    site.add("/old.xml", b"", status=301, Location="/new.xml")
    site.add("/new.xml", urlset(site.url("/p")))
    for n in range(10):
        site.add(f"/loop{n}.xml", b"", status=302, Location=f"/loop{n + 1}.xml")
    fetch = aiohttp_fetch(session)
    entries, results = await walk([site.url("/old.xml")], fetch)
    assert [e.url for e in entries] == [site.url("/p")]
    assert (results[site.url("/old.xml")].status, results[site.url("/old.xml")].flags) == (301, ())
    site.add("/dir/old.xml", b"", status=308, Location=site.url("/moved/new.xml"))
    site.add("/moved/new.xml", urlset(site.url("/moved/x"), site.url("/p")))
    entries, _ = await walk([site.url("/dir/old.xml")], fetch)
    assert [e.url for e in entries] == [site.url("/moved/x")]  # the target's own directory
    scope = SitemapScope({site.origin: [site.url("/dir/old.xml")]})
    entries, _ = await walk([site.url("/dir/old.xml")], fetch, scope=scope)
    assert [e.url for e in entries] == [
        site.url("/moved/x"),
        site.url("/p"),
    ]  # what robots.txt named
    entries, results = await walk([site.url("/loop0.xml")], fetch)
    assert len(results) == 6 and entries == []
    assert results[site.url("/loop5.xml")].flags == (Flag.HTTP_ERROR,)


async def test_no_file_is_fetched_that_may_fetch_refuses(
    site: Site, session: aiohttp.ClientSession
) -> None:
    """A child and a redirect's target ``may_fetch`` refuses (the crawl's scope) are not
    fetched: the child is dropped, the redirect not followed; each URL is asked once."""
    site.add("/index.xml", index(site.url("/kept.xml"), site.url("/refused.xml")))
    site.add("/kept.xml", urlset(site.url("/p")))
    site.add("/refused.xml", urlset(site.url("/q")))
    site.add("/moved.xml", b"", status=302, Location="/refused.xml")
    asked: list[str] = []

    def may_fetch(url: str) -> bool:
        asked.append(url)
        return not url.endswith("/refused.xml")

    start = [site.url("/index.xml"), site.url("/moved.xml")]
    entries, results = await walk(start, aiohttp_fetch(session), may_fetch=may_fetch)
    assert [e.url for e in entries] == [site.url("/p")]
    assert set(results) == {site.url("/index.xml"), site.url("/kept.xml"), site.url("/moved.xml")}
    assert results[site.url("/index.xml")].dropped == 1
    moved = results[site.url("/moved.xml")]
    assert (moved.status, moved.flags) == (302, (Flag.HTTP_ERROR,))
    assert site.asked["/refused.xml"] == 0
    assert asked.count(site.url("/refused.xml")) == 1


async def test_no_answer_is_a_flagged_result(session: aiohttp.ClientSession) -> None:
    url = "http://127.0.0.1:9/sitemap.xml"  # the discard port: nothing listens
    entries, results = await walk([url, "not a url"], aiohttp_fetch(session))
    assert entries == []
    assert results == {url: FileResult(url, None, Format.UNKNOWN, 0, flags=(Flag.HTTP_ERROR,))}


async def test_an_endless_sitemap_stops_at_the_limit_and_its_response_is_closed(
    session: aiohttp.ClientSession,
) -> None:
    stopped = asyncio.Event()
    written = 0

    async def endless(request: web.Request) -> web.StreamResponse:
        nonlocal written
        response = web.StreamResponse()
        await response.prepare(request)
        page = f"<url><loc>http://{request.host}/p%d</loc></url>".encode()
        block = b"".join(page % n for n in range(1000))
        try:
            await response.write(b"<urlset>")
            for _ in range(10_000):  # ten million entries, if nobody stopped reading
                await response.write(block)
                written += len(block)
        except (ConnectionError, RuntimeError):
            pass
        finally:
            stopped.set()
        return response

    async with serve(endless) as port:
        # both ends in this process: the server's writes and the entries kept count too
        with bounded(seconds=20.0, mib=32):
            entries, results = await walk(
                [f"http://127.0.0.1:{port}/sitemap.xml"],
                aiohttp_fetch(session),
                limits=Limits(max_urls=5000),  # the reader's own tests take the full 50,000
            )
            await asyncio.wait_for(stopped.wait(), 10)
    assert len(entries) == 5000
    result = results[f"http://127.0.0.1:{port}/sitemap.xml"]
    assert (result.count, result.flags) == (5000, (Flag.TOO_MANY_URLS,))
    assert written < 40 * 1024 * 1024  # the server was cut off, not read to its end


async def test_a_fetch_may_return_the_body_whole(site: Site) -> None:
    async def fetch(url: str) -> Reply:
        headers: Mapping[str, str] = {}
        return 200, headers, gzip.compress(urlset("http://h/x/1", "http://h/x/2"))

    entries, results = await walk(["http://h/x/sitemap.xml"], fetch)
    assert [e.url for e in entries] == ["http://h/x/1", "http://h/x/2"]
    assert results["http://h/x/sitemap.xml"].format is Format.URLSET

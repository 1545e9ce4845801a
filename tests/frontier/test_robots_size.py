"""A robots.txt larger than RFC 9309's 500 KiB, fetched by the crawler's own fetcher from a
real server: read up to 500 KiB whatever the page caps, cut there, its rules before the cut
kept and those after it ignored."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from tests.fetch.test_http import serve_app

from gossamer.fetch import FetchConfig, Fetcher
from gossamer.fetch.decoding import ROBOTS_TXT_BYTES
from gossamer.frontier.robots import MAX_ROBOTS_BYTES, RobotsCache

TWO_MB = 2 * 1024 * 1024


def _big_robots() -> bytes:
    """2 MB of rules: ``/early`` and ``/before-cut`` inside the first 500 KiB, ``/late``
    after it."""
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"Disallow: /filler-" + b"x" * 80 + b"\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - len(head) - 100) // len(filler))
    body += b"Disallow: /before-cut\n"
    assert len(body) < MAX_ROBOTS_BYTES
    body += filler * 2  # past the cut
    assert len(body) > MAX_ROBOTS_BYTES
    body += b"Disallow: /late\n"
    return body + filler * ((TWO_MB - len(body)) // len(filler))


@pytest.fixture
async def robots_site() -> AsyncIterator[tuple[str, list[int]]]:
    body = _big_robots()
    sent: list[int] = []

    async def robots(request: web.Request) -> web.StreamResponse:
        if request.query.get("gzip"):
            return web.Response(body=gzip.compress(body), headers={"Content-Encoding": "gzip"})
        response = web.StreamResponse()
        response.content_length = len(body)
        await response.prepare(request)
        for i in range(0, len(body), 64 * 1024):
            await response.write(body[i : i + 64 * 1024])
            sent.append(i + 64 * 1024)
        return response

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/copy/robots.txt", robots)
    async with serve_app(app) as base:
        yield base, sent


@pytest.mark.parametrize("max_body_bytes", [64 * 1024, 10 * 1024 * 1024])
async def test_robots_txt_over_500_kib_is_cut_there_whatever_the_page_cap(
    robots_site: tuple[str, list[int]], max_body_bytes: int
) -> None:
    base, _ = robots_site
    async with Fetcher(FetchConfig(max_body_bytes=max_body_bytes)) as fetcher:
        result = await fetcher.fetch(base + "/robots.txt")
        cache = RobotsCache(fetcher.fetch)
        policy = await cache.get(base + "/")
        await cache.aclose()
    assert (result.status, result.error, result.truncated) == (200, None, True)
    assert len(result.body) == ROBOTS_TXT_BYTES == MAX_ROBOTS_BYTES
    assert result.wire_bytes < TWO_MB  # the rest of the file was never read
    assert policy.status == "ok"
    assert not policy.allowed(base + "/early")
    assert not policy.allowed(base + "/before-cut")
    assert policy.allowed(base + "/late")
    assert policy.allowed(base + "/other")


async def test_compressed_robots_txt_over_500_kib_is_cut_not_refused(
    robots_site: tuple[str, list[int]],
) -> None:
    base, _ = robots_site
    async with Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch(base + "/robots.txt?gzip=1")

        async def fetch_gzip(url: str) -> object:
            return await fetcher.fetch(url + "?gzip=1")

        cache = RobotsCache(fetch_gzip)  # type: ignore[arg-type]
        policy = await cache.get(base + "/")
        await cache.aclose()
    # 2 MB of repeated rules compress past the bomb ratio: the cap stops them all the same
    assert (result.error, result.truncated) == ("decompression-bomb", True)
    assert len(result.body) == MAX_ROBOTS_BYTES
    assert policy.status == "ok"
    assert not policy.allowed(base + "/before-cut")
    assert policy.allowed(base + "/late")


async def test_a_page_named_otherwise_keeps_the_page_cap(
    robots_site: tuple[str, list[int]],
) -> None:
    base, _ = robots_site
    async with Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch(base + "/copy/robots.txt")
    assert (result.error, result.truncated) == (None, False)
    assert len(result.body) == len(_big_robots())

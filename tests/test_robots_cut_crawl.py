"""A robots.txt the fetcher cuts at its limit, in a whole crawl of a real server on loopback:
the line the cut splits is dropped, never read as a shorter rule (``Disallow: /private`` cut
to ``Disallow: /`` would block the whole site)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl

from gossamer.fetch.decoding import ROBOTS_TXT_BYTES

pytestmark = pytest.mark.timeout(60)

HEAD = "User-agent: *\nDisallow: /before\n"
CUT_AT = "Disallow: /"  # what the fetcher's limit leaves of the last line


def _robots() -> bytes:
    filler = "#" + "p" * 98 + "\n"
    text = HEAD + filler * ((ROBOTS_TXT_BYTES - len(HEAD)) // len(filler) - 1)
    text += "#" * (ROBOTS_TXT_BYTES - len(text) - len(CUT_AT) - 1) + "\n"
    text += CUT_AT + "private-after-cut\n"
    assert text.encode()[:ROBOTS_TXT_BYTES].endswith(b"\n" + CUT_AT.encode())
    return text.encode()


ROBOTS = _robots()


async def handle(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(body=ROBOTS, content_type="text/plain")
    links = '<a href="/free">free</a><a href="/before">before</a>'
    return web.Response(body=f"<html><p>{request.path}</p>{links}</html>", content_type="text/html")


async def test_a_line_cut_by_the_fetchers_limit_is_dropped(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, robots=True, digests="off")
    assert records["/"]["status"] == 200, records["/"]
    assert records["/free"]["status"] == 200
    assert records.get("/before", {}).get("status") is None  # still disallowed

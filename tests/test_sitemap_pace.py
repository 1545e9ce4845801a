"""A host's sitemaps share its pace with its pages, in whole crawls of real loopback servers:
a sitemap dripped until the total timeout leaves the host's pages at their normal pace once
it ends (its time is no measure of the host's latency), a page with an over-long header is
recorded at once without holding the host, and the files of a sitemap index take the host's
slot in turn with its pages (the seed first), not all before them."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

TOTAL_TIMEOUT = 2.0
"""The crawl's ``total_timeout``: the dripped sitemap's read ends there."""
CHAIN = 8
"""Pages /chain1 .. /chainN, each linking the next: found one at a time, so their pace shows."""
_XML = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'


@dataclass
class Site:
    """robots.txt names ``sitemaps``; ``/`` links /link0../link4, /link0 answers a 20 KB
    header, the others link /chain1, and each /chainK the next. ``/drip.xml`` sends its head
    at once, then a byte every 0.1 s for ever (the crawl's total timeout cuts it)."""

    sitemaps: tuple[str, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    log: list[tuple[float, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.log.append((time.monotonic(), path))
        if path == "/robots.txt":
            base = f"http://{request.host}"
            lines = "".join(f"Sitemap: {base}{p}\n" for p in self.sitemaps)
            return web.Response(text=f"User-agent: *\nDisallow: /secret\n{lines}")
        if path == "/drip.xml":
            return await _drip(request)
        if path in self.files:
            return web.Response(body=self.files[path], content_type="application/xml")
        if path == "/link0":
            return web.Response(text="x", headers={"X-Big": "a" * 20_000})
        if path == "/":
            links = "".join(f'<a href="/link{i}">l</a>' for i in range(5))
        elif path.startswith("/chain") and int(path[6:]) >= CHAIN:
            links = ""
        else:
            step = int(path[6:]) + 1 if path.startswith("/chain") else 1
            links = f'<a href="/chain{step}">n</a>'
        return web.Response(
            text=f"<html><body>{path} {links}</body></html>", content_type="text/html"
        )

    def requests(self, prefix: str = "") -> list[tuple[float, str]]:
        return [(t, p) for t, p in self.log if p.startswith(prefix)]


async def _drip(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    response.content_type = "application/xml"
    await response.prepare(request)
    body = _XML.encode() + b" " * 1000
    for i in range(len(body)):  # bounded: the client gives up after TOTAL_TIMEOUT
        await response.write(body[i : i + 1])
        await asyncio.sleep(0.1)
    return response


async def _crawl(site: Site, out: Path, **flags: Any) -> None:
    async with serve(site.handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "quiet": True,
            "total_timeout": TOTAL_TIMEOUT,
            "read_timeout": 1.0,
            "retry_backoff": 0.05,
            "adaptive_latency": 0.2,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings | flags, env={})), 45)


def _records(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}


async def test_a_dripped_sitemap_leaves_its_hosts_pages_at_their_pace(tmp_path: Path) -> None:
    site = Site(sitemaps=("/drip.xml",))
    out = tmp_path / "out"
    await _crawl(site, out, delay=0.05)
    records = _records(out)
    pages = {"/", *(f"/link{i}" for i in range(5)), *(f"/chain{k}" for k in range(1, CHAIN + 1))}
    assert pages <= set(records)
    assert records["/drip.xml"]["error"] == "timeout"
    # One request at a time (a delay): the pages wait while the sitemap drips (it has the
    # host's connection), then go on at the delay. The sitemap's two seconds are no measure
    # of the host's latency: taken as one, they slowed it to one page every 0.6 s.
    times = sorted(t for t, p in site.log if p in pages)
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    assert gaps[-1] < TOTAL_TIMEOUT + 0.5  # the drip's turn
    assert gaps[-2] < 0.4, gaps
    assert times[-1] - site.requests("/drip.xml")[0][0] < TOTAL_TIMEOUT + 1.5


async def test_an_over_long_header_is_recorded_at_once(tmp_path: Path) -> None:
    site = Site()
    out = tmp_path / "out"
    await _crawl(site, out, max_depth=1)
    records = _records(out)
    # refused unread (aiohttp's 8,190 bytes a line), asked for once, no failure of the host:
    # its other pages go at the host's pace (per_host, no delay), not slowed down for it
    assert (records["/link0"]["error"], records["/link0"]["attempts"]) == ("headers-too-long", 1)
    assert [p for _, p in site.requests("/link0")] == ["/link0"]
    assert all(records[f"/link{i}"]["status"] == 200 for i in range(1, 5))


def _urlset(*urls: str) -> bytes:
    return (_XML + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>").encode()


async def test_sitemap_files_take_the_hosts_slot_in_turn_with_its_pages(tmp_path: Path) -> None:
    children = [f"/c{i}.xml" for i in range(6)]
    site = Site(sitemaps=("/index.xml",))
    out = tmp_path / "out"

    async def handle(request: web.Request) -> web.StreamResponse:
        if not site.files:  # the port is known once the first request comes
            base = f"http://{request.host}"
            body = "".join(f"<sitemap><loc>{base}{c}</loc></sitemap>" for c in children)
            site.files["/index.xml"] = (
                '<?xml version="1.0"?><sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'
            ).encode()
            for i, child in enumerate(children):
                site.files[child] = _urlset(f"{base}/s{i}")
        return await site.handle(request)

    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "quiet": True,
            "delay": 0.05,
            "max_depth": 1,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)
    paths = [p for _, p in site.log]
    maps = [p for p in paths if p.endswith(".xml")]
    assert sorted(maps) == sorted(["/index.xml", *children])
    assert paths[:2] == ["/robots.txt", "/"]  # the seed goes before the host's sitemaps
    # between two files of the sitemap, a page of the host whenever one was waiting: here
    # always (the home page's five links, then the sitemaps' own pages)
    runs = [
        len(list(g))
        for is_map, g in itertools.groupby(paths, lambda p: p.endswith(".xml"))
        if is_map
    ]
    assert max(runs) == 1, paths

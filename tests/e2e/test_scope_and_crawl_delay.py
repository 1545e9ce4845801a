"""`gossamer crawl` against small loopback servers: another port of a seed's host is out of
scope (links and redirects alike) unless allowed, and a huge Crawl-delay is capped."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from tests.local_app import serve

from .harness import load_records

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

JITTER = 0.015


Page = Callable[[], web.StreamResponse]


class Server:
    """A loopback server answering from ``pages`` (path -> response maker: a response is sent
    once only); it logs each request's path and arrival time."""

    def __init__(self, pages: dict[str, Page]) -> None:
        self.pages = pages
        self.log: list[tuple[str, float]] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.log.append((request.path, asyncio.get_running_loop().time()))
        page = self.pages.get(request.path)
        return web.Response(status=404) if page is None else page()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[Server]:
    async with serve(server.handle) as port:
        server.port = port
        yield server


def html(*links: str) -> Page:
    anchors = "".join(f'<a href="{link}">x</a>' for link in links)
    body = f"<html><body>{anchors}</body></html>"
    return lambda: web.Response(text=body, content_type="text/html")


async def crawl(tmp_path: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gossamer.cli",
        "crawl",
        *args,
        "--out",
        str(tmp_path / "out"),
        "--quiet",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_another_port_is_out_of_scope_unless_allowed(tmp_path: Path) -> None:
    """A link and a redirect to the seed's host on another port (a Redis, say) are not
    followed; with --allow-port they are."""
    other = Server({"/link": html(), "/redirected": html()})
    async with serving(other):
        seed = Server({})
        seed.pages["/"] = html(other.url("/link"), "/go")
        location = {"Location": other.url("/redirected")}
        seed.pages["/go"] = lambda: web.Response(status=302, headers=location)
        async with serving(seed):
            code, _ = await crawl(tmp_path, seed.url("/"), "--no-robots")
            assert code == 0
            assert other.log == []
            records = {r["url"]: r for r in load_records(tmp_path)}
            assert set(records) == {seed.url("/"), seed.url("/go")}
            assert records[seed.url("/go")]["redirect_to"] == other.url("/redirected")

            allowed = ["--allow-port", str(other.port), "--overwrite"]
            code, _ = await crawl(tmp_path, seed.url("/"), "--no-robots", *allowed)
            assert code == 0
            assert sorted(path for path, _ in other.log) == ["/link", "/redirected"]


async def test_a_day_long_crawl_delay_is_capped(tmp_path: Path) -> None:
    server = Server(
        {
            "/robots.txt": lambda: web.Response(text="User-agent: *\nCrawl-delay: 86400\n"),
            "/": html("/a", "/b"),
            "/a": html("/b"),
            "/b": html("/a"),
        }
    )
    async with serving(server):
        code, err = await crawl(tmp_path, server.url("/"), "--max-crawl-delay", "0.2")
    assert code == 0
    records = load_records(tmp_path)
    assert sorted(r["url"] for r in records if r["status"] == 200) == [
        server.url(p) for p in ("/", "/a", "/b")
    ]
    starts = [when for path, when in server.log if path != "/robots.txt"]
    assert len(starts) == 3
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.2 - JITTER
    assert err.count("Crawl-delay of 86400s; fetching it every 0.2s") == 1

"""A host's sitemaps keep its one pace over a cluster job by URL: two `gossamer cluster worker`
subprocesses share one host, whose robots.txt names a sitemap index of many files; one worker
reads them while both fetch the host's pages, and the server's log shows every request to the
host, sitemap or page, spaced by the delay. Real redis-server, a real site on loopback."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest
from aiohttp import web
from tests.cluster.harness import FAST, cluster_wait, run, until_waiting, worker_args, worker_logs
from tests.local_app import serve
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

DELAY = 0.2
FILES = 8
_XML = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


class Site:
    """``/`` links /p0../p7; robots.txt names /index.xml of FILES files, each listing two
    pages of its own. Every request's arrival is logged."""

    def __init__(self) -> None:
        self.log: list[tuple[float, str]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path, base = request.path, f"http://{request.host}"
        self.log.append((time.monotonic(), path))
        return sitemap_site(path, base, files=FILES, links=8, robots=f"Sitemap: {base}/index.xml\n")


def sitemap_site(path: str, base: str, *, files: int, links: int, robots: str) -> web.Response:
    """A host of a sitemap index: robots.txt allowing all, then ``robots``; /index.xml lists
    ``files`` sitemaps /m0.xml.., each two pages /sN-0 and /sN-1; ``/`` links /p0.. (``links``
    of them); any other path a page without links."""
    xml = "application/xml"
    if path == "/robots.txt":
        return web.Response(text=f"User-agent: *\nAllow: /\n{robots}")
    if path == "/index.xml":
        maps = "".join(f"<sitemap><loc>{base}/m{i}.xml</loc></sitemap>" for i in range(files))
        return web.Response(text=f"<sitemapindex {_XML}>{maps}</sitemapindex>", content_type=xml)
    if path.startswith("/m") and path.endswith(".xml"):
        n = path[2:-4]
        urls = "".join(f"<url><loc>{base}/s{n}-{k}</loc></url>" for k in range(2))
        return web.Response(text=f"<urlset {_XML}>{urls}</urlset>", content_type=xml)
    anchors = "".join(f'<a href="/p{i}">p</a>' for i in range(links)) if path == "/" else ""
    return web.Response(text=f"<html><body>{path}{anchors}</body></html>", content_type="text/html")


async def test_sitemaps_take_the_shared_pace_by_url(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url, site = redis_server.url, Site()
    async with serve(site.handle) as port:
        logs = [tmp_path / f"w{i}.log" for i in range(2)]
        workers = [
            asyncio.create_task(run(logs[i], *worker_args(url, tmp_path, i), limit=60))
            for i in range(2)
        ]
        await until_waiting(logs)
        submit = ["cluster", "submit", "--redis", url, f"http://127.0.0.1:{port}/", *FAST,
                  "--quiet", "--delay", str(DELAY), "--partitions", "16",
                  "--partition-by", "url"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 60)
        codes = await asyncio.wait_for(asyncio.gather(*workers), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
    paths = [p for _, p in site.log]
    assert sum(p.endswith(".xml") for p in paths) == FILES + 1
    assert {f"/s{n}-{k}" for n in range(FILES) for k in range(2)} <= set(paths)
    times = sorted(t for t, _ in site.log)
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    assert gaps[0] >= DELAY * 0.95, (gaps[:3], paths)

"""One page naming many hosts of one registrable domain that never answer does not stop the
crawl: those hosts share a quarter of the concurrency (``per_domain`` unset), and another
site linked from the same page is crawled whole meanwhile (the red team's swamp, scaled
down: 40 hanging subdomains, concurrency 8)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

SWAMP = 40
GOOD_PAGES = 20
READ_TIMEOUT = 5.0


async def test_hanging_hosts_of_one_domain_leave_slots_for_another_site(tmp_path: Path) -> None:
    release = asyncio.Event()
    good_done = asyncio.Event()
    hanging: set[str] = set()
    good: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if host.endswith(".swamp.test"):
            hanging.add(host)
            await release.wait()  # accepts, never answers while the crawl runs
            return web.Response(status=503)
        if host == "good.test":
            good.append(request.path)
            if len(good) == 1 + GOOD_PAGES:
                good_done.set()
        if host == "seed.test":
            port = request.url.port
            links = [f"http://h{i}.swamp.test:{port}/" for i in range(SWAMP)]
            links.append(f"http://good.test:{port}/")
        elif request.path == "/":
            links = [f"/p{i}" for i in range(GOOD_PAGES)]
        else:
            links = []
        body = "".join(f'<a href="{link}">x</a>' for link in links)
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://seed.test:{port}/"],
            "allow_domains": ["test"],
            "resolve": ["*.test=127.0.0.1"],
            "out": out,
            "quiet": True,
            "concurrency": 8,
            "per_host": 2,
            "read_timeout": READ_TIMEOUT,
            "max_retries": 0,
            # the seed, good.test's pages and the swamp's two (in flight, counted against
            # the budget): then it stops
            "max_pages": 2 + GOOD_PAGES + 2,
        }
        crawl = asyncio.create_task(run_crawl(load_settings(settings, env={})))
        try:  # every page of good.test asked for before the swamp's first requests time out
            await asyncio.wait_for(good_done.wait(), READ_TIMEOUT)
            assert len(hanging) <= 2  # the swamp's share: max(per_host, concurrency // 4)
        finally:
            release.set()  # the swamp answers now: the crawl, at its page budget, ends
            await asyncio.wait_for(crawl, 30)
    pages = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    assert len([page for page in pages if "good.test" in page["url"]]) == 1 + GOOD_PAGES

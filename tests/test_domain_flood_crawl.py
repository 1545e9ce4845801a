"""Many hosts of one registrable domain queued ahead of another site do not fill the working
set: the flood's hosts hold their domain's share of it (``--per-domain`` 1: four hosts of a
set of eight), the other site joins beside them and is crawled while the flood still goes
on, and every page of the flood is still fetched (a wildcard-DNS trap scaled down: 40 hosts,
each answering after 20 ms, one request of theirs at a time)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

FLOOD = 40
GOOD_PAGES = 5
ANSWER = 0.02


async def test_a_flood_of_one_domains_hosts_leaves_room_in_the_working_set(
    tmp_path: Path,
) -> None:
    asked: list[str] = []  # the hosts of the pages asked for, in order

    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        if request.path == "/robots.txt":
            return web.Response(status=404)
        asked.append(host)
        port = request.url.port
        if host.endswith(".flood.test"):
            await asyncio.sleep(ANSWER)
            links = []
        elif host == "seed.test":  # the flood's hosts first, then the other site
            links = [f"http://h{i}.flood.test:{port}/" for i in range(FLOOD)]
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
            "per_host": 1,
            "per_domain": 1,
            "active_hosts": 8,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 60)

    good_done = max(i for i, host in enumerate(asked) if host == "good.test")
    flood_before = sum(host.endswith(".flood.test") for host in asked[:good_done])
    # the set's share of the flood's hosts and their turns while good.test is crawled; before
    # the share good.test joined only once all but seven of the flood's hosts had left the set
    assert flood_before < FLOOD // 4, asked
    pages = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    fetched = {page["url"] for page in pages}
    assert {f"http://h{i}.flood.test:{port}/" for i in range(FLOOD)} <= fetched
    good = {f"http://good.test:{port}/", *(f"http://good.test:{port}/p{i}" for i in range(5))}
    assert good <= fetched
    assert len(pages) == 1 + FLOOD + 1 + GOOD_PAGES

"""The cost of one site's sitemaps is bounded, against a real loopback server: the sitemaps
one robots.txt names share one budget of files (``SITE_FILES``; the rest are recorded
flagged, not fetched), and an index whose children can no longer be read is read no further.
Before, a robots.txt naming thousands of sitemaps had each walked in full (a thousand files
each), and every child of a 50,000-entry index was parsed and canonicalized after the walk's
budget was spent."""

from __future__ import annotations

import asyncio
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl, sitemapbudget
from gossamer.discover import Flag, Limits, read_sitemaps
from gossamer.discover.driver import Reply
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

NAMED = 8
"""Sitemaps robots.txt names: /s0.xml .. /s7.xml, each listing /pN."""
BUDGET = 5

TIMER_SLACK = 0.001
"""How early a sleep may end: uvloop counts its timers in whole milliseconds, so one may ring
up to half a millisecond before its time (the loop the tests run on: tests/conftest.py)."""


async def _handle(request: web.Request) -> web.StreamResponse:
    base = f"http://{request.host}"
    if request.path == "/robots.txt":
        lines = "".join(f"Sitemap: {base}/s{n}.xml\n" for n in range(NAMED))
        return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
    if request.path.startswith("/s") and request.path.endswith(".xml"):
        n = request.path[2:-4]
        body = f"<urlset><url><loc>{base}/p{n}</loc></url></urlset>"
        return web.Response(text=body, content_type="text/xml")
    if request.path == "/given.xml":
        body = f"<urlset><url><loc>{base}/given</loc></url></urlset>"
        return web.Response(text=body, content_type="text/xml")
    return web.Response(text="<html><body>page</body></html>", content_type="text/html")


async def test_the_sitemaps_one_robots_txt_names_share_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sitemapbudget, "SITE_FILES", BUDGET)
    asked: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        return await _handle(request)

    out = tmp_path / "out"
    async with serve(handle) as port:
        base = f"http://127.0.0.1:{port}"
        settings = {
            "seeds": [f"{base}/"],
            "sitemap": [f"{base}/given.xml"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.01,
            "checkpoint_interval": 0.05,
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 40)
    named = [p for p in asked if p.startswith("/s")]
    assert len(named) == BUDGET and len(set(named)) == BUDGET
    assert "/given.xml" in asked and "/given" in asked  # --sitemap takes no site's budget
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    maps = [r for r in map(json.loads, lines) if r["kind"] == "sitemap"]
    skipped = [r for r in maps if r["status"] is None]
    assert len(maps) == NAMED + 1 and len(skipped) == NAMED - BUDGET
    assert all(r["flags"] == ["too-many-files"] and r["error"] is None for r in skipped)
    assert stats.sitemaps is not None and stats.sitemaps["blocked_total"] == 0
    assert stats.sitemaps["flagged_total"] == NAMED - BUDGET


async def test_an_index_is_read_no_further_once_its_children_cannot_be_read() -> None:
    children = 50_000
    sent: list[int] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path != "/index.xml":
            return web.Response(text="<urlset></urlset>", content_type="text/xml")
        base = f"http://{request.host}"
        entries = "".join(f"<sitemap><loc>{base}/c{n}.xml</loc></sitemap>" for n in range(children))
        body = f"<sitemapindex>{entries}</sitemapindex>".encode()
        sent.append(len(body))
        return web.Response(body=body, content_type="text/xml")

    async with serve(handle) as port, aiohttp.ClientSession() as session:

        async def fetch(url: str) -> Reply:
            async with session.get(url, allow_redirects=False) as response:
                return response.status, dict(response.headers), await response.read()

        index = f"http://127.0.0.1:{port}/index.xml"
        results: dict[str, Any] = {}
        async for item in read_sitemaps([index], fetch, limits=Limits(max_files=3)):
            if hasattr(item, "bytes_read"):
                results[item.url] = item
    result = results[index]
    assert len(results) == 3
    assert result.flags == (Flag.TOO_MANY_FILES,)
    assert result.bytes_read < sent[0] // 4  # its first block or so, not the 50,000 entries


@pytest.mark.parametrize("compressed", [True, False])
async def test_a_large_file_is_read_a_slice_at_a_time_between_turns_of_the_loop(
    compressed: bool,
) -> None:
    """A 300 KB gzip of 50,000 entries was read in one go, the event loop held for seconds;
    now the loop turns every slice (64 KiB uncompressed, some 1,500 entries)."""
    entries = 50_000
    ticks = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        base = f"http://{request.host}"
        urls = "".join(f"<url><loc>{base}/p{n}</loc></url>" for n in range(entries))
        body = f"<urlset>{urls}</urlset>".encode()
        return web.Response(body=gzip.compress(body) if compressed else body)

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    async with serve(handle) as port, aiohttp.ClientSession(auto_decompress=False) as session:

        async def fetch(url: str) -> Reply:
            async with session.get(url, allow_redirects=False) as response:
                return response.status, dict(response.headers), await response.read()

        counter = asyncio.create_task(tick())
        per_tick: dict[int, int] = {}
        async for _item in read_sitemaps([f"http://127.0.0.1:{port}/sitemap.xml"], fetch):
            per_tick[ticks] = per_tick.get(ticks, 0) + 1
        counter.cancel()
    assert sum(per_tick.values()) == entries + 1  # and the file's result
    assert max(per_tick.values()) <= 3_000


async def test_a_read_pauses_as_long_as_it_ran() -> None:
    share = sitemapbudget.LoopShare()
    loop = asyncio.get_running_loop()
    busy_until = loop.time() + 0.05
    while loop.time() < busy_until:  # a batch of entries read, parsed and admitted
        pass
    started = loop.time()
    await share.pause()
    assert loop.time() - started >= 0.05 - TIMER_SLACK
    started = loop.time()
    await share.pause()  # nothing ran since: no pause
    assert loop.time() - started < 0.05


async def test_a_robots_txt_naming_17_000_sitemaps_holds_the_loop_no_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queueing each of them looked through the host's queue (quadratic: 12 s of CPU for a
    robots.txt of 500 KiB, the crawl's event loop held all along); recording each sitemap
    the budget leaves out gives the loop its turn too."""
    monkeypatch.setattr(sitemapbudget, "SITE_FILES", 2)
    gaps: list[float] = []
    asked: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        if request.path == "/robots.txt":
            base = f"http://{request.host}"
            lines = "".join(f"Sitemap: {base}/maps/{n}.xml\n" for n in range(17_000))
            return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
        return await _handle(request)

    async def watch() -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            gaps.append(loop.time() - before)

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.01,
            "checkpoint_interval": 0.05,
        }
        watcher = asyncio.create_task(watch())
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 50)
        watcher.cancel()
    assert len([path for path in asked if path.startswith("/maps/")]) == 2
    assert stats.sitemaps is not None
    assert stats.sitemaps["files_total"] > 10_000  # as many as robots.txt's first 500 KiB name
    assert max(gaps) < 1.5


async def test_the_sitemaps_one_robots_txt_names_share_one_budget_of_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 files of 50,000 entries would queue 50 million URLs of one site: past
    ``SITE_ENTRIES`` a round the walk stops, and the sitemaps left are recorded
    ``too-many-urls``, not fetched; ``--sitemap`` URLs are the user's and keep no budget."""
    monkeypatch.setattr(sitemapbudget, "SITE_ENTRIES", 6)
    asked: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        base = f"http://{request.host}"
        if request.path == "/robots.txt":
            lines = "".join(f"Sitemap: {base}/s{n}.xml\n" for n in range(3))
            return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
        if request.path.endswith(".xml"):
            name = request.path[1:-4]
            urls = "".join(f"<url><loc>{base}/{name}-{i}</loc></url>" for i in range(4))
            return web.Response(text=f"<urlset>{urls}</urlset>", content_type="text/xml")
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        base = f"http://127.0.0.1:{port}"
        settings = {
            "seeds": [f"{base}/"],
            "sitemap": [f"{base}/given.xml"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.01,
            "checkpoint_interval": 0.05,
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 40)
    pages = [p for p in asked if "-" in p]
    assert len([p for p in pages if p.startswith("/s")]) == 6  # the site's entries, all it may
    assert len([p for p in pages if p.startswith("/given-")]) == 4
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    cut = [r for r in map(json.loads, lines) if "too-many-urls" in r["flags"]]
    assert len(cut) == 2 and stats.sitemaps is not None
    assert stats.sitemaps["entries_total"] == 10


async def test_entries_of_a_host_whose_page_budget_is_spent_are_neither_kept_nor_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host's page budget spent, its sitemaps' entries would never be fetched: they are
    turned away (``budget_total``), not staged in crawl.db's ``sitemap_entries`` and not
    counted toward the site's entries a round. Before, each went to crawl.db (a red team
    filled 83 MB in 30 s) and took the site's entries, so its last sitemaps were cut."""
    monkeypatch.setattr(sitemapbudget, "SITE_ENTRIES", 6)
    asked: list[str] = []
    seed_asked = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        base = f"http://{request.host}"
        if request.path == "/robots.txt":
            lines = "".join(f"Sitemap: {base}/s{n}.xml\n" for n in range(3))
            return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
        if request.path.endswith(".xml"):
            await seed_asked.wait()  # the seed's lease took the host's one page first
            name = request.path[1:-4]
            urls = "".join(f"<url><loc>{base}/{name}-{i}</loc></url>" for i in range(4))
            return web.Response(text=f"<urlset>{urls}</urlset>", content_type="text/xml")
        seed_asked.set()
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "max_pages_per_host": 1,
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.01,
            "checkpoint_interval": 0.05,
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 40)
    assert [p for p in asked if "-" in p] == []
    assert sorted(p for p in asked if p.endswith(".xml")) == ["/s0.xml", "/s1.xml", "/s2.xml"]
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    assert not [r for r in map(json.loads, lines) if "too-many-urls" in r["flags"]]
    with sqlite3.connect(out / "crawl.db") as db:
        assert db.execute("SELECT COUNT(*) FROM sitemap_entries").fetchone()[0] == 0
    assert stats.sitemaps is not None
    assert stats.sitemaps["budget_total"] == 12
    assert stats.sitemaps["entries_total"] == stats.sitemaps["admitted_total"] == 0

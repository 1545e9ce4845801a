"""Whole crawls in process against a real aiohttp server on loopback: a failure while
handling one URL's answer ends that URL only, and seeds queued in the background are all
durable when the crawl stops early."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.page import read
from gossamer.parse.links import ParsedPage
from gossamer.settings import SettingsError, load_settings
from gossamer.stats import CrawlStats
from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(60)


class Site:
    """``/`` links to ``/a``, ``/b`` and ``/bad``; every other path is a page without links.
    Requests are logged by path."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(request.path)
        links = '<a href="/a">a</a><a href="/b">b</a><a href="/bad">bad</a>'
        body = f"<html><body>{links if request.path == '/' else 'leaf'}</body></html>"
        return web.Response(text=body, content_type="text/html")

    def url(self, path: str) -> str:
        return f"http://site.test:{self.port}{path}"


@asynccontextmanager
async def serving() -> AsyncIterator[Site]:
    site = Site()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def crawl(out: Path, wait: float = 30, **flags: Any) -> CrawlStats:
    base = {"out": out, "resolve": ["site.test=127.0.0.1"], "robots": False, "quiet": True}
    return await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), wait)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


async def test_a_bug_handling_one_url_ends_that_url_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``parse_html`` raising for one URL stands for a bug nobody knows yet."""
    real = read.parse_html

    def parse_html(body: bytes, url: str, **kwargs: Any) -> ParsedPage:
        if url.endswith("/bad"):
            raise ValueError("a bug this page revealed")
        return real(body, url, **kwargs)

    monkeypatch.setattr(read, "parse_html", parse_html)
    out = tmp_path / "out"
    async with serving() as site:
        stats = await crawl(out, seeds=[site.url("/")])
        by_url = {r["url"]: r for r in records(out)}
        assert sorted(by_url) == sorted(site.url(p) for p in ("/", "/a", "/b", "/bad"))
        bad = by_url[site.url("/bad")]
        assert (bad["status"], bad["error"], bad["attempts"]) == (200, "internal-error", 1)
        assert all(r["error"] is None for url, r in by_url.items() if url != site.url("/bad"))
        assert stats.internal_errors == 1 and stats.pages == 4
        assert json.loads((out / "stats.json").read_text())["internal_errors"] == 1
        assert site.requests.count("/bad") == 1

        resumed = await crawl(out, resume=True, seeds=[site.url("/")])
        assert site.requests.count("/bad") == 1  # finished: not fetched again
        assert resumed.internal_errors == 1
        assert len(records(out)) == 4


async def test_every_seed_is_queued_durably_when_the_crawl_stops_early(tmp_path: Path) -> None:
    """25,000 seeds are queued in batches in the background; with ``max_pages=20`` the crawl
    ends long before it could fetch them, yet crawl.db holds them all, and ``--resume``
    continues from them."""
    out = tmp_path / "out"
    async with serving() as site:
        seeds = [site.url(f"/p{i}") for i in range(25_000)]
        stats = await crawl(out, seeds=seeds, max_pages=20, concurrency=4)
        assert stats.pages == 20
        conn = sqlite3.connect(out / "crawl.db")
        try:
            (queued,), (finished,) = conn.execute(
                "SELECT COUNT(*) FROM urls GROUP BY state ORDER BY state"
            ).fetchall()
        finally:
            conn.close()
        assert (queued, finished) == (25_000 - 20, 20)
        first = list(site.requests)

        resumed = await crawl(out, resume=True, max_pages=40, concurrency=4)
        assert resumed.pages == 40
        again = site.requests[len(first) :]
        assert len(again) == 20 and not set(again) & set(first)
        assert {path for path in site.requests} <= {f"/p{i}" for i in range(25_000)}


async def test_a_crawl_stopped_while_seeding_asks_for_its_seeds_on_resume(tmp_path: Path) -> None:
    """A crawl killed before its seeds were all queued (``seeding`` still ``started``) cannot
    resume from crawl.db alone: it says so instead of silently crawling part of them; given
    the seeds again, it resumes."""
    out = tmp_path / "out"
    async with serving() as site:
        seeds = [site.url(f"/p{i}") for i in range(30)]
        await crawl(out, seeds=list(seeds), max_pages=5)
        conn = sqlite3.connect(out / "crawl.db")
        with conn:
            conn.execute("UPDATE meta SET value = 'started' WHERE key = 'seeding'")
            conn.execute("DELETE FROM urls WHERE state = 0 AND url LIKE '%/p2_'")
        conn.close()
        with pytest.raises(SettingsError, match="before all its seeds were queued"):
            await crawl(out, resume=True)
        stats = await crawl(out, resume=True, seeds=list(seeds))
        assert stats.pages == 30 and stats.queued == 0


def _run_queue_waits() -> dict[str, float]:
    """Seconds each thread of this process has waited for a core (``schedstat``)."""
    waits = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            waits[task.name] = int((task / "schedstat").read_text().split()[1]) / 1e9
    return waits


NESTED_BOMB = b"<div>" * 200_000 + b"<!--" + b"x" * 9_000_000 + b'--><a href="/">home</a>'
"""10 MB whose first MB of nested ``<div>`` would cost lexbor minutes: its parse sandbox
worker is killed at its budget (2 s of CPU for 10 MB), the guard then flattens it."""


@pytest.mark.parametrize(
    ("bomb", "sandbox", "flags"),
    [
        (payloads.attr_bomb(2000, 500), "on", []),
        (payloads.attr_bomb(2000, 500), "off", ["html-cut-attributes"]),
        (NESTED_BOMB, "on", ["html-flattened", "html-sandbox-killed"]),
    ],
    ids=["attributes", "attributes-in-process", "nested"],
)
@pytest.mark.timeout(120)  # the nested page costs 2.5 s of CPU: a loaded machine stretches it
async def test_the_event_loop_keeps_running_while_a_worst_case_page_is_parsed(
    tmp_path: Path, bomb: bytes, sandbox: str, flags: list[str]
) -> None:
    """A 10 MB page of 2,000 tags with 500 attributes each is parsed off the event loop (in
    the parse sandbox, within its worker's CPU budget: 1 s of 2; without a sandbox
    in-process, guarded, in a thread), and so is one of nested ``<div>`` (parsed in the parse
    sandbox, its worker killed at its CPU budget, then guarded in a thread): a task
    beating every 10 ms meanwhile (as a cluster worker's claim renewals do) is never held up
    for long by this process's own work (a gap counts but for the time a thread of the
    process waited for a core: a machine busy with other work may deschedule it)."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=bomb, content_type="text/html")

    stalls: list[float] = []

    async def beat() -> None:
        # A gap counts but for the time the process's threads waited for a core (the
        # scheduler's run-queue wait, the longest of any thread's): a machine busy with
        # other work may deschedule the process, or the thread holding the GIL; a loop held
        # by a parse, a lock, a sleep or a blocking read is a stall all the same.
        loop = asyncio.get_running_loop()
        last, last_waited = loop.time(), _run_queue_waits()
        while True:
            await asyncio.sleep(0.01)
            now, waited = loop.time(), _run_queue_waits()
            queued = max((w - last_waited.get(t, 0.0) for t, w in waited.items()), default=0.0)
            stalls.append(now - last - queued)
            last, last_waited = now, waited

    async with serve(handle) as port:
        beating = asyncio.create_task(beat())
        try:
            out = tmp_path / "out"
            seeds = [f"http://site.test:{port}/"]
            stats = await crawl(out, 100, seeds=seeds, parse_sandbox=sandbox)
        finally:
            beating.cancel()
    assert stats.pages == 1 and records(out)[0]["flags"] == flags
    assert len(bomb) > 9_000_000 and max(stalls) < 0.5, max(stalls)

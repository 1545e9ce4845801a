"""The crawl loop against a real HTTP server on loopback: what a fetch slot covers, and when
records are checkpointed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer import engine
from gossamer.crawl import assemble_crawler, open_stages
from gossamer.frontier.base import AddResult, Candidate, Feedback, FrontierStats, Lease, Rules
from gossamer.frontier.local import LocalFrontier
from gossamer.settings import CrawlSettings, crawl_scope, load_settings

pytestmark = pytest.mark.timeout(60)


class Site:
    """``/p0.html`` .. ``/p{n-1}.html``, each linking to ``/``, answered after ``delay`` s; it
    counts requests and the most in flight at once. ``on_request`` runs as each arrives."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests: list[str] = []
        self.active = 0
        self.most = 0
        self.on_request: Callable[[str], object] = lambda path: None
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        self.on_request(request.path)
        self.requests.append(request.path)
        self.active += 1
        self.most = max(self.most, self.active)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.active -= 1
        body = '<html><body><a href="/">home</a></body></html>'
        return web.Response(text=body, content_type="text/html")

    def url(self, path: str) -> str:
        return f"http://site.test:{self.port}{path}"


@asynccontextmanager
async def serving(site: Site) -> AsyncIterator[Site]:
    async with serve(site.handle) as port:
        site.port = port
        yield site


def settings_for(out: Path, **flags: Any) -> CrawlSettings:
    base = {
        "out": out,
        "resolve": ["*.test=127.0.0.1"],
        "allow_domains": ["test"],
        "robots": False,
        "delay": 0.0,
    }
    out.mkdir(parents=True, exist_ok=True)
    return load_settings(base | flags, env={})


class GatedAdd:
    """A frontier whose ``add`` of URLs waits until ``gate`` is open (a slow frontier round
    trip)."""

    def __init__(self, inner: LocalFrontier) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.waiting = 0

    async def add(self, candidates: list[Candidate]) -> AddResult:
        if not candidates:
            return await self.inner.add(candidates)
        self.waiting += 1
        await self.gate.wait()
        self.waiting -= 1
        return await self.inner.add(candidates)

    async def lease(self, n: int) -> list[Lease]:
        return await self.inner.lease(n)

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        await self.inner.ack(lease, feedback)

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        await self.inner.retry(lease, after, feedback)

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        await self.inner.release(lease, feedback)

    async def rules(self, lease: Lease, rules: Rules, feedback: Feedback | None) -> None:
        await self.inner.rules(lease, rules, feedback)

    def budget_spent(self, key: str) -> bool:
        return self.inner.budget_spent(key)

    def next_ready(self) -> float | None:
        return self.inner.next_ready()

    async def done(self) -> bool:
        return await self.inner.done()

    def stats(self) -> FrontierStats:
        return self.inner.stats()


async def wait_until(condition: Any, limit: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_a_fetch_slot_frees_when_the_response_is_in(tmp_path: Path) -> None:
    """Concurrency 2: while the frontier keeps every page's outlinks waiting, two more pages
    are fetched (a fetch slot covers the request only) and no more (at most as many tasks
    again may be past their fetch); never more than 2 requests at once."""
    seeds_count = 10
    async with serving(Site(delay=0.05)) as site:
        seeds = [site.url(f"/p{i}.html") for i in range(seeds_count)]
        settings = settings_for(tmp_path / "out", seeds=seeds, concurrency=2, per_host=4)
        async with open_stages(settings, seeds) as stages:
            local = LocalFrontier(crawl_scope(settings, seeds), stages.politeness, stages.db)
            frontier = GatedAdd(local)
            crawler = assemble_crawler(stages, settings, frontier)
            await local.add([Candidate(url) for url in seeds])
            run = asyncio.create_task(crawler.run([]))
            await wait_until(lambda: frontier.waiting == 4)
            await asyncio.sleep(0.3)  # six rounds of the server's delay: nothing more starts
            assert len(site.requests) == 4
            assert frontier.waiting == 4
            frontier.gate.set()
            stats = await asyncio.wait_for(run, 20)
    assert stats.pages == seeds_count + 1  # and "/"
    assert sorted(site.requests) == sorted(["/", *(f"/p{i}.html" for i in range(seeds_count))])
    assert site.most == 2


async def test_records_are_committed_as_soon_as_the_crawl_is_idle(tmp_path: Path) -> None:
    """With an hour between checkpoints, a page's record is in pages.jsonl before the host's
    delay lets the next request start: an idle crawl has nothing to batch it with."""
    jsonl = tmp_path / "out" / "pages.jsonl"
    lines_at: list[int] = []
    async with serving(Site(delay=0.0)) as site:
        site.on_request = lambda path: lines_at.append(
            len(jsonl.read_text().splitlines()) if jsonl.exists() else 0
        )
        seeds = [site.url("/p0.html"), site.url("/p1.html")]
        settings = settings_for(
            tmp_path / "out", seeds=seeds, delay=1.0, checkpoint_interval=3600.0
        )
        async with open_stages(settings, seeds) as stages:
            local = LocalFrontier(crawl_scope(settings, seeds), stages.politeness, stages.db)
            crawler = assemble_crawler(stages, settings, local)
            stats = await asyncio.wait_for(crawler.run(seeds), 30)
    assert stats.pages == 3
    assert lines_at == [0, 1, 2]


class RobotsSite:
    """``/`` links to ``/a`` and ``/private/x``; robots.txt answers 503 ``failures`` times,
    then forbids ``/private``. Logs every request's path."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.log: list[str] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.log.append(request.path)
        if request.path == "/robots.txt":
            if self.log.count("/robots.txt") <= self.failures:
                return web.Response(status=503)
            return web.Response(text="User-agent: *\nDisallow: /private\n")
        body = '<html><body><a href="/a">a</a><a href="/private/x">x</a></body></html>'
        return web.Response(text=body, content_type="text/html")


async def crawl_robots_site(tmp_path: Path, failures: int) -> tuple[RobotsSite, dict[str, Any]]:
    site = RobotsSite(failures)
    async with serve(site.handle) as port:
        seeds = [f"http://site.test:{port}/"]
        settings = settings_for(
            tmp_path / "out", seeds=seeds, robots=True, robots_retry=0.1, max_retries=3
        )
        async with open_stages(settings, seeds) as stages:
            rules = stages.robots.known
            frontier = LocalFrontier(
                crawl_scope(settings, seeds), stages.politeness, stages.db, rules=rules
            )
            await asyncio.wait_for(assemble_crawler(stages, settings, frontier).run(seeds), 20)
    lines = (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    records = {record["url"].split(str(port))[1]: record for record in map(json.loads, lines)}
    return site, records


async def test_a_hosts_urls_wait_for_robots_txt_and_forbidden_ones_are_never_asked(
    tmp_path: Path,
) -> None:
    """robots.txt unreachable twice: the seed waits (two attempts counted) and robots.txt is
    asked again after --robots-retry; then every page follows it, nothing forbidden asked."""
    site, records = await crawl_robots_site(tmp_path, failures=2)
    assert site.log[:3] == ["/robots.txt"] * 3
    assert sorted(site.log[3:]) == ["/", "/a"]
    assert (records["/"]["status"], records["/"]["attempts"]) == (200, 3)
    assert records["/private/x"]["error"] == "robots"
    assert records["/a"]["status"] == 200


async def test_urls_of_a_host_whose_robots_txt_stays_unreachable_are_recorded(
    tmp_path: Path,
) -> None:
    site, records = await crawl_robots_site(tmp_path, failures=100)
    assert set(site.log) == {"/robots.txt"}
    assert list(records) == ["/"]
    assert (records["/"]["error"], records["/"]["attempts"]) == ("robots-unreachable", 3)


async def test_fetching_waits_for_a_slow_commit_past_the_pending_records_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While crawl.db's commit is held (a busy disk), the crawl fetches only until
    ``MAX_PENDING_RECORDS`` records wait for it, plus the tasks already under way, instead
    of piling every page's record up in memory; once the commit goes through, the crawl ends
    with every page."""
    monkeypatch.setattr(engine, "MAX_PENDING_RECORDS", 3)
    seeds_count = 30
    async with serving(Site(delay=0.0)) as site:
        seeds = [site.url(f"/p{i}.html") for i in range(seeds_count)]
        settings = settings_for(
            tmp_path / "out", seeds=seeds, concurrency=2, per_host=2, checkpoint_interval=0.01
        )
        async with open_stages(settings, seeds) as stages:
            local = LocalFrontier(crawl_scope(settings, seeds), stages.politeness, stages.db)
            await local.add([Candidate(url) for url in seeds])
            await stages.db.commit()
            gate = asyncio.Event()
            commit = stages.db.commit

            async def held_commit() -> None:
                await gate.wait()
                await commit()

            monkeypatch.setattr(stages.db, "commit", held_commit)
            crawler = assemble_crawler(stages, settings, local)
            run = asyncio.create_task(crawler.run([]))
            try:
                await wait_until(lambda: len(site.requests) >= 3)
                await asyncio.sleep(0.3)
                held = len(site.requests)
                await asyncio.sleep(0.3)
                assert len(site.requests) == held  # nothing more while the commit is held
                assert held <= 3 + 2 * 2  # the bound, and the tasks that were under way
            finally:
                gate.set()  # a failed check must not leave the crawl waiting on the commit
            stats = await asyncio.wait_for(run, 20)
    assert stats.pages == seeds_count + 1  # and "/"

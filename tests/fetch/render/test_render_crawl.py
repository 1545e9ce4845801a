"""Whole crawls with --render on a real local site and Debian's real chromium-headless-shell:
links built by scripts, XHR, timers and scrolling are followed; a page that never settles
meets the deadline; a page that eats memory and a killed browser fail cleanly; auto renders
only what needs it; robots.txt and the proxy hold for the browser's subrequests."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest
from tests.fetch.proxy_servers import HttpProxy
from tests.fetch.render.site import APP_PAGES, PAGES, SCROLL_PAGES, RenderSite, serve_site
from tests.warc_check import check_archive, payload

from gossamer import __version__
from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)


async def crawl(
    tmp_path: Path, port: int, paths: list[str], **flags: Any
) -> tuple[CrawlStats, dict[str, dict[str, Any]], dict[str, Any]]:
    """Crawl from ``paths`` of the site; the stats, the records by path, stats.json."""
    out = tmp_path / "out"
    settings = load_settings(
        {
            "seeds": [f"http://127.0.0.1:{port}{p}" for p in paths],
            "out": out,
            "quiet": True,
            "text": False,
            "render_settle": 0.2,
            "render_timeout": 5.0,
            "render_concurrency": 2,
            **flags,
        },
        env={},
    )
    stats = await asyncio.wait_for(run_crawl(settings), 50)
    prefix = f"http://127.0.0.1:{port}"
    records = {}
    for line in (out / "pages.jsonl").read_text().splitlines():
        record = json.loads(line)
        records[record["url"].removeprefix(prefix)] = record
    return stats, records, json.loads((out / "stats.json").read_text())


async def test_links_built_by_scripts_are_followed(tmp_path: Path) -> None:
    async with serve_site() as (site, port):
        seeds = ["/js/built", "/js/xhr", "/js/timer", "/js/scroll"]
        _, records, saved = await crawl(tmp_path, port, seeds, render="always", render_scroll=5)
    expected = {"/found/built", "/found/xhr-1", "/found/xhr-2", "/found/timer"}
    expected |= {f"/found/scroll-{n}" for n in range(SCROLL_PAGES)}
    assert expected <= set(records)
    assert all(records[p]["status"] == 200 for p in expected)
    html = [r for r in records.values() if r["content_type"] == "text/html"]
    assert html and all(r["rendered"] for r in html)
    render = saved["render"]
    assert render["pages_rendered"] == len(html)
    assert render["subrequests_allowed"] >= 1 + SCROLL_PAGES  # /api/links, /api/scroll
    assert render["render_failures"] == 0
    assert render["browser_peak_rss_mb"] > 0
    assert saved["peak_rss_mb"] > render["browser_peak_rss_mb"]
    assert site.user_agents == {f"gossamer/{__version__}"}  # the browser's requests too
    assert not site.from_browser  # gossamer fetched everything the browser asked for


async def test_a_page_that_never_settles_meets_the_deadline(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        started = asyncio.get_running_loop().time()
        _, records, saved = await crawl(
            tmp_path, port, ["/js/poll"], render="always", render_timeout=1.5
        )
        took = asyncio.get_running_loop().time() - started
    page = records["/js/poll"]
    assert page["rendered"] is True
    assert "render-deadline" in page["flags"]
    assert "/found/poll" in records
    assert saved["render"]["deadline_hits"] == 1
    assert took < 15


async def test_pages_that_eat_memory_or_spin_fail_cleanly(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, saved = await crawl(
            tmp_path, port, ["/js/hog", "/js/spin", "/js/built"], render="always",
            render_js_heap_mb=32, render_timeout=1.0,
        )  # fmt: skip
    for path in ("/js/hog", "/js/spin"):  # out of heap (crashed, retried once); never idle
        page = records[path]
        assert page["rendered"] is False and page["status"] == 200
        assert "render-failed" in page["flags"]
    assert records["/js/built"]["rendered"] is True
    assert "/found/built" in records
    render = saved["render"]
    assert render["render_failures"] == 2 and render["retries"] == 1


async def test_a_killed_browser_is_restarted_and_the_render_retried(tmp_path: Path) -> None:
    site = RenderSite()
    site.on_hang = kill_browsers
    async with serve_site(site) as (_, port):
        _, records, saved = await crawl(tmp_path, port, ["/js/crash"], render="always")
    assert records["/js/crash"]["rendered"] is True
    assert "/found/after-crash" in records
    render = saved["render"]
    assert render["crashes"] == 1
    assert render["retries"] == 1
    assert render["render_failures"] == 0


def kill_browsers() -> None:
    """Kill the browser processes under this process (the main one and its helpers)."""
    for process in psutil.Process().children(recursive=True):
        if "chrom" in process.name():
            process.kill()


async def test_auto_renders_only_pages_that_need_it(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, saved = await crawl(
            tmp_path, port, ["/static/0"], render="auto", text=True, follow_duplicates=True
        )  # the app pages' scripts write one text: near duplicates, whose links count here
    statics = [p for p in records if p.startswith("/static/")]
    apps = [p for p in records if p.startswith("/app/")]
    assert len(statics) == 8 and len(apps) == APP_PAGES
    assert not any(records[p]["rendered"] for p in statics)
    assert all(records[p]["rendered"] for p in apps)
    assert "written by JavaScript" in records["/app/3"]["text"]  # the text scripts wrote
    auto = saved["render"]["auto"]
    assert auto["hosts_needed"] == 1
    assert saved["render"]["pages_rendered"] == APP_PAGES


async def test_auto_learns_a_host_where_rendering_is_useless(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, saved = await crawl(
            tmp_path, port, ["/dud/0"], render="auto", render_concurrency=1, per_host=1
        )
    duds = [p for p in records if p.startswith("/dud/")]
    rendered = [p for p in duds if records[p]["rendered"]]
    assert len(duds) == 12
    assert len(rendered) == 3  # the probes (a recheck would come at the tenth page skipped)
    assert saved["render"]["auto"]["hosts_useless"] == 1


async def test_render_url_patterns_force_rendering(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, _ = await crawl(tmp_path, port, ["/js/built", "/js/timer"], render_url=[r"/bu"])
    assert records["/js/built"]["rendered"] is True
    assert records["/js/timer"]["rendered"] is False
    assert "/found/built" in records and "/found/timer" not in records


async def test_a_render_url_pattern_cannot_freeze_the_crawl(tmp_path: Path) -> None:
    """``(a+)+$`` against ``/aaaa...!``: exponential with Python's ``re``, the crawl's loop
    frozen; RE2 runs it in time linear in the URL."""
    hostile = "/found/" + "a" * 40 + "!"  # an HTML page: the patterns read its URL
    async with serve_site() as (_, port):
        _, records, _ = await crawl(tmp_path, port, [hostile, "/js/timer"], render_url=[r"/(a+)+$"])
    assert records[hostile]["rendered"] is False and "/js/timer" in records


async def test_subrequests_keep_to_robots_txt_and_blocked_kinds(tmp_path: Path) -> None:
    seeds = ["/js/robots", "/js/image", "/js/moved", "/js/socket"]
    async with serve_site() as (site, port):
        _, records, saved = await crawl(tmp_path, port, seeds, render="always")
    assert site.hits["/private/data"] == 0
    assert site.hits["/img/pic.png"] == 0
    assert site.hits["/ws"] == 0
    assert {"/found/xhr-1", "/found/socket"} <= set(records)
    assert records["/js/moved"]["outlinks"] == 2  # its XHR redirected to /api/links
    subrequests = saved["render"]["subrequests"]
    assert subrequests["blocked-robots"] == 1
    assert subrequests["blocked-image"] == 1
    assert subrequests["blocked-websocket"] == 1
    assert subrequests["allowed"] == 2  # /api/links twice (once redirected), through gossamer
    assert site.hits["/api/moved"] == 1 and site.hits["/api/links"] == 2
    assert not site.from_browser


async def test_rendering_through_a_proxy(tmp_path: Path) -> None:
    proxy = await HttpProxy().start()
    try:
        async with serve_site() as (site, port):
            _, records, saved = await crawl(
                tmp_path, port, ["/js/xhr"], render="always", proxies=[proxy.url]
            )
    finally:
        await proxy.stop()
    assert records["/js/xhr"]["rendered"] is True
    assert records["/js/xhr"]["proxy"] == f"http://127.0.0.1:{proxy.port}"
    assert {"/found/xhr-1", "/found/xhr-2"} <= set(records)
    # robots.txt, the page, its XHR and the two links (plus the pool's check of the seed)
    targets = [t.partition("127.0.0.1:")[2].partition("/")[2] for t in proxy.targets]
    assert "api/links" in targets
    assert proxy.requests >= 5
    assert site.hits["/api/links"] == 1
    assert saved["render"]["subrequests_allowed"] == 1


async def test_the_browser_is_restarted_after_its_page_budget(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, saved = await crawl(
            tmp_path, port, ["/js/built", "/js/timer"], render="always",
            render_restart_pages=2, render_concurrency=1,
        )  # fmt: skip
    pages = [r for r in records.values() if r["content_type"] == "text/html"]
    assert len(pages) == 4 and all(r["rendered"] for r in pages)
    render = saved["render"]
    assert render["restarts"] == 2 and render["crashes"] == 0
    assert render["render_failures"] == 0


async def test_the_browser_is_restarted_past_its_memory_budget(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, saved = await crawl(
            tmp_path, port, ["/js/built"], render="always", render_memory_mb=64
        )
    assert records["/js/built"]["rendered"] is True and records["/found/built"]["rendered"]
    render = saved["render"]
    assert render["restarts"] >= 1 and render["crashes"] == 0  # a browser holds > 64 MiB


async def test_the_warc_keeps_the_raw_response_of_a_rendered_page(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, _ = await crawl(tmp_path, port, ["/js/built"], render="always", warc=True)
    out = tmp_path / "out"
    ordered = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    check_archive(out, ordered)
    page = records["/js/built"]
    assert page["rendered"] is True and "/found/built" in records
    assert payload(out / "warc", page) == PAGES["/js/built"].encode()  # as the server sent it


async def test_a_dom_past_the_body_cap_is_cut(tmp_path: Path) -> None:
    async with serve_site() as (_, port):
        _, records, _ = await crawl(
            tmp_path, port, ["/js/huge"], render="always", max_body_bytes=1024 * 1024
        )
    page = records["/js/huge"]
    assert page["rendered"] is True and "render-cut" in page["flags"]
    assert page["bytes"] == 1024 * 1024
    assert "/found/huge" in records  # the link came before the cut

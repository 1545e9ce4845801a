"""The dashboard in a real headless Chromium: a running crawl's figures change without a
reload; a cluster job's workers show, a killed worker disappears, and pause, resume and stop
work from the page.

With ``GOSSAMER_UI_SCREENSHOTS=docs`` the tests save the screenshots of the README there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright
from redis.asyncio import Redis
from tests.cluster.harness import FAST, WEB_ARGS, output, small_web, worker_args
from tests.redis_server import RedisServer
from tests.ui.server import Served, dashboard
from tests.ui.test_crawls import make_crawl

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90), pytest.mark.asyncio(loop_scope="module")]

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell")
     if Path(p).exists()),
    None,
)  # fmt: skip
ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
SHOTS = os.environ.get("GOSSAMER_UI_SCREENSHOTS")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for the module."""
    if CHROMIUM is None:
        pytest.skip("chromium-headless-shell is not installed")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        await chromium.close()


async def open_page(browser: Browser, served: Served, fragment: str) -> Page:
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(20_000)
    await page.goto(served.login_url)  # sets the cookie, then lands on / without the token
    assert page.url == served.base + "/"
    await page.goto(f"{served.base}/{fragment}")
    return page


async def shot(page: Page, name: str) -> None:
    if SHOTS:  # the folder is made by the screenshot
        await page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


async def figure(page: Page, name: str) -> int:
    text = await page.locator(f'[data-figure="{name}"]').inner_text()
    return int(text.replace(",", "")) if re.fullmatch(r"[\d,]+", text) else -1


async def test_a_running_crawl_updates_without_reload(browser: Browser, tmp_path: Path) -> None:
    web = small_web(hosts=4, pages_per_host=40, crawl_delay=0.4)
    async with TestWebServer(web, flaky_failures=0) as server:
        out = tmp_path / "example-crawl"
        crawl = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gossamer.cli", "crawl", *(server.url(i) for i in range(4)),
            "--out", str(out), *WEB_ARGS, "--concurrency", "8", "--log-level", "info",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            async with dashboard([tmp_path]) as served:
                for _ in range(400):  # until the crawl has begun
                    if (out / "crawl.db").exists():
                        break
                    await asyncio.sleep(0.05)
                page = await open_page(browser, served, "")
                await page.locator("#crawl-list a").first.click()
                await page.wait_for_function(
                    "() => Number(document.querySelector('[data-figure=pages]')?.textContent"
                    ".replace(/,/g, '')) > 0"
                )
                await page.evaluate("() => { window.notReloaded = true; }")
                first = await figure(page, "pages")
                await page.wait_for_function(
                    "n => Number(document.querySelector('[data-figure=pages]').textContent"
                    ".replace(/,/g, '')) > n",
                    arg=first,
                )
                assert await page.evaluate("() => window.notReloaded === true")
                assert await page.locator("svg.chart rect.bar").count() == 60
                await page.get_by_text("crawl-delay").first.wait_for()  # a held-back host
                assert await page.locator(".badge.state-running").count() >= 1
                await page.locator(".log .line").first.wait_for()
                await shot(page, "ui-dashboard.png")
                # A last page opens its record.
                await page.locator(".record-link").first.click()
                await page.locator("dialog#record[open]").wait_for()
                record = await page.locator("#record-body").inner_text()
                assert '"url"' in record and '"status"' in record
                await page.click("#record-close")
                # The log's level filter.
                await page.select_option("#log-level", "error")
                await page.wait_for_function("() => !document.querySelector('.log .line')")
                await page.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                crawl.kill()
            await crawl.wait()


async def test_a_continuous_crawl_shows_its_freshness(browser: Browser, tmp_path: Path) -> None:
    """Revisits by result, the due backlog, bytes 304s saved and the URLs sitemaps listed."""
    async with TestWebServer(small_web(hosts=2, pages_per_host=6), flaky_failures=0) as server:
        out = tmp_path / "fresh-crawl"
        fresh = ["--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"]
        crawl = await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", "gossamer.cli", "crawl", server.url(0), server.url(1)],
            *["--out", str(out), *WEB_ARGS, *fresh, "--max-duration", "40"],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            async with dashboard([tmp_path]) as served:
                for _ in range(400):  # until the crawl has begun
                    if (out / "crawl.db").exists():
                        break
                    await asyncio.sleep(0.05)
                page = await open_page(browser, served, "")
                await page.locator("#crawl-list a").first.click()
                await page.wait_for_function(
                    "() => ['unchanged', 'not-modified'].some(name => Number(document"
                    ".querySelector(`[data-figure=revisits-${name}]`)?.textContent"
                    ".replace(/,/g, '')) > 0)"
                )
                for name in ("changed", "unchanged", "not-modified", "gone", "backlog"):
                    assert await figure(page, f"revisits-{name}") >= 0, name
                assert await figure(page, "sitemap-urls") > 0
                assert await figure(page, "sitemap-files") > 0
                assert await page.locator('[data-figure="revisits-bytes-saved"]').count() == 1
                assert await page.get_by_text("Freshness").count() == 1
                await page.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                crawl.kill()
            await crawl.wait()


async def start_worker(url: str, tmp_path: Path, i: int) -> asyncio.subprocess.Process:
    args = worker_args(url, tmp_path, i, "--heartbeat-ttl", "2")
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer.cli", *args,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def test_a_job_its_workers_and_its_controls(browser: Browser, tmp_path: Path) -> None:
    args = [*FAST, "--concurrency", "4", "--per-host", "1", "--delay", "0.3"]
    with RedisServer() as redis_server:
        url = redis_server.url
        async with TestWebServer(small_web(hosts=4, pages_per_host=60), flaky_failures=0) as server:
            submit = ["cluster", "submit", "--redis", url, server.url(0), *args, *WEB_ARGS]
            assert (await output(*submit))[0] == 0
            workers = [await start_worker(url, tmp_path, i) for i in range(2)]
            control = Control(Redis.from_url(url), DEFAULT_JOB)
            try:
                async with dashboard([tmp_path], redis=url) as served:
                    page = await open_page(browser, served, f"#/job/{DEFAULT_JOB}")
                    rows = page.locator("#workers tbody tr")
                    await page.wait_for_function(
                        "() => document.querySelectorAll('#workers tbody tr').length === 3"
                    )  # two workers and the total
                    await page.wait_for_function(
                        "() => Number(document.querySelector('[data-figure=finished]')"
                        ".textContent.replace(/,/g, '')) > 0"
                    )
                    await shot(page, "ui-job.png")
                    workers[1].send_signal(signal.SIGKILL)
                    await workers[1].wait()
                    await page.wait_for_function(
                        "() => document.querySelectorAll('#workers tbody tr').length === 2"
                    )
                    assert all("w1" not in row for row in await rows.all_inner_texts())

                    await page.click("#pause")
                    await page.locator(".title .badge.state-paused").wait_for()
                    assert await control.state() == "paused"
                    await page.click("#resume")
                    await page.locator(".title .badge.state-running").wait_for()
                    assert await control.state() == "running"
                    await page.click("#stop")
                    assert await control.state() == "running"  # the first click asks again
                    await page.click("#stop")
                    await page.locator(".title .badge.state-stopped").wait_for()
                    assert await asyncio.wait_for(workers[0].wait(), 30) == 0
                    await page.close()
            finally:
                await control.redis.aclose()
                for worker in workers:
                    with contextlib.suppress(ProcessLookupError):
                        worker.kill()
                    await worker.wait()


async def test_a_crawl_whose_status_json_is_malformed_shows_why(
    browser: Browser, tmp_path: Path
) -> None:
    await make_crawl(tmp_path / "good", 3)
    await make_crawl(tmp_path / "nested", 2)
    (tmp_path / "nested" / "status.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    why = "status.json: JSON nested deeper than 32 levels"
    async with dashboard([tmp_path]) as served:
        page = await open_page(browser, served, "")
        await page.locator("#crawl-list .crawl-error").wait_for()
        assert await page.locator("#crawl-list a").count() == 2  # the good one too
        assert await page.locator("#crawl-list .crawl-error").all_inner_texts() == [why]
        await page.locator("#crawl-list a", has_text="nested").click()
        await page.locator("#main p.error", has_text=why).wait_for()
        await page.close()

"""``gossamer ui`` as a process, its rule editor previewing a rule whose XPath takes minutes on
a page: the other requests keep their answers, previews past the limit are refused, each page
stops at its time bound with the rule's error, and SIGTERM ends the process at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import psutil  # type: ignore[import-untyped]
import pytest
from aiohttp import web

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
TOKEN = "bounds-test-token-0123456789"
HOSTILE = "<html><body>" + "<h2>t</h2><p>x</p>" * 6000 + "</body></html>"
RULE = {
    "name": "slow",
    "url": "/hostile$",
    "field": [{"name": "p", "xpath": "//h2/following-sibling::p", "multiple": True}],
}


@asynccontextmanager
async def hostile_site() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=HOSTILE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/hostile", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def ui_process(tmp_path: Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer.cli", "ui", "--bind", "127.0.0.1:0",
        "--out", str(tmp_path), "--token-file", str(token_file), "--editor-allow", "127.0.0.1",
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        match = re.search(rb"http://127\.0\.0\.1:\d+", line)
        assert match is not None, line
        yield process, match.group().decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _post(session: aiohttp.ClientSession, base: str, csrf: str, path: str, body: Any) -> Any:
    headers = {"Origin": base, "X-CSRF-Token": csrf}
    async with session.post(f"{base}/editor/api/{path}", json=body, headers=headers) as response:
        return response.status, await response.json()


async def test_hostile_previews_leave_the_ui_answering_and_sigterm_ends_it(tmp_path: Path) -> None:
    async with hostile_site() as site, ui_process(tmp_path) as (process, base):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.get(f"{base}/api/session") as response:
                csrf = (await response.json())["csrf"]
            status, fetched = await _post(session, base, csrf, "fetch", {"url": f"{site}/hostile"})
            assert status == 200, fetched
            body = {"rule": RULE, "samples": [fetched["id"]], "more": 0}
            started = time.monotonic()
            previews = [
                asyncio.create_task(_post(session, base, csrf, "preview", body)) for _ in range(8)
            ]
            for _ in range(5):  # while the previews run, the dashboard answers at once
                asked = time.monotonic()
                async with session.get(f"{base}/api/overview") as response:
                    assert response.status == 200
                assert time.monotonic() - asked < 3
            answers = await asyncio.gather(*previews)
            assert time.monotonic() - started < 30
        statuses = sorted(status for status, _ in answers)
        assert statuses.count(200) >= 2 and set(statuses) <= {200, 429}, statuses
        for status, answer in answers:
            if status == 200:
                (row,) = answer["rows"]
                assert row["errors"] == [
                    "rule 'slow' stopped after 5 s on this page (the time bound of a page)"
                ]
        busy = asyncio.create_task(_post_in_new_session(base, csrf, body))
        await _busy_worker(process.pid)  # a preview under way: its worker busy in lxml
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        await asyncio.wait_for(process.wait(), 15)
        assert time.monotonic() - stopped < 5
        busy.cancel()
        await asyncio.gather(busy, return_exceptions=True)


async def _busy_worker(pid: int) -> None:
    """Until a child of ``pid`` has used half a second of CPU more than when first seen."""
    seen: dict[int, float] = {}
    for _ in range(200):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                used = sum(child.cpu_times()[:2])
                if used - seen.setdefault(child.pid, used) > 0.5:
                    return
        await asyncio.sleep(0.05)  # CPU time has no event to wait on
    raise AssertionError("no preview worker got busy")


async def _post_in_new_session(base: str, csrf: str, body: Any) -> Any:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session:
        return await _post(session, base, csrf, "preview", body)

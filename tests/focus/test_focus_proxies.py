"""A focused crawl whose every proxy (a real HTTP proxy on 127.0.0.1) answers 407 ends as a
plain crawl does: exit status 1 and one line naming the proxies' refusal (no example blamed,
no traceback), stats.json written and its seeds kept for ``--resume``; from Python,
``Crawl.wait`` raises that line as a CommandError, and so does a cluster worker's ``wait``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy
from tests.local_app import serve
from tests.redis_server import RedisServer

import gossamer
from gossamer import Crawl, CrawlSettings, JobSettings, Worker
from gossamer.crawl import run_crawl
from gossamer.errors import CommandError
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

PAGES = 6
TEXT = "Rivers carry water from the mountains to the sea, and towns grow on their banks."
REFUSAL = "every proxy rejected the crawl's credentials (407"


async def _page(request: web.Request) -> web.Response:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES)) if request.path == "/" else ""
    body = f"<html><body><article><p>{TEXT}</p></article>{links}</body></html>"
    return web.Response(text=body, content_type="text/html")


def _focus(port: int) -> list[str]:
    return ["--focus-phrase", "rivers", "--focus-example", f"http://127.0.0.1:{port}/p0"]


@pytest.mark.parametrize("robots", [True, False], ids=["robots", "no-robots"])
async def test_a_focused_crawl_whose_every_proxy_rejects_its_credentials_ends_with_one_line(
    tmp_path: Path, robots: bool
) -> None:
    """The CLI: exit 1 and the refusal's line (it was exit 2, 'invalid setting
    focus_examples', the example blamed); the seed kept: --resume with the right password
    crawls the site, focused."""
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    wrong = f"http://carol:n0tit@127.0.0.1:{guarded.port}"
    out = tmp_path / "out"
    try:
        async with serve(_page) as port:
            seed = f"http://127.0.0.1:{port}/"
            flags = ["--no-text", "--quiet", "--out", str(out), *_focus(port)]
            flags += [] if robots else ["--no-robots"]
            command = await asyncio.create_subprocess_exec(
                sys.executable,
                *["-m", "gossamer", "crawl", seed, *flags, "--proxy", wrong],
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(Path(gossamer.__file__).parents[1])},
            )
            try:
                _, stderr = await asyncio.wait_for(command.communicate(), 30)
            finally:
                if command.returncode is None:  # it never ended: end it
                    command.kill()
                    await command.wait()
            said = stderr.decode()
            assert command.returncode == 1, said
            last = said.strip().splitlines()[-1]
            assert last.startswith(f"gossamer: {REFUSAL}") and "--resume" in last
            assert "focus_examples" not in said and "Traceback" not in said
            assert "n0tit" not in said
            assert (out / "pages.jsonl").read_text() == ""
            assert json.loads((out / "stats.json").read_text())["pages"] == 0
            settings = load_settings(
                {
                    "seeds": [],
                    "out": out,
                    "robots": robots,
                    "text": False,
                    "quiet": True,
                    "resume": True,
                    "proxies": [guarded.url],
                    "focus_phrase": "rivers",
                    "focus_examples": [f"http://127.0.0.1:{port}/p0"],
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await guarded.stop()
    assert stats.ok == PAGES + 1  # the seed was kept, and the pages it leads to crawled
    assert stats.focus is not None and stats.focus["judged"] == PAGES + 1


async def test_the_api_raises_the_refusal_as_a_command_error(tmp_path: Path) -> None:
    """``Crawl.wait`` raises CommandError (exit status 1) with the refusal's line, not a
    SettingsError about the examples; stats.json is written."""
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    try:
        async with serve(_page) as port:
            settings = CrawlSettings(
                seeds=[f"http://127.0.0.1:{port}/"],
                out=tmp_path / "out",
                robots=False,
                text=False,
                quiet=True,
                proxies=[f"http://carol:n0tit@127.0.0.1:{guarded.port}"],
                focus_phrase="rivers",
                focus_examples=[f"http://127.0.0.1:{port}/p0"],
            )
            crawl = Crawl(settings)
            with pytest.raises(CommandError) as raised:
                await asyncio.wait_for(crawl.run(), 30)
    finally:
        await guarded.stop()
    assert str(raised.value).startswith(REFUSAL) and "n0tit" not in str(raised.value)
    assert raised.value.exit_status == 1
    assert json.loads((tmp_path / "out" / "stats.json").read_text())["pages"] == 0


async def test_a_cluster_worker_of_a_focused_job_ends_the_same_way(tmp_path: Path) -> None:
    """A worker (a real redis-server) of a focused job whose proxy rejects the credentials:
    ``Worker.wait`` raises the refusal's CommandError (it was a SettingsError naming
    focus_examples), stats.json written."""
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    try:
        async with serve(_page) as port:
            with RedisServer() as redis:
                job = JobSettings(
                    seeds=[f"http://127.0.0.1:{port}/"],
                    proxies=[f"http://carol:n0tit@127.0.0.1:{guarded.port}"],
                    robots=False,
                    sitemaps=False,
                    text=False,
                    quiet=True,
                    focus_phrase="rivers",
                    focus_examples=[f"http://127.0.0.1:{port}/p0"],
                )
                await gossamer.submit(redis.url, job, job="refused")
                worker = Worker(
                    redis.url, job="refused", name="w0", out=tmp_path / "w0", job_timeout=20
                )
                worker.start()
                with pytest.raises(CommandError) as raised:
                    await asyncio.wait_for(worker.wait(), 30)
    finally:
        await guarded.stop()
    assert str(raised.value).startswith(REFUSAL) and "n0tit" not in str(raised.value)
    assert json.loads((tmp_path / "w0" / "stats.json").read_text())["pages"] == 0

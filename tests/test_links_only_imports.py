"""A links-only crawl (``--no-text``) loads none of what only a page's content needs: the
extractors, the language model, the PDF reader, the WARC writer. A crawler process of the
whole job finds the model at its start without loading it (``test_content``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from aiohttp import web
from tests.content_site import handle
from tests.local_app import serve

BIG = "<html><body>" + "<p>A paragraph of the big page.</p>" * 3000 + '<a href="/">home</a>'
"""A page the parse sandbox's workers read (more than 4,096 ``<``)."""
CONTENT_ONLY = ("fasttext", "fastwarc", "pypdf", "gossamer.extract", "gossamer.sinks.warc")

_REPORT = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
runpy.run_module("gossamer", run_name="__main__", alter_sys=True)
"""


async def _site(request: web.Request) -> web.Response:
    if request.path == "/big":
        return web.Response(text=BIG, content_type="text/html")
    return await handle(request)


async def _crawled_modules(tmp_path: Path, *flags: str) -> tuple[set[str], int]:
    """The modules a ``gossamer crawl`` process of the content site (from a big page) had
    imported at its end, and the records it wrote."""
    async with serve(_site) as port:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"http://site.test:{port}/big\n", encoding="utf-8")
        report, out = tmp_path / "modules.json", tmp_path / "out"
        command = [sys.executable, "-c", _REPORT, str(report), "crawl", "--seeds-file"]
        command += [str(seeds), "--out", str(out), "--resolve", "site.test=127.0.0.1"]
        command += ["--no-robots", "--delay", "0", "--quiet", *flags]
        process = await asyncio.create_subprocess_exec(*command)
        assert await asyncio.wait_for(process.wait(), 50) == 0
    records = (out / "pages.jsonl").read_text(encoding="utf-8").splitlines()
    return set(json.loads(report.read_text(encoding="utf-8"))), len(records)


async def test_a_links_only_crawl_loads_nothing_of_the_content(tmp_path: Path) -> None:
    modules, records = await _crawled_modules(tmp_path, "--no-text")
    assert records >= 8  # the pages, the plain text and the PDF fetched
    loaded = {m for m in modules if m.startswith(CONTENT_ONLY)}
    assert loaded == set()


def test_a_parse_worker_without_an_extractor_loads_nothing_of_the_content() -> None:
    # a links-only crawl's workers get no extractor, so never warm one (``sandboxed._warm``)
    script = "import sys, gossamer.page.sandboxed; print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(done.stdout.strip().strip("[]").replace("'", "").split(", "))
    assert "gossamer.page.sandboxed" in modules
    assert {m for m in modules if m.startswith(CONTENT_ONLY)} == set()

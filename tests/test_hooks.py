"""``--hook module:function`` in whole crawls against a real server on loopback: fields added
to records in every embedded sink, links replaced, and a failing hook recorded per page."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.hooks import HookResult, Page
from gossamer.settings import SettingsError, load_settings
from gossamer.sinks.base import FIELD_NAMES, PageRecord
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hook_words.py"

PAGES = {
    "/": '<h1>Home</h1><a href="/a">a</a><a href="/b">b</a><a href="/boom">boom</a>',
    "/a": "<h1>A</h1><p>one two three</p>",
    "/b": '<h1>B</h1><a href="/c">c</a>',
    "/c": "<h1>C</h1>",
    "/boom": '<h1>Boom</h1><a href="/d">d</a>',
    "/d": "<h1>D</h1>",
}


async def handle(request: web.Request) -> web.Response:
    body = PAGES.get(request.path)
    if body is None:
        return web.Response(status=404)
    return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")


def headings(page: Page) -> dict[str, Any] | HookResult:
    """Adds the h1; raises on /boom; follows no links from /b."""
    if page.url.endswith("/boom"):
        raise ZeroDivisionError("the hook's own bug")
    assert page.tree is not None and page.status == 200 and page.html is not None
    assert page.content is not None and page.content.text.startswith(
        page.tree.css_first("h1").text()
    )
    fields = {"h1": page.tree.css_first("h1").text(), "links": len(page.links)}
    if page.url.endswith("/b"):
        return HookResult(fields=fields, links=[])
    return fields


def not_json(page: Page) -> dict[str, Any]:
    return {"bad": {1, 2}}


async def crawl(out: Path, hook: str, port: int) -> CrawlStats:
    flags = {
        "seeds": [f"http://site.test:{port}/"],
        "out": out,
        "resolve": ["site.test=127.0.0.1"],
        "robots": False,
        "quiet": True,
        "hook": hook,
    }
    return await asyncio.wait_for(run_crawl(load_settings(flags, env={})), 30)


def by_path(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text().splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}


async def test_a_hook_adds_fields_chooses_links_and_its_failure_is_recorded(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    async with serve(handle) as port:
        stats = await crawl(out, f"{__name__}:headings", port)
    records = by_path(out)
    assert sorted(records) == ["/", "/a", "/b", "/boom", "/d"]  # nothing from /b: no /c
    assert records["/"]["extra"] == {"h1": "Home", "links": 3}
    assert records["/a"]["extra"] == {"h1": "A", "links": 0}
    boom = records["/boom"]
    assert boom["error"] == "hook-error: ZeroDivisionError" and boom["extra"] is None
    assert boom["status"] == 200 and boom["outlinks"] == 1  # its own links still followed
    assert stats.hook_errors == 1 and stats.pages == 5
    assert json.loads((out / "stats.json").read_text())["hook_errors"] == 1
    with sqlite3.connect(out / "crawl.db") as conn:
        rows = conn.execute(f"SELECT {', '.join(FIELD_NAMES)} FROM pages").fetchall()
    stored = {
        PageRecord.from_row(row).url.split("/", 3)[3]: PageRecord.from_row(row) for row in rows
    }
    assert stored[""].extra == {"h1": "Home", "links": 3}


async def test_fields_that_are_not_json_are_a_hook_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve(handle) as port:
        stats = await crawl(out, f"{__name__}:not_json", port)
    records = by_path(out)
    assert records["/"]["error"] == "hook-error: fields are not JSON"
    assert stats.hook_errors == stats.pages == len(records) == 6


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "not of the form module:function"),
        ("gossamer_no_such_module:f", "cannot be imported"),
        ("json:no_such_function", "has no function"),
        ("missing/file.py:f", "cannot be imported"),
    ],
)
async def test_a_bad_hook_is_a_settings_error_before_anything_is_written(
    tmp_path: Path, spec: str, message: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(SettingsError, match=message):
        await crawl(out, spec, 9)
    assert not (out / "crawl.db").exists()


async def test_a_hook_from_a_file_path(tmp_path: Path) -> None:
    example = EXAMPLE
    out = tmp_path / "out"
    async with serve(handle) as port:
        await crawl(out, f"{example}:words", port)
    records = by_path(out)
    assert records["/a"]["extra"] == {"words": 4, "headings": ["A"]}
    assert f"gossamer_hook_{example.stem}" in sys.modules

"""One hostile file in a sitemap index, in whole crawls of a real loopback server: the file
ends as its own record and the walk goes on to its siblings (and, in a continuous crawl, the
index is read again on its schedule). Each case once ended the whole walk with an internal
error: no record of the file, its siblings never fetched, the index never read again."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

_URLSET = "<urlset><url><loc>{base}/{page}</loc>{lastmod}</url></urlset>"
_INDEX = (
    "<sitemapindex><sitemap><loc>{base}/bad.xml</loc></sitemap>"
    "<sitemap><loc>{base}/good.xml</loc></sitemap></sitemapindex>"
)


@dataclass
class Site:
    """``/index.xml`` lists ``/bad.xml`` (``bad``: its body given the base URL) then
    ``/good.xml`` (listing ``/p-good``); every other path is a page without links."""

    bad: str
    paths: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        base = f"http://{request.host}"
        if request.path == "/robots.txt":
            return web.Response(status=404)
        bodies = {
            "/index.xml": _INDEX.format(base=base),
            "/bad.xml": self.bad.format(base=base),
            "/good.xml": _URLSET.format(base=base, page="p-good", lastmod=""),
        }
        if request.path in bodies:
            return web.Response(body=bodies[request.path].encode(), content_type="text/xml")
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")


async def _crawl(site: Site, out: Path, **flags: Any) -> list[dict[str, Any]]:
    async with serve(site.handle) as port:
        base = f"http://127.0.0.1:{port}"
        settings = {
            "seeds": [f"{base}/"],
            "sitemap": [f"{base}/index.xml"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings | flags, env={})), 40)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _sitemap_records(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["url"].rsplit("/", 1)[1]: r for r in records if r["kind"] == "sitemap"}


@pytest.mark.parametrize("encoding", ["rot13", "zlib_codec", "hex", "idna"])
async def test_a_file_declaring_a_codec_no_text_is_read_as_utf8(
    tmp_path: Path, encoding: str
) -> None:
    bad = f'<?xml version="1.0" encoding="{encoding}"?>' + _URLSET.format(
        base="{base}", page="p-bad", lastmod=""
    )
    site = Site(bad)
    records = await _crawl(site, tmp_path / "out")
    maps = _sitemap_records(records)
    assert maps["bad.xml"]["extra"] == {"format": "urlset", "entries": 1, "dropped": 0}
    assert "good.xml" in maps
    assert {"/p-bad", "/p-good"} <= set(site.paths)


async def test_a_lastmod_past_year_9999_in_utc_is_no_date(tmp_path: Path) -> None:
    # 10000-01-01T00:00Z: a date a datetime cannot hold, vouched for with spare revisits on
    lastmod = "<lastmod>9999-12-31T23:00:00-01:00</lastmod>"
    site = Site(_URLSET.format(base="{base}", page="p-bad", lastmod=lastmod))
    flags = {"recrawl": True, "revisit_spare": 1.0, "max_duration": 3.0}
    intervals = {"revisit_initial": 1, "revisit_min": 1, "revisit_max": 2}
    records = await _crawl(site, tmp_path / "out", **flags, **intervals)
    maps = _sitemap_records(records)
    assert maps["bad.xml"]["extra"] == {"format": "urlset", "entries": 1, "dropped": 0}
    assert "/p-good" in site.paths
    assert site.paths.count("/index.xml") >= 2  # read again on its schedule

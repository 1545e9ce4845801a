"""A continuous crawl's sitemap read that fails is recorded and read again after a bounded
backoff, as a failed fetch is tried again, not after the sitemap's whole interval (here ten
minutes: longer than the test): a read that ended with an error of its own (it once left no
record and no next read, the sitemap never read again) and a fetch answered 503 (it once
waited the whole interval). A real server on 127.0.0.1; the error of the read is a failure of
crawl.db's staging of its entries, on the first read only."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import cut_short, serve

from gossamer.crawl import run_crawl
from gossamer.crawl import sitemapfiles as stage  # where a read's entries are staged
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

DURATION = 5.5


class Site:
    """``/sitemap.xml`` lists ``/a``; its first ``failing`` answers are 503, the ``cut`` next
    ones break off: the connection closes before the end of the body its head announced."""

    def __init__(self, failing: int = 0, cut: int = 0) -> None:
        self.failing = failing
        self.cut = cut
        self.hits: list[tuple[float, str]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append((time.monotonic(), request.path))
        base = f"http://127.0.0.1:{request.url.port}"
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nSitemap: {base}/sitemap.xml\n")
        if request.path == "/sitemap.xml":
            if self.reads() <= self.failing:
                return web.Response(status=503)
            rows = f"<url><loc>{base}/a</loc></url>"
            xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
            if self.reads() <= self.failing + self.cut:
                return await cut_short(request, xml.encode(), {"Content-Type": "application/xml"})
            return web.Response(text=xml, content_type="application/xml")
        if request.path in ("/", "/a"):
            return web.Response(text="<html><body>page</body></html>", content_type="text/html")
        return web.Response(status=404)

    def reads(self) -> int:
        return sum(path == "/sitemap.xml" for _, path in self.hits)


async def _recrawl(site: Site, out: Path) -> None:
    async with serve(site.handle) as port:
        settings = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "quiet": True,
            "recrawl": True,
            "revisit_initial": 600,
            "revisit_min": 1,
            "revisit_max": 600,
            "max_duration": DURATION,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), DURATION + 20)


def _sitemap_records(out: Path) -> list[dict[str, Any]]:
    records = map(json.loads, (out / "pages.jsonl").read_text("utf-8").splitlines())
    return [r for r in records if r.get("kind") == "sitemap"]


async def test_a_read_ended_by_an_error_is_recorded_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = [RuntimeError("disk full")]
    rows = stage.entry_rows

    def failing_once(*args: Any) -> Any:
        if failures:
            raise failures.pop()
        return rows(*args)

    monkeypatch.setattr(stage, "entry_rows", failing_once)
    site, out = Site(), tmp_path / "out"
    await _recrawl(site, out)
    assert site.reads() >= 2, site.hits
    records = _sitemap_records(out)
    assert [r["error"] for r in records][:2] == ["internal-error", None], records
    assert any(path == "/a" for _, path in site.hits)  # its entry admitted at the next read


async def test_a_sitemap_answered_503_is_read_again_after_a_backoff(tmp_path: Path) -> None:
    site, out = Site(failing=2), tmp_path / "out"
    await _recrawl(site, out)
    reads = [at for at, path in site.hits if path == "/sitemap.xml"]
    assert len(reads) >= 3, site.hits
    assert 0.9 <= reads[1] - reads[0] < 1.9 and 1.9 <= reads[2] - reads[1] < 2.9, reads
    statuses = [r["status"] for r in _sitemap_records(out)]
    assert statuses[:3] == [503, 503, 200]
    assert any(path == "/a" for _, path in site.hits)


async def test_a_sitemap_cut_short_is_read_again_after_a_backoff(tmp_path: Path) -> None:
    """A 2xx whose body the connection cut is a failed fetch, as a page's is retried: before,
    its read counted as complete and the next waited the whole interval."""
    site, out = Site(cut=1), tmp_path / "out"
    await _recrawl(site, out)
    reads = [at for at, path in site.hits if path == "/sitemap.xml"]
    assert len(reads) >= 2 and 0.9 <= reads[1] - reads[0] < 1.9, reads
    records = _sitemap_records(out)
    first = (records[0]["status"], records[0]["error"], records[0]["truncated"])
    assert first == (200, "incomplete-body", True), records[0]
    assert (records[1]["error"], records[1]["truncated"]) == (None, False), records[1]
    assert any(path == "/a" for _, path in site.hits)  # its entries before the cut admitted

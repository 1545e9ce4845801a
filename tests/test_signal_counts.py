"""What a crawl counts of the site owner's signals and of what it turned away, in stats.json
and on ``/metrics`` alike: pages ``noindex`` and ``nofollow``, canonical links and what
``--canonical follow`` made of them, URLs recorded or turned away for a spent page budget,
trap rejections and links with a user name or password, by reason."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve
from tests.ui.test_metrics import get, samples, value

from gossamer.crawl import build_crawler
from gossamer.metrics.exporter import MetricsServer
from gossamer.settings import canonical_seeds, load_settings

pytestmark = pytest.mark.timeout(60)

CANONICAL = {
    "/copy": "/main",  # followed
    "/away": "http://elsewhere.test/x",  # out of scope
    "/loop-a": "/loop-b",  # followed, then
    "/loop-b": "/loop-a",  # a loop
}
LINKS = [
    *CANONICAL,
    "/noindex",
    "/nofollow",
    "/none",
    "/scheme",
    "/cal/2026/01/01",
    "http://user:secret@127.0.0.1:{port}/private",
]


async def handle(request: web.Request) -> web.Response:
    path, port = request.path, request.url.port
    head, body, headers = "", "<p>A page of the site.</p>", {}
    if path == "/":
        body = "".join(f'<a href="{link.format(port=port)}">x</a>' for link in LINKS)
    elif path in CANONICAL:
        head = f'<link rel="canonical" href="{CANONICAL[path]}">'
    elif path == "/scheme":  # the same host and port, another scheme: the port speaks http
        head = f'<link rel="canonical" href="https://127.0.0.1:{port}/scheme">'
    elif path == "/noindex":
        head = '<meta name="robots" content="noindex">'
    elif path == "/nofollow":
        headers["X-Robots-Tag"] = "nofollow"
        body += '<a href="/hidden">hidden</a>'
    elif path == "/none":
        head = '<meta name="gossamer" content="none">'
    elif path.startswith("/cal/"):  # an endless calendar: each day links the next
        day = int(path.rpartition("/")[2])
        body = f'<a href="/cal/2026/01/{day + 1:02d}">next</a>'
    html = f"<html><head><title>t</title>{head}</head><body>{body}</body></html>"
    return web.Response(text=html, content_type="text/html", headers=headers)


async def crawl_with_metrics(out: Path, **flags: Any) -> tuple[dict[str, Any], str]:
    """stats.json of a crawl of the site and a scrape of its ``/metrics`` once it ended."""
    server = MetricsServer("local", "w")
    await server.start("127.0.0.1", 0)
    assert server.port
    try:
        async with serve(handle) as port:
            base = {"seeds": [f"http://127.0.0.1:{port}/"], "out": out, "quiet": True}
            settings = load_settings(base | flags, env={})
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds, None, server) as crawler:
                stats = await asyncio.wait_for(crawler.run(seeds), 30)
                _, _, text = await get(server.port, "/metrics")
    finally:
        await server.close()
    stats.write(out / "stats.json")
    return json.loads((out / "stats.json").read_text()), text


async def test_signals_and_rejections_are_counted_alike(tmp_path: Path) -> None:
    stats, text = await crawl_with_metrics(tmp_path, canonical="follow")
    scrape = samples(text)
    signals = stats["page_signals"]
    assert signals == {
        "noindex": 2,  # /noindex, /none
        "nofollow": 2,  # /nofollow, /none
        "noarchive": 0,
        "canonical": 5,  # /copy, /away, /loop-a, /loop-b, /scheme
        "canonical-conflict": 0,
        "canonical-followed": 2,  # /copy, /loop-a
        "canonical-offsite": 1,
        "canonical-scheme": 1,
        "canonical-loop": 1,
        "canonical-error": 0,
    }
    for signal, count in signals.items():
        assert value(scrape, "gossamer_page_signals_total", signal=signal) == count
    rejected = stats["rejected"]
    assert rejected["userinfo"] == 1 and rejected["trap-calendar"] == 1
    for reason, count in rejected.items():
        assert value(scrape, "gossamer_rejected_urls_total", reason=reason) == count


async def test_a_spent_budget_is_counted(tmp_path: Path) -> None:
    stats, text = await crawl_with_metrics(tmp_path, max_pages_per_host=3, per_host=1)
    records = (tmp_path / "pages.jsonl").read_text().splitlines()
    budget = [r for r in map(json.loads, records) if r["error"] == "budget"]
    assert stats["budget"] == len(budget) > 0
    assert value(samples(text), "gossamer_pages_total", outcome="budget") == len(budget)

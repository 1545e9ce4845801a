"""A crawl of the trap web (``gossamer.testweb.trapweb``): every real page is fetched, the
traps (an endless calendar, faceted navigation, session ids, a relative-link path loop) cost
a few fetches each, and their URLs are turned away by reason."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats
from gossamer.testweb import TestWebServer
from gossamer.testweb.trapweb import generate_traps, trap_kind
from gossamer.urls import canonicalize

pytestmark = pytest.mark.timeout(60)


async def crawl(server: TestWebServer, out: Path, **flags: Any) -> CrawlStats:
    base = {
        "seeds": [server.url(0)],
        "out": out,
        "resolve": ["*.test=127.0.0.1"],
        "quiet": True,
        "concurrency": 16,
        "per_host": 4,
    }
    return await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), 50)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


async def test_every_real_page_is_crawled_and_traps_cost_few_fetches(tmp_path: Path) -> None:
    web = generate_traps(7, pages=300)
    async with TestWebServer(web) as server:
        stats = await crawl(server, tmp_path / "out")
        log = [e for e in server.log if e.path != "/robots.txt"]
    ok = {r["url"] for r in records(tmp_path / "out") if r["status"] == 200}
    truth = web.reachable([server.url(0)], port=server.port)
    assert len(truth) >= 290
    assert truth <= ok, f"missed {sorted(truth - ok)[:5]}"
    kinds = Counter(trap_kind(*e.path.partition("?")[::2]) for e in log)
    trapped = sum(n for kind, n in kinds.items() if kind is not None)
    print(f"fetches {len(log)}, on traps {trapped} ({trapped / len(log):.1%}): {dict(kinds)}")
    print(f"rejected {stats.rejected}")
    assert trapped <= 0.05 * len(log)
    assert {"trap-calendar", "trap-facets", "trap-loop", "trap-session"} <= set(stats.rejected)
    # session ids are stripped: the account page is fetched once however many ids it hands out
    account = [e for e in log if canonicalize(server.url(0, e.path)).endswith("/trap/account")]
    assert len(account) == 1


async def test_a_host_stops_at_its_page_budget(tmp_path: Path) -> None:
    web = generate_traps(7, pages=300)
    async with TestWebServer(web) as server:
        await crawl(server, tmp_path / "out", max_pages_per_host=40)
        fetched = [e for e in server.log if e.path not in ("/robots.txt", "/sitemap.xml")]
    found = records(tmp_path / "out")
    # robots.txt forbids a few others; a sitemap's record is no page
    pages = [r for r in found if r["status"] is not None and r["kind"] == "page"]
    budget = [r for r in found if r["error"] == "budget"]
    assert len(pages) == len(fetched) == 40
    assert budget and all(r["status"] is None for r in budget)
    assert len({r["url"] for r in found}) == len(found)  # each URL recorded once

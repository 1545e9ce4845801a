"""What a crawl keeps of each page: main text and metadata of HTML, plain text, PDF text, in
every embedded sink; ``--no-text`` and ``--max-text-chars``. Real server on loopback."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.sinks.base import FIELD_NAMES, PageRecord
from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(60)

ARTICLE = """<!doctype html><html lang="en-GB"><head><title>Rivers</title>
<meta name="description" content="All about rivers.">
<meta name="author" content="Ada Lovelace">
<meta property="article:published_time" content="2024-05-01T10:00:00Z">
<link rel="canonical" href="/rivers">
</head><body>
<nav><a href="/">Home</a> <a href="/a">About</a> <a href="/c">Contact</a></nav>
<article><h1>Rivers of the world</h1>
<p>Rivers carry water from the mountains to the sea, shaping valleys and plains along the
way, and people have settled on their banks for as long as there have been people.</p>
<img src="/img/delta.jpg" alt="A delta">
<p>The longest rivers cross whole continents; their basins feed billions, and their floods
have been feared and welcomed in turn by every civilisation that grew beside them.</p>
<ul><li>The Nile</li><li>The Amazon</li></ul></article>
<footer>Copyright 2024 River Facts. All rights reserved.</footer>
<a href="/plain.txt">plain</a> <a href="/doc.pdf">pdf</a> <a href="/bare">bare</a>
</body></html>"""

PLAIN = "Первый абзац\nстрока два\n\n\nВторой"
PAGES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html; charset=utf-8", ARTICLE.encode()),
    "/plain.txt": ("text/plain; charset=windows-1251", PLAIN.encode("cp1251")),
    "/doc.pdf": ("application/pdf", payloads.pdf("text of the pdf")),
    "/bare": ("text/html", b"<html><body><p>bare</p></body></html>"),
}  # fmt: skip


async def handle(request: web.Request) -> web.Response:
    found = PAGES.get(request.path)
    if found is None:
        return web.Response(status=404)
    return web.Response(body=found[1], headers={"Content-Type": found[0]})


async def crawl(out: Path, **flags: Any) -> dict[str, dict[str, Any]]:
    async with serve(handle) as port:
        base = {
            "seeds": [f"http://site.test:{port}/"],
            "out": out,
            "resolve": ["site.test=127.0.0.1"],
            "robots": False,
            "quiet": True,
        }
        await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), 30)
    lines = (out / "pages.jsonl").read_text().splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}


async def test_each_page_keeps_its_text_and_metadata(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out")
    home = records["/"]
    assert "Rivers carry water" in home["text"] and "The Nile" in home["text"]
    assert "Copyright" not in home["text"] and "Contact" not in home["text"]
    assert home["text_chars"] == len(home["text"])
    assert home["lang"] == "en" and home["description"] == "All about rivers."
    assert home["canonical"].endswith("/rivers") and home["canonical"].startswith("http://")
    assert home["published"].startswith("2024-05-01") and home["authors"] == ["Ada Lovelace"]
    assert [i["alt"] for i in home["images"]] == ["A delta"]
    assert home["images"][0]["src"].endswith("/img/delta.jpg")
    assert records["/plain.txt"]["text"] == "Первый абзац\nстрока два\n\nВторой"
    assert records["/doc.pdf"]["text"] == "text of the pdf"
    bare = records["/bare"]
    assert bare["text"] == "bare" and bare["lang"] is None and bare["authors"] == []
    assert bare["images"] == [] and bare["published"] is None
    with sqlite3.connect(tmp_path / "out" / "crawl.db") as conn:
        rows = conn.execute(f"SELECT {', '.join(FIELD_NAMES)} FROM pages").fetchall()
    stored = {r.url.rsplit("/", 1)[1]: r for r in map(PageRecord.from_row, rows)}
    assert stored[""].authors == ("Ada Lovelace",) and stored[""].text == home["text"]


async def test_no_text_and_a_text_limit(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "none", text=False)
    assert all(r["text"] is None and r["text_chars"] is None for r in records.values())
    cut = await crawl(tmp_path / "cut", max_text_chars=20)
    assert len(cut["/"]["text"]) == 20 and "text-cut" in cut["/"]["flags"]
    assert cut["/"]["text_chars"] > 20

"""Rule items in the PostgreSQL store: the items table holds each page's items once, keyed by
(url, rule, idx), a page written again replacing its items; a real crawl leaves items.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests.e2e.harness import load_records, run_crawl
from tests.pg_server import PostgresServer

from gossamer.sinks.base import Item, PageRecord
from gossamer.sinks.postgres import PostgresSink, items_table
from gossamer.testweb import TestWebServer, generate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

RULES = """
[[rule]]
name = "paragraphs"
url = '.'

[rule.record]
css = "p"

[[rule.field]]
name = "words"
css = "p"
process = [{regex = '^(\\S+ \\S+)', group = 1}, {replace = " ", with = "\\u0000"}]
"""


async def _items(url: str, table: str) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        rows = await conn.fetch(
            "SELECT url, rule, idx, fetched_at, fields::text AS fields "
            f'FROM "{items_table(table)}" ORDER BY url, idx'
        )
    finally:
        await conn.close()
    return [dict(row) | {"fields": json.loads(row["fields"])} for row in rows]


def _page(url: str, count: int, rule: str | None = "r") -> PageRecord:
    found = tuple(Item(url, rule or "", i, 1.0, {"n": i, "t": "a\x00b"}) for i in range(count))
    return PageRecord(url, 200, 0, rule=rule, items=count, found=found)


async def test_a_page_written_again_replaces_its_items(pg: PostgresServer, table: str) -> None:
    sink = await PostgresSink.open(pg.table_url(table), "w1")
    try:
        await sink.write([_page("http://a.test/1", 3), _page("http://a.test/2", 2)])
        await sink.write([_page("http://a.test/1", 1), _page("http://a.test/2", 2)])
        # The same URL twice in one batch: the last record's items win.
        await sink.write([_page("http://a.test/3", 4), _page("http://a.test/3", 2)])
        await sink.write([PageRecord("http://a.test/4", 404, 0)])
    finally:
        await sink.close()
    rows = await _items(pg.url, table)
    assert [(r["url"], r["idx"]) for r in rows] == [
        ("http://a.test/1", 0),
        ("http://a.test/2", 0),
        ("http://a.test/2", 1),
        ("http://a.test/3", 0),
        ("http://a.test/3", 1),
    ]
    assert rows[0]["fields"] == {"n": 0, "t": "a\ufffdb"}  # jsonb holds no NUL


async def test_crawl_items_reach_the_store_once(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, "utf-8")
    web = generate(8, hosts=2, pages_per_host=20, specials=(), crawl_delay=None)
    args = ["--robots-retry", "0.3", "--store", pg.table_url(table), "--rules", str(rules)]
    async with TestWebServer(web) as server:
        code, log = await run_crawl(tmp_path, server, [server.url(0), *args])
        assert code == 0, log
        # The same crawl again into the same table: the items are replaced, not added.
        code, log = await run_crawl(tmp_path, server, [server.url(0), *args, "--overwrite"])
        assert code == 0, log
    lines = (tmp_path / "out" / "items.jsonl").read_text("utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    stored = await _items(pg.url, table)
    assert len(stored) == len(items) > 40
    assert all("\x00" in i["fields"]["words"] for i in items)
    key = lambda i: (i["url"], i["fields"]["words"].replace("\x00", "\ufffd"))  # noqa: E731
    assert sorted(map(key, stored)) == sorted(map(key, items))
    records = load_records(tmp_path)
    counts = {r["url"]: r["items"] for r in records if r["items"]}
    assert {r["url"]: r["idx"] + 1 for r in stored} == counts

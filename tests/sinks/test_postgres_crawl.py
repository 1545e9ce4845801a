"""`gossamer crawl --store postgres://...`: the table holds pages.jsonl, content included."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests.content_site import PDF_TEXT, crawl
from tests.e2e.harness import load_records, run_crawl, wait_for_records
from tests.pg_server import PostgresServer, table_rows

from gossamer.crawl import build_crawler, prepare_out_dir
from gossamer.settings import load_settings
from gossamer.sinks import postgres
from gossamer.sinks.base import FIELD_NAMES, PageRecord
from gossamer.sinks.postgres import StoreError
from gossamer.testweb import TestWebServer, generate
from gossamer.urls import fingerprint

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--total-timeout", "2"]


def _records_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table's rows as pages.jsonl records, sorted by URL."""
    for row in rows:
        assert row["fp"] == fingerprint(row["url"])
    return sorted(({k: row[k] for k in FIELD_NAMES} for row in rows), key=lambda r: r["url"])


def _sorted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: r["url"])


async def test_crawl_leaves_exactly_its_records_in_the_table(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    web = generate(7, hosts=4, pages_per_host=25, crawl_delay=None)
    async with TestWebServer(web, flaky_failures=1) as server:
        args = [server.url(0), *FAST, "--concurrency", "16", "--store", pg.table_url(table)]
        code, log = await run_crawl(tmp_path, server, args)
    assert code == 0, log
    records = load_records(tmp_path)
    assert len(records) > 50
    assert {r["error"] for r in records} > {None}, "no failed or blocked URL to store"
    rows = await table_rows(pg.url, table)
    assert _records_of(rows) == _sorted(records)
    assert len({row["worker"] for row in rows}) == 1


def _settings(
    out: Path, store: str, *, resume: bool = False, seed: str = "", delay: float = 0.05
) -> Any:
    flags = {
        "seeds": [seed] if seed else None,
        "out": out,
        "store": store,
        "resume": resume,
        "resolve": ["*.test=127.0.0.1"],
        "allow_domains": ["test"],
        "concurrency": 4,
        "per_host": 1,
        "delay": delay,
        "robots_retry": 0.3,
        "retry_backoff": 0.05,
        "total_timeout": 2.0,
        "checkpoint_interval": 0.1,
    }
    return load_settings(flags, env={})


def _crawl_db_records(out: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(out / "crawl.db") as conn:
        rows = conn.execute(f"SELECT {', '.join(FIELD_NAMES)} FROM pages ORDER BY id").fetchall()
    return [json.loads(PageRecord.from_row(row).to_json()) for row in rows]


async def test_store_lost_mid_crawl_stops_it_and_resume_re_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "RETRY_FOR", 1.0)
    out = tmp_path / "out"
    web = generate(9, hosts=3, pages_per_host=30, specials=(), crawl_delay=None)
    with PostgresServer() as pg:
        store = pg.table_url("pages")
        async with TestWebServer(web, flaky_failures=0) as server:
            # paced so the crawl is far from done when the store goes (stopping PostgreSQL
            # takes a second or more on a busy machine: 84 pages at 0.05 s were all fetched)
            settings = _settings(out, store, seed=server.url(0), delay=0.2)
            prepare_out_dir(settings)
            async with build_crawler(settings, list(settings.seeds)) as crawler:
                crawl = asyncio.create_task(crawler.run(list(settings.seeds)))
                await wait_for_records(tmp_path, 10)
                await _wait_for_rows(pg.url, 10)  # the store too has some, on a busy machine
                await asyncio.to_thread(pg.stop)
                with pytest.raises(StoreError, match=r"lost PostgreSQL .*--resume"):
                    await asyncio.wait_for(crawl, 30)
            # Nothing fetched is lost: crawl.db and pages.jsonl hold the same records.
            lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
            stopped = [json.loads(line) for line in lines]
            assert stopped == _crawl_db_records(out)
            await asyncio.to_thread(pg.start)
            before = _records_of(await table_rows(pg.url, "pages"))
            assert 10 <= len(before) < len(stopped), "the store was not behind when it stopped"
            assert all(r in stopped for r in before)

            resumed = _settings(out, store, resume=True, delay=0.2)
            async with build_crawler(resumed, []) as crawler:
                await asyncio.wait_for(crawler.run([]), 60)
        records = load_records(tmp_path)
        assert len(records) > len(stopped)
        assert _records_of(await table_rows(pg.url, "pages")) == _sorted(records)


async def _wait_for_rows(url: str, count: int, limit: float = 30) -> None:
    """Until the store's table holds ``count`` rows (its writes go after pages.jsonl's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while len(await table_rows(url, "pages")) < count:
        assert loop.time() < deadline, f"the store never held {count} rows"
        await asyncio.sleep(0.05)


async def test_the_table_holds_the_content_fields(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    records = await crawl(tmp_path / "out", store=pg.table_url(table))
    rows = await table_rows(pg.url, table)
    assert _records_of(rows) == _sorted(list(records.values()))
    by_path = {"/" + row["url"].split("/", 3)[3]: row for row in rows}
    home = by_path["/"]
    assert home["authors"] == ["Ada Lovelace"] and home["lang"] == "en"
    assert home["images"] == records["/"]["images"] and len(home["images"]) == 1
    assert home["text"] == records["/"]["text"] and home["text_chars"] == len(home["text"])
    assert (home["description"], home["published"]) == (
        "All about rivers.",
        "2024-05-01T10:00:00+00:00",
    )
    assert by_path["/de"]["lang"] == "de" and by_path["/plain.txt"]["lang"] == "ru"
    assert by_path["/doc.pdf"]["text"] == PDF_TEXT
    missing = by_path["/missing"]  # no content: null and empty arrays, as in pages.jsonl
    assert (missing["text"], missing["lang"], missing["authors"], missing["images"]) == (
        None,
        None,
        [],
        [],
    )
    conn = await asyncpg.connect(pg.url)
    try:
        types = dict(
            await conn.fetch(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_name = $1",
                table,
            )
        )
    finally:
        await conn.close()
    assert {k: types[k] for k in ("text", "lang", "authors", "images", "text_chars")} == {
        "text": "text",
        "lang": "text",
        "authors": "jsonb",
        "images": "jsonb",
        "text_chars": "bigint",
    }

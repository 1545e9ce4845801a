"""The PostgreSQL page store against a real private PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import msgspec
import pytest
from tests.pg_server import PostgresServer, table_rows

from gossamer.settings import SettingsError
from gossamer.sinks.base import PageRecord
from gossamer.sinks.postgres import PostgresSink, StoreError, parse_store_url
from gossamer.urls import fingerprint

UNICODE = "Ünïcödé 日本語 עברית 😀 e\u0301 \u200b"
RECORDS = [
    PageRecord(
        "http://a.test/%C3%BC/%E6%97%A5?q=%F0%9F%98%80", 200, 1, "text/html", 1234,
        1_700_000_000.125, 12.5, UNICODE, 10,
    ),
    PageRecord("http://a.test/big", 200, 2, "text/html", 10 << 20, 1.5, 0.1, "x" * 1_000_000,
               outlinks=70_000, truncated=True),
    PageRecord("http://a.test/gone", None, 0, error="connect-timeout " + "e" * 100_000,
               attempts=4),
    PageRecord("http://a.test/moved", 301, 3, redirect_to="http://b.test/", fetched_at=2.0),
    PageRecord("http://a.test/private", None, 1, error="robots"),
    PageRecord("http://a.test/article", 200, 1, text="Para one.\n\nPara ü two.", lang="en",
               description="d", canonical="http://a.test/c", published="2024-05-01",
               authors=("Ada", "Bo"), images=({"src": "http://a.test/i.png", "alt": None},),
               text_chars=21),
    PageRecord("http://a.test/hooked", 200, 1, flags=("html-flattened",),
               extra={"prices": [1.5, "ü"], "nested": {"a": None}}),
    PageRecord("http://a.test/kept", 200, 1, warc_file="gossamer-20260101000000000-00001.warc.gz",
               warc_offset=5_000_000_000, warc_length=1234),
]  # fmt: skip


def _as_dicts(records: list[PageRecord], worker: str) -> list[dict[str, object]]:
    rows = [{"fp": fingerprint(r.url), **json.loads(r.to_json())} for r in records]
    return sorted(({**row, "worker": worker} for row in rows), key=lambda row: str(row["url"]))


@pytest.fixture
def own_pg() -> Iterator[PostgresServer]:
    """A server of the test's own, to stop and start."""
    with PostgresServer() as server:
        yield server


# -- the URL --------------------------------------------------------------------------------


def test_url_gives_table_and_connection_string() -> None:
    target = parse_store_url(
        "postgresql://u:secret@db.example:5433/crawl?table=pages_2&sslmode=disable"
    )
    assert target.table == "pages_2"
    assert target.dsn == "postgresql://u:secret@db.example:5433/crawl?sslmode=disable"
    assert "secret" not in target.shown and "u:***@db.example" in target.shown
    assert parse_store_url("postgres://localhost/crawl").table == "pages"


@pytest.mark.parametrize(
    "table",
    ["Pages", "1pages", "pages;drop table x", "pa-ges", "public.pages", "", "a" * 64, "päges"],
)
def test_table_name_must_be_a_plain_lowercase_name(table: str) -> None:
    with pytest.raises(SettingsError, match="invalid setting 'store': table"):
        parse_store_url(f"postgres://localhost/crawl?table={table}")


@pytest.mark.parametrize(
    "url", ["mysql://localhost/db", "localhost/db", "postgres://localhost:99999/db", "", "pg:"]
)
def test_bad_url_is_a_settings_error(url: str) -> None:
    with pytest.raises(SettingsError, match="invalid setting 'store'"):
        parse_store_url(url)


def test_longest_table_name_is_accepted() -> None:
    assert parse_store_url(f"postgres://h/d?table={'a' * 63}").table == "a" * 63


# -- writing --------------------------------------------------------------------------------


async def test_round_trip_of_unicode_and_large_fields(pg: PostgresServer, table: str) -> None:
    sink = await PostgresSink.open(pg.table_url(table), "w0")
    try:
        await sink.write(RECORDS)
    finally:
        await sink.close()
    rows = await table_rows(pg.url, table)
    assert rows == _as_dicts(RECORDS, "w0")
    assert any(row["title"] == UNICODE for row in rows)
    assert max(len(str(row["title"] or "")) for row in rows) == 1_000_000


async def test_duplicate_url_is_upserted(pg: PostgresServer, table: str) -> None:
    first = PageRecord("http://a.test/p", 503, 1, error="http-503", attempts=1)
    second = msgspec.structs.replace(first, status=200, error=None, attempts=2, title="again")
    sink = await PostgresSink.open(pg.table_url(table), "w0")
    other = await PostgresSink.open(pg.table_url(table), "w1")  # the table exists already
    try:
        await sink.write([first, RECORDS[0]])
        await other.write([second])
        rows = {row["url"]: row for row in await table_rows(pg.url, table)}
        assert rows == {
            second.url: _as_dicts([second], "w1")[0],
            RECORDS[0].url: _as_dicts([RECORDS[0]], "w0")[0],
        }
        # Twice in one batch: the last one wins.
        await sink.write([first, second, first])
    finally:
        await sink.close()
        await other.close()
    rows = {row["url"]: row for row in await table_rows(pg.url, table)}
    assert len(rows) == 2
    assert rows[first.url] == _as_dicts([first], "w0")[0]


async def test_nul_characters_become_replacement_characters(pg: PostgresServer, table: str) -> None:
    sink = await PostgresSink.open(pg.table_url(table), "w0")
    try:
        await sink.write([PageRecord("http://a.test/", 200, 0, title="a\x00b")])
    finally:
        await sink.close()
    assert [row["title"] for row in await table_rows(pg.url, table)] == ["a\ufffdb"]


async def test_table_created_once_by_workers_starting_together(
    pg: PostgresServer, table: str
) -> None:
    sinks = await asyncio.gather(
        *(PostgresSink.open(pg.table_url(table), f"w{i}") for i in range(4))
    )
    try:
        await asyncio.gather(*(s.write(RECORDS[i : i + 1]) for i, s in enumerate(sinks)))
    finally:
        await asyncio.gather(*(s.close() for s in sinks))
    assert len(await table_rows(pg.url, table)) == 4


async def test_a_foreign_table_of_that_name_is_refused(pg: PostgresServer, table: str) -> None:
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text)")
    finally:
        await conn.close()
    with pytest.raises(StoreError, match=f"table '{table}' .* is not a gossamer page table"):
        await PostgresSink.open(pg.table_url(table), "w0")


async def test_an_older_table_gains_the_added_columns(pg: PostgresServer, table: str) -> None:
    sink = await PostgresSink.open(pg.table_url(table), "w0")
    await sink.close()
    conn = await asyncpg.connect(pg.url)
    try:
        for name in ("flags", "warc_file", "warc_offset", "warc_length"):
            await conn.execute(f'ALTER TABLE {table} DROP COLUMN "{name}"')
    finally:
        await conn.close()
    sink = await PostgresSink.open(pg.table_url(table), "w0")
    try:
        await sink.write(RECORDS[-1:])
    finally:
        await sink.close()
    assert await table_rows(pg.url, table) == _as_dicts(RECORDS[-1:], "w0")


# -- failures at start ----------------------------------------------------------------------


async def test_unreachable_server_fails_at_open_quickly(own_pg: PostgresServer) -> None:
    url = own_pg.url.replace("postgres@", "postgres:secret@")
    own_pg.stop()
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot use PostgreSQL at postgres://postgres:\\*\\*\\*@"):
        await PostgresSink.open(url, "w0")
    assert time.monotonic() - started < 10


async def test_missing_database_fails_at_open(pg: PostgresServer) -> None:
    with pytest.raises(StoreError, match="InvalidCatalogNameError"):
        await PostgresSink.open(pg.url.rsplit("/", 1)[0] + "/nosuchdb", "w0")


async def test_bad_connection_parameter_is_a_settings_error(pg: PostgresServer) -> None:
    with pytest.raises(SettingsError, match="invalid setting 'store'"):
        await PostgresSink.open(pg.url + "?sslmode=sometimes", "w0")


# -- a server that goes away ----------------------------------------------------------------


async def test_write_waits_for_a_server_that_comes_back(own_pg: PostgresServer) -> None:
    sink = await PostgresSink.open(own_pg.table_url("pages"), "w0", retry_for=30)
    try:
        await sink.write(RECORDS[:1])
        await asyncio.to_thread(own_pg.stop)
        write = asyncio.create_task(sink.write(RECORDS[1:]))
        await asyncio.sleep(1.0)
        assert not write.done()
        await asyncio.to_thread(own_pg.start)
        await asyncio.wait_for(write, 20)
    finally:
        await sink.close()
    assert await table_rows(own_pg.url, "pages") == _as_dicts(RECORDS, "w0")


async def test_write_gives_up_after_retry_time_then_fails_fast(own_pg: PostgresServer) -> None:
    sink = await PostgresSink.open(own_pg.table_url("pages"), "w0", retry_for=1.0)
    try:
        await asyncio.to_thread(own_pg.stop)
        started = time.monotonic()
        with pytest.raises(StoreError, match=r"lost PostgreSQL .* for 1s .*--resume"):
            await sink.write(RECORDS)
        assert 1.0 <= time.monotonic() - started < 10
        await asyncio.to_thread(own_pg.start)
        with pytest.raises(StoreError, match="lost PostgreSQL"):  # stays failed: the crawl stops
            await sink.write(RECORDS)
    finally:
        await sink.close()


# -- the command line -----------------------------------------------------------------------


async def _crawl(tmp_path: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer.cli", "crawl", "http://a.test/", "--quiet",
        "--out", str(tmp_path / "out"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_crawl_with_unreachable_store_is_one_line_exit_1(
    tmp_path: Path, own_pg: PostgresServer
) -> None:
    own_pg.stop()
    code, err = await _crawl(tmp_path, "--store", own_pg.url)
    assert code == 1, err
    assert err.count("\n") == 1 and "cannot use PostgreSQL" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "crawl.db").exists(), "a failed start left a crawl behind"


async def test_crawl_with_malformed_store_is_one_line_exit_2(tmp_path: Path) -> None:
    code, err = await _crawl(tmp_path, "--store", "postgres://localhost/db?table=Bad")
    assert code == 2, err
    assert err.count("\n") == 1 and "invalid setting 'store'" in err, err

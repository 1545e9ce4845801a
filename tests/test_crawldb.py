"""crawl.db's writes: None, booleans and bytes are bound as sqlite3 binds them unadapted
(their adapters only skip its slow search for one)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gossamer.crawldb import CrawlDB


async def test_none_booleans_and_bytes_are_stored_as_null_integers_and_blobs(
    tmp_path: Path,
) -> None:
    db = CrawlDB(tmp_path / "crawl.db")
    try:
        db.query("CREATE TABLE scratch (k TEXT, v)")
        values = [("none", None), ("true", True), ("false", False), ("bytes", b"\x00x")]
        db.stage("INSERT INTO scratch (k, v) VALUES (?, ?)", values)
        await db.commit()
        rows = db.query("SELECT k, typeof(v), v FROM scratch ORDER BY k")
    finally:
        db.close()
    assert rows == [
        ("bytes", "blob", b"\x00x"),
        ("false", "integer", 0),
        ("none", "null", None),
        ("true", "integer", 1),
    ]


def test_the_adapters_return_the_value_as_it_is() -> None:
    for kind in (type(None), bool, bytes):
        adapter = sqlite3.adapters[(kind, sqlite3.PrepareProtocol)]
        assert adapter(kind()) == kind()


async def test_rows_staged_last_run_after_everything_staged(tmp_path: Path) -> None:
    db = CrawlDB(tmp_path / "crawl.db")
    try:
        db.query("CREATE TABLE scratch (k INTEGER PRIMARY KEY, done INTEGER DEFAULT 0)")
        db.query("CREATE TABLE other (k INTEGER)")
        insert = "INSERT INTO scratch (k) VALUES (?)"
        done = "UPDATE scratch SET done = 1 WHERE k = ?"
        for k in range(3):  # a page's pattern: its new URL, a row elsewhere, its URL finished
            db.stage(insert, [(k + 10,)])
            db.stage("INSERT INTO other (k) VALUES (?)", [(k,)])
            db.stage_last(done, (k + 10 if k else 12,))  # the first marks a row staged later
        await db.commit()
        rows = db.query("SELECT k, done FROM scratch ORDER BY k")
        others = db.query("SELECT k FROM other ORDER BY rowid")
    finally:
        db.close()
    assert rows == [(10, 0), (11, 1), (12, 1)]
    assert others == [(0,), (1,), (2,)]

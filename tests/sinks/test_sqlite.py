"""Page records in crawl.db: a crawl.db written before the ``flags`` column existed is
brought up to the schema when opened (``--resume`` of an older crawl)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gossamer import crawldb
from gossamer.crawldb import CrawlDB
from gossamer.sinks.base import PageRecord
from gossamer.sinks.sqlite import SQLiteSink

# The pages table as crawl.db held it before ``flags`` (commit 7d6dbcf).
OLD_PAGES = """
CREATE TABLE pages (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    status INTEGER,
    depth INTEGER NOT NULL,
    content_type TEXT,
    bytes INTEGER NOT NULL,
    fetched_at REAL,
    elapsed_ms REAL,
    title TEXT,
    outlinks INTEGER NOT NULL,
    redirect_to TEXT,
    error TEXT,
    attempts INTEGER NOT NULL,
    truncated INTEGER NOT NULL
);
"""


def old_crawl_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(OLD_PAGES)
        conn.execute(
            "INSERT INTO pages (url, status, depth, content_type, bytes, fetched_at, elapsed_ms,"
            " title, outlinks, redirect_to, error, attempts, truncated)"
            " VALUES ('http://h.test/', 200, 0, 'text/html', 10, 1.5, 2.5, 'T', 3, NULL, NULL,"
            " 1, 0)"
        )
    conn.close()


async def test_an_old_crawl_db_gains_the_added_columns(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    old_crawl_db(path)
    db = CrawlDB(path)
    columns: list[str] = [row[1] for row in db.query("PRAGMA table_info(pages)")]
    added = [name for name, _ in crawldb._ADDED_COLUMNS]
    assert columns[-len(added) :] == added
    assert added[:5] == ["flags", "extra", "warc_file", "warc_offset", "warc_length"]
    sink = SQLiteSink(db)
    [old] = sink.records_after(0)
    assert old == PageRecord(
        "http://h.test/",
        200,
        0,
        content_type="text/html",
        bytes=10,
        fetched_at=1.5,
        elapsed_ms=2.5,
        title="T",
        outlinks=3,
    )
    assert old.flags == ()
    assert old.warc_file is None and old.warc_offset is None and old.warc_length is None
    new = PageRecord(
        "http://h.test/x",
        200,
        1,
        flags=("html-flattened",),
        warc_file="gossamer-20260101000000000-00001.warc.gz",
        warc_offset=512,
        warc_length=2048,
    )
    sink.stage([new])
    await db.commit()
    assert sink.records_after(1) == [new]
    db.close()

    reopened = CrawlDB(path)  # a second opening finds nothing to add
    assert [r.flags for r in SQLiteSink(reopened).records_after(0)] == [(), ("html-flattened",)]
    reopened.close()

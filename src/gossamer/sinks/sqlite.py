"""Page records in crawl.db, committed with the frontier state they belong to."""

from __future__ import annotations

from gossamer.crawldb import CrawlDB
from gossamer.sinks.base import FIELD_NAMES, PageRecord

_INSERT = (
    f"INSERT INTO pages ({', '.join(FIELD_NAMES)}) VALUES ({', '.join('?' for _ in FIELD_NAMES)})"
)


class SQLiteSink:
    """Stages records into crawl.db; the engine's checkpoint commits them."""

    def __init__(self, db: CrawlDB) -> None:
        self._db = db

    def stage(self, records: list[PageRecord]) -> None:
        """Stage a batch of records for the next commit."""
        self._db.stage(_INSERT, (r.as_row() for r in records))

    def count(self) -> int:
        """Records committed so far."""
        return int(self._db.query("SELECT COUNT(*) FROM pages")[0][0])

    def records_after(self, count: int) -> list[PageRecord]:
        """Committed records past the first ``count``, in order."""
        rows = self._db.query(
            f"SELECT {', '.join(FIELD_NAMES)} FROM pages WHERE id > ? ORDER BY id", (count,)
        )
        return [PageRecord.from_row(row) for row in rows]

"""Page records in crawl.db, committed with the frontier state they belong to: the crawl's
:class:`~gossamer.sinks.base.Journal`."""

from __future__ import annotations

from collections.abc import Sequence

from gossamer.crawldb import CrawlDB
from gossamer.sinks.base import FIELD_NAMES, PageRecord

_INSERT = (
    f"INSERT INTO pages ({', '.join(FIELD_NAMES)}) VALUES ({', '.join('?' for _ in FIELD_NAMES)})"
)
_INSERT_SITEMAP = "INSERT OR IGNORE INTO sitemaps (host, url) VALUES (?, ?)"


class SQLiteSink:
    """Stages records into crawl.db; the engine's checkpoint commits them."""

    def __init__(self, db: CrawlDB) -> None:
        self._db = db

    def stage(self, records: list[PageRecord]) -> None:
        """Stage a batch of records for the next commit."""
        self._db.stage(_INSERT, (r.as_row() for r in records))

    def stage_sitemaps(self, host: str, urls: Sequence[str]) -> None:
        """Stage the ``Sitemap:`` lines of ``host``'s robots.txt."""
        self._db.stage(_INSERT_SITEMAP, [(host, url) for url in urls])

    def set_meta(self, key: str, value: str) -> None:
        """Stage a meta value."""
        self._db.set_meta(key, value)

    async def commit(self) -> None:
        """Commit crawl.db: everything staged, the frontier's state included."""
        await self._db.commit()

    def outcome_counts(self) -> list[tuple[int | None, str | None, int]]:
        """``(status, error, records)`` over the committed records."""
        rows = self._db.query("SELECT status, error, COUNT(*) FROM pages GROUP BY status, error")
        return [(status, error, int(count)) for status, error, count in rows]

    def count(self) -> int:
        """Records committed so far."""
        return int(self._db.query("SELECT COUNT(*) FROM pages")[0][0])

    def records_after(self, count: int) -> list[PageRecord]:
        """Committed records past the first ``count``, in order."""
        rows = self._db.query(
            f"SELECT {', '.join(FIELD_NAMES)} FROM pages WHERE id > ? ORDER BY id", (count,)
        )
        return [PageRecord.from_row(row) for row in rows]

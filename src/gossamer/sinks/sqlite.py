"""Page records in crawl.db, committed with the frontier state they belong to: the crawl's
:class:`~gossamer.sinks.base.Journal`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from msgspec.structs import replace

from gossamer.crawldb import CrawlDB
from gossamer.sinks.base import FIELD_NAMES, Item, PageRecord

_INSERT = (
    f"INSERT INTO pages ({', '.join(FIELD_NAMES)}) VALUES ({', '.join('?' for _ in FIELD_NAMES)})"
)
_INSERT_ITEM = (
    "INSERT INTO items (page, url, rule, idx, fetched_at, fields) "
    "VALUES ((SELECT max(id) FROM pages), ?, ?, ?, ?, ?)"
)
"""Staged right after the item's page row, in the same transaction: the newest page is its."""
_ITEM_COLUMNS = "url, rule, idx, fetched_at, fields"
_INSERT_SITEMAP = "INSERT OR IGNORE INTO sitemaps (host, url) VALUES (?, ?)"


class SQLiteSink:
    """Stages records into crawl.db; the engine's checkpoint commits them."""

    def __init__(self, db: CrawlDB) -> None:
        self._db = db

    def stage(self, records: list[PageRecord]) -> None:
        """Stage a batch of records, each followed by its items, for the next commit."""
        if len(records) == 1 and not records[0].found:  # a page's record, as most are
            self._db.stage(_INSERT, [records[0].as_row()])
            return
        start = 0
        for i, record in enumerate(records):
            if record.found:
                self._db.stage(_INSERT, (r.as_row() for r in records[start : i + 1]))
                self._db.stage(_INSERT_ITEM, map(_item_row, record.found))
                start = i + 1
        self._db.stage(_INSERT, (r.as_row() for r in records[start:]))

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
        """``(status, error, records)`` over the committed records of pages (a sitemap's
        record is no page: see `Ledger.note`)."""
        rows = self._db.query(
            "SELECT status, error, COUNT(*) FROM pages WHERE kind = 'page' GROUP BY status, error"
        )
        return [(status, error, int(count)) for status, error, count in rows]

    def count(self) -> int:
        """Records committed so far."""
        return int(self._db.query("SELECT COUNT(*) FROM pages")[0][0])

    def records_after(self, count: int) -> list[PageRecord]:
        """Committed records past the first ``count``, in order, with their items."""
        rows = self._db.query(
            f"SELECT id, {', '.join(FIELD_NAMES)} FROM pages WHERE id > ? ORDER BY id", (count,)
        )
        found: dict[int, list[Item]] = {}
        if any(row[1 + _ITEMS] for row in rows):
            for page, *item in self._db.iterate(
                f"SELECT page, {_ITEM_COLUMNS} FROM items WHERE page > ? ORDER BY id",
                (rows[0][0] - 1,),
            ):
                found.setdefault(page, []).append(_item_from_row(item))
        return [
            replace(PageRecord.from_row(row[1:]), found=tuple(found.get(row[0], ())))
            for row in rows
        ]

    def item_count(self) -> int:
        """Items committed so far."""
        return int(self._db.query("SELECT COUNT(*) FROM items")[0][0])

    def items_after(self, count: int) -> Iterator[Item]:
        """Committed items past the first ``count``, in order."""
        for row in self._db.iterate(
            f"SELECT {_ITEM_COLUMNS} FROM items WHERE id > ? ORDER BY id", (count,)
        ):
            yield _item_from_row(row)

    def rule_counts(self) -> tuple[int, int, int, int]:
        """``(pages a rule matched, items, items dropped, rule errors)`` over the committed
        records (dropped items are counted from their error lines)."""
        matched, items, errors = self._db.query(
            "SELECT COUNT(rule), COALESCE(SUM(items), 0), "
            "COALESCE(SUM(json_array_length(rule_errors)), 0) FROM pages WHERE rule IS NOT NULL"
        )[0]
        dropped = self._db.query(
            "SELECT COUNT(*) FROM pages, json_each(pages.rule_errors) "
            "WHERE pages.rule IS NOT NULL AND json_each.value LIKE '%: item dropped'"
        )[0][0]
        return int(matched), int(items), int(dropped), int(errors)


_ITEMS = FIELD_NAMES.index("items")


def _item_row(item: Item) -> tuple[object, ...]:
    fields = json.dumps(item.fields, ensure_ascii=False, separators=(",", ":"))
    return (item.url, item.rule, item.index, item.fetched_at, fields)


def _item_from_row(row: Sequence[Any]) -> Item:
    url, rule, index, fetched_at, fields = row
    return Item(url, rule, index, fetched_at, json.loads(fields))

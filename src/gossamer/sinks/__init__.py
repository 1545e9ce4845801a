"""Where finished pages go: JSONL, SQLite (crawl.db) and, later, PostgreSQL and WARC."""

from gossamer.sinks.base import PageRecord

__all__ = ["PageRecord"]

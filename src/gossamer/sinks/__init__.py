"""Where finished pages go: JSONL, SQLite (crawl.db), PostgreSQL (``--store``) and, later, WARC."""

from gossamer.sinks.base import PageRecord

__all__ = ["PageRecord"]

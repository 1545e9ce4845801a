"""Where finished pages go. ``base`` holds the contract: the record every sink stores and the
protocols the engine writes through (the journal, record sinks, the archive). The concrete
sinks: ``sqlite`` (crawl.db, the journal), ``jsonl`` (pages.jsonl), ``postgres`` (the
``--store`` table), ``warc`` (the WARC archive); ``gossamer.crawl`` builds them.

This package may import the standard library, asyncpg, fastwarc, ``gossamer.crawldb``,
``gossamer.fetch.exchange`` (what a WARC record holds), ``gossamer.errors``,
``gossamer.redact``, ``gossamer.retry``, ``gossamer.safe``, ``gossamer.settings`` (its error)
and ``gossamer.urls``; never the engine, the frontier or the cluster.
"""

from gossamer.sinks.base import PageRecord

__all__ = ["PageRecord"]

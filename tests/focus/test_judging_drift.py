"""Judging stays steady through a focused crawl (PostgreSQL's manual, Debian's
postgresql-doc, read from disk): a focused crawl judges mostly on-topic pages, and what the
topic's words weigh must not fall because of it, so the short reference pages met after a
dozen on-topic ones are judged on-topic as they are at the start."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.extract import extract
from gossamer.focus.topic import Topic

DOCS = Path("/usr/share/doc/postgresql-doc-15/html")
pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="needs postgresql-doc-15")

EXAMPLES = ("transaction-iso.html", "explicit-locking.html")
CRAWLED = (
    # the start of a focused crawl of the manual's hub, in its order: its command list and
    # the pages it led to, on the topic and beside it
    "index.html",
    "sql-commands.html",
    "sql-keywords-appendix.html",
    "sql-set-transaction.html",
    "sql-prepare-transaction.html",
    "sql-lock.html",
    "explicit-locking.html",
    "sql-start-transaction.html",
    "transaction-iso.html",
    "runtime-config-locks.html",
    "sql-select.html",
    "view-pg-locks.html",
    "runtime-config-connection.html",
    "runtime-config-client.html",
    "runtime-config-resource.html",
    "sql-altertable.html",
    "sql-load.html",
    "sql-createpolicy.html",
)
SHORT = ("sql-commit.html", "sql-rollback.html", "sql-begin.html", "sql-end.html")


def text(name: str) -> str:
    html = (DOCS / name).read_text(encoding="utf-8", errors="replace")
    return extract(html, f"http://postgres.test/{name}").text


def test_short_on_topic_pages_stay_on_topic_after_many_on_topic_pages() -> None:
    topic = Topic("SQL transactions and locking", [text(name) for name in EXAMPLES])
    for name in CRAWLED:
        topic.judge(text(name))
    scores = {name: topic.judge(text(name)).relevance for name in SHORT}
    assert min(scores.values()) >= 0.5, scores

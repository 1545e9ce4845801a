"""Judging stays steady through a focused crawl (PostgreSQL's manual, Debian's
postgresql-doc, read from disk): a focused crawl judges mostly on-topic pages, and what the
topic's words weigh must not fall because of it, so the short reference pages met after a
dozen on-topic ones are judged on-topic as they are at the start."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.focus.test_evidence import focused_crawl

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


LONG = (
    "transaction-iso.html",
    "explicit-locking.html",
    "mvcc-intro.html",
    "mvcc-serialization-failure-handling.html",
    "applevel-consistency.html",
    "locking-indexes.html",
    "mvcc-caveats.html",
    "runtime-config-locks.html",
    "view-pg-locks.html",
    "sql-lock.html",
    "sql-set-transaction.html",
    "sql-start-transaction.html",
    "sql-prepare-transaction.html",
)


def _page(path: str) -> str | None:
    """The manual's pages of ``LONG`` and ``SHORT`` as they are (their other links 404), a
    front page listing the long ones by title and a page listing the short ones by bare
    command name."""
    name = path.lstrip("/")
    if name in ("", "index.html"):
        items = "".join(f'<li><a href="/{p}">{p[:-5].replace("-", " ")}</a></li>' for p in LONG)
        return (
            "<html><head><title>Manual</title></head><body><h1>Manual</h1>"
            f'<ul>{items}</ul><p><a href="/commands.html">Commands</a></p></body></html>'
        )
    if name == "commands.html":
        items = "".join(f'<li><a href="/{p}">{p[4:-5].upper()}</a></li>' for p in SHORT)
        return f"<html><head><title>Commands</title></head><body><ul>{items}</ul></body></html>"
    if name in LONG or name in SHORT:
        return (DOCS / name).read_text(encoding="utf-8", errors="replace")
    return None


async def test_a_focused_crawl_judges_the_short_pages_it_meets_late_on_topic(
    tmp_path: Path,
) -> None:
    """A real local site: the manual's long pages on transactions and locks first (their
    anchors name the topic), its short command pages behind bare names after them."""
    records = await focused_crawl(
        tmp_path, _page, 80, "SQL transactions and locking", list(EXAMPLES)
    )
    judged = {urlsplit(r["url"]).path.lstrip("/"): r.get("relevance") for r in records}
    order = [name for name in judged if name in LONG]
    assert len(order) >= 10, judged
    scores = {name: judged.get(name) for name in SHORT}
    assert all(score is not None and score >= 0.5 for score in scores.values()), scores


ON_THE_BORDER = (
    # a focused crawl's order in which a long page on the topic is judged just off it
    "transaction-iso.html",
    "explicit-locking.html",
    "sql-set-transaction.html",
    "sql-start-transaction.html",
    "sql-commit.html",
    "sql-prepare-transaction.html",
    "sql-lock.html",
    "mvcc-intro.html",
    "mvcc-serialization-failure-handling.html",
    "runtime-config-locks.html",
    "view-pg-locks.html",
    "applevel-consistency.html",
    "locking-indexes.html",
    "mvcc-caveats.html",
)


def test_the_first_off_topic_pages_do_not_take_the_topics_words_out() -> None:
    """The crawl's background (the off-topic pages' mean) is young at first: a front page
    listing the topic's chapters and one long on-topic page judged just below the threshold
    are all it holds, and it must not take the topic's own words out of the centroid (the
    short command pages after them fell to 0.10-0.28)."""
    topic = Topic("SQL transactions and locking", [text(name) for name in EXAMPLES])
    front = _page("index.html")
    assert front is not None
    topic.judge(extract(front, "http://docs.test/").text)
    for name in ON_THE_BORDER:
        topic.judge(text(name))
    scores = {
        name: topic.judge(text(name)).relevance for name in ("sql-begin.html", "sql-end.html")
    }
    assert min(scores.values()) >= 0.5, scores

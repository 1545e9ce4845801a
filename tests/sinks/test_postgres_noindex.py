"""`--store postgres://...` holds a noindex page's record without its content, and the
record of a page naming another canonical URL followed, as pages.jsonl does."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.content_site import crawl
from tests.pg_server import PostgresServer, table_rows
from tests.test_canonical_crawl import handle as canonical_site
from tests.test_robots_directives_crawl import NOINDEX
from tests.test_robots_directives_crawl import handle as robots_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_the_table_holds_no_content_of_a_noindex_page(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    records = await crawl(tmp_path / "out", robots_site, store=pg.table_url(table))
    rows = {"/" + row["url"].split("/", 3)[3]: row for row in await table_rows(pg.url, table)}
    assert rows.keys() == records.keys()
    for path in NOINDEX:
        row = rows[path]
        assert row["status"] == 200 and "noindex" in row["flags"], row
        assert (row["text"], row["title"], row["text_chars"]) == (None, None, None)
    assert rows["/h-all"]["text"] and rows["/h-all"]["title"] == "Title of /h-all"
    assert "/from/h-nofollow" not in rows and "nofollow" in rows["/h-nofollow"]["flags"]


async def test_the_table_holds_a_followed_canonical_once(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    store = pg.table_url(table)
    records = await crawl(tmp_path / "out", canonical_site, canonical="follow", store=store)
    rows = {"/" + row["url"].split("/", 3)[3]: row for row in await table_rows(pg.url, table)}
    assert rows.keys() == records.keys()
    agree = rows["/agree"]
    assert "canonical-followed" in agree["flags"] and agree["text"] is None
    assert agree["canonical"] == records["/main-agree"]["url"]
    assert rows["/main-agree"]["text"]

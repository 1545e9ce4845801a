"""A continuous crawl's records in the PostgreSQL store: one row per URL with its latest
change; a tombstone or a 304 marks the row and keeps the content of the last full fetch."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.pg_server import PostgresServer, table_rows
from tests.revisit.site import ARTICLE, serve_site
from tests.revisit.test_recrawl import records, recrawl

pytestmark = [pytest.mark.timeout(60)]


async def test_every_change_value_reaches_the_store(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        await recrawl(site, out, store=pg.table_url(table), max_duration=3.0, warc=False)
    rows = {row["url"].rsplit("/", 1)[1]: row for row in await table_rows(pg.url, table)}
    last = {r["url"].rsplit("/", 1)[1]: r for r in records(out)}
    assert rows.keys() == last.keys()
    for page, row in rows.items():
        assert (row["change"], row["status"], row["fetched_at"]) == (
            last[page]["change"],
            last[page]["status"],
            last[page]["fetched_at"],
        ), page
        assert row["previous_fetched_at"] == last[page]["previous_fetched_at"]
    assert {row["change"] for row in rows.values()} == {"changed", "unchanged", "gone"}
    # a tombstone: marked, not deleted, the page's content kept
    gone = rows["gone"]
    assert (gone["status"], gone["change"], gone["title"]) == (404, "gone", "gone")
    assert ARTICLE[:40] in gone["text"]
    assert rows["moved"]["change"] == "gone" and rows["moved"]["title"] == "moved"
    # a 304 marks the row too: the text of the last 200 stays
    etag = rows["etag"]
    assert (etag["status"], etag["change"]) == (304, "unchanged") and etag["bytes"] > 0
    assert ARTICLE[:40] in etag["text"]
    assert rows["changing"]["change"] == "changed"


async def test_a_first_fetch_is_new_in_the_store(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        await recrawl(site, out, store=pg.table_url(table), recrawl=False, warc=False)
    rows = await table_rows(pg.url, table)
    assert len(rows) == len(records(out)) >= 9
    assert {(row["change"], row["previous_fetched_at"]) for row in rows} == {("new", None)}

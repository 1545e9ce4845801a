"""A 304 that answered no conditional request, in the PostgreSQL store: it says nothing of
the page (no ``change``) and, like every 304, marks the row without taking its content."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.pg_server import PostgresServer, table_rows
from tests.test_revisit_hostile_answers import BareNotModified, _recrawl

pytestmark = [pytest.mark.timeout(60)]


async def test_a_bare_304_keeps_the_rows_content(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    site = BareNotModified()
    await _recrawl(site.handle, tmp_path / "out", store=pg.table_url(table), warc=False)
    assert len(site.asked) >= 2
    rows = {row["url"].rsplit("/", 1)[1]: row for row in await table_rows(pg.url, table)}
    x = rows["x"]
    assert (x["status"], x["change"], x["title"]) == (304, None, "first")
    assert "first" in x["text"]

"""A continuous crawl of a host whose page budget is spent: each URL is recorded ``budget`` once,
then no longer revisited (its revisits would take the budget: never fetched again), as a
queued URL's ``budget`` record is once, and as the Redis frontier ends it."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from tests.revisit.site import serve_site
from tests.revisit.test_recrawl import records, recrawl


async def test_a_spent_budget_is_recorded_once_per_url_not_at_every_revisit(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        await recrawl(site, out, max_pages_per_host=3, warc=False, max_duration=3.5)
    found = records(out)
    fetched = {r["url"] for r in found if r["error"] is None}
    budget = Counter(r["url"] for r in found if r["error"] == "budget")
    assert len(fetched) == 3, found
    assert budget and set(budget.values()) == {1}, budget  # before: 3 a fetched page
    assert fetched <= budget.keys()  # its first revisit, once
    with sqlite3.connect(out / "crawl.db") as db:
        due = db.execute("SELECT COUNT(*) FROM revisits WHERE due IS NOT NULL").fetchone()[0]
    assert due == 0  # none left to revisit

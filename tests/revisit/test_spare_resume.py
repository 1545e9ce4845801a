"""Work-conserving revisits after ``--resume`` of a crawl with nothing queued and no revisit
due: the hosts are only in crawl.db, not in the host scheduler, and still get spare
revisits."""

from __future__ import annotations

import json
from pathlib import Path

from tests.revisit.site import serve_site
from tests.revisit.test_recrawl import recrawl

LONG = {"revisit_initial": 3600, "revisit_min": 3600, "revisit_max": 3600}


async def test_a_resumed_crawl_with_nothing_due_spares_revisits(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        await recrawl(site, out, max_duration=2.0, **LONG)
        first = len(site.log)
        assert first and max(site.fetches.values()) == 1, site.fetches  # nothing due again
        await recrawl(site, out, resume=True, revisit_spare=1.0, max_duration=3.0, **LONG)
    again = [hit.path for hit in site.log[first:] if hit.path != "/robots.txt"]
    assert again, "no spare revisit after --resume"
    revisits = json.loads((out / "stats.json").read_text())["revisits"]
    assert revisits["spared"] >= 1, revisits

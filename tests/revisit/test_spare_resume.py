"""Work-conserving revisits after ``--resume`` of a crawl with nothing queued and no revisit
due: the hosts are only in crawl.db, not in the host scheduler, and still get spare
revisits."""

from __future__ import annotations

import json
from pathlib import Path

from tests.revisit.site import serve_site
from tests.revisit.test_recrawl import recrawl
from tests.revisit.test_store import BOUNDS, Clock, _db

from gossamer.frontier.revisits import _STORED_HOSTS, SPARE_HOSTS, Revisits
from gossamer.urls import host_key

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


async def test_every_stored_host_gets_its_turn_a_bounded_number_a_look(tmp_path: Path) -> None:
    """150 hosts in crawl.db: each look reads at most `SPARE_HOSTS` of them, in turn, leaving
    out those the scheduler knows; three looks went over all, the fourth starts over."""
    urls = [f"http://h{i:03}.test/{j}" for i in range(150) for j in range(3)]
    db = _db(tmp_path, urls)
    await db.commit()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=Clock(), spare=1.0)
    known = {host_key(urls[15])}
    looks = [await revisits.stored_hosts(known.__contains__) for _ in range(4)]
    assert [len(look) for look in looks] == [
        SPARE_HOSTS - 1,
        SPARE_HOSTS,
        150 - 2 * SPARE_HOSTS,
        63,
    ]
    assert sorted(set().union(*looks[:3])) == sorted({host_key(u) for u in urls} - known)
    assert looks[3] == looks[0]
    plan = db.query(f"EXPLAIN QUERY PLAN {_STORED_HOSTS}", ("", SPARE_HOSTS))
    assert all("SCAN urls" not in str(row) for row in plan), plan  # seeks on the index only
    db.close()

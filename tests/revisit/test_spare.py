"""Work-conserving revisits (``--revisit-spare``): a host whose politeness slot is free with
nothing waiting gets its page most likely to have changed early; a busy host does not, and the
pace never gets faster than the delay."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from tests.revisit.site import serve_site
from tests.revisit.test_recrawl import recrawl
from tests.revisit.test_store import BOUNDS, Clock, _db

from gossamer.crawldb import CrawlDB
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.revisits import Revisits, RevisitState
from gossamer.urls import Scope, fingerprint

IDLE = [f"http://a.test/{i}" for i in range(4)]
BUSY = [f"http://b.test/{i}" for i in range(3)]
MOST_CHANGED = (IDLE[2], BUSY[2])


def _frontier(db: CrawlDB, clock: Clock, spare: float) -> LocalFrontier:
    """Each host has a revisit due now; b.test has another due one delay later (it is busy
    then); the others are due later, of which one a host changed most."""
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock, spare=spare)
    dues = {IDLE[0]: 1000.0, BUSY[0]: 1000.0, BUSY[1]: 1001.0}
    for i, url in enumerate([*IDLE, *BUSY]):
        state = RevisitState(
            fingerprint(url),
            fetched_at=900.0,
            due=dues.get(url, 1050.0 + i),
            checks=5,
            changes=4 if url in MOST_CHANGED else i % 2,
            observed=50.0,
            interval=10.0,
        )
        revisits.observed(url, state)
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    policy = PolitenessPolicy(per_host=1, delay=1.0)
    frontier = LocalFrontier(scope, policy, db, clock=clock, revisits=revisits)
    frontier.restore()
    return frontier


async def _second_round(tmp_path: Path, spare: float, wait: float = 1.0) -> list[str]:
    db = _db(tmp_path, [*IDLE, *BUSY])
    clock = Clock()
    frontier = _frontier(db, clock, spare)
    first = await frontier.lease(4)
    assert sorted(lease.url for lease in first) == [IDLE[0], BUSY[0]]
    for lease in first:
        await frontier.ack(lease, None)
    clock.now += wait  # one delay later (or more): both slots free again
    leased = sorted(lease.url for lease in await frontier.lease(4))
    db.close()
    return leased


async def test_an_idle_host_gets_an_early_revisit_and_a_busy_host_does_not(
    tmp_path: Path,
) -> None:
    """a.test has nothing due or queued: its page that changed most goes out early; b.test
    has a revisit due: that goes, not its page that changed most."""
    assert await _second_round(tmp_path, 1.0) == [IDLE[2], BUSY[1]]


async def test_without_spare_an_idle_host_waits_for_its_due_time(tmp_path: Path) -> None:
    assert await _second_round(tmp_path, 0.0) == [BUSY[1]]


async def test_a_share_below_one_waits_for_the_slot_to_stay_free(tmp_path: Path) -> None:
    """With half the free slots, a.test's slot must stay free one more delay first."""
    assert await _second_round(tmp_path, 0.5) == [BUSY[1]]
    (tmp_path / "later").mkdir()
    assert await _second_round(tmp_path / "later", 0.5, wait=2.0) == [IDLE[2], BUSY[1]]


async def test_spare_revisits_keep_the_delay_against_a_real_server(tmp_path: Path) -> None:
    """Intervals longer than the crawl: every second fetch of a page is a spare revisit,
    conditional where the page has validators, and no two requests come closer than the
    delay."""
    quiet = {"revisit_initial": 60, "revisit_min": 60, "revisit_max": 60}
    async with serve_site() as site:
        await recrawl(site, tmp_path / "out", delay=0.2, per_host=2, revisit_spare=1.0, **quiet)
    times = [hit.at for hit in site.log]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    again = [path for path, count in site.fetches.items() if count > 1]
    assert len(again) >= 3, site.fetches
    assert min(gaps) >= 0.2 * 0.95, min(gaps)
    assert any(hit.path == "/etag" and hit.if_none_match for hit in site.log)
    revisits = json.loads((tmp_path / "out" / "stats.json").read_text())["revisits"]
    assert revisits["spared"] >= sum(revisits["results"].values()) >= 3, revisits  # all spare

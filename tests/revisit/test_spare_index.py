"""Which page a free slot revisits (``--revisit-spare``): the greatest ``r**0.75 t``, ``t``
counted from the last fetch or from a sitemap ``lastmod`` that vouched for the page since; and
with spare revisits on, a page's due time only bounds its wait (four intervals with a share
of 1), so the free slots, not the due times, order a quiet host's revisits."""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from tests.revisit.site import serve_site
from tests.revisit.test_recrawl import recrawl
from tests.revisit.test_store import BOUNDS, Clock, _db

from gossamer.crawldb import CrawlDB
from gossamer.frontier.revisit import History, spare_index
from gossamer.frontier.revisits import Revisits, RevisitState, resolution
from gossamer.urls import fingerprint, host_key

SLOW, FAST = "http://a.test/slow", "http://a.test/fast"
PACE = 0.25
"""The delay of the crawl against a real site: a round of its 7 pages takes longer than the
least revisit interval (1 s), so the index, not that floor, orders the revisits."""


def _revisits(db: CrawlDB, clock: Clock, spare: float = 1.0) -> Revisits:
    return Revisits(db, lambda url, kind: BOUNDS, clock=clock, spare=spare)


def _page(url: str, *, fetched_at: float, changes: int) -> RevisitState:
    """Five checks over 50 s at an interval of 10 s: ``(changes + 0.5) / 60`` a second."""
    return RevisitState(
        fingerprint(url),
        fetched_at=fetched_at,
        interval=10.0,
        due=5000.0,
        checks=5,
        changes=changes,
        observed=50.0,
    )


async def _sitemap_read(revisits: Revisits, url: str, lastmod: float) -> int:
    """What a sitemap read listing ``url`` with ``lastmod`` tells the revisits."""
    assert await revisits.sooner([(url, lastmod)]) == 1
    return await revisits.vouch([(url, lastmod)])


async def _spare_pick(revisits: Revisits) -> str:
    picked = await revisits.spare_for([host_key(SLOW)])
    assert len(picked) == 1, picked
    return picked[0][1].url


async def test_a_slow_page_long_unchecked_goes_before_a_fast_one_checked_lately(
    tmp_path: Path,
) -> None:
    """The slow page: 0.5 / 60 a second, 150 s unchecked (1.25 changes expected, index 4.1);
    the fast one: 4.5 / 60, 20 s (1.5 changes expected, index 2.9). Counting the changes
    expected would take the fast page again; the index takes the slow one, whose changes
    would otherwise wait longest."""
    db = _db(tmp_path, [SLOW, FAST])
    clock = Clock()
    revisits = _revisits(db, clock)
    revisits.observed(SLOW, _page(SLOW, fetched_at=clock.now - 150.0, changes=0))
    revisits.observed(FAST, _page(FAST, fetched_at=clock.now - 20.0, changes=4))
    assert await _spare_pick(revisits) == SLOW
    db.close()


async def test_a_fast_page_goes_before_a_slow_one_sooner_than_sqrt_r_would_send_it(
    tmp_path: Path,
) -> None:
    """The slow page 100 s unchecked, the fast one 25 s: ``sqrt(r) t`` would take the slow
    one (9.1 against 6.8); ``r**0.75 t`` takes the fast one (3.6 against 2.8): its estimated
    rate undercounts its changes, and spacing it by ``1 / sqrt(r)`` leaves its changes the
    long waits of the 90th percentile. The same order in the Redis frontier's index."""
    db = _db(tmp_path, [SLOW, FAST])
    clock = Clock()
    revisits = _revisits(db, clock)
    revisits.observed(SLOW, _page(SLOW, fetched_at=clock.now - 100.0, changes=0))
    revisits.observed(FAST, _page(FAST, fetched_at=clock.now - 25.0, changes=4))
    assert await _spare_pick(revisits) == FAST
    slow, fast = History(5, 0, 50.0, 10.0), History(5, 4, 50.0, 10.0)
    assert spare_index(fast, 25.0) > spare_index(slow, 100.0)
    assert spare_index(slow, 100.0) == pytest.approx((0.5 / 60) ** 0.75 * 100.0)
    db.close()


async def test_a_sitemap_lastmod_that_vouches_for_a_page_sends_the_spare_slot_elsewhere(
    tmp_path: Path,
) -> None:
    """Two pages alike but for their last fetch: the older would go first, until a sitemap
    lists it with a ``lastmod`` before that fetch (unchanged as of the read: its wait counts
    from then); a ``lastmod`` after the fetch makes it due now, as before."""
    db = _db(tmp_path, [SLOW, FAST])
    clock = Clock()
    revisits = _revisits(db, clock)
    revisits.observed(SLOW, _page(SLOW, fetched_at=clock.now - 60.0, changes=2))
    revisits.observed(FAST, _page(FAST, fetched_at=clock.now - 30.0, changes=2))
    assert await _spare_pick(revisits) == SLOW
    revisits.finished(SLOW)
    clock.now += 1.0
    # within the second of a lastmod to the second: perhaps changed after the fetch
    assert await _sitemap_read(revisits, SLOW, clock.now - 61.5) == 1
    assert await _spare_pick(revisits) == SLOW
    revisits.finished(SLOW)
    assert await _sitemap_read(revisits, SLOW, clock.now - 120.0) == 1
    assert await _spare_pick(revisits) == FAST
    revisits.finished(FAST)
    assert await _sitemap_read(revisits, SLOW, clock.now) == 1  # changed since: due now
    due = await revisits.due()
    assert [entry.url for _, entry in due] == [SLOW]
    db.close()


def test_a_lastmod_vouches_within_its_unit() -> None:
    """A date-time to the second, a whole minute, a date, a month, a year."""
    day = 1_715_040_000.0  # 2024-05-07T00:00:00Z
    assert resolution(day + 3723.5) == resolution(day + 3723.0) == 1.0
    assert resolution(day + 3720.0) == 60.0
    assert resolution(day) == 86_400.0
    assert resolution(1_714_521_600.0) == 31 * 86_400.0  # 2024-05-01
    assert resolution(1_704_067_200.0) == 366 * 86_400.0  # 2024-01-01


async def test_without_spare_revisits_a_sitemap_read_marks_nothing(tmp_path: Path) -> None:
    db = _db(tmp_path, [SLOW])
    clock = Clock()
    revisits = _revisits(db, clock, spare=0.0)
    revisits.observed(SLOW, _page(SLOW, fetched_at=clock.now - 60.0, changes=2))
    await _sitemap_read(revisits, SLOW, clock.now - 120.0)
    await db.commit()
    assert db.query("SELECT checked_at FROM revisits") == [(None,)]
    db.close()


async def test_with_spare_revisits_the_due_time_bounds_the_wait(tmp_path: Path) -> None:
    """A share of 1: due four intervals after the fetch at the latest (the free slots bring
    the page back when it is its host's likeliest stale one); a half: 2.5; no spare: at the
    interval."""
    db = _db(tmp_path, [])
    clock = Clock()
    assert [_revisits(db, clock, share).wait(10.0) for share in (1.0, 0.5, 0.0)] == [
        40.0,
        25.0,
        10.0,
    ]
    db.close()


async def test_a_crawl_db_of_an_earlier_version_gets_checked_at(tmp_path: Path) -> None:
    """``--resume`` of a crawl.db made before ``checked_at``: the column is added."""
    path = tmp_path / "crawl.db"
    CrawlDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE revisits DROP COLUMN checked_at")
    conn.commit()
    conn.close()
    db = CrawlDB(path)
    columns = {row[1] for row in db.query("PRAGMA table_info(revisits)")}
    assert "checked_at" in columns
    db.close()


async def test_a_fast_changing_page_is_revisited_more_than_still_ones_within_the_pace(
    tmp_path: Path,
) -> None:
    """Revisit intervals longer than the crawl (60 s, so every revisit is a spare one): the
    page that changes at every fetch comes back more often than each page that never
    changes, the still ones still get their turns, and no two requests come closer than
    the delay."""
    quiet = {"revisit_initial": 60, "revisit_min": 60, "revisit_max": 60}
    async with serve_site() as site:
        await recrawl(
            site, tmp_path / "out", revisit_spare=1.0, delay=PACE, max_duration=8, **quiet
        )
    counts = Counter(hit.path for hit in site.log)
    gaps = [b - a for a, b in itertools.pairwise(hit.at for hit in site.log)]
    still = [counts[f"/{page}"] for page in ("etag", "lm", "still")]
    assert counts["/changing"] > max(still), counts
    assert min(still) >= 2, counts
    assert min(gaps) >= PACE * 0.95, min(gaps)
    db = CrawlDB(tmp_path / "out" / "crawl.db")
    rows = db.query("SELECT fetched_at, due FROM revisits WHERE gone = 0 AND due IS NOT NULL")
    waits = {round(due - at) for at, due in rows}
    db.close()
    assert waits == {240}, waits  # four intervals: the bound, not the schedule

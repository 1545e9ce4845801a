"""The revisit state in crawl.db: due URLs read back by due time, a batch at a time, bounded
per host, on an injected clock; a finished crawl's pages adopted for --resume --recrawl."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.crawldb import CrawlDB
from gossamer.frontier import revisits as store
from gossamer.frontier.revisit import Bounds
from gossamer.frontier.revisits import Revisits, RevisitState
from gossamer.sinks.base import PageRecord
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.urls import fingerprint, host_key

BOUNDS = Bounds(10.0, 5.0, 100.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _db(tmp_path: Path, urls: list[str]) -> CrawlDB:
    db = CrawlDB(tmp_path / "crawl.db")
    rows = [(fingerprint(u), u, host_key(u), 1, 0, 0, 1, i, 0.0) for i, u in enumerate(urls)]
    db.stage(
        "INSERT INTO urls (fp, url, host, depth, hops, attempts, state, seq, priority) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return db


async def test_due_urls_come_back_in_due_order_once(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(5)]
    db = _db(tmp_path, urls)
    clock = Clock()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock)
    for i, url in enumerate(urls):
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=900.0, due=1000.0 + i))
    assert await revisits.due() == [("http://a.test", _queued(urls[0]))]
    assert revisits.state(urls[0]) is not None
    assert await revisits.due() == []  # out already, nothing else due
    assert revisits.next_due() == 1.0
    clock.now = 1003.0
    assert [entry.url for _, entry in await revisits.due()] == urls[1:4]
    assert revisits.validators(urls[1]) is None
    revisits.finished(urls[0])
    assert revisits.state(urls[0]) is None
    assert revisits.stats().loaded == 3
    db.close()


def _queued(url: str) -> object:
    from gossamer.frontier.hostqueue import Queued
    from gossamer.frontier.revisits import REVISIT_PRIORITY

    return Queued(url, fingerprint(url), 1, 0, priority=REVISIT_PRIORITY)


async def test_a_host_takes_at_most_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "PER_HOST", 2)
    urls = [f"http://a.test/{i}" for i in range(4)] + ["http://b.test/x"]
    db = _db(tmp_path, urls)
    clock = Clock()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock)
    for i, url in enumerate(urls):
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=900.0, due=990.0 + i))
    first = [entry.url for _, entry in await revisits.due()]
    assert first == [*urls[:2], "http://b.test/x"]
    assert revisits.stats().backlog == 2  # passed over, read again at the next sweep
    for url in urls[:2]:  # fetched again: due later
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=1000.0, due=1010.0))
        revisits.finished(url)
    clock.now += 1.0
    assert [entry.url for _, entry in await revisits.due()] == urls[2:4]
    db.close()


async def test_validators_make_the_conditional_headers(tmp_path: Path) -> None:
    url = "http://a.test/"
    db = _db(tmp_path, [url])
    revisits = Revisits(db, lambda u, kind: BOUNDS, clock=Clock())
    row = RevisitState(
        fingerprint(url),
        etag='"x"',
        last_modified="Wed, 21 Oct 2015 07:28:00 GMT",
        fetched_at=1.0,
        due=2.0,
    )
    revisits.observed(url, row)
    await revisits.due()
    assert revisits.validators(url) == {
        "If-None-Match": '"x"',
        "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT",
    }
    db.close()


async def test_adopt_gives_a_finished_crawls_pages_a_row(tmp_path: Path) -> None:
    urls = ["http://a.test/", "http://a.test/missing", "http://a.test/kept"]
    db = _db(tmp_path, urls)
    sink = SQLiteSink(db)
    sink.stage(
        [
            PageRecord(urls[0], 200, 0, "text/html", fetched_at=500.0, text="words"),
            PageRecord(urls[1], 404, 1, fetched_at=501.0),
            PageRecord(urls[2], 200, 1, "text/html", fetched_at=502.0),
        ]
    )
    revisits = Revisits(db, lambda u, kind: BOUNDS, clock=Clock())
    kept = RevisitState(fingerprint(urls[2]), etag='"k"', fetched_at=502.0, due=2000.0)
    revisits.observed(urls[2], kept)
    await db.commit()
    assert revisits.adopt() == 2
    await db.commit()
    rows = dict(db.query("SELECT fp, due FROM revisits"))
    assert rows == {fingerprint(urls[0]): 510.0, fingerprint(urls[2]): 2000.0}
    assert revisits.adopt() == 0  # pages gone through once are not read again
    db.close()


async def test_a_revisit_ended_unjudged_is_due_an_interval_later(tmp_path: Path) -> None:
    url = "http://a.test/"
    db = _db(tmp_path, [url])
    clock = Clock()
    revisits = Revisits(db, lambda u, kind: BOUNDS, clock=clock)
    revisits.observed(url, RevisitState(fingerprint(url), fetched_at=1.0, interval=20.0, due=2.0))
    assert len(await revisits.due()) == 1
    revisits.finished(url)  # e.g. robots.txt forbids it now: acked with no answer
    await db.commit()
    assert db.query("SELECT due FROM revisits") == [(1020.0,)]
    assert await revisits.due() == []
    db.close()


async def test_a_full_load_waits_for_room_not_in_a_busy_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_LOADED", 1)
    urls = ["http://a.test/1", "http://b.test/2"]
    db = _db(tmp_path, urls)
    revisits = Revisits(db, lambda u, kind: BOUNDS, clock=Clock())
    for url in urls:
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=1.0, due=2.0))
    [(_, out)] = await revisits.due()
    assert revisits.next_due() is None  # no room: nothing to wake for until a lease ends
    revisits.observed(out.url, RevisitState(out.fp, fetched_at=1000.0, due=1050.0))
    revisits.finished(out.url)
    assert revisits.next_due() == 0.0
    assert [entry.url for _, entry in await revisits.due()] == [u for u in urls if u != out.url]
    db.close()


def test_the_progress_line_shows_revisits() -> None:
    from gossamer.stats import CrawlStats

    stats = CrawlStats(
        pages=3,
        ok=3,
        errors=0,
        robots_blocked=0,
        retries=0,
        requests=3,
        duplicates=0,
        rejected={},
        status_counts={},
        queued=0,
        in_flight=0,
        elapsed=1.0,
        pages_per_second=3.0,
        peak_rss_mb=1.0,
        revisits={"results": {"changed": 2, "gone": 1}, "backlog": 7, "bytes_saved": 0},
    )
    line = stats.progress_line()
    assert "revisits changed 2 unchanged 0 not-modified 0 gone 1  due 7" in line


def test_the_progress_line_shows_the_bytes_304s_saved() -> None:
    from gossamer.stats import CrawlStats

    revisits = {"results": {"not-modified": 2}, "backlog": 0, "bytes_saved": 12_345}
    counts = dict.fromkeys(("pages", "ok", "errors", "robots_blocked", "retries"), 0)
    counts |= {"requests": 0, "duplicates": 0, "queued": 0, "in_flight": 0}
    stats = CrawlStats(
        **counts,
        rejected={},
        status_counts={},
        elapsed=1.0,
        pages_per_second=0,
        peak_rss_mb=1,
        revisits=revisits,
    )
    assert stats.progress_line().endswith("due 0  saved 12.3 kB by 304s")


async def test_a_url_never_fetched_is_fetched_among_its_host_s_due_revisits(
    tmp_path: Path,
) -> None:
    """What a sitemap or feed announces is fetched while the host's revisits are due, and the
    revisits are fetched too (none held back)."""
    from gossamer.frontier.base import Candidate
    from gossamer.frontier.local import LocalFrontier
    from gossamer.frontier.politeness import PolitenessPolicy
    from gossamer.urls import Scope

    known = [f"http://a.test/{i}" for i in range(5)]
    db = _db(tmp_path, known)
    clock = Clock()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock)
    for i, url in enumerate(known):
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=900.0, due=990.0 + i))
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    policy = PolitenessPolicy(per_host=1)
    frontier = LocalFrontier(scope, policy, db, clock=clock, revisits=revisits)
    frontier.restore()
    first = await frontier.lease(1)
    assert [lease.url for lease in first] == [known[0]]  # due, and nothing new yet
    await frontier.add([Candidate("http://a.test/announced", 1)])
    await frontier.ack(first[0], None)
    order = []
    for _ in range(10):
        for lease in await frontier.lease(1):
            order.append(lease.url)
            await frontier.ack(lease, None)
        clock.now += 1.0
    assert "http://a.test/announced" in order, order
    assert set(known[1:]) <= set(order), order
    db.close()


async def test_adoption_holds_no_row_per_page_in_memory(tmp_path: Path) -> None:
    """--resume --recrawl of a big crawl: the pages become revisit rows inside SQLite."""
    import tracemalloc

    urls = [f"http://a.test/{i}" for i in range(10_000)]
    db = _db(tmp_path, urls)
    db.stage(
        "INSERT INTO pages (url, status, depth, bytes, fetched_at, outlinks, attempts, "
        "truncated, text) VALUES (?, 200, 1, 10, 500.0, 0, 1, 0, ?)",
        [(url, f"text of {url}") for url in urls],
    )
    await db.commit()
    revisits = Revisits(db, lambda u, kind: BOUNDS, clock=Clock())
    tracemalloc.start()
    try:
        assert revisits.adopt() == len(urls)
        await db.commit()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # a row per page held would be about 4 MB
    assert db.query("SELECT COUNT(*), MIN(due), MAX(due) FROM revisits") == [(10_000, 510.0, 510.0)]
    db.close()


async def test_the_backlog_counts_what_is_due_beyond_a_read(tmp_path: Path) -> None:
    """More due than one read takes: the backlog says how many wait, not 0."""
    urls = [f"http://h{i % 50}.test/{i}" for i in range(2500)]
    db = _db(tmp_path, urls)
    clock = Clock()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock)
    for url in urls:
        revisits.observed(url, RevisitState(fingerprint(url), fetched_at=900.0, due=990.0))
    out = await revisits.due()
    assert len(out) == 1000  # one read's batch
    assert revisits.stats().backlog == 1500
    db.close()

"""The embedded frontier's own behaviour: durability in crawl.db, spill, resume.

The contract every backend shares (dedup, scope, slots, delays, retries) is in test_contract.py.
"""

import sqlite3
from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import AddResult, Candidate, Feedback, Outlinks
from gossamer.frontier.local import LocalFrontier, LocalFrontierConfig
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import Scope


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock,
    db: CrawlDB | None = None,
    per_host: int = 1,
    delay: float = 0.0,
    memory_budget: int = 100_000,
) -> LocalFrontier:
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    policy = PolitenessPolicy(per_host=per_host, delay=delay)
    config = LocalFrontierConfig(memory_budget=memory_budget)
    return LocalFrontier(scope, policy, db, config=config, clock=clock)


async def test_restore_from_crawl_db(tmp_path: Path) -> None:
    clock = Clock()
    db = CrawlDB(tmp_path / "crawl.db")
    frontier = make(clock, db)
    await frontier.add([Candidate(f"http://a.test/{i}", depth=1) for i in range(4)])
    leases = await frontier.lease(1)
    await frontier.ack(leases[0], Feedback(started_at=clock.now))
    await db.commit()
    await frontier.add([Candidate("http://a.test/uncommitted")])  # lost by the "crash"
    db.close()

    db2 = CrawlDB(tmp_path / "crawl.db")
    restored = make(clock, db2)
    assert restored.restore() == (3, 1)
    assert (await restored.add([Candidate("http://a.test/0")])).duplicates == 1
    urls = []
    while not await restored.done():
        for lease in await restored.lease(10):
            urls.append(lease.url)
            await restored.ack(lease, None)
    assert urls == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    db2.close()


async def test_priorities_are_kept_in_crawl_db(tmp_path: Path) -> None:
    clock = Clock()
    db = CrawlDB(tmp_path / "crawl.db")
    frontier = make(clock, db, memory_budget=1)
    await frontier.add([Candidate("http://a.test/0"), Candidate("http://a.test/hot", priority=3)])
    await db.commit()
    db.close()

    db2 = CrawlDB(tmp_path / "crawl.db")
    restored = make(clock, db2)
    restored.restore()
    assert [lease.url for lease in await restored.lease(1)] == ["http://a.test/hot"]
    db2.close()


def test_a_crawl_db_without_priorities_gets_the_column(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE urls (fp INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, "
            "depth INTEGER NOT NULL, hops INTEGER NOT NULL DEFAULT 0, "
            "attempts INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL DEFAULT 0, "
            "seq INTEGER NOT NULL)"
        )
        old.execute("INSERT INTO urls VALUES (1, 'http://a.test/', 'http://a.test', 0, 0, 0, 0, 0)")
    old.close()
    db = CrawlDB(path)
    assert db.query("SELECT priority FROM urls") == [(0.0,)]
    db.close()


async def _drain(frontier: LocalFrontier) -> list[str]:
    urls = []
    for _ in range(10_000):
        if await frontier.done():
            break
        for lease in await frontier.lease(7):
            urls.append(lease.url)
            await frontier.ack(lease, None)
    return urls


async def test_queue_spills_past_the_memory_budget_and_reads_back_in_order(
    tmp_path: Path,
) -> None:
    clock = Clock()
    db = CrawlDB(tmp_path / "crawl.db")
    frontier = make(clock, db, per_host=3, memory_budget=50)
    expected = {host: [f"http://{host}.test/{i}" for i in range(120)] for host in ("a", "b", "c")}
    for i in range(120):
        await frontier.add([Candidate(urls[i]) for urls in expected.values()])
    assert frontier.stats().queued == 360
    assert frontier.in_memory <= 50
    urls = await _drain(frontier)
    assert sorted(urls) == sorted(u for us in expected.values() for u in us)
    for host, want in expected.items():
        assert [u for u in urls if f"//{host}.test/" in u] == want  # FIFO per host
    db.close()


async def test_resume_with_a_spilled_queue(tmp_path: Path) -> None:
    clock = Clock()
    db = CrawlDB(tmp_path / "crawl.db")
    frontier = make(clock, db, memory_budget=10)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(100)])
    (lease,) = await frontier.lease(1)
    await frontier.ack(lease, None)
    await db.commit()
    db.close()

    db2 = CrawlDB(tmp_path / "crawl.db")
    restored = make(clock, db2, memory_budget=10)
    assert restored.restore() == (99, 1)
    assert restored.in_memory == 10
    urls = await _drain(restored)
    assert urls == [f"http://a.test/{i}" for i in range(1, 100)]
    db2.close()


async def test_recent_urls_count_as_duplicates_and_depth_still_applies() -> None:
    frontier = make(Clock())
    first = await frontier.add([Candidate("http://a.test/x", depth=1)])
    again = await frontier.add(
        [Candidate("http://a.test/x", depth=2), Candidate("http://a.test/x", depth=6)]
    )
    assert (first.added, first.duplicates) == (1, 0)
    assert (again.added, again.duplicates, again.rejected) == (0, 1, {"depth": 1})
    assert frontier.stats().duplicates == 1


def test_outlinks_are_candidates_at_their_depth() -> None:
    links = Outlinks(["http://a.test/1", "http://a.test/2", "http://a.test/3"], 2)
    assert len(links) == 3
    assert list(links) == [Candidate(f"http://a.test/{i}", 2) for i in (1, 2, 3)]
    assert links[1] == Candidate("http://a.test/2", 2)
    assert list(links[1:]) == [Candidate("http://a.test/2", 2), Candidate("http://a.test/3", 2)]
    assert not Outlinks([], 1)


async def test_outlinks_are_added_as_their_candidates_would_be() -> None:
    urls = ["http://a.test/x", "http://a.test/y", "http://a.test/x", "http://offsite.example/"]
    results = []
    for batch in (Outlinks(urls, 1), [Candidate(url, 1) for url in urls]):
        frontier = make(Clock())
        first = await frontier.add(batch)
        again = await frontier.add(batch)  # the URLs added lately, dropped before admission
        leases = await frontier.lease(10)
        results.append((first, again, [(lease.url, lease.depth) for lease in leases]))
    assert results[0] == results[1]
    assert results[0][0] == AddResult(2, 1, {"offsite": 1})
    assert results[0][1] == AddResult(0, 3, {"offsite": 1})
    deeper = make(Clock())
    assert (await deeper.add(Outlinks(["http://a.test/z"], 6))).rejected == {"depth": 1}

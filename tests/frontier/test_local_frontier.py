"""The embedded frontier: dedup, scope, per-host slots, delays, retries, durability."""

from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import Candidate, Feedback
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import Scope


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock, db: CrawlDB | None = None, per_host: int = 1, delay: float = 0.0, **kw: object
) -> LocalFrontier:
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    return LocalFrontier(
        scope, PolitenessPolicy(per_host=per_host, delay=delay), db, clock=clock, **kw
    )  # type: ignore[arg-type]


async def test_dedup_and_scope() -> None:
    frontier = make(Clock())
    result = await frontier.add(
        [
            Candidate("http://a.test/x"),
            Candidate("HTTP://A.TEST:80/./x#frag"),
            Candidate("http://elsewhere.org/"),
            Candidate("mailto:x@y"),
            Candidate("http://a.test/deep", depth=6),
        ]
    )
    assert result.added == 1
    assert result.duplicates == 1
    assert result.rejected == {"offsite": 1, "invalid-url": 1, "depth": 1}
    again = await frontier.add([Candidate("http://a.test/x")])
    assert again.added == 0 and again.duplicates == 1


async def test_per_host_limit_and_fifo() -> None:
    clock = Clock()
    frontier = make(clock, per_host=2)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(5)])
    await frontier.add([Candidate("http://b.test/0")])
    leases = await frontier.lease(10)
    assert sorted(lease.url for lease in leases) == [
        "http://a.test/0",
        "http://a.test/1",
        "http://b.test/0",
    ]
    assert await frontier.lease(10) == []
    await frontier.ack(leases[0], Feedback(started_at=clock.now))
    more = await frontier.lease(10)
    assert [lease.url for lease in more] == ["http://a.test/2"]


async def test_delay_spaces_starts_from_real_start_time() -> None:
    clock = Clock()
    frontier = make(clock, delay=2.0)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(3)])
    (first,) = await frontier.lease(5)
    clock.now += 0.5  # the request really started half a second after the lease
    started = clock.now
    clock.now += 0.1
    await frontier.ack(first, Feedback(started_at=started, elapsed=0.1))
    clock.now = started + 1.999
    assert await frontier.lease(5) == []
    ready_in = frontier.next_ready()
    assert ready_in is not None and abs(ready_in - 0.001) < 1e-6
    clock.now = started + 2.0
    assert len(await frontier.lease(5)) == 1


async def test_crawl_delay_and_retry_after() -> None:
    clock = Clock()
    frontier = make(clock)
    await frontier.add([Candidate(f"http://a.test/{i}") for i in range(3)])
    (lease,) = await frontier.lease(1)
    await frontier.release(lease, Feedback(started_at=clock.now, crawl_delay=5.0))
    clock.now += 4.9
    assert await frontier.lease(1) == []
    clock.now += 0.1
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0"  # released URLs go back to the front
    await frontier.retry(lease, 1.0, Feedback(started_at=clock.now, retry_after=30.0))
    clock.now += 29.0
    assert await frontier.lease(1) == []
    clock.now += 1.0
    (lease,) = await frontier.lease(1)
    assert lease.url == "http://a.test/0" and lease.attempts == 1


async def test_robots_blocked_urls_use_no_slot() -> None:
    clock = Clock()
    frontier = make(clock, robots_check=lambda url: "private" not in url)
    await frontier.add([Candidate("http://a.test/private/1"), Candidate("http://a.test/ok")])
    leases = await frontier.lease(1)
    assert [(lease.url, lease.robots_blocked) for lease in leases] == [
        ("http://a.test/private/1", True),
        ("http://a.test/ok", False),
    ]
    await frontier.ack(leases[0], None)
    await frontier.ack(leases[1], Feedback(started_at=clock.now))
    assert frontier.done()


async def test_expired_leases_are_reclaimed() -> None:
    clock = Clock()
    frontier = make(clock, lease_timeout=10.0)
    await frontier.add([Candidate("http://a.test/x")])
    (lease,) = await frontier.lease(1)
    clock.now += 11
    (again,) = await frontier.lease(1)
    assert again.url == lease.url and again.token != lease.token
    await frontier.ack(lease, None)  # the stale lease is ignored
    assert not frontier.done()
    await frontier.ack(again, None)
    assert frontier.done()


async def test_done_tracks_queue_leases_and_retries() -> None:
    clock = Clock()
    frontier = make(clock)
    assert frontier.done() and frontier.next_ready() is None
    await frontier.add([Candidate("http://a.test/x")])
    assert not frontier.done()
    (lease,) = await frontier.lease(1)
    await frontier.retry(lease, 5.0, None)
    assert not frontier.done()
    assert frontier.next_ready() == 5.0
    clock.now += 5
    (lease,) = await frontier.lease(1)
    await frontier.ack(lease, None)
    assert frontier.done()


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
    while not restored.done():
        for lease in await restored.lease(10):
            urls.append(lease.url)
            await restored.ack(lease, None)
    assert urls == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    db2.close()


async def _drain(frontier: LocalFrontier) -> list[str]:
    urls = []
    for _ in range(10_000):
        if frontier.done():
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
    assert frontier._in_memory <= 50
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
    assert restored._in_memory == 10
    urls = await _drain(restored)
    assert urls == [f"http://a.test/{i}" for i in range(1, 100)]
    db2.close()

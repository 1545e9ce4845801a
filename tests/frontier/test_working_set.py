"""The embedded frontier's working set: at most ``max_active`` hosts are scheduled, the others
wait in line (first URL first) and join only when no active host is due; a host leaves when it
has nothing queued or leased, and a URL coming back from a lease puts its host at the front of
the line. All on an injected clock."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import Candidate, Feedback, Lease
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
    *,
    max_active: int,
    per_host: int = 1,
    delay: float = 0.0,
    db: CrawlDB | None = None,
    memory_budget: int = 100_000,
) -> LocalFrontier:
    return LocalFrontier(
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=per_host, delay=delay),
        db,
        config=LocalFrontierConfig(memory_budget=memory_budget, max_active=max_active),
        clock=clock,
    )


def urls(hosts: int, per_host: int) -> list[str]:
    """``per_host`` URLs of each host, host by host (h0's first)."""
    return [f"http://h{h}.test/{i}" for h in range(hosts) for i in range(per_host)]


async def add(frontier: LocalFrontier, batch: list[str]) -> None:
    result = await frontier.add([Candidate(url) for url in batch])
    assert result.added == len(batch)


def host(lease: Lease) -> str:
    return lease.url.split("/")[2]


async def drain(
    frontier: LocalFrontier, clock: Clock, max_active: int, step: float = 0.0, n: int = 7
) -> list[tuple[float, Lease]]:
    """Lease and ack until done, checking the working set's size after every call."""
    leased: list[tuple[float, Lease]] = []
    for _ in range(100_000):
        if await frontier.done():
            return leased
        batch = await frontier.lease(n)
        assert frontier.stats().active_hosts <= max_active
        for lease in batch:
            leased.append((clock.now, lease))
            await frontier.ack(lease, Feedback(started_at=clock.now))
        assert frontier.stats().active_hosts <= max_active
        clock.now += step
    raise AssertionError("the frontier never finished")


async def test_a_lease_activates_only_the_hosts_it_needs() -> None:
    clock = Clock()
    frontier = make(clock, max_active=10)
    await add(frontier, urls(1000, 3))
    leases = await frontier.lease(5)
    assert [host(lease) for lease in leases] == [f"h{i}.test" for i in range(5)]
    assert frontier.stats().active_hosts == 5
    assert frontier.stats().hosts == 1000


async def test_active_hosts_that_are_due_fill_a_lease_before_new_hosts_join() -> None:
    clock = Clock()
    frontier = make(clock, max_active=10, per_host=3)
    await add(frontier, urls(20, 3))
    leases = await frontier.lease(3)
    assert [lease.url for lease in leases] == urls(1, 3)
    assert frontier.stats().active_hosts == 1


async def test_a_released_host_is_leased_again_before_any_new_host_joins() -> None:
    """A URL released (at shutdown, say) puts its host at the front of the line."""
    clock = Clock()
    frontier = make(clock, max_active=10)
    await add(frontier, urls(1000, 3))
    [first] = await frontier.lease(1)
    await frontier.release(first, Feedback(started_at=clock.now, crawl_delay=None))
    [again] = await frontier.lease(1)
    assert again.url == first.url
    assert frontier.stats().active_hosts == 1


async def test_every_url_of_a_thousand_hosts_is_leased_once_within_the_working_set() -> None:
    clock = Clock()
    frontier = make(clock, max_active=10)
    everything = urls(1000, 3)
    await add(frontier, everything)
    leased = await drain(frontier, clock, max_active=10, n=15)  # more than the set can give
    counts = Counter(lease.url for _, lease in leased)
    assert set(counts) == set(everything)
    assert set(counts.values()) == {1}
    assert frontier.stats().active_hosts == 0
    assert frontier.stats().queued == 0
    # hosts joined in the order their first URL arrived
    first_seen = list(dict.fromkeys(host(lease) for _, lease in leased))
    assert first_seen == [f"h{i}.test" for i in range(1000)]


async def test_a_host_with_a_delay_keeps_its_spacing_while_others_join() -> None:
    clock = Clock()
    frontier = make(clock, max_active=3, delay=1.0)
    await add(frontier, urls(8, 3))
    leased = await drain(frontier, clock, max_active=3, step=0.25)
    assert len(leased) == 24
    times: dict[str, list[float]] = {}
    for when, lease in leased:
        times.setdefault(host(lease), []).append(when)
    for starts in times.values():
        assert all(b - a >= 1.0 for a, b in itertools.pairwise(starts)), starts
    # while the first hosts wait out their delay the set fills up: three requests at once
    assert [host(lease) for when, lease in leased if when == 100.0] == [
        "h0.test",
        "h1.test",
        "h2.test",
    ]


async def test_a_retried_last_url_puts_its_host_at_the_front_of_the_line() -> None:
    clock = Clock()
    frontier = make(clock, max_active=1)
    await add(
        frontier, ["http://a.test/0", "http://b.test/0", "http://b.test/1", "http://d.test/0"]
    )
    order = []
    [a] = await frontier.lease(1)
    order.append(a.url)
    await frontier.retry(a, 1.5, Feedback(started_at=clock.now))
    assert frontier.stats().active_hosts == 0  # nothing queued or leased: it left the set
    for _ in range(20):
        if await frontier.done():
            break
        for lease in await frontier.lease(1):
            order.append(lease.url)
            await frontier.ack(lease, Feedback(started_at=clock.now))
        clock.now += 1.0
    assert order == [
        "http://a.test/0",
        "http://b.test/0",
        "http://b.test/1",
        "http://a.test/0",  # back from its retry: ahead of d.test, which has waited longer
        "http://d.test/0",
    ]


async def test_spilled_hosts_join_and_finish_like_the_others(tmp_path: Path) -> None:
    clock = Clock()
    db = CrawlDB(tmp_path / "crawl.db")
    frontier = make(clock, max_active=10, db=db, memory_budget=20)
    everything = urls(200, 3)
    await add(frontier, everything)
    await db.commit()
    assert frontier.in_memory <= 20
    leased = await drain(frontier, clock, max_active=10)
    assert sorted(lease.url for _, lease in leased) == sorted(everything)
    by_host: dict[str, list[str]] = {}
    for _, lease in leased:
        by_host.setdefault(host(lease), []).append(lease.url)
    for name, got in by_host.items():  # each host's URLs in the order they came
        assert got == [f"http://{name}/{i}" for i in range(3)]
    assert frontier.stats().active_hosts == 0
    db.close()


async def test_next_ready_is_now_while_the_line_waits_for_room() -> None:
    clock = Clock()
    frontier = make(clock, max_active=1, delay=10.0)
    await add(frontier, ["http://a.test/0", "http://a.test/1", "http://b.test/0"])
    assert frontier.next_ready() == 0.0
    [a] = await frontier.lease(1)
    assert a.url == "http://a.test/0"
    # the set is full and its host is not due: nothing to do before a.test's delay is up
    assert await frontier.lease(1) == []
    await frontier.ack(a, Feedback(started_at=clock.now))
    assert frontier.next_ready() == 10.0

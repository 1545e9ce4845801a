"""A gone page is checked ``max_gone`` times and no more, however its lease's end and the
reads of what is due interleave.

The embedded frontier reads the URLs due from crawl.db off the event loop. A page's answer is
judged, and its new row staged, while such a read may be running: when its lease ended then
too, the read could hand back the row from before the answer (still due, one gone fewer) and
queue the page again, so it was checked once more than the bound (CI once saw a 4th ``gone``
record where the bound is 3). Here the read is held in its thread (a slow disk, a loaded
machine) while the page's third ``404`` is judged and its lease acked, so the interleaving is
the same at every run.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.revisit.test_store import BOUNDS, Clock

from gossamer.crawldb import CrawlDB
from gossamer.frontier import revisits as store
from gossamer.frontier.base import Lease
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.revisits import Revisits, RevisitState
from gossamer.outcomes import Action
from gossamer.page.freshness import Freshness
from gossamer.page.state import PageState
from gossamer.urls import Scope, fingerprint, host_key

GONE = "http://a.test/gone"
OTHER = "http://b.test/page"
OTHER_DUE = 1020.25
"""Another host's page, due a moment after the gone one's third check: a read of what is due
runs then."""


class HeldReads(CrawlDB):
    """crawl.db whose next read of what is due waits in its thread until released."""

    def __init__(self, path: Path) -> None:
        self.hold = False
        self.running = threading.Event()
        self.release = threading.Event()
        super().__init__(path)

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if self.hold and sql is store._READ_DUE:
            self.hold = False
            self.running.set()
            assert self.release.wait(10), "the test never released the read"
        return super().query(sql, params)


@dataclass
class NotFound:
    """A 404 answer, as the page stage gets it."""

    fetched_at: float
    status: int = 404
    error: str | None = None
    body: bytes = b""
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def _crawl(tmp_path: Path) -> tuple[HeldReads, Clock, Revisits, LocalFrontier]:
    db = HeldReads(tmp_path / "crawl.db")
    rows = [
        (fingerprint(u), u, host_key(u), 1, 0, 0, 1, i, 0.0) for i, u in enumerate([GONE, OTHER])
    ]
    db.stage(
        "INSERT INTO urls (fp, url, host, depth, hops, attempts, state, seq, priority) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    clock = Clock()
    revisits = Revisits(db, lambda url, kind: BOUNDS, clock=clock)
    revisits.observed(
        GONE,
        RevisitState(
            fingerprint(GONE), fetched_at=990.0, captured_at=990.0, interval=10.0, due=1000.0
        ),
    )
    revisits.observed(
        OTHER, RevisitState(fingerprint(OTHER), fetched_at=1010.0, interval=10.0, due=OTHER_DUE)
    )
    policy = PolitenessPolicy(per_host=1, delay=0.1)
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    frontier = LocalFrontier(scope, policy, db, clock=clock, revisits=revisits)
    frontier.restore()
    return db, clock, revisits, frontier


def _judge(freshness: Freshness, lease: Lease, now: float) -> str | None:
    state = PageState(lease, NotFound(now), None, ())  # type: ignore[arg-type]
    freshness.judge(state, Action.DROP)
    return state.change


async def test_a_gone_page_is_not_checked_again_by_a_read_running_at_its_answer(
    tmp_path: Path,
) -> None:
    db, clock, revisits, frontier = _crawl(tmp_path)
    freshness = Freshness(revisits)
    checks: list[str | None] = []
    last = 1000.0 + 10.0 * (revisits.max_gone - 1)
    while clock.now < last + 60.0:  # a minute past the last check, in steps of its pace
        leases = await frontier.lease(4)
        while leases:
            lease = leases.pop(0)
            if lease.url != GONE:
                await frontier.ack(lease, None)
                continue
            if clock.now < last or db.running.is_set():
                checks.append(_judge(freshness, lease, clock.now))
                await frontier.ack(lease, None)
                continue
            # the last check (gone the 3rd time): a read of what is due (OTHER's) is
            # running while its answer is judged and its lease ends
            clock.now = OTHER_DUE
            db.hold = True
            reading = asyncio.create_task(frontier.lease(4))
            assert await asyncio.to_thread(db.running.wait, 10)
            checks.append(_judge(freshness, lease, clock.now))
            await frontier.ack(lease, None)
            db.release.set()
            leases += await reading
        await db.commit()  # the checkpoint
        clock.now += 0.5
    assert checks == ["gone"] * revisits.max_gone, "checked past the bound"
    assert revisits.results["gone"] == revisits.max_gone
    rows = db.query("SELECT gone, due FROM revisits WHERE fp = ?", (fingerprint(GONE),))
    assert rows == [(revisits.max_gone, None)]
    db.close()

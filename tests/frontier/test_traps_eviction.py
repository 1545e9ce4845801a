"""The trap guard's remembered lines of descent are forgotten oldest first at a constant cost
(judged with them full it costs about what it costs with room)."""

from __future__ import annotations

import time

from gossamer.frontier.traps import TrapGuard, TrapLimits

H = "http://a.test"
URLS = 100_000
KEPT = 50_000


def _remembering(lineage: int) -> tuple[float, int]:
    """The CPU of remembering the descent of ``URLS`` new URLs, ``KEPT`` URLs' remembered
    already (a ``lineage`` of ``KEPT``: the guard full), and the lines remembered then."""
    guard = TrapGuard(TrapLimits(lineage=lineage))
    for i in range(KEPT):
        guard._remember(f"{H}/old/{i:08x}", "/*/*", 1)
    urls = [f"{H}/new/{i:08x}" for i in range(URLS)]
    started = time.thread_time()
    for url in urls:
        guard._remember(url, "/*/*", 1)
    return time.thread_time() - started, guard.stats().lines


def test_forgetting_the_oldest_lines_of_descent_costs_no_more_than_remembering_them() -> None:
    """Before: 1.2 s full against 0.06 s with room (each eviction scanned the keys evicted
    before it); now about the same."""
    with_room, lines = _remembering(KEPT + URLS)
    assert lines == KEPT + URLS
    full, lines = _remembering(KEPT)
    assert lines == KEPT
    assert full < 3 * with_room + 0.1, (full, with_room)


def test_the_oldest_lines_of_descent_are_forgotten_first() -> None:
    """Each URL remembered with the guard full forgets the oldest first: remembered again,
    the oldest forgets itself and comes back as the newest."""
    guard = TrapGuard(TrapLimits(lineage=3))
    for name in "abc":
        guard._remember(f"{H}/{name}/1f3a9c0e", "/*/*", 2)
    guard._remember(f"{H}/a/1f3a9c0e", "/*/*", 3)
    guard._remember(f"{H}/d/1f3a9c0e", "/*/*", 2)
    guard._remember(f"{H}/e/1f3a9c0e", "/*/*", 2)
    descents = {name: guard._descent_of(f"{H}/{name}/1f3a9c0e")[1] for name in "abcde"}
    assert descents == {"a": 3, "b": 0, "c": 0, "d": 2, "e": 2}

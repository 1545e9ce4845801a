"""A fixed breadth-first workload (every priority 0) of the host scheduler and the embedded
frontier, for instruction counts: best first must cost nothing while no priority is set.

    SCALE=0 valgrind --tool=callgrind python benchmarks/bench_zero_priority.py  # imports only
    SCALE=1 valgrind --tool=callgrind python benchmarks/bench_zero_priority.py

The workload's instructions are the difference of the two totals (``PYTHONPATH`` pointing at
the code to measure).
"""

from __future__ import annotations

import asyncio
import os

from gossamer.frontier.base import Candidate, Feedback
from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import Scope


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def scheduler(n_hosts: int, per: int) -> int:
    """Push ``per`` URLs to each of ``n_hosts`` hosts, lease and finish them all."""
    clock = Clock()
    hosts: HostScheduler[Queued] = HostScheduler(PolitenessPolicy(per_host=2), clock=clock)
    for i in range(per):
        for h in range(n_hosts):
            hosts.push(f"http://h{h}.test", Queued(f"http://h{h}.test/{i}", i * n_hosts + h, 1, 0))
    done = 0
    while hosts.queued:
        leases = hosts.lease(64).leases
        for lease in leases:
            hosts.finish(lease, None)
        done += len(leases)
        clock.now += 0.01
    return done


async def frontier(n_hosts: int, per: int) -> int:
    """The same through the embedded frontier's add, lease and ack (no crawl.db)."""
    clock = Clock()
    scope = Scope.for_seeds([], ["test"], max_depth=None)
    front = LocalFrontier(scope, PolitenessPolicy(per_host=2), clock=clock)
    for i in range(per):
        await front.add([Candidate(f"http://h{h}.test/{i}", depth=1) for h in range(n_hosts)])
    done = 0
    while not await front.done():
        leases = await front.lease(64)
        for lease in leases:
            await front.ack(lease, Feedback(started_at=clock.now))
        done += len(leases)
        clock.now += 0.01
    return done


if __name__ == "__main__" and os.environ.get("SCALE", "1") == "1":
    print(scheduler(200, 25), asyncio.run(frontier(100, 25)))

"""Time of the host scheduler's hot path: ``lease`` and ``finish`` (a frontier's ack) of
200,000 URLs over 1,000 hosts, breadth first (every priority 0), no robots.txt.

    .venv/bin/python benchmarks/bench_scheduler.py [--hosts 1000] [--urls 200000] [--repeat 5]
        [--max-active N] [--per-domain N]

Prints the best of ``--repeat`` runs of the lease/finish loop (the pushes are not timed), in
wall and CPU time. ``--max-active`` bounds the working set (the embedded frontier's 50,000)
and ``--per-domain`` caps each registrable domain (each host ``h{i}.test`` is its own), so
hosts join and leave the set and are counted on their domain's share of it.
"""

from __future__ import annotations

import argparse
import time

from gossamer.frontier.hosts import HostScheduler, Queued
from gossamer.frontier.politeness import PolitenessPolicy


class Clock:
    """A clock the loop moves on by hand."""

    now = 0.0

    def __call__(self) -> float:
        return self.now


def filled(
    hosts: int, urls: int, clock: Clock, max_active: int | None, per_domain: int | None
) -> HostScheduler[Queued]:
    """A scheduler holding ``urls`` URLs spread evenly over ``hosts`` hosts."""
    policy = PolitenessPolicy(per_host=2, per_domain=per_domain)
    scheduler: HostScheduler[Queued] = HostScheduler(policy, max_active=max_active, clock=clock)
    keys = [f"http://h{h}.test" for h in range(hosts)]
    for i in range(urls):
        key = keys[i % hosts]
        scheduler.push(key, Queued(f"{key}/{i}", i, 1, 0))
    return scheduler


def drain(scheduler: HostScheduler[Queued], clock: Clock) -> tuple[int, float, float]:
    """Lease 64 at a time and finish each until nothing is queued: (leases, seconds, CPU
    seconds)."""
    done = 0
    started, cpu = time.perf_counter(), time.process_time()
    while scheduler.queued:
        leases = scheduler.lease(64).leases
        for lease in leases:
            scheduler.finish(lease, None)
        done += len(leases)
        clock.now += 0.001
    return done, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    """Run the loop ``--repeat`` times and print the best."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-active", type=int, default=None)
    parser.add_argument("--per-domain", type=int, default=None)
    args = parser.parse_args()
    best = best_cpu = float("inf")
    done = 0
    for _ in range(args.repeat):
        clock = Clock()
        scheduler = filled(args.hosts, args.urls, clock, args.max_active, args.per_domain)
        done, seconds, cpu = drain(scheduler, clock)
        best, best_cpu = min(best, seconds), min(best_cpu, cpu)
    print(
        f"{done:,} leases + finishes over {args.hosts:,} hosts: best {best:.3f} s "
        f"({done / best:,.0f} per s, {best / done * 1e6:.2f} us each), CPU {best_cpu:.3f} s"
    )


if __name__ == "__main__":
    main()

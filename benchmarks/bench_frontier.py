"""Memory of a big queue: add millions of URLs to the embedded frontier, print peak RSS.

The issue's target: 5 million queued URLs in under 500 MB RSS. URLs are spread over many
hosts, added in batches like a crawl's outlinks, with crawl.db commits as the crawl makes them;
then a few thousand are leased and acked to show the queue still works.

    .venv/bin/python benchmarks/bench_frontier.py [--urls 5000000] [--hosts 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.frontier.base import Candidate
from gossamer.frontier.local import LocalFrontier, LocalFrontierConfig
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import Scope

TARGET_MB = 500


def rss_mb() -> float:
    """Current resident set size, MiB."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_mb() -> float:
    """Peak resident set size, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run(urls: int, hosts: int, budget: int, batch: int) -> int:
    """Fill the frontier, report, lease a little; exit status 1 when over the target."""
    rng = random.Random(1)
    names = [f"h{i}.bench" for i in range(hosts)]
    with tempfile.TemporaryDirectory() as tmp:
        db = CrawlDB(Path(tmp) / "crawl.db")
        frontier = LocalFrontier(
            Scope.for_seeds([], ["bench"]),
            PolitenessPolicy(),
            db,
            config=LocalFrontierConfig(memory_budget=budget),
        )
        start_rss, started = rss_mb(), time.perf_counter()
        added = 0
        while added < urls:
            host = names[rng.randrange(hosts)]
            page = [
                Candidate(f"http://{host}/section-{added % 97}/article-{added + i}.html", depth=3)
                for i in range(batch)
            ]
            added += (await frontier.add(page)).added
            if added % 100_000 < batch:
                await db.commit()
        await db.commit()
        filled = time.perf_counter() - started
        stats = frontier.stats()
        leased = 0
        started = time.perf_counter()
        for _ in range(2_000):
            for lease in await frontier.lease(64):
                await frontier.ack(lease, None)
                leased += 1
            if leased >= 5_000:
                break
        await db.commit()
        drained = time.perf_counter() - started
        db.close()
    peak = peak_mb()
    print(f"queued URLs        {stats.queued:,} over {stats.hosts:,} hosts")
    print(f"memory budget      {budget:,} URLs held in memory, the rest in crawl.db")
    print(f"fill time          {filled:.1f} s ({urls / filled:,.0f} URLs/s added)")
    print(f"RSS before / peak  {start_rss:.0f} MB / {peak:.0f} MB (target < {TARGET_MB} MB)")
    print(f"leased and acked   {leased:,} after the fill ({leased / drained:,.0f} URLs/s)")
    return 0 if peak < TARGET_MB else 1


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=5_000_000)
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    return asyncio.run(run(args.urls, args.hosts, args.budget, args.batch))


if __name__ == "__main__":
    sys.exit(main())

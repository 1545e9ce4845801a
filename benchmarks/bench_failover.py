"""Failover figures: a Redis Cluster master killed mid-crawl, and what WAIT for a replica costs.

Both parts run on a Redis Cluster of 3 masters with a replica each, on loopback
(``tests/redis_replicas.py``: ``cluster-node-timeout`` 1000 ms, AOF on).

**Ride-through** (``--runs`` times each, with the replica waits on and with
``--no-replica-wait``): the in-process test web (``--hosts`` x ``--pages`` pages, one request
at a time per host, ``--delay`` apart), a job submitted, 3 ``gossamer cluster worker``
processes; once they hold ``--kill-after`` records the busiest master is killed with kill -9.
Printed per run: seconds until its replica is a master and the cluster says ok, the longest
outage a worker logged (``redis-recovered``), the workers' exit statuses, pages the web served
twice (from its own request log, robots.txt left out), URLs missing against a single
``gossamer crawl`` of the same web, and the crawl's wall time.

**WAIT cost**: one frontier alone on the cluster crawls a synthetic job with no HTTP:
``--tasks`` coroutines each lease a URL, add ``--links`` outlinks of it (on random hosts: new
URLs and duplicates) and ack it, until ``--frontier-pages`` pages are acked. Pages/s and
Redis commands per page, with the replica waits on and off.

Usage: ``.venv/bin/python benchmarks/bench_failover.py [--runs 2] [--hosts 12] [--pages 40]
[--delay 0.1] [--frontier-pages 5000]``. Exit status 0 when every worker of every run exited
0 and no URL was missing; 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.redis_replicas import ReplicatedCluster

from gossamer.cluster.jobs import open_control
from gossamer.cluster.resilient import install_guard
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.testweb import TestWebServer, generate
from gossamer.urls import Scope

GOSSAMER = [sys.executable, "-m", "gossamer.cli"]
WEB = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet"]
FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--total-timeout", "2"]
WORKERS = 3


@dataclass(frozen=True, slots=True)
class RideThrough:
    """One run of the ride-through part."""

    wait: bool
    busiest_share: float
    """The busiest master's share of the commands the masters ran before the kill."""
    promoted_s: float
    longest_outage_s: float
    codes: tuple[int, ...]
    twice: int
    missing: int
    wall_s: float


async def _gossamer(log: Path, *args: str) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(*GOSSAMER, *args, stdout=out, stderr=out)


def _requests(server: TestWebServer) -> Counter[str]:
    return Counter(
        f"http://{e.host}:{e.port}{e.path}" for e in server.log if not e.path.startswith("/robots")
    )


def _records(out: Path) -> int:
    path = out / "pages.jsonl"
    return len(path.read_text("utf-8").splitlines()) if path.exists() else 0


async def _until_records(work: Path, least: int, limit: float = 120.0) -> None:
    """Until the workers' pages.jsonl hold ``least`` records together (at most ``limit`` s)."""
    for _ in range(int(limit / 0.05)):
        if sum(_records(work / f"w{i}") for i in range(WORKERS)) >= least:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"fewer than {least} records after {limit:g}s")


def _longest_outage(log: Path) -> float:
    longest = 0.0
    for line in log.read_text("utf-8", "replace").splitlines():
        if line.startswith("{") and '"redis-recovered"' in line:
            longest = max(longest, float(json.loads(line).get("outage_seconds", 0.0)))
    return longest


async def ride_through(args: argparse.Namespace, wait: bool, work: Path) -> RideThrough:
    """Crawl the test web with 3 workers, kill the busiest master, count what it cost."""
    web = generate(11, hosts=args.hosts, pages_per_host=args.pages, specials=(), crawl_delay=None)
    async with TestWebServer(web, flaky_failures=0) as server:
        seed = server.url(0)
        reference = await _gossamer(
            work / "reference.log", "crawl", seed, *FAST, *WEB, "--out", str(work / "reference")
        )
        await reference.wait()
        requested = set(_requests(server))
        server.log.clear()
        with ReplicatedCluster() as cluster:
            url = cluster.url
            job = [
                *FAST,
                "--per-host",
                "1",
                "--delay",
                str(args.delay),
                "--concurrency",
                "8",
                "--partitions",
                "64",
                "--heartbeat-ttl",
                "3",
                "--claim-timeout",
                "15",
            ]
            submit = await _gossamer(
                work / "submit.log", "cluster", "submit", "--redis", url, seed, *job, *WEB
            )
            await submit.wait()
            started = time.monotonic()
            flags = [] if wait else ["--no-replica-wait"]
            workers = [
                await _gossamer(
                    work / f"w{i}.log",
                    "cluster",
                    "worker",
                    "--redis",
                    url,
                    "--name",
                    f"w{i}",
                    "--out",
                    str(work / f"w{i}"),
                    "--quiet",
                    "--log-level",
                    "info",
                    "--log-json",
                    *flags,
                )
                for i in range(WORKERS)
            ]
            await _until_records(work, args.kill_after)
            ran = {port: cluster.commands(port) for port in cluster.master_ports()}
            victim = max(ran, key=ran.__getitem__)
            heir = cluster.replica_of(victim)
            cluster.kill(victim)
            promoted = await asyncio.to_thread(cluster.wait_promoted, heir)
            codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 300)
            wall = time.monotonic() - started
        served = _requests(server)
    return RideThrough(
        wait=wait,
        busiest_share=ran[victim] / max(1, sum(ran.values())),
        promoted_s=promoted,
        longest_outage_s=max(_longest_outage(work / f"w{i}.log") for i in range(WORKERS)),
        codes=tuple(codes),
        twice=sum(1 for n in served.values() if n > 1),
        missing=len(requested - set(served)),
        wall_s=wall,
    )


async def frontier_rate(args: argparse.Namespace, wait: bool) -> tuple[float, float]:
    """Pages/s and Redis commands per page of a frontier crawling a synthetic job."""
    with ReplicatedCluster(aof=False) as cluster:
        control = await open_control(cluster.url, "bench")
        install_guard(control.redis, cluster.url, 60, durable=wait)
        frontier = RedisFrontier(
            control.redis,
            "bench",
            Scope.for_seeds([], ["bench"], max_depth=50),
            PolitenessPolicy(),
            config=RedisFrontierConfig(partitions=256, refresh_interval=0.0),
        )
        rng = random.Random(1)
        hosts = [f"h{i}.bench" for i in range(2000)]
        await frontier.add([Candidate(f"http://{h}/") for h in hosts])
        before = await _commands(cluster)
        done = 0
        started = time.perf_counter()

        async def crawl() -> None:
            nonlocal done
            while done < args.frontier_pages:
                leases = await frontier.lease(1)
                if not leases:
                    await asyncio.sleep(0.001)
                    continue
                links = [
                    Candidate(f"http://{rng.choice(hosts)}/p{rng.randrange(50_000)}", depth=1)
                    for _ in range(args.links)
                ]
                await frontier.add(links)
                await frontier.ack(leases[0], None)
                done += 1

        await asyncio.gather(*(crawl() for _ in range(args.tasks)))
        elapsed = time.perf_counter() - started
        commands = await _commands(cluster) - before
        await control.redis.aclose()
    return done / elapsed, commands / done


async def _commands(cluster: ReplicatedCluster) -> int:
    """Commands the live masters ran so far."""
    return sum(cluster.commands(port) for port in cluster.master_ports())


async def main_async(args: argparse.Namespace) -> int:
    ok = True
    print(
        "| replica wait | busiest master's commands | promoted (s) | longest outage (s) "
        "| exit codes | served twice | missing | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for _ in range(args.runs):
        for wait in (True, False):
            with tempfile.TemporaryDirectory(prefix="bench-failover-") as tmp:
                result = await ride_through(args, wait, Path(tmp))
            ok = ok and set(result.codes) == {0} and result.missing == 0
            mode = "on" if wait else "off"
            print(
                f"| {mode} | {result.busiest_share:.0%} | {result.promoted_s:.1f} "
                f"| {result.longest_outage_s:.1f} | {','.join(map(str, result.codes))} "
                f"| {result.twice} | {result.missing} | {result.wall_s:.1f} |",
                flush=True,
            )
    print()
    print("| replica wait | frontier pages/s | Redis commands/page |")
    print("|---|---|---|")
    for wait in (True, False):
        rate, per_page = await frontier_rate(args, wait)
        print(f"| {'on' if wait else 'off'} | {rate:.0f} | {per_page:.1f} |", flush=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=12)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--kill-after", type=int, default=60)
    parser.add_argument("--frontier-pages", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--links", type=int, default=10)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())

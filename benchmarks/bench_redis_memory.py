"""Redis memory per queued URL at scale, by structure: the figure docs/capacity.md sizes with.

Loads ``--urls`` realistic URLs over ``--hosts`` hosts into a throwaway redis-server through
the frontier's own add path (the admitted URLs batched by partition, one ``add.lua`` call a
partition, a pipeline a batch of ``--batch`` URLs, as a worker or ``cluster submit`` sends
them), plus what a submit stores beside them (the job's key and its seed origins, one a
host). Then it prints Redis' ``used_memory`` before and after, per queued URL, and the bytes
of each kind of key (``MEMORY USAGE`` of every key, digits in key names folded), per queued
URL; and Redis' CPU seconds (``INFO cpu``) per URL added.

    .venv/bin/python benchmarks/bench_redis_memory.py [--urls 1000000] [--hosts 10000]
        [--partitions 4096]

URLs look like ``https://www.news-site123.com/world/2024/05/rain-falls-on-city-4567.html``
(70 bytes on average: hosts of 20-30 characters, paths of 40-50), each host's pages spread
over the whole run as a crawl finds them, depth 1 to 3. Redis runs with its default settings
but for ``--list-compress-depth``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator

from redis import Redis as SyncRedis
from redis.asyncio import Redis

from cluster_procs import LocalRedis
from gossamer.frontier.base import Candidate
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.redis.adds import Adds
from gossamer.frontier.redis.keys import PartitionKeys
from gossamer.frontier.redis.scripts import register
from gossamer.settings import JobSettings
from gossamer.urls import fingerprint

JOB = "mem"
_SECTIONS = ("world", "sport", "business", "culture", "tech", "science", "opinion", "travel")
_WORDS = ("rain", "city", "market", "vote", "team", "price", "storm", "film", "school", "road")
_SITES = ("news-site", "daily-paper", "shop", "blog", "forum", "wiki", "magazine")


def host_of(h: int) -> str:
    return f"https://www.{_SITES[h % len(_SITES)]}{h}.com"


def url_of(i: int, hosts: int) -> tuple[str, str]:
    """The ``i``-th URL and its host key: host ``i % hosts``, that host's page ``i // hosts``."""
    h, page = i % hosts, i // hosts
    key = host_of(h)
    a, b, c = (_WORDS[(page + k * 7 + h) % len(_WORDS)] for k in range(3))
    section = _SECTIONS[(page + h) % len(_SECTIONS)]
    return f"{key}/{section}/20{20 + page % 5}/{page % 12 + 1:02d}/{a}-{b}-{c}-{page}.html", key


def admitted(start: int, stop: int, hosts: int) -> Iterator[tuple[str, str, int, Candidate]]:
    for i in range(start, stop):
        url, key = url_of(i, hosts)
        yield url, key, fingerprint(url), Candidate(url, depth=1 + i % 3)


def info(client: SyncRedis, section: str) -> dict[str, str]:
    return {name: str(value) for name, value in client.info(section).items()}


def cpu_seconds(client: SyncRedis) -> float:
    row = info(client, "cpu")
    return float(row["used_cpu_sys"]) + float(row["used_cpu_user"])


def key_kinds(client: SyncRedis) -> Counter[str]:
    """Bytes by key kind (digits folded to #), every key counted (``SAMPLES 0``: exact)."""
    kinds: Counter[str] = Counter()
    batch: list[bytes] = []
    for key in client.scan_iter(count=2000):
        batch.append(key)
        if len(batch) == 2000:
            _measure(client, batch, kinds)
            batch = []
    _measure(client, batch, kinds)
    return kinds


def _measure(client: SyncRedis, keys: list[bytes], kinds: Counter[str]) -> None:
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    for key, usage in zip(keys, pipe.execute(), strict=True):
        kinds[re.sub(r"\d+", "#", key.decode())] += int(usage or 0)


def print_commands(stats: dict[str, dict[str, float]], queued: int) -> None:
    """Redis' own time per URL added by command (``INFO commandstats``: a script's
    EVALSHA includes the commands it calls, each also counted on its own line)."""
    rows = sorted(stats.items(), key=lambda row: -row[1]["usec"])
    shown = ", ".join(
        f"{name.removeprefix('cmdstat_')} {row['usec'] / queued:.2f} us "
        f"({row['calls'] / queued:.2f})"
        for name, row in rows
        if row["usec"] / queued >= 0.01
    )
    print(f"  Redis time per URL added, by command (calls per URL): {shown}")


def job_document() -> str:
    """The job's key as a submit stores it (settings alone, whatever the seed count)."""
    try:
        from gossamer.cluster.jobs import job_json
    except ImportError:  # a frontier before format 2
        from gossamer.settings import settings_to_json as job_json
    return job_json(JobSettings())


async def load(url: str, args: argparse.Namespace) -> float:
    """Add every URL; the seconds it took."""
    client = Redis.from_url(url, socket_timeout=900)  # a server under valgrind is slow
    script = register(client)["add"]
    keys = PartitionKeys(JOB)
    started = time.monotonic()
    adds = Adds(client, keys, script, args.partitions, by_url=False)  # as a worker keeps it
    for start in range(0, args.urls, args.batch):
        adds.sent = SeenSet()  # no local seen cache: every URL is looked up in Redis
        _, duplicates = await adds.send(
            admitted(start, min(args.urls, start + args.batch), args.hosts)
        )
        assert not duplicates, duplicates
    took = time.monotonic() - started
    origins = [host_of(h) + "/" for h in range(min(args.hosts, args.urls))]
    for i in range(0, len(origins), 10_000):
        await client.sadd(f"gs:{{{JOB}}}:origins", *origins[i : i + 10_000])
    await client.set(f"gs:{{{JOB}}}:job", job_document())
    await client.aclose()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=50_000, help="URLs a pipeline (50,000)")
    parser.add_argument(
        "--list-compress-depth",
        type=int,
        default=0,
        help="Redis' list-compress-depth (0, its default: no list compressed; 1: every node "
        "of a queue but its two ends compressed with LZF)",
    )
    args = parser.parse_args()
    url_bytes = sum(len(url_of(i, args.hosts)[0]) for i in range(0, args.urls, 97))
    url_bytes /= len(range(0, args.urls, 97))
    with LocalRedis() as redis:
        client = SyncRedis.from_url(redis.url)
        client.config_set("list-compress-depth", args.list_compress_depth)
        before, cpu_before = int(info(client, "memory")["used_memory"]), cpu_seconds(client)
        took = asyncio.run(load(redis.url, args))
        after, cpu_after = int(info(client, "memory")["used_memory"]), cpu_seconds(client)
        commands = client.info("commandstats")
        queued = sum(
            int(client.hget(PartitionKeys(JOB).of(p, "counts")[0], "queued") or 0)
            for p in range(args.partitions)
        )
        kinds = key_kinds(client)
        client.close()
    assert queued == args.urls, (queued, args.urls)
    per_url = (after - before) / queued
    print(
        f"{queued:,} queued URLs over {args.hosts:,} hosts, {args.partitions:,} partitions, "
        f"{url_bytes:.0f} bytes per URL"
    )
    print(
        f"added in {took:.1f} s ({queued / took:,.0f} URLs/s); Redis CPU "
        f"{(cpu_after - cpu_before) / queued * 1e6:.1f} us per URL added"
    )
    print_commands(commands, queued)
    print(f"used_memory {before:,} -> {after:,} bytes: {per_url:.1f} bytes per queued URL")
    total = sum(kinds.values())
    for kind, size in kinds.most_common(10):
        print(f"  {kind:32} {size / queued:7.2f} bytes per URL")
    print(f"  {'(all keys, MEMORY USAGE)':32} {total / queued:7.2f} bytes per URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())

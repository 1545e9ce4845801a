"""Redis memory per queued URL after ``gossamer cluster submit``, AOF size included (the
figure at scale, by structure: ``bench_redis_memory.py``).

Submits ``--seeds`` URLs over ``--hosts`` hosts to a throwaway redis-server (``gossamer cluster
submit --seeds-file``), then reads ``INFO memory`` (used_memory, before and after), the AOF's
size once rewritten, and ``MEMORY USAGE`` of the job's keys grouped by kind (digits in key
names folded), so the queue and the seen set can be told apart.

    .venv/bin/python benchmarks/bench_redis_size.py [--seeds 200000] [--hosts 10000]

URLs look like ``https://www.h123.example/articles/2024/05/some-title-4567.html`` (about 70
bytes, a typical article URL).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from redis import Redis

from cluster_procs import LocalRedis

ROOT = Path(__file__).resolve().parent.parent


def write_seeds(path: Path, seeds: int, hosts: int) -> None:
    per_host = max(1, seeds // hosts)
    with path.open("w", encoding="ascii") as out:
        for i in range(seeds):
            host, page = divmod(i, per_host)
            out.write(
                f"https://www.h{host}.example/articles/2024/{page % 12 + 1:02d}/"
                f"some-title-{page}.html\n"
            )


def info(redis: LocalRedis, section: str) -> dict[str, str]:
    reply = redis_cli(redis, "INFO", section)
    return dict(line.split(":", 1) for line in reply.splitlines() if ":" in line)


def redis_cli(redis: LocalRedis, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(redis.port), *args],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.strip()  # fmt: skip


def key_kinds(redis: LocalRedis) -> Counter[str]:
    """Bytes by key kind (digits folded to #)."""
    client = Redis.from_url(redis.url)
    kinds: Counter[str] = Counter()
    keys = list(client.scan_iter(count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    for key, usage in zip(keys, pipe.execute(), strict=True):
        kinds[re.sub(r"\d+", "#", key.decode())] += int(usage or 0)
    client.close()
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalRedis() as redis:
        seeds = Path(tmp) / "seeds.txt"
        write_seeds(seeds, args.seeds, args.hosts)
        url_bytes = seeds.stat().st_size / args.seeds
        before = int(info(redis, "memory")["used_memory"])
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "gossamer.cli", "cluster", "submit", "--redis", redis.url,
             "--seeds-file", str(seeds), "--quiet"],
            check=True, cwd=ROOT, timeout=1800,
        )  # fmt: skip
        took = time.monotonic() - started
        after = int(info(redis, "memory")["used_memory"])
        redis_cli(redis, "CONFIG", "SET", "appendonly", "yes")
        while info(redis, "persistence").get("aof_rewrite_in_progress") != "0" or (
            info(redis, "persistence").get("aof_rewrite_scheduled") != "0"
        ):
            time.sleep(0.2)
        aof = int(info(redis, "persistence").get("aof_current_size", "0"))
        kinds = key_kinds(redis)
    per_url = (after - before) / args.seeds
    print(f"seeds {args.seeds:,} over {args.hosts:,} hosts, {url_bytes:.0f} bytes per URL")
    print(f"submit             {took:.1f} s")
    print(f"used_memory        {before:,} -> {after:,} bytes: {per_url:.0f} bytes per queued URL")
    print(f"per million URLs   {per_url * 1e6 / 2**20:,.0f} MiB of memory, "
          f"{aof * 1e6 / args.seeds / 2**20:,.0f} MiB of AOF")  # fmt: skip
    for kind, size in kinds.most_common(6):
        print(f"  {kind:40} {size / args.seeds:8.1f} bytes per URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())

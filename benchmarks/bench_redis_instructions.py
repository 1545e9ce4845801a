"""Redis' instructions per URL added: the add path's CPU cost, whatever else loads the machine.

Runs redis-server under valgrind's callgrind, loads URLs into it as
``bench_redis_memory.py`` does (the frontier's own add path, a pipeline a batch), and prints the
instructions the server executed per URL added (those of a server started and stopped with
nothing loaded taken off) and the commands per URL (``INFO commandstats``; those scripts call
included). CPU seconds (``bench_redis_memory.py``) move with whatever else the machine runs;
instruction counts do not, so two versions of the add path compare on a shared machine.

    .venv/bin/python benchmarks/bench_redis_instructions.py [--urls 200000] [--hosts 2000]
        [--partitions 4096] [--batch 50000] [--keep callgrind.out]

Valgrind runs the server some 50 times slower: keep ``--urls`` to a few hundred thousand.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis as SyncRedis

import bench_redis_memory
from cluster_procs import free_port

START_TIMEOUT = 120.0


def run(urls: int, args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """Instructions a callgrind'ed redis-server executed while ``urls`` URLs were added (and
    it started and stopped), and its ``INFO commandstats``."""
    with tempfile.TemporaryDirectory(prefix="gossamer-bench-callgrind-") as tmp:
        out, port = Path(tmp) / "callgrind.out", free_port()
        command = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
            "--save", "", "--appendonly", "no",
        ]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = _connected(port)
            if urls:
                load = argparse.Namespace(**{**vars(args), "urls": urls})
                asyncio.run(bench_redis_memory.load(f"redis://127.0.0.1:{port}/0", load))
            stats: dict[str, Any] = client.info("commandstats")
            client.shutdown(nosave=True)
            proc.wait(600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if urls and args.keep:
            shutil.copyfile(out, args.keep)
        found = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.MULTILINE)
        assert found, "callgrind wrote no totals"
        return int(found.group(1)), stats


def _connected(port: int) -> SyncRedis:
    client = SyncRedis(port=port, socket_timeout=900)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            client.ping()
            return client
        except Exception:  # not up yet: refused, reset, loading
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=50_000, help="URLs a pipeline (50,000)")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep the loaded run's callgrind output there (for callgrind_annotate)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    idle, _ = run(0, args)
    total, stats = run(args.urls, args)
    print(
        f"{args.urls:,} URLs over {args.hosts:,} hosts, {args.partitions:,} partitions, "
        f"{args.batch:,} a pipeline: {(total - idle) / args.urls:,.0f} Redis instructions "
        "per URL added"
    )
    calls = sorted(stats.items(), key=lambda row: -row[1]["calls"])
    shown = ", ".join(
        f"{name.removeprefix('cmdstat_')} {row['calls'] / args.urls:.3f}"
        for name, row in calls
        if row["calls"] / args.urls >= 0.001
    )
    print(f"  commands per URL added: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

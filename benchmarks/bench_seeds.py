"""A crawl that starts from a million seeds over 200,000 hosts: time to the first page, memory.

The target: the first page fetched within 10 s of the start (reading and queueing the seeds
included) and peak RSS under 500 MB. Every host has a robots.txt to fetch first, so a crawler
whose robots.txt cache cannot hold all the hosts it starts on fetches robots.txt over and over
and never a page. The web is ``latency_server.py`` with no delay: hosts ``h{i}.lat``, five
pages each, answered at once (robots.txt 404).

    .venv/bin/python benchmarks/bench_seeds.py [--seeds 1000000] [--hosts 200000] [--run 60]

Prints the time to the first page record, pages and robots.txt requests by the end of the run,
peak RSS, and PASS or FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOSSAMER = ROOT / ".venv" / "bin" / "gossamer"
FIRST_PAGE_TARGET = 10.0
RSS_TARGET_MB = 500


def write_seeds(path: Path, seeds: int, hosts: int, port: int) -> None:
    """``seeds`` URLs, host-major over ``hosts`` hosts (the order a sitemap dump gives)."""
    per_host = max(1, seeds // hosts)
    with path.open("w", encoding="ascii") as out:
        for i in range(hosts):
            out.writelines(
                f"http://h{i}.lat:{port}/p{j}.html\n"
                for j in range(per_host)
                if i * per_host + j < seeds
            )


def first_page_time(pages: Path, started: float, deadline: float) -> float | None:
    """Seconds from ``started`` to the first record of a fetched page in pages.jsonl."""
    offset = 0
    while time.monotonic() < deadline:
        if pages.exists():
            with pages.open("rb") as handle:
                handle.seek(offset)
                data = handle.read()
            lines = data.split(b"\n")
            for line in lines[:-1]:
                if json.loads(line).get("status") is not None:
                    return time.monotonic() - started
            offset += len(data) - len(lines[-1])
        time.sleep(0.05)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=200_000)
    parser.add_argument("--run", type=float, default=60.0, help="seconds of crawling")
    parser.add_argument("--port", type=int, default=18590)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "seeds")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = args.out / f"seeds-{args.seeds}-{args.hosts}.txt"
    if not seeds.exists():
        write_seeds(seeds, args.seeds, args.hosts, args.port)
    server = subprocess.Popen(
        [
            sys.executable, str(HERE / "latency_server.py"), "--hosts", str(args.hosts),
            "--pages", "5", "--latency", "0", "--port", str(args.port),
            "--stats", str(args.out / "server.json"), "--max-seconds", str(args.run + 120),
        ],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    crawl_out = args.out / "crawl"
    shutil.rmtree(crawl_out, ignore_errors=True)
    time.sleep(1.0)  # the server binds its port
    started = time.monotonic()
    crawler = subprocess.Popen(
        [
            str(GOSSAMER), "crawl", "--seeds-file", str(seeds), "--out", str(crawl_out),
            "--overwrite", "--quiet", "--max-depth", "0", "--concurrency", str(args.concurrency),
            "--resolve", "*.lat=127.0.0.1",
        ],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        first = first_page_time(crawl_out / "pages.jsonl", started, started + args.run)
        remaining = started + args.run - time.monotonic()
        if remaining > 0 and crawler.poll() is None:
            time.sleep(remaining)
        crawler.send_signal(signal.SIGINT)
        crawler.wait(timeout=60)
    finally:
        if crawler.poll() is None:
            crawler.kill()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    stats = json.loads((crawl_out / "stats.json").read_text())
    served = (
        json.loads((args.out / "server.json").read_text())
        if os.path.exists(args.out / "server.json")
        else {}
    )
    ok = first is not None and first <= FIRST_PAGE_TARGET and stats["peak_rss_mb"] < RSS_TARGET_MB
    print(f"seeds {args.seeds:,} over {args.hosts:,} hosts, {args.run:g} s of crawling")
    print(f"first page after: {'never' if first is None else f'{first:.1f} s'} (target <= 10 s)")
    print(
        f"pages recorded: {stats['pages']:,} (ok {stats['ok']:,}), requests {stats['requests']:,}"
    )
    if served:
        print(f"server: {json.dumps({k: v for k, v in served.items() if 'request' in k})}")
    print(f"peak RSS: {stats['peak_rss_mb']:.0f} MB (target < {RSS_TARGET_MB} MB)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

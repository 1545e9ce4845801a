"""Memory of a long crawl: gossamer alone on a big generated web (default 200,000 pages).

The issue's target: peak RSS under 300 MB for a 200,000-page crawl. The web is generated once
(about 6 GB of static files, cached in bench-out/webs/) and served by nginx on one core while
gossamer crawls on the other.

    .venv/bin/python benchmarks/bench_scale.py [--pages 200000] [--hosts 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import nginx
from bench_crawl import ROOT, choose_cpus
from crawlers import Gossamer, Settings
from measure import run_measured
from webgen import WebSpec, ensure_web, seeds
from weblinks import host_ip

TARGET_MB = 300


def main() -> int:
    """Generate, serve, crawl, report; exit 1 when the crawl failed or went over the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    args = parser.parse_args()
    spec = WebSpec(args.pages, args.hosts, 1, WebSpec.port)
    started = time.perf_counter()
    web, expected = ensure_web(spec, args.out / "webs")
    print(
        f"web: {expected.files} pages on {spec.hosts} hosts ({time.perf_counter() - started:.0f}s)"
    )
    work = args.out / "runs" / "scale"
    work.mkdir(parents=True, exist_ok=True)
    seeds_file = work / "seeds.txt"
    seeds_file.write_text("".join(f"{url}\n" for url in seeds(spec)), encoding="utf-8")
    server_cpu, crawler_cpu = choose_cpus()
    ips = [host_ip(i) for i in range(spec.hosts)]
    command = Gossamer().command(seeds_file, work, Settings(args.concurrency, args.per_host))
    with nginx.serve(args.out / "nginx-scale", web / "www", ips, spec.port, cpu=server_cpu):
        cost = run_measured(command, work / "log.txt", cpu=crawler_cpu, timeout=3600)
    stats = json.loads((work / "out" / "stats.json").read_text(encoding="utf-8"))
    print(
        f"gossamer: {stats['ok']} pages 200 of {expected.ok} expected, {stats['pages']} records, "
        f"{cost.wall:.0f}s wall, {stats['ok'] / cost.wall:.0f} pages/s, "
        f"{stats['ok'] / cost.cpu:.0f} pages per CPU-second"
    )
    print(f"peak RSS: {cost.peak_rss_mb:.0f} MB (target < {TARGET_MB} MB)")
    failed = cost.returncode != 0 or cost.timed_out or stats["ok"] != expected.ok
    return 1 if failed or cost.peak_rss_mb >= TARGET_MB else 0


if __name__ == "__main__":
    sys.exit(main())

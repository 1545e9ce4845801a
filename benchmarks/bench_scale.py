"""Memory of a long crawl: gossamer alone on a big generated web (default 200,000 pages).

The issue's target: peak RSS under 300 MB for a 200,000-page crawl, with the whole job on:
main text and metadata of every page (gossamer's default) and ``--warc``; ``--no-text`` runs
the links-only crawl instead (no text, no WARC). The web is generated once (about 7 GB of
static files, cached in bench-out/webs/) and served by nginx on one core while gossamer crawls
on the other. The crawler's RSS is sampled every second into ``runs/scale/rss.tsv``; the
figures printed are its peak (``wait4``) and the RSS at each tenth of the crawl.

    .venv/bin/python benchmarks/bench_scale.py [--pages 200000] [--hosts 200] [--no-text]
"""

from __future__ import annotations

import argparse
import json
import shutil
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


def _sizes(out: Path) -> str:
    """Sizes of the crawl's output files (the WARC directory as one)."""
    sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    warc = out / "warc"
    if warc.is_dir():
        sizes["warc/"] = sum(p.stat().st_size for p in warc.iterdir())
    return ", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in sorted(sizes.items()))


def _rss_profile(path: Path, column: int = 1) -> str:
    """RSS (MB) at each tenth of the samples: the crawler's own (column 1), or with its
    workers' (column 2)."""
    rows = [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []
    if not rows:
        return "no samples"
    picks = [rows[min(len(rows) - 1, len(rows) * i // 10)] for i in range(1, 11)]
    return " ".join(f"{float(row[min(column, len(row) - 1)]):.0f}" for row in picks)


def _peak(path: Path, column: int) -> float:
    rows = [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []
    return max((float(row[min(column, len(row) - 1)]) for row in rows), default=0.0)


def main() -> int:
    """Generate, serve, crawl, report; exit 1 when the crawl failed or went over the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--no-text", action="store_true", help="links only: no text, no WARC")
    args = parser.parse_args()
    spec = WebSpec(args.pages, args.hosts, 1, WebSpec.port)
    started = time.perf_counter()
    web, expected = ensure_web(spec, args.out / "webs")
    print(
        f"web: {expected.files} pages on {spec.hosts} hosts ({time.perf_counter() - started:.0f}s)"
    )
    work = args.out / "runs" / "scale"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    seeds_file = work / "seeds.txt"
    seeds_file.write_text("".join(f"{url}\n" for url in seeds(spec)), encoding="utf-8")
    server_cpu, crawler_cpu = choose_cpus()
    ips = [host_ip(i) for i in range(spec.hosts)]
    crawler = Gossamer(content=not args.no_text)
    command = crawler.command(seeds_file, work, Settings(args.concurrency, args.per_host))
    print(f"mode: {'links only (--no-text)' if args.no_text else 'text and --warc'}")
    with nginx.serve(args.out / "nginx-scale", web / "www", ips, spec.port, cpu=server_cpu):
        cost = run_measured(
            command, work / "log.txt", cpu=crawler_cpu, timeout=3600, rss_log=work / "rss.tsv"
        )
    stats = json.loads((work / "out" / "stats.json").read_text(encoding="utf-8"))
    print(
        f"gossamer: {stats['ok']} pages 200 of {expected.ok} expected, {stats['pages']} records, "
        f"{cost.wall:.0f}s wall, {stats['ok'] / cost.wall:.0f} pages/s, "
        f"{stats['ok'] / cost.cpu:.0f} pages per CPU-second"
    )
    print(f"output: {_sizes(work / 'out')}")
    rss = work / "rss.tsv"
    print(f"RSS by tenth of the run: {_rss_profile(rss)}")
    print(f"with its workers (parse sandbox, PDF): {_rss_profile(rss, 2)}")
    print(
        f"peak RSS: {cost.peak_rss_mb:.0f} MB of one process (wait4: the crawler or a worker; "
        f"target < {TARGET_MB} MB); sampled each second, the crawler {_peak(rss, 1):.0f} MB, "
        f"with its workers {_peak(rss, 2):.0f} MB"
    )
    failed = cost.returncode != 0 or cost.timed_out or stats["ok"] != expected.ok
    return 1 if failed or cost.peak_rss_mb >= TARGET_MB else 0


if __name__ == "__main__":
    sys.exit(main())

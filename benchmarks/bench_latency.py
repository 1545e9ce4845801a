"""Latency-bound benchmark: does gossamer keep C requests in flight when every answer is slow?

A server (``latency_server.py``, pinned to core 0) serves H hosts ``h{i}.lat`` of generated
pages, each answered after exactly ``--latency`` seconds (``/robots.txt`` answers 404 at
once). ``gossamer crawl`` (pinned to core 1) starts from a few hosts' ``/`` with
``--concurrency C --per-host P --delay 0`` and stops after ``--max-pages``. With P * H > C the
ideal throughput is C / latency pages/s, unless the crawler runs out of CPU first.

Two configurations run: the one given (default 1000 in flight, 100 ms: ideal 10,000 pages/s,
far more than one core parses, so CPU-bound) and a second one that is not CPU-limited
(``--second-latency 1.0``: ideal 1,000 pages/s). Each prints the achieved pages/s over the
whole run and over the steady part (records between the 10% and 90% quantiles of their
``fetched_at``), the ideal and the ratio, the server's mean and maximum in-flight, its largest
per-host concurrency, and the crawler's CPU utilisation (CPU-s / wall-s from ``os.wait4``).

Exit status 0 when at least one configuration is not CPU-bound (utilisation under 90%), every
such one reaches 80% of the ideal in the steady part, and no host ever saw more than P
requests at once; 1 otherwise, 2 when the server cannot start. Other load on either core is
reported (WARN), since it disturbs the figures. Work files: ``bench-out/latency/runN/``.

Usage: ``.venv/bin/python benchmarks/bench_latency.py [--hosts 600] [--pages-per-host 40]
[--latency 0.1] [--concurrency 1000] [--per-host 2] [--duration-cap 120]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlers import GOSSAMER
from latency_server import Web
from measure import Measurement, core_busy_seconds, pinned, run_measured

HERE = Path(__file__).resolve().parent
SERVER_CORE, CRAWLER_CORE = 0, 1
CPU_BOUND = 0.9
TARGET = 0.8


@dataclass(frozen=True)
class Config:
    """One crawl setting: the server's delay and the crawler's concurrency."""

    latency: float
    concurrency: int

    @property
    def ideal(self) -> float:
        """Pages per second if every slot were always waiting on the server."""
        return self.concurrency / self.latency


@dataclass(frozen=True)
class Result:
    """What one configuration achieved."""

    config: Config
    cost: Measurement
    pages: int
    steady_rate: float
    elapsed_ms: float
    """Mean time from request sent to body read, as the crawler saw it (pages.jsonl)."""
    server: dict[str, Any]

    @property
    def utilisation(self) -> float:
        """Crawler CPU seconds per wall second (1.0 = its core is full)."""
        return self.cost.cpu / self.cost.wall if self.cost.wall else 0.0

    @property
    def ratio(self) -> float:
        """Steady throughput over the ideal."""
        return self.steady_rate / self.config.ideal


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command line options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=600, help="hosts in the web (600)")
    parser.add_argument("--pages-per-host", type=int, default=40, help="pages per host (40)")
    parser.add_argument("--latency", type=float, default=0.1, help="server delay, s (0.1)")
    parser.add_argument("--concurrency", type=int, default=1000, help="crawler --concurrency")
    parser.add_argument("--per-host", type=int, default=2, help="crawler --per-host (2)")
    parser.add_argument("--second-latency", type=float, default=1.0, help="0 skips it (1.0)")
    parser.add_argument("--second-concurrency", type=int, default=1000, help="(1000)")
    parser.add_argument("--max-pages", type=int, help="pages per crawl (80%% of the web)")
    parser.add_argument("--seeds", type=int, default=10, help="hosts whose / seeds it (10)")
    parser.add_argument("--duration-cap", type=float, default=120.0, help="seconds per crawl")
    parser.add_argument("--server-procs", type=int, default=1, help="server processes (1)")
    parser.add_argument("--port", type=int, default=18490)
    parser.add_argument("--out", type=Path, default=HERE.parent / "bench-out" / "latency")
    parser.add_argument(
        "--py-spy", action="store_true", help="profile the crawler (runN/profile.txt, raw)"
    )
    args = parser.parse_args(argv)
    args.max_pages = args.max_pages or max(1, int(0.8 * args.hosts * args.pages_per_host))
    if args.hosts * args.per_host < args.concurrency:
        print(f"note: hosts * per-host < {args.concurrency}: concurrency cannot be reached")
    return args


def raise_fd_limit(need: int) -> int:
    """Raise the soft open-files limit (inherited by server and crawler) towards ``need``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def start_server(args: argparse.Namespace, latency: float, stats: Path) -> subprocess.Popen[str]:
    """Start the server on its core and wait (at most 20 s) until it listens."""
    command = [sys.executable, str(HERE / "latency_server.py"), "--hosts", str(args.hosts)]
    command += ["--pages", str(args.pages_per_host), "--port", str(args.port)]
    command += ["--latency", str(latency), "--procs", str(args.server_procs)]
    command += ["--stats", str(stats), "--max-seconds", str(args.duration_cap + 60)]
    server = subprocess.Popen(pinned(command, SERVER_CORE), stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    readable, _, _ = select.select([server.stdout], [], [], 20.0)
    if not readable or not server.stdout.readline().startswith("ready"):
        server.kill()
        raise RuntimeError("latency server did not start")
    return server


def stop_server(server: subprocess.Popen[str], stats: Path) -> dict[str, Any]:
    """SIGTERM the server and read the figures it writes."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    if not stats.exists():
        print(f"FLAG the server wrote no {stats.name} (exit {server.returncode})")
        return {}
    return dict(json.loads(stats.read_text(encoding="utf-8")))


def crawl_command(args: argparse.Namespace, config: Config, out: Path) -> list[str]:
    """``gossamer crawl`` of the slow web, optionally under py-spy."""
    seeds = Web(args.hosts, args.pages_per_host, args.port).seeds(args.seeds)
    command = [str(GOSSAMER), "crawl", *seeds, "--resolve", "*.lat=127.0.0.1"]
    command += ["--allow-domain", "lat", "--concurrency", str(config.concurrency)]
    command += ["--per-host", str(args.per_host), "--delay", "0", "--quiet", "--overwrite"]
    command += ["--out", str(out), "--max-pages", str(args.max_pages)]
    if args.py_spy:
        spy = Path(sys.executable).parent / "py-spy"
        profile = out.parent / "profile.txt"
        return [str(spy), "record", "-o", str(profile), "-f", "raw", "--", *command]
    return command


def read_pages(path: Path) -> tuple[int, float, float]:
    """(records, steady pages/s, mean elapsed ms of 200s) from a crawl's pages.jsonl."""
    if not path.exists():
        return 0, 0.0, 0.0
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    times = sorted(r["fetched_at"] for r in records)
    elapsed = [r["elapsed_ms"] for r in records if r["status"] == 200]
    if len(times) < 10:
        return len(records), 0.0, 0.0
    low, high = times[len(times) // 10], times[len(times) * 9 // 10]
    steady = (len(times) * 8 // 10) / (high - low) if high > low else 0.0
    return len(records), steady, sum(elapsed) / max(1, len(elapsed))


def run_config(args: argparse.Namespace, config: Config, number: int) -> Result:
    """Serve, crawl, stop, and gather one configuration's figures."""
    work = args.out / f"run{number}"
    work.mkdir(parents=True, exist_ok=True)
    stats = work / "server.json"
    busy = core_busy_seconds(SERVER_CORE)
    server = start_server(args, config.latency, stats)
    try:
        cost = run_measured(
            crawl_command(args, config, work / "crawl"),
            work / "crawl.log",
            cpu=CRAWLER_CORE,
            timeout=args.duration_cap,
        )
    finally:
        figures = stop_server(server, stats)
    after = core_busy_seconds(SERVER_CORE)
    if busy is not None and after is not None:
        figures["others_cpu"] = max(0.0, after - busy - figures.get("cpu_seconds", 0.0))
    return Result(config, cost, *read_counts(work / "crawl"), figures)


def read_counts(out: Path) -> tuple[int, float, float]:
    """`read_pages`, with the page count checked against stats.json (the larger is kept)."""
    pages, steady, elapsed = read_pages(out / "pages.jsonl")
    stats = out / "stats.json"
    counted = json.loads(stats.read_text(encoding="utf-8"))["pages"] if stats.exists() else 0
    if counted != pages:
        print(f"FLAG pages.jsonl holds {pages} records, stats.json counts {counted}")
    return max(pages, counted), steady, elapsed


def describe(result: Result, per_host: int) -> str:
    """The figures of one configuration, a few lines."""
    c, s, cost = result.config, result.server, result.cost
    bound = "CPU-BOUND" if result.utilisation >= CPU_BOUND else "not CPU-bound"
    series = " ".join(f"{x:.0f}" for x in s.get("in_flight_by_second", []))
    others = "unknown" if cost.others is None else f"{cost.others:.1f}"
    return (
        f"== latency {c.latency * 1000:.0f} ms, concurrency {c.concurrency}, per host "
        f"{per_host}: ideal {c.ideal:.0f} pages/s\n"
        f"  crawl: {result.pages} pages in {cost.wall:.1f} s = {result.pages / cost.wall:.0f} "
        f"pages/s overall, {result.steady_rate:.0f} pages/s steady, ratio {result.ratio:.2f} "
        f"(exit {cost.returncode}{', TIMED OUT' if cost.timed_out else ''})\n"
        f"  crawler CPU: {cost.cpu:.1f} s, utilisation {result.utilisation:.0%} ({bound}); "
        f"{result.pages / cost.cpu:.0f} pages per CPU-s; peak RSS {cost.peak_rss_mb:.0f} MB; "
        f"other load on its core {others} CPU-s\n"
        f"  crawler-side request time {result.elapsed_ms:.0f} ms (server holds "
        f"{s.get('hold_mean_ms', 0):.0f} ms, p99 {s.get('hold_p99_ms', 0):.0f}): "
        f"{result.steady_rate * result.elapsed_ms / 1000:.0f} requests in flight by Little's law\n"
        f"  server: {s.get('requests', 0)} requests ({s.get('robots', 0)} robots.txt) on "
        f"{s.get('connections', 0)} connections, in flight mean "
        f"{s.get('steady_mean_in_flight', 0):.0f} steady / max {s.get('max_in_flight', 0)}, "
        f"max per host {s.get('max_per_host', 0)}, {s.get('steady_requests_per_second', 0):.0f} "
        f"req/s steady, server CPU {s.get('cpu_seconds', 0):.1f} s (other load on its core "
        f"{s.get('others_cpu', float('nan')):.1f} CPU-s)\n"
        f"  server in flight by second: {series}"
    )


def contention(r: Result) -> list[str]:
    """Warnings when other processes took a tenth of a core during the run."""
    loads = ((CRAWLER_CORE, r.cost.others), (SERVER_CORE, r.server.get("others_cpu")))
    return [
        f"WARN other processes used {load:.1f} CPU-s on core {core} during the run"
        for core, load in loads
        if load is not None and load > 0.1 * r.cost.wall
    ]


def judge(r: Result, per_host: int) -> tuple[bool, list[str]]:
    """One configuration's targets: (gating targets met, lines)."""
    c = r.config
    name = f"{c.latency * 1000:.0f} ms / C={c.concurrency}"
    held = r.server.get("max_per_host", 0) <= per_host
    busy = r.server.get("steady_mean_in_flight", 0)
    fast = r.ratio >= TARGET
    overall = r.pages / r.cost.wall / c.ideal
    lines = [
        f"{'MET ' if held else 'FAIL'} {name}: per-host max <= {per_host}",
        f"{'MET ' if busy >= TARGET * c.concurrency else 'MISS'} {name}: server in flight "
        f">= {TARGET:.0%} of C (mean {busy:.0f} of {c.concurrency}; all {c.concurrency}: "
        f"{'MET' if busy >= c.concurrency else 'MISS'})",
    ]
    if r.utilisation >= CPU_BOUND:
        lines.append(
            f"{'MET ' if fast else 'MISS'} {name}: throughput within 20% of ideal (CPU-bound: "
            f"the ceiling is {r.pages / r.cost.cpu:.0f} pages per CPU-s; not gating)"
        )
        fast = True
    else:
        lines.append(
            f"{'MET ' if fast else 'FAIL'} {name}: steady throughput within 20% of ideal "
            f"(ratio {r.ratio:.2f}; whole run with start-up and fan-out {overall:.2f})"
        )
    return held and fast and r.cost.returncode == 0, lines + contention(r)


def verdict(results: list[Result], per_host: int) -> tuple[bool, list[str]]:
    """Which targets were met; overall pass/fail."""
    ok, lines = True, []
    for result in results:
        met, said = judge(result, per_host)
        ok &= met
        lines += said
    if all(r.utilisation >= CPU_BOUND for r in results):
        ok = False
        lines.append("FAIL no configuration was free of the CPU limit")
    return ok, lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run both configurations; exit 0 when the targets are met."""
    args = parse_args(argv)
    configs = [Config(args.latency, args.concurrency)]
    if args.second_latency > 0:
        configs.append(Config(args.second_latency, args.second_concurrency))
    limit = raise_fd_limit(4 * max(c.concurrency for c in configs) + 4096)
    print(
        f"web: {args.hosts} hosts x {args.pages_per_host} pages; crawl {args.max_pages} pages "
        f"from {args.seeds} seeds; server on core {SERVER_CORE} ({args.server_procs} procs), "
        f"crawler on core {CRAWLER_CORE}; open files limit {limit}",
        flush=True,
    )
    results = []
    for number, config in enumerate(configs, 1):
        started = time.perf_counter()
        try:
            results.append(run_config(args, config, number))
        except RuntimeError as exc:
            print(f"bench: {exc}", file=sys.stderr)
            return 2
        print(describe(results[-1], args.per_host), flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s with server start and stop)")
    ok, lines = verdict(results, args.per_host)
    print("\n".join(lines))
    print("RESULT: targets met" if ok else "RESULT: targets not met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

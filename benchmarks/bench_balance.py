"""P1's experiment on this machine: 5 unequal workers, every allocator, makespans vs the bound.

Five ``gossamer cluster worker`` processes differ in what P1's model reads: download bandwidth
(``--max-bandwidth``, a token bucket on each worker's fetcher) and concurrency. The web is
served here on loopback (aiohttp): every page is ``--page-kb`` KB and answers after
``--latency`` s, so a worker's capacity is ``min(concurrency / latency, bandwidth / page)``
pages per second, and the lower bound of a job's makespan is its pages over the sum of those
(the "total work / total capacity" of the issue; start-up and the ramp of a breadth-first
crawl count against gossamer).

Two jobs, each run once per allocator (equal, weighted, bpnn-pso, first-fit), in that order:

- ``site``: one host of ``--site-pages`` pages, ``--partition-by url`` (P1 crawled one site
  with 5 workers), ``--per-host`` high enough for all workers together;
- ``hosts``: ``--hosts`` hosts of ``--host-pages`` pages, ``--partition-by host``, 2 requests
  per host: each host has one owner, so the balancer moves whole hosts.

The runtime model lives in Redis across jobs (as it would on a real cluster): every run adds
observations, and ``bpnn-pso`` uses the model fitted on the runs before it. Each run prints
per-worker URL counts and finish times (last page finished, from submit), the makespan, its
ratio to ``equal`` and to the lower bound; then the model's held-out error. Workers are
started before each submit, as P1's workers wait for the master's assignment.

``python benchmarks/bench_balance.py`` (about 10 minutes; ``--quick`` for a smaller check).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from cluster_procs import LocalRedis, free_port, reap
from gossamer.balance.plan import PlanError, check_plotting

HERE = Path(__file__).resolve().parent
GOSSAMER = [sys.executable, "-m", "gossamer.cli"]
ALLOCATORS = ("equal", "weighted", "bpnn-pso", "first-fit", "least-loaded")
DOMAIN = "bal"


@dataclass(frozen=True)
class WorkerSpec:
    """One worker's limits."""

    name: str
    concurrency: int
    bandwidth: int | None
    """Bytes per second, or None for no cap."""

    def capacity(self, latency: float, page_bytes: int) -> float:
        """Pages per second it can do: the lesser of its concurrency and bandwidth limits."""
        rate = self.concurrency / latency
        if self.bandwidth:
            rate = min(rate, self.bandwidth / page_bytes)
        return rate


def worker_specs(page_bytes: int) -> list[WorkerSpec]:
    """Five workers of 2, 4, 6, 8 and 10 pages/s at 0.25 s latency: three capped by bandwidth,
    two by concurrency (P1's five differed in CPU, memory, disk and bandwidth)."""
    return [
        WorkerSpec("w1", 4, 2 * page_bytes),
        WorkerSpec("w2", 4, 4 * page_bytes),
        WorkerSpec("w3", 6, 6 * page_bytes),
        WorkerSpec("w4", 2, None),
        WorkerSpec("w5", 12, 10 * page_bytes),
    ]


# -- the web -------------------------------------------------------------------------------------


@dataclass
class Web:
    """Deterministic pages: every page reachable from the seeds, links fan out fast."""

    hosts: int
    pages: int
    page_bytes: int
    latency: float
    port: int = 0
    served: int = 0
    filler: str = field(init=False)

    def __post_init__(self) -> None:
        words = ("balance", "worker", "share", "swarm", "network", "bandwidth", "crawl", "page")
        rng = random.Random(7)
        self.filler = " ".join(rng.choice(words) for _ in range(self.page_bytes // 4))

    def host(self, i: int) -> str:
        return f"h{i}.{DOMAIN}"

    def seeds(self) -> list[str]:
        return [f"http://{self.host(i)}:{self.port}/" for i in range(min(self.hosts, 5))]

    def page(self, host: int, page: int) -> bytes:
        rng = random.Random(host * 100_003 + page)
        links = [f"/p{(page + 1) % self.pages}.html"]
        links += [f"/p{rng.randrange(self.pages)}.html" for _ in range(12)]
        if self.hosts > 1:
            links.append(f"http://{self.host((host + 1) % self.hosts)}:{self.port}/")
            links.append(f"http://{self.host(rng.randrange(self.hosts))}:{self.port}/")
        anchors = "".join(f'<a href="{u}">{n}</a> ' for n, u in enumerate(links))
        head = f"<html><head><title>h{host} p{page}</title></head><body><p>{anchors}</p><p>"
        tail = "</p></body></html>"
        body = head + self.filler[: max(0, self.page_bytes - len(head) - len(tail))] + tail
        return body.encode()

    async def handle(self, request: web.Request) -> web.Response:
        name = request.host.split(":")[0]
        path = request.path
        if path == "/robots.txt" or not name.startswith("h") or not name.endswith(DOMAIN):
            return web.Response(status=404)
        try:
            host = int(name[1 : -len(DOMAIN) - 1])
            page = 0 if path == "/" else int(path.removeprefix("/p").removesuffix(".html"))
        except ValueError:
            return web.Response(status=404)
        if not (0 <= host < self.hosts and 0 <= page < self.pages):
            return web.Response(status=404)
        await asyncio.sleep(self.latency)
        self.served += 1
        return web.Response(body=self.page(host, page), content_type="text/html")

    @property
    def total(self) -> int:
        return self.hosts * self.pages


# -- one run -------------------------------------------------------------------------------------


@dataclass
class Result:
    job: str
    allocator: str
    pages: dict[str, int]
    finish: dict[str, float]
    makespan: float
    bound: float


def _records(out: Path) -> list[dict[str, object]]:
    path = out / "pages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def _start_workers(
    redis: str, job: str, out: Path, specs: Sequence[WorkerSpec], log: Path
) -> list[subprocess.Popen[bytes]]:
    procs = []
    for spec in specs:
        cmd = [*GOSSAMER, "cluster", "worker", "--redis", redis, "--job", job, "--quiet"]
        cmd += ["--name", spec.name, "--out", str(out / spec.name)]
        cmd += ["--concurrency", str(spec.concurrency), "--heartbeat-ttl", "3"]
        if spec.bandwidth:
            cmd += ["--max-bandwidth", str(spec.bandwidth)]
        with log.open("ab") as sink:
            procs.append(subprocess.Popen(cmd, stdout=sink, stderr=sink, start_new_session=True))
    return procs


def _finish(record: dict[str, object]) -> float:
    started = float(record["fetched_at"] or 0.0)  # type: ignore[arg-type]
    return started + float(record.get("elapsed_ms") or 0.0) / 1000  # type: ignore[arg-type]


async def _gossamer(*args: str, log: Path) -> int:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(*GOSSAMER, *args, stdout=out, stderr=out)
    return await proc.wait()


async def run_job(
    args: argparse.Namespace,
    redis: str,
    web_: Web,
    specs: Sequence[WorkerSpec],
    kind: str,
    allocator: str,
) -> Result:
    job = f"{kind}-{allocator}-{int(time.time())}"
    out = args.out / job
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    procs = await asyncio.to_thread(_start_workers, redis, job, out, specs, log)
    try:
        await asyncio.sleep(1.5)  # the workers are up and waiting for the job
        partition_by = "url" if kind == "site" else "host"
        per_host = sum(s.concurrency for s in specs) if kind == "site" else 2
        submit = ["cluster", "submit", "--redis", redis, "--job", job, "--quiet"]
        submit += ["--allocator", allocator, "--partition-by", partition_by]
        submit += ["--per-host", str(per_host), "--max-depth", "1000", "--heartbeat-ttl", "3"]
        submit += ["--resolve", f"*.{DOMAIN}=127.0.0.1", "--allow-domain", DOMAIN]
        # every page holds the same filler text: no page may count as another's duplicate
        submit += ["--claim-timeout", "20", "--digests", "off", *web_.seeds()]
        if await _gossamer(*submit, log=log) != 0:
            raise RuntimeError(f"submit failed: see {log}")
        started = time.time()  # the job exists from here (as P1's master assigns)
        wait = ["cluster", "wait", "--redis", redis, "--job", job, "--timeout", str(args.limit)]
        if await _gossamer(*wait, log=log) != 0:
            raise RuntimeError(f"job {job} not finished after {args.limit}s: see {log}")
    finally:
        for proc in procs:
            await asyncio.to_thread(reap, proc, 30.0)
    pages: dict[str, int] = {}
    finish: dict[str, float] = {}
    for spec in specs:
        records = [r for r in _records(out / spec.name) if r.get("status") == 200]
        pages[spec.name] = len(records)
        finish[spec.name] = max((_finish(r) - started for r in records), default=0.0)
    capacity = sum(s.capacity(web_.latency, web_.page_bytes) for s in specs)
    return Result(kind, allocator, pages, finish, max(finish.values()), web_.total / capacity)


# -- report --------------------------------------------------------------------------------------


def table(results: Sequence[Result], specs: Sequence[WorkerSpec]) -> str:
    names = [s.name for s in specs]
    head = "| job | allocator | " + " | ".join(names) + " | makespan | vs equal | vs bound |"
    rule = "|" + "---|" * (len(names) + 5)
    rows = [head, rule]
    equal = {r.job: r.makespan for r in results if r.allocator == "equal"}
    for r in results:
        cells = [f"{r.pages[n]} / {r.finish[n]:.1f} s" for n in names]
        base = equal.get(r.job)
        ratio = f"{r.makespan / base:.2f}" if base else "-"
        rows.append(
            f"| {r.job} | {r.allocator} | "
            + " | ".join(cells)
            + f" | {r.makespan:.1f} s | {ratio} | {r.makespan / r.bound:.2f} |"
        )
    return "\n".join(rows)


def verdicts(results: Sequence[Result], allocator: str) -> list[str]:
    lines = []
    for job in dict.fromkeys(r.job for r in results):
        by = {r.allocator: r for r in results if r.job == job}
        if "equal" not in by or allocator not in by:
            continue
        r, base = by[allocator], by["equal"]
        vs_equal = r.makespan / base.makespan
        vs_bound = r.makespan / r.bound
        ok = vs_equal <= 0.6 and vs_bound <= 1.15
        lines.append(
            f"{job}: {allocator} makespan {r.makespan:.1f} s = {vs_equal:.2f} x equal "
            f"(target <= 0.60), {vs_bound:.2f} x the lower bound {r.bound:.1f} s "
            f"(target <= 1.15): {'PASS' if ok else 'FAIL'}"
        )
    return lines


def plot(results: Sequence[Result], specs: Sequence[WorkerSpec], path: Path) -> None:
    """Per job, each allocator's worker finish times as grouped bars, and the lower bound."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    jobs = list(dict.fromkeys(r.job for r in results))
    figure = Figure(figsize=(6 * len(jobs), 4))
    FigureCanvasAgg(figure)
    for i, job in enumerate(jobs):
        axes = figure.add_subplot(1, len(jobs), i + 1)
        runs = [r for r in results if r.job == job]
        width = 0.8 / len(specs)
        for k, spec in enumerate(specs):
            xs = [j + (k - (len(specs) - 1) / 2) * width for j in range(len(runs))]
            axes.bar(xs, [r.finish[spec.name] for r in runs], width, label=spec.name)
        axes.axhline(runs[0].bound, color="black", linestyle="--", label="lower bound")
        axes.set_xticks(range(len(runs)), [r.allocator for r in runs])
        axes.set_ylabel("finish time from submit, s")
        axes.set_title(f"{job} job: per-worker finish times")
        axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


async def model_report(redis: str) -> str:
    from redis.asyncio import Redis

    from gossamer.cluster.balancer import KEYS

    client = Redis.from_url(redis)
    try:
        raw = await client.get(KEYS["report"])
    finally:
        await client.aclose()
    if raw is None:
        return "runtime model: none fitted"
    return str(json.loads(raw)["summary"])


async def main_async(args: argparse.Namespace) -> int:
    page_bytes = args.page_kb * 1024
    specs = worker_specs(page_bytes)
    jobs = {
        "site": Web(1, args.site_pages, page_bytes, args.latency),
        "hosts": Web(args.hosts, args.host_pages, page_bytes, args.latency),
    }
    results: list[Result] = []
    with LocalRedis() as redis:
        for kind in args.jobs:
            web_ = jobs[kind]
            app = web.Application()
            app.router.add_route("GET", "/{tail:.*}", web_.handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            web_.port = free_port()
            site = web.TCPSite(runner, "127.0.0.1", web_.port, backlog=1024)
            await site.start()
            try:
                for allocator in args.allocators:
                    result = await run_job(args, redis.url, web_, specs, kind, allocator)
                    results.append(result)
                    print(table([result], specs), flush=True)
                    print(await model_report(redis.url), flush=True)
            finally:
                await runner.cleanup()
        report = await model_report(redis.url)
    print()
    print(
        f"{len(specs)} workers (concurrency, bandwidth cap): "
        + ", ".join(
            f"{s.name} {s.concurrency}/{(s.bandwidth or 0) // 1024 or '-'} KB/s" for s in specs
        )
        + f"; pages {args.page_kb} KB, latency {args.latency} s"
    )
    print("cells: pages fetched / finish time from the end of submit\n")
    print(table(results, specs))
    print()
    print(report)
    if args.plot is not None:
        plot(results, specs, args.plot)
        print(f"plot: {args.plot}")
    lines = verdicts(results, args.target)
    for line in lines:
        print(line)
    return 0 if lines and all(line.endswith("PASS") for line in lines) else 1


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--site-pages", type=int, default=1200, help="pages of the site (1200)")
    parser.add_argument("--hosts", type=int, default=60, help="hosts of the hosts job (60)")
    parser.add_argument("--host-pages", type=int, default=20, help="pages per host (20)")
    parser.add_argument("--page-kb", type=int, default=32, help="page size, KB (32)")
    parser.add_argument("--latency", type=float, default=0.25, help="server delay, s (0.25)")
    parser.add_argument("--jobs", nargs="+", default=["site", "hosts"], choices=["site", "hosts"])
    parser.add_argument("--allocators", nargs="+", default=list(ALLOCATORS), choices=ALLOCATORS)
    parser.add_argument("--target", default="bpnn-pso", help="allocator held to the targets")
    parser.add_argument("--limit", type=float, default=400.0, help="seconds per run (400)")
    parser.add_argument("--quick", action="store_true", help="small jobs: a smoke test")
    parser.add_argument("--plot", type=Path, help="write the finish times as a PNG here")
    parser.add_argument("--out", type=Path, default=HERE.parent / "bench-out" / "balance")
    args = parser.parse_args(argv)
    if args.quick:
        args.site_pages, args.hosts, args.host_pages = 300, 20, 15
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.plot is not None:
        try:
            check_plotting()
        except PlanError as exc:
            print(f"bench_balance: {exc}", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return asyncio.run(main_async(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

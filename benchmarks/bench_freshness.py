"""Keeping a crawl fresh, measured: gossamer's continuous mode (``--recrawl``) against repeated
full crawls with the same politeness over the same wall time, on a local web that changes on a
schedule (``freshweb.py``), all figures computed from the server's request log.

The baseline is what a Scrapy user would script: the whole crawl run again from its seeds as
soon as the last one ends, for the same wall time, at the same per-host delay. It is gossamer
itself without ``--recrawl`` (the same fetcher, parser and politeness, so the comparison is of
the revisit policy and conditional requests alone, not of two crawlers' speeds). The clock is
compressed: intervals are seconds (the minimum revisit is 1 s), so a run takes minutes. Each
run lasts 600 s by default: a continuous crawl lives for days, and its first 150 s are mostly
the learning phase (the first pass, then rates estimated from a few checks), whose changes wait
longer (simulated, ``bench_revisit_slots.py``: 0.30x / 0.39x of the full crawls' staleness for
changes made in the first 150 s, 0.23x to 0.25x / 0.27x to 0.31x for those after); the longer
run weighs the steady state more, still counting the start (``--seconds 150``: the start's
figure).

Figures:

* **staleness**: for every change of a page that the crawl's copy went through, the time from
  the change to the fetch that captured it (the first change since the previous fetch: how long
  the copy was stale); changes not captured when the run ends count until the end. Mean and
  90th percentile; target: continuous at most 1/3 of the repeated crawls'. Also per change:
  every change a fetched page went through, to the next fetch (a change made over by another
  before that fetch too), the issue's "time a change is captured - time it happened" read
  change by change.
* **freshness**: the time-averaged share of known pages whose copy is current; also for a
  uniform revisit at the continuous run's fetch budget (every page every ``T`` seconds,
  simulated on the same schedule, first fetches where the run made them).
* **discovery**: from a new page's appearance in its host's sitemap or feed to its first
  fetch; target under 2 intervals of that feed (``--feed-interval``).
* **cost**: a second web where every page has a 10% chance of changing between two cycles
  (half its hosts with validators): bytes downloaded and CPU seconds per revisit cycle against
  one full crawl of it; target with validators at most 1/5 of the full crawl's bytes.
* **politeness**: the least gap between two requests to one host (robots.txt, sitemaps and
  pages alike) against ``--delay``, from the log.

Usage: ``.venv/bin/python benchmarks/bench_freshness.py [--seconds 600] [--quick]``
(``make bench-fresh``).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import math
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from freshweb import FreshServer, Hit, PageSpec, WebShape, draw, summary

GOSSAMER = [sys.executable, "-m", "gossamer.cli", "crawl"]
WEB = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet"]
PAGE_PREFIXES = ("/p/", "/new/")


@dataclass(frozen=True)
class Run:
    """What one policy did: the server's log, its crawls and their CPU seconds."""

    name: str
    log: list[Hit]
    seconds: float
    crawls: int
    cpu: float


# -- running the crawlers ----------------------------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _crawl(args: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *GOSSAMER, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"gossamer exited {process.returncode}: {err.decode()[-2000:]}")


def _config(path: Path, *, initial: float, least: float, most: float, feed: float) -> Path:
    path.write_text(
        f"recrawl = true\nrevisit_initial = {initial}\nrevisit_min = {least}\n"
        f"revisit_max = {most}\n"
        + "".join(
            f'[[revisit]]\nurl = "*/{name}"\ninitial = {feed}\nmin = {feed}\nmax = {feed}\n'
            for name in ("sitemap.xml", "feed.xml")
        ),
        encoding="utf-8",
    )
    return path


async def continuous(server: FreshServer, work: Path, opts: argparse.Namespace) -> Run:
    """One ``--recrawl`` crawl for ``opts.seconds``."""
    config = _config(
        work / "fresh.toml",
        initial=opts.initial,
        least=1,
        most=opts.max_interval,
        feed=opts.feed_interval,
    )
    seeds = [server.url(h) for h in range(server.shape.hosts)]
    server.restart_clock()
    cpu = _cpu()
    fresh = ["--config", str(config), "--out", str(work / "fresh")]
    fresh += ["--revisit-spare", str(opts.spare)]
    await _crawl([*seeds, *WEB, *_polite(opts), *fresh, "--max-duration", str(opts.seconds)])
    return Run("continuous", list(server.log), server.now(), 1, _cpu() - cpu)


async def repeated(server: FreshServer, work: Path, opts: argparse.Namespace) -> Run:
    """Full crawls from the seeds one after the other until ``opts.seconds`` have passed."""
    seeds = [server.url(h) for h in range(server.shape.hosts)]
    server.restart_clock()
    cpu, crawls = _cpu(), 0
    while (left := opts.seconds - server.now()) > 1:
        out = work / f"full-{crawls}"
        await _crawl([*seeds, *WEB, *_polite(opts), "--out", str(out), "--max-duration", str(left)])
        crawls += 1
    return Run("repeated full", list(server.log), server.now(), crawls, _cpu() - cpu)


def _polite(opts: argparse.Namespace) -> list[str]:
    return ["--delay", str(opts.delay), "--per-host", "1", "--concurrency", "16"]


# -- what the log says -------------------------------------------------------------------------


def page_fetches(log: Sequence[Hit], pages: Sequence[PageSpec]) -> dict[int, list[float]]:
    """The times each page was fetched (index into ``pages``)."""
    index = {(p.host, p.path): i for i, p in enumerate(pages)}
    fetched: dict[int, list[float]] = defaultdict(list)
    for hit in log:
        i = index.get((hit.host, hit.path))
        if i is not None and hit.at >= pages[i].born:
            fetched[i].append(hit.at)
    return fetched


def staleness(
    pages: Sequence[PageSpec], fetched: dict[int, list[float]], end: float
) -> list[float]:
    """Per stale spell: from the first change after a fetch to the next fetch (or the end)."""
    spells = []
    for i, times in fetched.items():
        page = pages[i]
        stop = min(end, page.gone_at if page.gone_at is not None else end)
        changes = [c for c in page.changes if c < stop]
        for at, after in zip(times, [*times[1:], stop], strict=True):
            k = page.version(at)
            if k < len(changes) and changes[k] < after:
                spells.append(after - changes[k])
    return spells


def change_waits(
    pages: Sequence[PageSpec], fetched: dict[int, list[float]], end: float
) -> list[float]:
    """Per change (every one, not only the first of a stale spell): from the change to the
    next fetch (or the end), a change made over by another before it was fetched included."""
    waits = []
    for i, times in fetched.items():
        page = pages[i]
        stop = min(end, page.gone_at if page.gone_at is not None else end)
        nexts = [*times[1:], stop]
        for change in page.changes:
            if change >= stop or change < times[0]:
                continue
            k = bisect.bisect_right(times, change)
            waits.append(nexts[k - 1] - change)
    return waits


def freshness(pages: Sequence[PageSpec], fetched: dict[int, list[float]], end: float) -> float:
    """The time-averaged share of fetched pages whose copy is current."""
    fresh = total = 0.0
    for i, times in fetched.items():
        page = pages[i]
        stop = min(end, page.gone_at if page.gone_at is not None else end)
        if times[0] >= stop:
            continue
        total += stop - times[0]
        for at, after in zip(times, [*times[1:], stop], strict=True):
            k = page.version(at)
            nxt = page.changes[k] if k < len(page.changes) else math.inf
            fresh += max(0.0, min(after, nxt, stop) - at)
    return fresh / total if total else 0.0


def uniform(
    pages: Sequence[PageSpec], fetched: dict[int, list[float]], end: float
) -> dict[int, list[float]]:
    """Every page every ``T`` seconds from its first fetch, ``T`` spending the same fetches."""
    budget = sum(len(times) for times in fetched.values())
    lives = {
        i: min(end, pages[i].gone_at or end) - times[0]
        for i, times in fetched.items()
        if times[0] < end
    }
    period = sum(max(life, 0.0) for life in lives.values()) / max(budget - len(lives), 1)
    out: dict[int, list[float]] = {}
    for i in lives:
        first = fetched[i][0]
        out[i] = [first + k * period for k in range(int((end - first) / period) + 1)]
    return out


def discovery(
    pages: Sequence[PageSpec],
    fetched: dict[int, list[float]],
    end: float,
    settle: float,
    start: float,
) -> tuple[list[float], int]:
    """Seconds from appearance to first fetch of the pages announced from ``start`` to
    ``end - settle``, and how many of them were never fetched."""
    found, missed = [], 0
    for i, page in enumerate(pages):
        if page.born <= start or page.born > end - settle:
            continue
        if i in fetched:
            found.append(fetched[i][0] - page.born)
        else:
            missed += 1
    return found, missed


def listing_lag(
    pages: Sequence[PageSpec], log: Sequence[Hit], fetched: dict[int, list[float]], end: float
) -> tuple[list[float], list[float]]:
    """Discovery in two parts: from a page's appearance to the first read of its host's
    sitemap or feed that lists it, and from that read to the page's fetch."""
    reads: dict[int, list[float]] = defaultdict(list)
    for hit in log:
        if hit.path in ("/sitemap.xml", "/feed.xml"):
            reads[hit.host].append(hit.at)
    listed, queued = [], []
    for i, page in enumerate(pages):
        if page.born <= 0 or i not in fetched:
            continue
        after = [at for at in reads[page.host] if at >= page.born]
        if after and after[0] <= fetched[i][0]:
            listed.append(after[0] - page.born)
            queued.append(fetched[i][0] - after[0])
    return listed, queued


def politeness(log: Sequence[Hit]) -> tuple[float, int]:
    """The least gap between two requests to one host, and the hosts' request count."""
    by_host: dict[int, list[float]] = defaultdict(list)
    for hit in log:
        by_host[hit.host].append(hit.at)
    gaps = [b - a for times in by_host.values() for a, b in itertools.pairwise(times)]
    return min(gaps, default=math.inf), len(log)


def _p90(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


# -- the cost of a revisit cycle ---------------------------------------------------------------


async def cost(work: Path, opts: argparse.Namespace) -> None:
    """Bytes and CPU per revisit cycle when 10% of the pages change between two cycles."""
    cycle = opts.cycle
    shape = WebShape(
        hosts=4,
        pages=opts.pages,
        horizon=opts.cost_seconds + 120,
        fastest=-math.log(0.9) / cycle,
        spread=1.0,
        never=0.0,
        announce_every=1e9,
        gone=0.0,
        validators=(0, 1),
        feeds=(),
    )
    server = FreshServer(shape, draw(shape, opts.seed + 1))
    await server.start()
    try:
        seeds = [server.url(h) for h in range(shape.hosts)]
        fast = ["--delay", "0.02", "--per-host", "1", "--concurrency", "16", "--sitemaps", "off"]
        cpu = _cpu()
        await _crawl([*seeds, *WEB, *fast, "--out", str(work / "cost-full")])
        full_cpu, full_log = _cpu() - cpu, list(server.log)
        config = _config(work / "cost.toml", initial=cycle, least=cycle, most=cycle, feed=cycle)
        server.restart_clock()
        cpu = _cpu()
        fresh = ["--config", str(config), "--out", str(work / "cost-fresh")]
        fresh += ["--revisit-spare", str(opts.spare)]
        await _crawl([*seeds, *WEB, *fast, *fresh, "--max-duration", str(opts.cost_seconds)])
        fresh_cpu, fresh_log = _cpu() - cpu, list(server.log)
    finally:
        await server.stop()
    _print_cost(shape, full_log, full_cpu, fresh_log, fresh_cpu)


def _print_cost(
    shape: WebShape, full: list[Hit], full_cpu: float, fresh: list[Hit], fresh_cpu: float
) -> None:
    def pages_of(log: list[Hit], hosts: tuple[int, ...]) -> list[Hit]:
        return [h for h in log if h.host in hosts and h.path.startswith(PAGE_PREFIXES)]

    known = shape.hosts * shape.pages
    first_seen: set[tuple[int, str]] = set()
    revisits = []
    for hit in fresh:
        if hit.path.startswith(PAGE_PREFIXES):
            key = (hit.host, hit.path)
            if key in first_seen:
                revisits.append(hit)
            first_seen.add(key)
    cycles = len(revisits) / known
    print(
        f"\ncost: {known} pages on {shape.hosts} hosts, 10% changing a cycle, {cycles:.1f} cycles"
    )
    groups = {"with validators": shape.validators, "without validators": (2, 3)}
    for name, hosts in groups.items():
        full_bytes = sum(h.bytes for h in pages_of(full, hosts))
        cycle_hits = [h for h in revisits if h.host in hosts]
        per_page = sum(h.bytes for h in cycle_hits) / max(len(cycle_hits), 1)
        cycle_bytes = per_page * (len(hosts) * shape.pages)
        not_modified = sum(h.status == 304 for h in cycle_hits) / max(len(cycle_hits), 1)
        print(
            f"  {name:<19} full crawl {full_bytes / 1024:8.1f} KiB, a revisit cycle "
            f"{cycle_bytes / 1024:8.1f} KiB ({cycle_bytes / full_bytes:.2f} of it; "
            f"{not_modified:.0%} answered 304)"
        )
    first_crawl = full_cpu  # the continuous run's first pass is a full crawl
    per_cycle = max(fresh_cpu - first_crawl, 0.0) / max(cycles, 1e-9)
    print(
        f"  CPU: full crawl {full_cpu:.2f} s (process start included), "
        f"a revisit cycle {per_cycle:.2f} s"
    )


# -- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """What one run's log says."""

    stale: list[float]
    waits: list[float]
    found: list[float]
    missed: int
    gap: float


def first_pass(pages: Sequence[PageSpec], fetched: dict[int, list[float]]) -> float:
    """When every starting page (not gone by then) had been fetched once."""
    firsts = [fetched[i][0] for i, p in enumerate(pages) if p.born == 0 and i in fetched]
    return max(firsts, default=0.0)


def figures(pages: list[PageSpec], run: Run, opts: argparse.Namespace) -> Figures:
    """Print one run's figures; return those the targets compare."""
    fetched = page_fetches(run.log, pages)
    stale = staleness(pages, fetched, run.seconds)
    passed = first_pass(pages, fetched)
    found, missed = discovery(pages, fetched, run.seconds, 2 * opts.feed_interval, passed)
    everything, _ = discovery(pages, fetched, run.seconds, 2 * opts.feed_interval, 0.0)
    gap, requests = politeness(run.log)
    fetches = sum(len(times) for times in fetched.values())
    print(
        f"\n{run.name} ({run.crawls} crawl{'s' if run.crawls > 1 else ''}, "
        f"{run.seconds:.0f} s, CPU {run.cpu:.1f} s): {requests} requests, {fetches} page "
        f"fetches, {sum(h.bytes for h in run.log) / 1e6:.1f} MB"
    )
    print(f"  staleness: {_spread(stale)} ({len(stale)} stale spells)")
    waits = change_waits(pages, fetched, run.seconds)
    print(f"    every change (not only a spell's first): {_spread(waits)} ({len(waits)} changes)")
    feeds = set(opts.feed_hosts)
    for name, hosts in (("sitemap (lastmod)", None), ("feed only", feeds)):
        group = {
            i: times
            for i, times in fetched.items()
            if (pages[i].host in feeds) == (hosts is not None)
        }
        print(
            f"    hosts announcing in a {name}: {_spread(staleness(pages, group, run.seconds))}"
            f" (per change {_spread(change_waits(pages, group, run.seconds))})"
        )
    print(f"  freshness: {freshness(pages, fetched, run.seconds):.3f}")
    print(
        f"  discovery: pages announced after the first pass ({passed:.0f} s): {_spread(found)}, "
        f"max {max(found, default=math.nan):.2f} s ({len(found)} found, {missed} never "
        f"fetched); all: {_spread(everything)}, max {max(everything, default=math.nan):.2f} s"
    )
    listed, queued = listing_lag(pages, run.log, fetched, run.seconds)
    if listed:
        print(
            f"    listed by a read {statistics.fmean(listed):.2f} s after appearing (max "
            f"{max(listed):.2f}), fetched {statistics.fmean(queued):.2f} s after that read "
            f"(max {max(queued):.2f})"
        )
    print(f"  politeness: least gap {gap:.3f} s between two requests to a host")
    if run.name == "continuous":
        flat = uniform(pages, fetched, run.seconds)
        print(
            f"  uniform revisit at the same fetch budget (simulated): freshness "
            f"{freshness(pages, flat, run.seconds):.3f}, staleness "
            f"{_spread(staleness(pages, flat, run.seconds))}"
        )
    return Figures(stale, waits, found, missed, gap)


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "none"
    return f"mean {statistics.fmean(values):.2f} s, p90 {_p90(values):.2f} s"


def report(pages: list[PageSpec], runs: list[Run], opts: argparse.Namespace) -> None:
    """Print each run's figures and the ratios against the targets."""
    fresh, full = (figures(pages, run, opts) for run in runs)
    print("\ntargets (continuous against repeated full crawls):")
    mean_ratio = statistics.fmean(fresh.stale) / statistics.fmean(full.stale)
    p90_ratio = _p90(fresh.stale) / _p90(full.stale)
    print(f"  staleness mean {mean_ratio:.2f}x, p90 {p90_ratio:.2f}x (target <= 0.33)")
    mean_ratio = statistics.fmean(fresh.waits) / statistics.fmean(full.waits)
    p90_ratio = _p90(fresh.waits) / _p90(full.waits)
    print(f"    every change: mean {mean_ratio:.2f}x, p90 {p90_ratio:.2f}x")
    worst = max(fresh.found, default=math.inf)
    bound = 2 * opts.feed_interval
    print(
        f"  discovery after the first pass: worst {worst:.2f} s against 2 feed intervals = "
        f"{bound:.0f} s ({'met' if worst < bound and not fresh.missed else 'missed'})"
    )
    least = min(fresh.gap, full.gap)
    print(f"  politeness: least gap {least:.3f} s >= {opts.delay} s: {least >= opts.delay}")


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The bench's options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="wall time of each run")
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--pages", type=int, default=60, help="pages per host at the start")
    parser.add_argument("--delay", type=float, default=0.2, help="--delay of every crawl")
    parser.add_argument("--initial", type=float, default=5.0, help="--revisit-initial")
    parser.add_argument("--max-interval", type=float, default=60.0, help="--revisit-max")
    parser.add_argument("--feed-interval", type=float, default=5.0, help="sitemap/feed rereads")
    parser.add_argument("--cycle", type=float, default=6.0, help="cost run: seconds a cycle")
    parser.add_argument("--cost-seconds", type=float, default=45.0, help="cost run: wall time")
    parser.add_argument(
        "--spare", type=float, default=1.0, help="--revisit-spare of the continuous crawl"
    )
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--feed-hosts", type=int, nargs="*", default=[1, 4])
    parser.add_argument("--quick", action="store_true", help="60 s runs, 30 pages a host")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.seconds, opts.pages, opts.cost_seconds = 60.0, 30, 30.0
    return opts


async def main(opts: argparse.Namespace) -> None:
    """Run both policies on the same schedule, then the cost web; print the figures."""
    shape = WebShape(
        hosts=opts.hosts, pages=opts.pages, horizon=opts.seconds + 60, feeds=tuple(opts.feed_hosts)
    )
    pages = draw(shape, opts.seed)
    counts = summary(pages)
    print(
        f"web: {opts.hosts} hosts x {opts.pages} pages ({counts['changing']} changing, rates "
        f"{shape.fastest / 1000:g}-{shape.fastest:g}/s; {counts['gone']} disappear), "
        f"{counts['announced']} announced during {shape.horizon:.0f} s; hosts "
        f"{','.join(map(str, shape.validators))} send validators; delay {opts.delay} s; "
        f"continuous crawl with --revisit-spare {opts.spare:g}"
    )
    server = FreshServer(shape, pages)
    await server.start()
    with tempfile.TemporaryDirectory(prefix="bench-fresh-") as tmp:
        work = Path(tmp)
        try:
            started = time.monotonic()
            runs = [await continuous(server, work, opts), await repeated(server, work, opts)]
        finally:
            await server.stop()
        report(pages, runs, opts)
        await cost(work, opts)
        print(f"\n({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    asyncio.run(main(parse()))

"""``make bench``: gossamer and Scrapy on real documents (Debian's documentation packages).

The generated webs of ``bench_crawl.py`` have no page over 4,096 tags; real pages often do
(API references, long articles). This benchmark serves Debian's documentation sets
(``realweb.py``: python3-doc, postgresql-doc, sqlite3-doc, git-doc; missing ones installed
with apt-get) with nginx, one loopback host each, pages gzip-compressed as most sites send
them, and crawls them with both crawlers, pinned to one core as ``bench_crawl.py`` does (its
harness: ``run_one``, the same spider, CPU seconds from ``wait4``), both comparisons in every
round:

- ``links``: following links only (gossamer ``--no-text``, the spider counting pages);
- ``content``: the whole job, gossamer with text, metadata and ``--warc`` against the spider
  with ``trafilatura.extract`` in its callback and a JSON lines feed.

It prints each round, the medians, the ratios of pages per CPU-second against their targets,
the distribution of tags per page of the served set, and the floor: per page fetched,
lexbor's parse plus every ``<a href>`` resolved with gossamer's own URL library
(``gossamer.urls.Resolver``, ada), with gossamer's links-only CPU per page over it; and, for
comparison, that floor plus what the least HTTP client costs a page, aiohttp fetching and
ISA-L inflating every answer gossamer's crawl read (its pages, the 404s of the sets' broken
links, the robots.txt) over the pages it fetched (``bench_fetch_cost.py``: a crawler that
fetches over HTTP pays both). Both floors time the pages alone, their start-up left out, so
the benchmark prints gossamer's steady state too: its CPU less that of a crawl of one page
(``--max-depth 0``, three times, the median; a page big enough for the parse sandbox, so
that its worker's start counts as the start-up it is), over the pages. The
summary goes to ``bench-out/real/realpages-bench.json``.

Usage: ``.venv/bin/python benchmarks/bench_realpages.py [--rounds R] [--only links|content]
[--port P]``. One round took 5 minutes on the 2-core machine with little else running, 13
on a busy hour, most of it Scrapy's with trafilatura.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import crawl_report as report
import nginx
import realweb
from bench_crawl import choose_cpus, run_one
from crawlers import Crawler, Gossamer, Scrapy, Settings, compile_gossamer
from measure import run_measured
from parsefloor import TOP_PAD, Floor, time_pages

ROOT = Path(__file__).resolve().parent.parent
PAIRS: dict[str, tuple[Crawler, Crawler]] = {
    "links": (Gossamer(), Scrapy()),
    "content": (Gossamer(content=True), Scrapy(content=True)),
}
TARGETS = {"links": 20.0, "content": 20.0}
"""gossamer's pages per CPU-second over Scrapy's, at least (issue 28)."""
GUARD_TARGET = 0.05
"""The markup guard's share of gossamer's links-only CPU, under (issue 28)."""
FLOOR_TARGET = 1.3
"""gossamer's links-only CPU per page over the lexbor + resolver floor, at most."""
PORT = 18493


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both crawlers (1)")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (64)")
    parser.add_argument("--per-host", type=int, default=4, help="requests per host (4)")
    parser.add_argument("--port", type=int, default=PORT, help=f"port of every host ({PORT})")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "real")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per crawl (900)")
    parser.add_argument("--only", choices=sorted(PAIRS), help="run one comparison, not both")
    parser.add_argument(
        "--docs",
        type=realweb.doc_sets,
        default=realweb.DOCS,
        metavar="PACKAGE=GLOB,...",
        help="documentation packages to serve instead of the default sets, each with a glob "
        "from / to its HTML directory (index.html inside), e.g. "
        "cmake-doc=usr/share/doc/cmake-data/html: a check on documents the default "
        "sets do not show",
    )
    parser.add_argument("--floor-of", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.pairs = {k: v for k, v in PAIRS.items() if args.only in (None, k)}
    args.out = args.out.resolve()
    return args


def resolved_links(body: bytes, url: str) -> list[str]:
    """The floor's work on one page: lexbor's parse, every ``<a href>`` resolved by
    gossamer's resolver (ada). The resolver remembers resolutions by base, so a page's
    fastest pass finds its links resolved already, as a crawl finds a site's repeated ones."""
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.urls import Resolver

    page = Resolver(url)
    found = []
    for node in LexborHTMLParser(body).css("a[href]"):
        target = page.resolve(node.attributes.get("href") or "")
        if target is not None:
            found.append(target)
    return found


def guard_ms(pages: Sequence[tuple[bytes, str]], passes: int = 3) -> float:
    """What the markup guard adds to lexbor's parse, in ms a page over ``pages``, as a
    links-only crawl parses them: a page the sandbox takes (`gossamer.page.sandboxed.weigh`)
    costs only its weighing (the worker parses it as it is); the others the weighing, then
    the guard's route and whatever it decides (`gossamer.parse.guard.parse`) less lexbor's
    own parse of the page. Each page's fastest of ``passes``."""
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.page.sandboxed import weigh
    from gossamer.parse.guard import parse

    def guarded(body: bytes) -> None:
        weight = weigh(body)
        if not weight.big:
            parse(body, weight.tags)

    def plain(body: bytes) -> None:
        if not weigh(body).big:
            LexborHTMLParser(body)

    added = 0
    for body, _ in pages:
        costs = []
        for work in (guarded, plain, weigh):
            best = None
            for _ in range(passes):
                started = time.perf_counter_ns()
                work(body)
                spent = time.perf_counter_ns() - started
                best = spent if best is None else min(best, spent)
            costs.append(best or 0)
        added += max(0, costs[0] - costs[1]) + costs[2]  # the guard's own, and the weighing
    return added / 1e6 / len(pages) if pages else 0.0


def floor_main(listing: Path) -> None:
    """Subprocess side of `measure_floor`: time the floor and the guard over the listed
    pages, print them."""
    pages = [(Path(file).read_bytes(), url) for file, url in json.loads(listing.read_text())]
    floor = asdict(time_pages(resolved_links, pages, passes=3))
    print(json.dumps({"floor": floor, "guard_ms": guard_ms(pages)}))


def measure_floor(
    urls: Sequence[str], sites: Sequence[realweb.Site], cpu: int | None
) -> tuple[Floor, float]:
    """The floor over the pages fetched (their files), and what the guard adds a page (ms,
    `guard_ms`), in a fresh process pinned to the crawlers' core with ``MALLOC_TOP_PAD_`` (as
    ``parsefloor.py``'s padded figure)."""
    pairs = [(str(f), url) for url in sorted(urls) if (f := realweb.file_of(url, sites))]
    listing = Path(os.environ.get("TMPDIR", "/tmp")) / f"realpages-floor-{os.getpid()}.json"
    listing.write_text(json.dumps(pairs), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["MALLOC_TOP_PAD_"] = TOP_PAD
    command = [sys.executable, __file__, "--floor-of", str(listing)]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu), *command]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    finally:
        listing.unlink(missing_ok=True)
    found = json.loads(done.stdout)
    return Floor(**found["floor"]), found["guard_ms"]


def crawl_rounds(args: argparse.Namespace, sites: Sequence[realweb.Site]) -> list[report.Run]:
    """Serve the sites with nginx; each round runs every comparison, the order alternating."""
    server_cpu, crawler_cpu = choose_cpus()
    print(f"cores: nginx on {server_cpu}, crawlers on {crawler_cpu} (taskset)")
    seeds = realweb.seeds(sites, args.port)
    (args.out / "seeds.txt").write_text("".join(f"{u}\n" for u in seeds), encoding="utf-8")
    ips = [site.ip for site in sites]
    runs: list[report.Run] = []
    cores = (server_cpu, crawler_cpu)
    prefix, www = args.out / "nginx", args.out / "www"
    with nginx.serve(prefix, www, ips, args.port, server_cpu, gzip=True) as server:
        for number in range(1, args.rounds + 1):
            for mode, pair in args.pairs.items():
                order = pair if number % 2 else pair[::-1]
                done = [run_one(c, number, mode, args, cores, server) for c in order]
                print(report.round_table(number, args.rounds, mode, done), flush=True)
                print(report.round_ratio(done, pair[0].name, pair[1].name), flush=True)
                runs += done
        args.fixed_cpu = fixed_cost(args, one_page_seed(sites, args.port), crawler_cpu)
    return runs


def one_page_seed(sites: Sequence[realweb.Site], port: int) -> str:
    """The URL of the smallest page the crawl parses in its sandbox (over
    `gossamer.page.sandboxed.MIN_BYTES`): a crawl of it alone starts what any crawl of these
    sets starts, the parse worker too where the crawl sends such pages there (one keeping
    text; a links-only crawl reads their tokens in-process)."""
    from gossamer.page.sandboxed import MIN_BYTES

    sizes = [(f.stat().st_size, site, f) for site in sites for f in realweb.html_files([site])]
    big = [x for x in sizes if x[0] > MIN_BYTES] or sizes
    _, site, file = min(big, key=lambda x: x[0])
    return f"http://{site.ip}:{port}/{file.relative_to(site.root).as_posix()}"


def fixed_cost(args: argparse.Namespace, seed: str, cpu: int | None, times: int = 3) -> float:
    """gossamer's CPU seconds for a crawl of one page (``seed``, ``--max-depth 0``, the
    flags of the comparison the floor is read against): its start-up (and its parse worker's,
    if it starts one), robots.txt, the page and its end. The median of ``times`` runs."""
    mode = "links" if "links" in args.pairs else "content"
    crawler = args.pairs[mode][0]
    work = args.out / "runs" / "gossamer-one-page"
    costs = []
    for _ in range(times):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        (work / "seeds.txt").write_text(f"{seed}\n", encoding="utf-8")
        settings = Settings(args.concurrency, args.per_host)
        command = [*crawler.command(work / "seeds.txt", work, settings), "--max-depth", "0"]
        costs.append(run_measured(command, work / "log.txt", cpu=cpu, timeout=60).cpu)
    return statistics.median(costs)


def summarise(args: argparse.Namespace, runs: list[report.Run]) -> dict[str, Any]:
    """Print each comparison's medians and its target; the pairs' records."""
    pairs: dict[str, Any] = {}
    for mode, (ours, theirs) in args.pairs.items():
        mine = [r for r in runs if r.comparison == mode]
        summary = report.summarise(mine, [ours.name, theirs.name])
        print(f"{mode}: " + report.summary_text(summary, ours.name, theirs.name, args.rounds))
        ratio = report.ratios(summary, ours.name, theirs.name)
        pairs[mode] = {"crawlers": [ours.name, theirs.name], "summary": summary, "ratios": ratio}
    for mode, pair in pairs.items():
        ratio = pair["ratios"]["pages_per_cpu_second"]
        verdict = "met" if ratio >= TARGETS[mode] else "MISSED"
        print(
            f"target: {mode} pages per CPU-second {ratio:.2f}x, at least {TARGETS[mode]:g}x: "
            f"{verdict}"
        )
    return pairs


def count_flags(runs: Sequence[report.Run], mode: str) -> list[str]:
    """A comparison's runs that failed, or whose page counts differ by more than 1%: there
    is no expected count on real pages, so each round's pair is checked against its first."""
    mine = [r for r in runs if r.comparison == mode]
    flags = []
    for number in sorted({r.round for r in mine}):
        pair = [r for r in mine if r.round == number]
        flags += report.count_flags(pair, pair[0].counts.ok)
    return list(dict.fromkeys(flags))


def fetch_floor(args: argparse.Namespace, fetched: Sequence[str], pages: int) -> float | None:
    """The CPU milliseconds aiohttp with ISA-L inflating costs to fetch what the crawl
    fetched (``fetched``: its pages and its 404s, with each site's robots.txt), over the
    ``pages`` it fetched whole (``bench_fetch_cost.py``, two rounds, in its own pinned
    process); None when it could not run."""
    listing = args.out / "fetch-cost-urls.txt"
    listing.write_text("".join(f"{url}\n" for url in fetched), encoding="utf-8")
    script = Path(__file__).resolve().parent / "bench_fetch_cost.py"
    command = [sys.executable, str(script), "--rounds", "2", "--json", "--urls", str(listing)]
    command += ["--port", str(args.port + 7), "--out", str(args.out / "fetch-cost")]
    command += ["--docs", ",".join(f"{d.package}={d.pattern}" for d in args.docs)]
    environment = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, timeout=600, check=False
    )
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
        return float(found["ms"]["aiohttp+gzip"]) * int(found["responses"]) / max(pages, 1)
    except (ValueError, KeyError, IndexError, TypeError):
        print(f"note: no fetch floor: {done.stderr.strip()[-300:]}")
        return None


def floor_report(
    args: argparse.Namespace, sites: Sequence[realweb.Site], pairs: dict[str, Any]
) -> dict[str, Any]:
    """The floor over the pages gossamer fetched in its last run, and its CPU per page over
    it (links only, or the whole job when only that ran)."""
    mode = "links" if "links" in pairs else "content"
    crawler = args.pairs[mode][0]
    urls = crawler.ok_urls(args.out / "runs" / crawler.name)
    floor, guard = measure_floor(sorted(urls), sites, choose_cpus()[1])
    ours = pairs[mode]["summary"][crawler.name]
    cpu_ms = 1000 * ours["cpu"] / ours["pages_ok"] if ours["pages_ok"] else 0.0
    ratio = cpu_ms / floor.mean_ms if floor.mean_ms else 0.0
    share = guard / cpu_ms if cpu_ms else 0.0
    print(
        f"floor: lexbor parse + <a href> resolved by gossamer.urls (ada), {len(urls)} pages "
        f"fetched, MALLOC_TOP_PAD_: median {floor.median_ms:.3f} ms, mean {floor.mean_ms:.3f} ms "
        f"a page ({floor.links_per_page:.0f} links); gossamer ({mode}) {cpu_ms:.3f} ms CPU a "
        f"page = {ratio:.2f}x the floor"
    )
    verdict = "met" if ratio <= FLOOR_TARGET else "MISSED"
    print(f"target: {mode} CPU per page at most {FLOOR_TARGET:g}x the floor: {verdict}")
    fixed = getattr(args, "fixed_cpu", 0.0)
    steady_ms = 1000 * (ours["cpu"] - fixed) / ours["pages_ok"] if ours["pages_ok"] else 0.0
    print(
        f"steady state: gossamer's CPU less that of a crawl of one page ({1000 * fixed:.0f} ms: "
        f"its start-up and any parse worker's, robots.txt, the page, the end; the floors leave "
        f"their start-up out too), "
        f"{steady_ms:.3f} ms a page = {steady_ms / floor.mean_ms:.2f}x the floor"
    )
    fetched = crawler.fetched_urls(args.out / "runs" / crawler.name)
    fetching = fetch_floor(args, fetched, ours["pages_ok"])
    if fetching is not None:
        both = floor.mean_ms + fetching
        print(
            f"fetch floor: the floor plus aiohttp fetching what the crawl fetched "
            f"({len(fetched)} answers and the robots.txt) and ISA-L inflating them "
            f"(benchmarks/bench_fetch_cost.py), {fetching:.3f} + {floor.mean_ms:.3f} = "
            f"{both:.3f} ms a page; gossamer ({mode}) = {cpu_ms / both:.2f}x that, "
            f"{steady_ms / both:.2f}x in the steady state (for comparison: what a crawler that "
            f"fetches over HTTP cannot do without)"
        )
    print(
        f"guard: {guard:.3f} ms a page over lexbor's own parse (the crawl's weighing, route and "
        f"checks), {100 * share:.1f}% of gossamer's {mode} CPU"
    )
    verdict = "met" if share < GUARD_TARGET else "MISSED"
    print(f"target: the guard under {100 * GUARD_TARGET:g}% of {mode} CPU: {verdict}")
    return {
        "mode": mode,
        "floor": asdict(floor),
        "cpu_ms_per_page": cpu_ms,
        "ratio": ratio,
        "guard_ms_per_page": guard,
        "guard_share": share,
        "fetch_floor_ms_per_page": fetching,
        "one_page_crawl_cpu_s": fixed,
        "steady_cpu_ms_per_page": steady_ms,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a crawler failed or timed out, 2 when it cannot run."""
    args = parse_args(argv)
    if args.floor_of is not None:
        floor_main(args.floor_of)
        return 0
    for crawler in (c for pair in args.pairs.values() for c in pair):
        if (why := crawler.missing()) is not None:
            print(f"bench: {why}", file=sys.stderr)
            return 2
    if missing := realweb.provide_missing(args.docs):
        print(f"note: not served (not found): {', '.join(missing)}")
    args.out.mkdir(parents=True, exist_ok=True)
    sites = realweb.lay_out(args.out / "www", args.docs)
    if not sites:
        print("bench: no documentation package found or unpacked", file=sys.stderr)
        return 2
    compile_gossamer()
    for site in sites:
        print(f"site http://{site.ip}:{args.port}/ : {site.package} ({site.root})")
    spread = realweb.tag_spread(realweb.html_files(sites))
    print(spread.text("every HTML file served"))
    try:
        runs = crawl_rounds(args, sites)
    except nginx.NginxError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    pairs = summarise(args, runs)
    floor = floor_report(args, sites, pairs)
    counts = [flag for mode in args.pairs for flag in count_flags(runs, mode)]
    print("\n".join(f"FLAG {flag}" for flag in counts) or "check: page counts agree (within 1%)")
    flags = report.contention_flags(runs)
    print("\n".join(f"FLAG {flag}" for flag in flags) or "check: no other load on the two cores")
    flags = counts + flags
    record = {
        "sites": [{"package": s.package, "root": str(s.root), "ip": s.ip} for s in sites],
        "tags": asdict(spread),
        "settings": {"concurrency": args.concurrency, "per_host": args.per_host, "delay": 0},
        "runs": [run.as_dict() for run in runs],
        "pairs": pairs,
        "targets": TARGETS,
        "floor": floor,
        "flags": flags,
    }
    result = args.out / "realpages-bench.json"
    result.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written: {result}")
    return 1 if any(r.cost.timed_out or r.cost.returncode for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())

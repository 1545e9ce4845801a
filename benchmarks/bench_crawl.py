"""``make bench``: gossamer and Scrapy crawl the same local web served by nginx, compared.

1. Generate a static web (``webgen.py``; cached under ``bench-out/webs/`` by seed, size and
   page layout): many loopback hosts, 10-60 KB article pages with 30-300 links, navigation,
   related links, sidebar, footer and other boilerplate, a few robots.txt rules.
2. Serve it with nginx pinned to one core, and crawl it with gossamer and with a Scrapy
   spider (``scrapy_spider.py``) pinned to another core, one after the other, for several
   rounds (the order alternates), with the same concurrency, per-host limit, no delay and
   robots.txt obeyed. Two comparisons (``crawlers.py``), each run every round:

   - ``content``, the headline: the whole job of keeping what pages say. gossamer as it
     runs by default (main text and metadata of every page in its records) with ``--warc``
     (every response archived); the spider as a Scrapy user writes it for the same job,
     ``trafilatura.extract`` in the parse callback and a JSON lines feed export. The two
     outputs' main texts are scored against each other per page (token-bag precision, recall
     and F1 of gossamer's text with trafilatura's as the reference, ``bench_extract.prf``),
     so a fast but empty extraction would show.
   - ``links``: following links only (gossamer ``--no-text``, the spider counting pages),
     the crawl itself without extraction. It costs a quarter of the run time and tells how
     much of either side's cost is the crawling and how much the text.

3. Print each round with its gossamer/Scrapy ratio of pages per CPU-second, then the medians
   per comparison: pages/s, pages per CPU-second, peak RSS and the ratios; the text scores;
   and the parse floor (``parsefloor.py``). The summary also goes to
   ``bench-out/crawl-bench.json``. Page counts are checked against the web's expected crawl.

Usage: ``.venv/bin/python benchmarks/bench_crawl.py [--pages N] [--hosts H] [--rounds R]
[--concurrency C] [--per-host P] [--seed S] [--only content|links] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import crawl_report as report
import nginx
import parsefloor
from crawlers import Crawler, Gossamer, Scrapy, Settings
from measure import core_busy_seconds, run_measured
from webgen import Expected, WebSpec, ensure_web, robots_allows, seeds
from weblinks import host_ip

ROOT = Path(__file__).resolve().parent.parent
PAIRS: dict[str, tuple[Crawler, Crawler]] = {
    "content": (Gossamer(content=True), Scrapy(content=True)),
    "links": (Gossamer(), Scrapy()),
}
"""Each comparison: (gossamer, Scrapy), the headline first."""
TARGET_RATIO = 8.0
"""The content comparison's target: gossamer's pages per CPU-second over Scrapy's."""
FLOOR_SAMPLE = 5000
DEFAULTS = {"pages": 3000, "hosts": 20, "rounds": 3}
QUICK = {"pages": 1000, "hosts": 10, "rounds": 1}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; ``--quick`` changes the defaults of the size options not given."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, help="pages in the web (3000; up to 200000)")
    parser.add_argument("--hosts", type=int, help="hosts, one loopback address each (20)")
    parser.add_argument("--rounds", type=int, help="rounds of both crawlers (3)")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (64)")
    parser.add_argument("--per-host", type=int, default=4, help="requests per host (4)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the web (1)")
    parser.add_argument("--port", type=int, default=WebSpec.port, help="port of every host")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out", help="work directory")
    parser.add_argument("--timeout", type=float, help="seconds per crawl (scales with pages)")
    parser.add_argument("--only", choices=sorted(PAIRS), help="run one comparison, not both")
    parser.add_argument("--quick", action="store_true", help="1000 pages, 10 hosts, 1 round")
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if not 1 <= args.hosts <= 250 or args.pages < 3 * args.hosts or args.rounds < 1:
        parser.error("need 1 <= --hosts <= 250, --pages >= 3 * hosts and --rounds >= 1")
    args.pairs = {k: v for k, v in PAIRS.items() if args.only in (None, k)}
    return args


def choose_cpus() -> tuple[int | None, int | None]:
    """(nginx's core, the crawlers' core): two different ones when there are two."""
    if shutil.which("taskset") is None:
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    return cores[0], cores[1 if len(cores) > 1 else 0]


def run_one(
    crawler: Crawler,
    number: int,
    args: argparse.Namespace,
    cores: tuple[int | None, int | None],
    server: subprocess.Popen[bytes],
) -> report.Run:
    """One measured crawl in a fresh work directory (``bench-out/runs/<crawler>``)."""
    work = args.out / "runs" / crawler.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    settings = Settings(args.concurrency, args.per_host)
    command = crawler.command(args.out / "seeds.txt", work, settings)
    busy, nginx_cpu = core_busy_seconds(cores[0]), nginx.cpu_seconds(server)
    cost = run_measured(command, work / "log.txt", cpu=cores[1], timeout=args.timeout)
    nginx_cpu = nginx.cpu_seconds(server) - nginx_cpu
    server_busy = core_busy_seconds(cores[0])
    others = None
    if busy is not None and server_busy is not None and cores[0] != cores[1]:
        others = max(0.0, server_busy - busy - nginx_cpu)
    return report.Run(crawler.name, number, cost, crawler.counts(work), nginx_cpu, others)


def crawl_rounds(
    args: argparse.Namespace, spec: WebSpec, web: Path
) -> tuple[list[report.Run], list[str], dict[str, report.Agreement]]:
    """Serve the web with nginx and run every crawler once per round; runs, notes and the
    content comparison's text agreement in each round."""
    server_cpu, crawler_cpu = choose_cpus()
    print(f"cores: nginx on {server_cpu}, crawlers on {crawler_cpu} (taskset)")
    seeds_file = args.out / "seeds.txt"
    seeds_file.write_text("".join(f"{url}\n" for url in seeds(spec)), encoding="utf-8")
    args.timeout = args.timeout or max(300.0, args.pages * 0.2)
    ips = [host_ip(i) for i in range(spec.hosts)]
    runs: list[report.Run] = []
    notes: list[str] = []
    agreement: dict[str, report.Agreement] = {}
    allowed = robots_allows(web)
    with nginx.serve(args.out / "nginx", web / "www", ips, spec.port, cpu=server_cpu) as server:
        for number in range(1, args.rounds + 1):
            for mode, pair in args.pairs.items():
                order = pair if number % 2 else pair[::-1]
                cores = (server_cpu, crawler_cpu)
                done = [run_one(c, number, args, cores, server) for c in order]
                print(report.round_table(number, args.rounds, mode, done), flush=True)
                print(report.round_ratio(done, pair[0].name, pair[1].name), flush=True)
                runs += done
                urls = {c.name: c.ok_urls(args.out / "runs" / c.name) for c in pair}
                notes += report.url_notes(number, urls, allowed)
                if mode == "content":
                    agreement[str(number)] = report.score_apart(pair, args.out / "runs")
                    print(report.agreement_text(agreement[str(number)]), flush=True)
    return runs, notes, agreement


def parse_floor(spec: WebSpec, web: Path) -> dict[str, parsefloor.Floor]:
    """The parse floors over the web's pages: plain malloc, then with MALLOC_TOP_PAD_."""
    cpu = choose_cpus()[1]
    floors = parsefloor.run(web, spec.port, cpu, limit=FLOOR_SAMPLE, top_pad=False)
    padded = parsefloor.run(web, spec.port, cpu, limit=FLOOR_SAMPLE, top_pad=True)
    return floors | {f"{key}_top_pad": floor for key, floor in padded.items()}


def prepare(args: argparse.Namespace) -> tuple[WebSpec, Path, Expected]:
    """Generate (or find) the web and say what is about to run."""
    args.out.mkdir(parents=True, exist_ok=True)
    spec = WebSpec(args.pages, args.hosts, args.seed, args.port)
    started = time.perf_counter()
    web, expected = ensure_web(spec, args.out / "webs")
    print(
        f"web: {web} ({time.perf_counter() - started:.1f}s): {expected.files} pages, "
        f"{expected.bytes / expected.files / 1024:.1f} KB average, {spec.hosts} hosts; "
        f"expected crawl: {expected.ok} pages 200, {expected.not_found} 404, "
        f"{expected.robots_blocked} blocked by robots.txt"
    )
    print(
        f"settings: concurrency {args.concurrency}, per host {args.per_host}, delay 0, "
        f"robots.txt obeyed, {args.rounds} round(s)"
    )
    return spec, web, expected


def conclude(
    args: argparse.Namespace,
    spec: WebSpec,
    web: Path,
    expected: Expected,
    runs: list[report.Run],
    notes: list[str],
    agreement: dict[str, report.Agreement],
) -> dict[str, Any]:
    """Print the summaries, text scores, parse floor and checks; return the JSON record."""
    pairs: dict[str, Any] = {}
    flags: list[str] = []
    for mode, (ours, theirs) in args.pairs.items():
        mine = [r for r in runs if r.crawler in (ours.name, theirs.name)]
        summary = report.summarise(mine, [ours.name, theirs.name])
        print(f"{mode}: " + report.summary_text(summary, ours.name, theirs.name, args.rounds))
        flags += report.count_flags(mine, expected.ok)
        pairs[mode] = {
            "crawlers": [ours.name, theirs.name],
            "summary": summary,
            "ratios": report.ratios(summary, ours.name, theirs.name),
            "versions": {c.name: c.version(args.out / "runs" / c.name) for c in (ours, theirs)},
        }
    if "content" in pairs:
        ratio = pairs["content"]["ratios"]["pages_per_cpu_second"]
        verdict = "met" if ratio >= TARGET_RATIO else "MISSED"
        print(
            f"target: content pages per CPU-second {ratio:.2f}x, "
            f"at least {TARGET_RATIO:g}x: {verdict}"
        )
    if agreement:
        print(report.agreement_text(report.median_agreement(list(agreement.values())), "median"))
    floor_mode = "links" if "links" in pairs else "content"
    ours_summary = pairs[floor_mode]["summary"][pairs[floor_mode]["crawlers"][0]]
    cpu_per_page_ms = (
        1000 * ours_summary["cpu"] / ours_summary["pages_ok"] if ours_summary["pages_ok"] else 0.0
    )
    floors = parse_floor(spec, web)
    sampled = len(parsefloor.sample(web, FLOOR_SAMPLE))
    busy = report.contention_flags(runs)
    print(report.floor_text(floors, sampled, cpu_per_page_ms, floor_mode))
    print("\n".join(f"FLAG {flag}" for flag in flags) or "check: page counts agree (within 1%)")
    print("\n".join(f"FLAG {flag}" for flag in busy) or "check: no other load on the two cores")
    print("\n".join(f"note: {note}" for note in notes) or "check: both fetched the same URLs")
    return {
        "spec": asdict(spec),
        "settings": {"concurrency": args.concurrency, "per_host": args.per_host, "delay": 0},
        "expected": asdict(expected),
        "runs": [run.as_dict() for run in runs],
        "pairs": pairs,
        "text_agreement": {k: asdict(v) for k, v in agreement.items()},
        "parse_floor": {
            k: {**asdict(v), "pages_per_second": v.pages_per_second} for k, v in floors.items()
        },
        "parse_floor_pages": sampled,
        "gossamer_cpu_ms_per_page": {
            mode: 1000
            * pair["summary"][pair["crawlers"][0]]["cpu"]
            / max(1.0, pair["summary"][pair["crawlers"][0]]["pages_ok"])
            for mode, pair in pairs.items()
        },
        "flags": flags + busy,
        "notes": notes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a crawler failed or timed out, 2 when it cannot run."""
    args = parse_args(argv)
    for crawler in (c for pair in args.pairs.values() for c in pair):
        if (why := crawler.missing()) is not None:
            print(f"bench: {why}", file=sys.stderr)
            return 2
    spec, web, expected = prepare(args)
    try:
        runs, notes, agreement = crawl_rounds(args, spec, web)
    except nginx.NginxError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    record = conclude(args, spec, web, expected, runs, notes, agreement)
    result = args.out / "crawl-bench.json"
    result.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written: {result}")
    return 1 if any(r.cost.timed_out or r.cost.returncode for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())

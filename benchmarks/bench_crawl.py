"""``make bench``: gossamer and Scrapy crawl the same local web served by nginx, compared.

1. Generate a static web (``webgen.py``; cached under ``bench-out/webs/`` by seed, size and
   page layout): many loopback hosts, 10-60 KB article pages with 30-300 links, navigation,
   related links, sidebar, footer and other boilerplate, a few robots.txt rules; and its
   twin of API reference pages for the ``reference`` comparison (below).
2. Serve each web in turn with nginx pinned to one core, and crawl it with gossamer and
   with a Scrapy spider (``scrapy_spider.py``) pinned to another core, one after the other,
   for several rounds (the order alternates), with the same concurrency, per-host limit,
   no delay and robots.txt obeyed. Three comparisons (``crawlers.py``), each run every round:

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
   - ``reference``: the same links-only pair on a second web of the same size whose pages
     are API reference documentation (``webgen.py --layout reference``: 150-300 links a page,
     a long sidebar index, a table of contents, permalinks, cross-references with
     fragments), where link handling is most of the work.

3. Print each round with its gossamer/Scrapy ratio of pages per CPU-second, then the medians
   per comparison: pages/s, pages per CPU-second, peak RSS and the ratios against their
   targets (`TARGETS`); the text scores; and per web the parse floor (``parsefloor.py``) with
   gossamer's CPU per page over it (target `FLOOR_TARGET`). The summary also goes to
   ``bench-out/crawl-bench.json``. Page counts are checked against the web's expected crawl.

Usage: ``.venv/bin/python benchmarks/bench_crawl.py [--pages N] [--hosts H] [--rounds R]
[--concurrency C] [--per-host P] [--seed S] [--only content|links|reference] [--quick]``.
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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import crawl_report as report
import nginx
import parsefloor
from crawlers import Crawler, Gossamer, Scrapy, Settings, compile_gossamer
from measure import core_busy_seconds, run_measured
from webgen import Expected, WebSpec, ensure_web, robots_allows, seeds
from weblinks import host_ip

ROOT = Path(__file__).resolve().parent.parent
PAIRS: dict[str, tuple[Crawler, Crawler]] = {
    "content": (Gossamer(content=True), Scrapy(content=True)),
    "links": (Gossamer(), Scrapy()),
    "reference": (Gossamer(), Scrapy()),
}
"""Each comparison: (gossamer, Scrapy), the headline first."""
LAYOUTS = {"content": "article", "links": "article", "reference": "reference"}
"""The web (page layout, ``webgen.WebSpec.layout``) each comparison crawls."""
TARGETS = {"content": 8.0, "links": 20.0, "reference": 16.0}
"""Each comparison's target: gossamer's pages per CPU-second over Scrapy's."""
FLOOR_TARGET = 1.5
"""gossamer's CPU per page (links only) over the parse + urljoin floor, at most."""
FLOOR_KEY = "lexbor_hrefs_urljoin_top_pad"
"""The floor the target is measured against: parse, hrefs and urljoin, padded malloc."""
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
    parser.add_argument("--only", choices=sorted(PAIRS), help="run one comparison, not all")
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


@dataclass(frozen=True)
class Web:
    """One generated web of the run and the comparisons that crawl it."""

    spec: WebSpec
    path: Path
    expected: Expected
    modes: tuple[str, ...]

    @property
    def floor_mode(self) -> str:
        """The comparison whose CPU per page is set against this web's parse floor: the
        links-only one when it runs."""
        return next((m for m in self.modes if m != "content"), self.modes[0])


def run_one(
    crawler: Crawler,
    number: int,
    mode: str,
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
    return report.Run(crawler.name, number, cost, crawler.counts(work), nginx_cpu, others, mode)


def crawl_rounds(
    args: argparse.Namespace, web: Web
) -> tuple[list[report.Run], list[str], dict[str, report.Agreement]]:
    """Serve the web with nginx and run every crawler of its comparisons once per round;
    runs, notes and the content comparison's text agreement in each round."""
    server_cpu, crawler_cpu = choose_cpus()
    print(f"cores: nginx on {server_cpu}, crawlers on {crawler_cpu} (taskset)")
    spec = web.spec
    seeds_file = args.out / "seeds.txt"
    seeds_file.write_text("".join(f"{url}\n" for url in seeds(spec)), encoding="utf-8")
    args.timeout = args.timeout or max(300.0, args.pages * 0.2)
    ips = [host_ip(i) for i in range(spec.hosts)]
    runs: list[report.Run] = []
    notes: list[str] = []
    agreement: dict[str, report.Agreement] = {}
    allowed = robots_allows(web.path)
    www = web.path / "www"
    with nginx.serve(args.out / "nginx", www, ips, spec.port, cpu=server_cpu) as server:
        for number in range(1, args.rounds + 1):
            for mode in web.modes:
                pair = args.pairs[mode]
                order = pair if number % 2 else pair[::-1]
                cores = (server_cpu, crawler_cpu)
                done = [run_one(c, number, mode, args, cores, server) for c in order]
                print(report.round_table(number, args.rounds, mode, done), flush=True)
                print(report.round_ratio(done, pair[0].name, pair[1].name), flush=True)
                runs += done
                urls = {c.name: c.ok_urls(args.out / "runs" / c.name) for c in pair}
                notes += report.url_notes(number, urls, allowed, mode)
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


def prepare(args: argparse.Namespace) -> list[Web]:
    """Generate (or find) the webs of the comparisons to run and say what is about to run."""
    args.out.mkdir(parents=True, exist_ok=True)
    webs = []
    for layout in dict.fromkeys(LAYOUTS[mode] for mode in args.pairs):
        spec = WebSpec(args.pages, args.hosts, args.seed, args.port, layout)
        started = time.perf_counter()
        path, expected = ensure_web(spec, args.out / "webs")
        modes = tuple(mode for mode in args.pairs if LAYOUTS[mode] == layout)
        webs.append(Web(spec, path, expected, modes))
        print(
            f"web ({layout}: {', '.join(modes)}): {path} ({time.perf_counter() - started:.1f}s): "
            f"{expected.files} pages, {expected.bytes / expected.files / 1024:.1f} KB average, "
            f"{spec.hosts} hosts; expected crawl: {expected.ok} pages 200, "
            f"{expected.not_found} 404, {expected.robots_blocked} blocked by robots.txt"
        )
    print(
        f"settings: concurrency {args.concurrency}, per host {args.per_host}, delay 0, "
        f"robots.txt obeyed, {args.rounds} round(s)"
    )
    return webs


def _cpu_ms_per_page(pair: dict[str, Any]) -> float:
    ours = pair["summary"][pair["crawlers"][0]]
    return float(1000 * ours["cpu"] / ours["pages_ok"]) if ours["pages_ok"] else 0.0


def summarise_pairs(
    args: argparse.Namespace, webs: list[Web], runs: list[report.Run]
) -> tuple[dict[str, Any], list[str]]:
    """Print each comparison's summary and its target; return the pairs' records and the
    page count flags."""
    pairs: dict[str, Any] = {}
    flags: list[str] = []
    for web in webs:
        for mode in web.modes:
            ours, theirs = args.pairs[mode]
            mine = [r for r in runs if r.comparison == mode]
            summary = report.summarise(mine, [ours.name, theirs.name])
            print(f"{mode}: " + report.summary_text(summary, ours.name, theirs.name, args.rounds))
            flags += report.count_flags(mine, web.expected.ok)
            pairs[mode] = {
                "crawlers": [ours.name, theirs.name],
                "web": web.spec.layout,
                "summary": summary,
                "ratios": report.ratios(summary, ours.name, theirs.name),
                "target": TARGETS[mode],
                "versions": {c.name: c.version(args.out / "runs" / c.name) for c in (ours, theirs)},
            }
    for mode, pair in pairs.items():
        ratio = pair["ratios"]["pages_per_cpu_second"]
        verdict = "met" if ratio >= TARGETS[mode] else "MISSED"
        print(
            f"target: {mode} pages per CPU-second {ratio:.2f}x, "
            f"at least {TARGETS[mode]:g}x: {verdict}"
        )
    return pairs, flags


def conclude(
    args: argparse.Namespace,
    webs: list[Web],
    runs: list[report.Run],
    notes: list[str],
    agreement: dict[str, report.Agreement],
) -> dict[str, Any]:
    """Print the summaries, targets, text scores, parse floors and checks; return the JSON
    record (``spec``, ``expected`` and ``parse_floor`` are the first web's, ``webs`` has
    every web's)."""
    pairs, flags = summarise_pairs(args, webs, runs)
    if agreement:
        print(report.agreement_text(report.median_agreement(list(agreement.values())), "median"))
    records: dict[str, Any] = {}
    for web in webs:
        floors = parse_floor(web.spec, web.path)
        sampled = len(parsefloor.sample(web.path, FLOOR_SAMPLE))
        cpu_ms = _cpu_ms_per_page(pairs[web.floor_mode])
        ratio = cpu_ms / floors[FLOOR_KEY].mean_ms
        print(report.floor_text(floors, sampled, cpu_ms, web.floor_mode))
        verdict = "met" if ratio <= FLOOR_TARGET else "MISSED"
        print(
            f"target: {web.floor_mode} CPU per page {ratio:.2f}x the parse + urljoin floor "
            f"(MALLOC_TOP_PAD_), at most {FLOOR_TARGET:g}x: {verdict}"
        )
        records[web.spec.layout] = {
            "spec": asdict(web.spec),
            "expected": asdict(web.expected),
            "parse_floor": {
                k: {**asdict(v), "pages_per_second": v.pages_per_second} for k, v in floors.items()
            },
            "parse_floor_pages": sampled,
            "floor_mode": web.floor_mode,
            "floor_ratio": ratio,
            "floor_target": FLOOR_TARGET,
        }
    busy = report.contention_flags(runs)
    print("\n".join(f"FLAG {flag}" for flag in flags) or "check: page counts agree (within 1%)")
    print("\n".join(f"FLAG {flag}" for flag in busy) or "check: no other load on the two cores")
    print("\n".join(f"note: {note}" for note in notes) or "check: both fetched the same URLs")
    first = records[webs[0].spec.layout]
    return {
        "spec": first["spec"],
        "settings": {"concurrency": args.concurrency, "per_host": args.per_host, "delay": 0},
        "expected": first["expected"],
        "runs": [run.as_dict() for run in runs],
        "pairs": pairs,
        "text_agreement": {k: asdict(v) for k, v in agreement.items()},
        "parse_floor": first["parse_floor"],
        "parse_floor_pages": first["parse_floor_pages"],
        "webs": records,
        "gossamer_cpu_ms_per_page": {mode: _cpu_ms_per_page(pair) for mode, pair in pairs.items()},
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
    compile_gossamer()
    webs = prepare(args)
    runs: list[report.Run] = []
    notes: list[str] = []
    agreement: dict[str, report.Agreement] = {}
    try:
        for web in webs:
            found = crawl_rounds(args, web)
            runs, notes, agreement = runs + found[0], notes + found[1], agreement | found[2]
    except nginx.NginxError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    record = conclude(args, webs, runs, notes, agreement)
    result = args.out / "crawl-bench.json"
    result.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written: {result}")
    return 1 if any(r.cost.timed_out or r.cost.returncode for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Instruction counts of one ``gossamer crawl`` of the benchmark web, under callgrind.

Generates (or finds, cached under ``bench-out/webs/``) the article web of ``bench_crawl.py``,
serves it with nginx on loopback and runs ``gossamer crawl`` once per mode under
``valgrind --tool=callgrind``, with the flags of ``bench_crawl.py``'s gossamer runs:

- ``links``: following links only (``--no-text``);
- ``content``: the whole job (main text and metadata, ``--warc``).

It prints the total instructions (``Ir``) of the crawl process and of its parse sandbox's
workers (traced as children, their CPU budget scaled by ``GOSSAMER_PARSE_BUDGET_SCALE``),
start-up included, and the pages it recorded. Counts are exact for one run but depend on the
Python binary, the installed libraries and the inputs (the web's seed and size), and on the
crawl's wall time: checkpoints run every ``checkpoint_interval`` and the loop wakes at least
once a second, so a run slowed down by a busy machine counts more (the elapsed seconds are
printed with it). Compare runs of one machine, one web, several times, alternated, on a quiet
machine. A run is some fifty times slower than the crawl itself; 500 pages take a few minutes.

With ``--real`` it crawls the real-pages web of ``bench_realpages.py`` instead (Debian's
documentation sets, ``realweb.py``, gzip-compressed as that benchmark serves them), all of it
or the sets named by ``--sites``; a set is crawled whole from its front page, so the pages
fetched do not depend on timing.

Usage: ``.venv/bin/python benchmarks/callgrind_crawl.py [--pages N] [--hosts H]
[--only links|content] [--runs R] [--port P] [--real [--sites python3-doc,git-doc]]``. The
gossamer crawled is the one this Python imports (``PYTHONPATH`` picks a source tree).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import nginx
import realweb
from crawlers import Gossamer, Settings, compile_gossamer
from webgen import WebSpec, ensure_web, seeds
from weblinks import host_ip

ROOT = Path(__file__).resolve().parent.parent
MODES = {"links": Gossamer(), "content": Gossamer(content=True)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, default=500, help="pages in the web (500)")
    parser.add_argument("--hosts", type=int, default=10, help="hosts (10)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the web (1)")
    parser.add_argument("--port", type=int, default=18511, help="port of every host (18511)")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (64)")
    parser.add_argument("--per-host", type=int, default=4, help="requests per host (4)")
    parser.add_argument("--runs", type=int, default=1, help="runs per mode (1)")
    parser.add_argument("--only", choices=sorted(MODES), help="one mode, not both")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out", help="work directory")
    parser.add_argument("--real", action="store_true", help="crawl the real-pages web")
    parser.add_argument("--sites", help="with --real: comma-separated packages (all)")
    return parser.parse_args(argv)


def total_instructions(out_file: Path) -> int | None:
    """The ``Ir`` total of a callgrind output file (its ``summary:`` or ``totals:`` line);
    None when it has none (a process killed before callgrind wrote it out)."""
    for line in out_file.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return None


def summed(work: Path) -> int:
    """The instructions of every process of a run (the crawler and its parse workers); says
    how many processes left no total (a worker ended by its CPU budget writes none)."""
    totals = [total_instructions(path) for path in sorted(work.glob("callgrind.out.*"))]
    if not any(total is not None for total in totals):
        raise ValueError(f"no instruction total in {work}/callgrind.out.*")
    missing = totals.count(None)
    if missing:
        print(f"  {missing} process(es) ended before writing a total: not counted")
    return sum(total for total in totals if total is not None)


def recorded(work: Path) -> tuple[int, int, float]:
    """(records, records with status 200) in the run's ``pages.jsonl``, and the crawl's
    elapsed seconds (``stats.json``)."""
    pages = ok = 0
    with (work / "out" / "pages.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            pages += 1
            ok += json.loads(line).get("status") == 200
    stats = json.loads((work / "out" / "stats.json").read_text(encoding="utf-8"))
    return pages, ok, float(stats["elapsed"])


def crawl_once(mode: str, seeds_file: Path, work: Path, args: argparse.Namespace) -> int:
    """One crawl of ``mode`` under callgrind; its total instructions."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    command = MODES[mode].command(seeds_file, work, Settings(args.concurrency, args.per_host))
    command[0:1] = [sys.executable, "-m", "gossamer"]
    out_file = work / "callgrind.out"
    # the parse sandbox's workers too (their CPU budget scaled to callgrind's slowness)
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}.%p"]
    valgrind.append("--trace-children=yes")
    env = dict(os.environ, GOSSAMER_PARSE_BUDGET_SCALE="100")
    with (work / "log.txt").open("wb") as log:
        subprocess.run([*valgrind, *command], stdout=log, stderr=log, check=True, env=env)
    return summed(work)


def generated_web(args: argparse.Namespace, seeds_file: Path) -> tuple[Path, list[str], bool]:
    """Generate (or find) the article web, write its seeds; its root, addresses, no gzip."""
    spec = WebSpec(args.pages, args.hosts, args.seed, args.port, "article")
    web, expected = ensure_web(spec, args.out / "webs")
    seeds_file.write_text("".join(f"{url}\n" for url in seeds(spec)), encoding="utf-8")
    print(f"web: {web} ({expected.files} pages, {expected.ok} expected 200)", flush=True)
    return web / "www", [host_ip(i) for i in range(spec.hosts)], False


def real_web(args: argparse.Namespace, seeds_file: Path) -> tuple[Path, list[str], bool]:
    """Lay out the installed documentation sets (those of ``--sites``), write their seeds;
    the root, addresses, gzip on (as ``bench_realpages.py`` serves them)."""
    wanted = set(args.sites.split(",")) if args.sites else None
    docs = [doc for doc in realweb.DOCS if wanted is None or doc.package in wanted]
    www = args.out / "callgrind-real-www"
    sites = realweb.lay_out(www, docs)
    if not sites:
        raise SystemExit("callgrind: none of the documentation sets is installed")
    seeds_file.write_text("".join(f"{u}\n" for u in realweb.seeds(sites, args.port)))
    pages = len(realweb.html_files(sites))
    print(f"web: {', '.join(s.package for s in sites)} ({pages} HTML files)", flush=True)
    return www, [site.ip for site in sites], True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the crawls and print their instruction counts."""
    args = parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is missing: apt-get install -y valgrind", file=sys.stderr)
        return 2
    compile_gossamer()
    args.out.mkdir(parents=True, exist_ok=True)
    seeds_file = args.out / "callgrind-seeds.txt"
    www, ips, gzip = real_web(args, seeds_file) if args.real else generated_web(args, seeds_file)
    modes = [m for m in MODES if args.only in (None, m)]
    with nginx.serve(args.out / "nginx-callgrind", www, ips, args.port, gzip=gzip):
        for mode in modes:
            for run in range(1, args.runs + 1):
                work = args.out / "callgrind" / mode
                instructions = crawl_once(mode, seeds_file, work, args)
                pages, ok, elapsed = recorded(work)
                print(
                    f"{mode} run {run}: Ir {instructions:,} ({pages} records, {ok} status 200, "
                    f"{instructions / max(pages, 1):,.0f} per record; {elapsed:.0f} s)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

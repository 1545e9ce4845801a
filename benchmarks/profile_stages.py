"""Where gossamer's CPU goes on the real-pages web, by stage of the page path (py-spy).

Serves the documentation sets of ``realweb.py`` with nginx as ``bench_realpages.py`` does,
runs one gossamer crawl (links only, or the whole job with ``--content``: text, metadata,
``--warc``) under ``py-spy record --format raw`` (the interpreter's stacks, every thread, at
``--rate`` samples a second, the crawler's worker processes included), and sorts each sample
into one stage by its innermost frame that names one (`RULES`, first match from the leaf up):
the parse sandbox's own cost (both ends of its pipes, the encoding of its answers; lexbor's
parse and the links in its workers count as parse and links), decode, parse (lexbor's own
time, seen at the Python line that calls it), guard, links, resolution, admission, content
extraction, digests, WARC, records, frontier, fetch (HTTP), event loop, engine, start-up (and
a thread pool's worker waiting for work, which py-spy does not always see as idle). A
stage's share is of all the samples of the crawl; the top frames follow.

py-spy samples a thread that is ready to run as busy, and the crawler and its sandbox worker
share one core here: the two sandbox stages are mostly such samples, not CPU. ``sandbox
worker waits`` is the worker in its loop's read of the next request, woken by it and waiting
for the core the crawler holds; ``sandbox handoff`` is the crawler in the write that hands a
page to the worker, the worker it woke running meanwhile. ``perf record -e cpu-clock`` of
the same crawl finds the crawler's writes (pipes and sockets) at 0.06% of its CPU, and
``callgrind_sandbox.py`` counts a page's whole round trip, both sides, at 2.5% of the page's
own parse.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/profile_stages.py [--content] [--top 25]``
(py-spy: ``pip install py-spy``; the raw profile stays in ``bench-out/real-profile/``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import nginx
import realweb
from bench_crawl import choose_cpus
from crawlers import Gossamer, Settings, compile_gossamer
from measure import pinned

ROOT = Path(__file__).resolve().parent.parent
PY_SPY = Path(sys.executable).parent / "py-spy"
PORT = 18494

RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (stage, re.compile(pattern))
    for stage, pattern in (
        ("idle worker thread", r"^ThreadedChildWatcher\._do_waitpid"),  # a worker's reaper
        ("sandbox worker waits", r"^serve \(gossamer/parse/worker\.py"),  # read of a request
        ("sandbox handoff", r"^_Worker\._send \(gossamer/parse/sandbox\.py"),
        (
            "parse sandbox",
            r"parse/sandbox|page/sandboxed|asyncio/(unix_events|subprocess|base_subprocess|streams)",
        ),
        ("decode", r"compression_utils|_decompress|decompress|fetch/decoding|parse/charset"),
        ("parse", r"^_lexbor \(.*parse/guard"),
        ("guard", r"parse/(guard|scan)"),
        ("resolution", r"^(Resolver\.|_Remembered\.|_needs_document |_clean ).*gossamer/urls"),
        ("links", r"parse/links"),
        ("admission", r"frontier/admission|gossamer/urls|frontier/dedup|frontier/seen"),
        ("content extraction", r"gossamer/extract/|page/read\.py|trafilatura"),
        ("digests", r"gossamer/digests/"),
        ("WARC", r"sinks/warc|fastwarc|warcio"),
        ("records", r"gossamer/sinks/|msgspec|page/stage\.py.*_result|ledger|records"),
        ("frontier", r"gossamer/frontier/"),
        ("fetch (HTTP)", r"gossamer/fetch/|aiohttp|multidict|yarl|http_parser|streams\.py"),
        ("idle worker thread", r"^_worker \(concurrent/futures/thread"),
        ("start-up", r"<module>|_find_and_load|importlib"),
        ("event loop", r"asyncio/|selectors\.py|uvloop|concurrent/futures|threading\.py"),
        ("engine, page stage", r"gossamer/(engine|crawl|page)"),
    )
)
"""Stage by frame, tried from the innermost frame outwards; the first that matches wins."""


def stage_of(stack: Sequence[str]) -> tuple[str, str]:
    """The stage of one sample (frames root first) and the frame that decided it."""
    for frame in reversed(stack):
        for stage, pattern in RULES:
            if pattern.search(frame):
                return stage, frame
    return "other", stack[-1] if stack else "?"


def read_raw(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw (collapsed) output: ``frame;frame;... count`` per line."""
    samples = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
            samples.append((frames, int(count)))
    return samples


def shares(samples: list[tuple[list[str], int]]) -> tuple[Counter[str], Counter[str], int]:
    """Samples by stage, by deciding frame, and the total."""
    stages: Counter[str] = Counter()
    frames: Counter[str] = Counter()
    for stack, count in samples:
        stage, frame = stage_of(stack)
        stages[stage] += count
        frames[f"{stage:<20} {frame}"] += count
    return stages, frames, sum(stages.values())


def report(samples: list[tuple[list[str], int]], top: int) -> str:
    """The stage table and the top deciding frames."""
    stages, frames, total = shares(samples)
    lines = [f"{total} samples"]
    lines += [f"  {stage:<20} {100 * n / total:5.1f}%" for stage, n in stages.most_common()]
    lines.append(f"top {top} frames (innermost frame that named the stage)")
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in frames.most_common(top)]
    return "\n".join(lines)


def profile(args: argparse.Namespace) -> Path:
    """Serve the web, crawl it once under py-spy; the raw profile's path."""
    args.out.mkdir(parents=True, exist_ok=True)
    sites = realweb.lay_out(args.out / "www")
    seeds = args.out / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in realweb.seeds(sites, args.port)))
    work = args.out / ("content" if args.content else "links")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    raw = work / "profile.txt"
    crawl = Gossamer(content=args.content).command(seeds, work, Settings(64, 4))
    spy = [str(PY_SPY), "record", "--format", "raw", "--rate", str(args.rate)]
    spy += ["--threads", "--subprocesses", "--output", str(raw), "--", *crawl]
    server_cpu, crawler_cpu = choose_cpus()
    ips = [site.ip for site in sites]
    with nginx.serve(args.out / "nginx", args.out / "www", ips, args.port, server_cpu, True):
        subprocess.run(pinned(spy, crawler_cpu), check=True, stdout=subprocess.DEVNULL)
    return raw


def main(argv: Sequence[str] | None = None) -> int:
    """Profile one crawl (or read ``--raw``) and print the shares by stage."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--content", action="store_true", help="the whole job, not links only")
    parser.add_argument("--rate", type=int, default=200, help="samples a second (200)")
    parser.add_argument("--top", type=int, default=25, help="frames listed (25)")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "real-profile")
    parser.add_argument("--raw", type=Path, help="read this raw profile instead of crawling")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    if args.raw is None:
        if not PY_SPY.exists():
            print(f"profile: {PY_SPY} is missing: pip install py-spy", file=sys.stderr)
            return 2
        compile_gossamer()
        args.raw = profile(args)
    print(report(read_raw(args.raw), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The embedded frontier's cost in a links-only crawl of real pages, without the crawl.

``record`` crawls the real-pages web of ``bench_realpages.py`` (the sets ``--sites`` names,
served by nginx on loopback, ``--no-text``) with every ``LocalFrontier.add`` written to a JSON
lines file as it was called (a page's links, their depth and the page; or candidates).
``replay`` makes those calls again on a fresh embedded frontier with its crawl.db, leasing and
acking one URL per page as the crawl does and committing every 32 pages, and prints the best
time of ``--runs`` and a digest of what it did (the leases in order, the frontier's figures and
crawl.db's rows): a change that keeps the digest keeps the frontier's behaviour on that crawl.
Under ``valgrind --tool=callgrind`` the difference of ``--runs 3`` and ``--runs 1`` is two
replays' instructions, steady on a busy machine (no timer in the replay's path).

    .venv/bin/python benchmarks/replay_frontier.py record [--sites python3-doc] [--port P]
    .venv/bin/python benchmarks/replay_frontier.py replay [--runs 10] [--out DIR | --calls F]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nginx
import realweb
from gossamer.crawldb import CrawlDB
from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Feedback, Lease, Outlinks
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.settings.models import CrawlSettings
from gossamer.urls import Scope

ROOT = Path(__file__).resolve().parent.parent
_RECORDER = """
import json, sys
from gossamer.frontier import local
from gossamer.frontier.base import Outlinks
out = open(sys.argv.pop(1), "w", encoding="utf-8")
add = local.LocalFrontier.add
async def recorded(self, candidates):
    if isinstance(candidates, Outlinks):
        call = ["links", candidates.urls, candidates.depth, candidates.source]
    else:
        call = ["cands", [[c.url, c.depth, c.hops, c.priority, c.seed] for c in candidates]]
    out.write(json.dumps(call) + "\\n")
    return await add(self, candidates)
local.LocalFrontier.add = recorded
from gossamer.cli import main
try:
    code = main()
finally:
    out.close()
sys.exit(code)
"""


def record(args: argparse.Namespace) -> None:
    """Crawl the real pages once, writing the frontier's adds to ``args.calls``."""
    wanted = set(args.sites.split(","))
    docs = [doc for doc in realweb.DOCS if doc.package in wanted]
    work = args.out / "replay-frontier"
    sites = realweb.lay_out(work / "www", docs)
    calls = args.calls or args.out / "frontier-calls.jsonl"
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in realweb.seeds(sites, args.port)))
    crawl = ["crawl", "--seeds-file", str(seeds), "--out", str(work / "out"), "--overwrite"]
    crawl += ["--concurrency", "64", "--per-host", "4", "--delay", "0", "--quiet", "--no-text"]
    with nginx.serve(work / "nginx", work / "www", [s.ip for s in sites], args.port, gzip=True):
        command = [sys.executable, "-c", _RECORDER, str(calls), *crawl]
        subprocess.run(command, check=True)
    print(f"recorded {sum(1 for _ in calls.open())} adds in {calls}")


def _note(digest: Any, lease: Lease) -> None:
    digest.update(repr((lease.url, lease.depth, lease.hops, lease.fp, lease.kind)).encode())


async def _replay(calls: list[list[Any]], db_path: Path) -> tuple[float, str]:
    """One replay: its seconds and the digest of what it did."""
    db = CrawlDB(db_path)
    seed = calls[0][1][0][0]
    policy = PolitenessPolicy(per_host=4, delay=0.0)
    guards = Guards.of(CrawlSettings())
    front = LocalFrontier(Scope.for_seeds([seed]), policy, db, guards=guards)
    digest = hashlib.sha256()
    leased: list[Lease] = []
    started = time.perf_counter()
    for i, call in enumerate(calls):
        if call[0] == "links":
            await front.add(Outlinks(call[1], call[2], call[3]))
        else:
            await front.add([Candidate(u, d, h, p, seed=s) for u, d, h, p, s in call[1]])
        leased += await front.lease(4)
        if leased:
            lease = leased.pop(0)
            _note(digest, lease)
            await front.ack(lease, Feedback(started_at=0.0))
        if i % 32 == 0:
            await db.commit()
    while not await front.done():
        for lease in [*leased, *await front.lease(4)]:
            _note(digest, lease)
            await front.ack(lease, Feedback(started_at=0.0))
        leased = []
    await db.commit()
    seconds = time.perf_counter() - started
    digest.update(repr(front.stats()).encode())
    rows = "SELECT fp, url, host, depth, hops, attempts, state, seq, priority FROM urls"
    for row in db.query(rows + " ORDER BY seq"):
        digest.update(repr(row).encode())
    db.close()
    return seconds, digest.hexdigest()[:16]


def replay(args: argparse.Namespace) -> None:
    """Replay the recorded adds ``args.runs`` times; print the best time and the digest."""
    with (args.calls or args.out / "frontier-calls.jsonl").open(encoding="utf-8") as lines:
        calls = [json.loads(line) for line in lines]
    links = sum(len(call[1]) for call in calls)
    best, digest = float("inf"), ""
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            seconds, digest = asyncio.run(_replay(calls, Path(tmp) / "crawl.db"))
        best = min(best, seconds)
    print(f"{len(calls)} adds, {links} links: best {best * 1000:.1f} ms; digest {digest}")


def main() -> None:
    """Record or replay."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("mode", choices=["record", "replay"])
    parser.add_argument("--sites", default="python3-doc", help="record: packages to crawl")
    parser.add_argument("--port", type=int, default=18531, help="record: nginx's port")
    parser.add_argument("--runs", type=int, default=10, help="replay: runs (10)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out", help="work directory")
    parser.add_argument("--calls", type=Path, help="the recorded adds (OUT/frontier-calls.jsonl)")
    args = parser.parse_args()
    if args.mode == "record":
        record(args)
    else:
        replay(args)


if __name__ == "__main__":
    main()

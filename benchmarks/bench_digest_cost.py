"""What content digests cost a crawl: ``gossamer crawl`` with text and ``--warc`` over the
benchmark web (``webgen.py``: article pages of 10-60 KB, served by nginx on loopback) with
``--digests off``, ``exact`` (the default) and ``near``, alternated round after round;
pages per CPU-second of the crawl process (user + system) for each.

Run: ``PYTHONPATH=src python benchmarks/bench_digest_cost.py [--pages 1000] [--rounds 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import nginx
from webgen import WebSpec, ensure_web

MODES = ("off", "exact", "near")


def crawl(seeds: Path, out: Path, mode: str) -> float:
    """Pages per CPU-second of one crawl with ``--digests mode``."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent / "src"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "gossamer.cli", "crawl", "--seeds-file", str(seeds),
               "--out", str(out), "--overwrite", "--concurrency", "64", "--per-host", "4",
               "--delay", "0", "--quiet", "--warc", "--digests", mode]  # fmt: skip
    subprocess.run(command, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    pages: int = json.loads((out / "stats.json").read_text())["pages"]
    return pages / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        spec = WebSpec(args.pages, args.hosts, 1, WebSpec.port, "article")
        web, _ = ensure_web(spec, root / "web")
        manifest = json.loads((web / "manifest.json").read_text())
        seeds = root / "seeds.txt"
        seeds.write_text("\n".join(manifest["seeds"]) + "\n")
        ips = [seed.split("//")[1].split(":")[0] for seed in manifest["seeds"]]
        rates: dict[str, list[float]] = {mode: [] for mode in MODES}
        (root / "nginx").mkdir()
        with nginx.serve(root / "nginx", web / "www", ips, spec.port):
            for _ in range(args.rounds):
                for mode in MODES:
                    rates[mode].append(crawl(seeds, root / "out", mode))
    base = statistics.median(rates["off"])
    for mode in MODES:
        median = statistics.median(rates[mode])
        rounds = ", ".join(f"{rate:.0f}" for rate in rates[mode])
        print(f"--digests {mode:5}  {median:6.1f} pages per CPU-second  ({rounds})  "
              f"{median / base:.2f} of off")  # fmt: skip


if __name__ == "__main__":
    main()

"""Memory and speed of the frontier's URL-seen set (:class:`gossamer.frontier.dedup.SeenSet`).

Inserts ``--n`` distinct fingerprints in batches of 100 like a crawl's outlinks: about 70 new
ones and 30 seen before. Fingerprints are splitmix64 hashes of a counter, so a repeat is drawn
from earlier counters without storing anything. Each measurement runs in its own subprocess so
its peak RSS (``ru_maxrss``) is its own. Exits non-zero above 16 bytes per entry.

    .venv/bin/python benchmarks/bench_seen.py [--n 10000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np

from gossamer.frontier.dedup import SeenSet

BATCH = 100
NEW_SHARE = 0.7
LIMIT_BYTES_PER_ENTRY = 16.0
SET_ENTRIES = 1_000_000


def splitmix64(counters: np.ndarray) -> np.ndarray:
    """Hash uint64 counters to uniformly spread signed 64-bit fingerprints."""
    z = counters.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))).view(np.int64)


def batches(n: int, size: int = BATCH, seed: int = 1) -> Iterator[list[int]]:
    """Batches of 70% new and 30% earlier fingerprints until ``n`` distinct were issued."""
    rng = np.random.default_rng(seed)
    issued = 0
    while issued < n:
        fresh = min(max(1, round(size * NEW_SHARE)), n - issued)
        counters = np.arange(issued, issued + fresh, dtype=np.uint64)
        if issued:
            repeats = rng.integers(0, issued, size - fresh, dtype=np.uint64)
            counters = np.concatenate((counters, repeats))
        rng.shuffle(counters)
        issued += fresh
        yield splitmix64(counters).tolist()


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_seen(n: int, size: int) -> dict[str, float]:
    """Insert ``n`` fingerprints batch by batch; time add_many, then single add and lookups."""
    next(batches(1, size))  # warm up numpy before taking the RSS baseline
    rss_before = peak_rss_bytes()
    seen = SeenSet()
    spent = worst = 0.0
    calls = urls = 0
    started = time.perf_counter()
    for batch in batches(n, size):
        t0 = time.perf_counter()
        seen.add_many(batch)
        elapsed = time.perf_counter() - t0
        spent += elapsed
        worst = max(worst, elapsed)
        calls += 1
        urls += len(batch)
    total = time.perf_counter() - started
    stats = seen.stats()
    growth = peak_rss_bytes() - rss_before
    probes = splitmix64(np.arange(n - 50_000, n + 50_000, dtype=np.uint64)).tolist()
    t0 = time.perf_counter()
    hits = sum(fp in seen for fp in probes)
    contains_us = (time.perf_counter() - t0) / len(probes) * 1e6
    t0 = time.perf_counter()
    added = sum(seen.add(fp) for fp in probes)
    add_us = (time.perf_counter() - t0) / len(probes) * 1e6
    assert hits == 50_000 and added == 50_000, (hits, added)
    return {
        "entries": stats.entries,
        "nbytes": stats.nbytes,
        "bytes_per_entry": stats.bytes_per_entry,
        "rss_growth_per_entry": growth / stats.entries,
        "batch_us": spent / calls * 1e6,
        "url_us": spent / urls * 1e6,
        "worst_batch_ms": worst * 1e3,
        "contains_us": contains_us,
        "add_us": add_us,
        "total_s": total,
    }


def run_bulk(n: int, size: int) -> dict[str, float]:
    """Bulk-load ``n`` fingerprints given one Python int at a time (as a DB cursor would)."""
    chunks = [
        splitmix64(np.arange(i, min(i + 100_000, n), dtype=np.uint64)) for i in range(0, n, 100_000)
    ]
    rss_before = peak_rss_bytes()
    t0 = time.perf_counter()
    seen = SeenSet.from_fingerprints(fp for chunk in chunks for fp in chunk.tolist())
    elapsed = time.perf_counter() - t0
    return {
        "entries": len(seen),
        "seconds": elapsed,
        "rss_growth_per_entry": (peak_rss_bytes() - rss_before) / len(seen),
    }


def run_set(n: int, size: int) -> dict[str, float]:
    """A Python set of ``n`` fingerprints filled the way the frontier fills it, for context."""
    rss_before = peak_rss_bytes()
    seen: set[int] = set()
    spent = 0.0
    calls = 0
    for batch in batches(n, size):
        t0 = time.perf_counter()
        out = []
        for fp in batch:
            if fp in seen:
                out.append(False)
            else:
                seen.add(fp)
                out.append(True)
        spent += time.perf_counter() - t0
        calls += 1
    table = sys.getsizeof(seen)
    ints = sum(sys.getsizeof(fp) for fp in seen)
    return {
        "entries": len(seen),
        "table_per_entry": table / len(seen),
        "with_ints_per_entry": (table + ints) / len(seen),
        "rss_growth_per_entry": (peak_rss_bytes() - rss_before) / len(seen),
        "batch_us": spent / calls * 1e6,
    }


WORKERS = {"seen": run_seen, "bulk": run_bulk, "set": run_set}


def measure(worker: str, n: int, size: int) -> dict[str, float]:
    """Run one worker in a fresh interpreter and return its figures."""
    cmd = [sys.executable, __file__, "--worker", worker, "--n", str(n), "--batch", str(size)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="distinct fingerprints")
    parser.add_argument("--batch", type=int, default=BATCH, help="fingerprints per add_many")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.n, args.batch)))
        return 0
    seen = measure("seen", args.n, args.batch)
    print(f"SeenSet, {seen['entries']:,} entries, batches of {args.batch} (70% new)")
    print(f"  nbytes / entry            {seen['bytes_per_entry']:8.2f}")
    print(f"  peak RSS growth / entry   {seen['rss_growth_per_entry']:8.2f}")
    print(f"  add_many per batch        {seen['batch_us']:8.2f} µs")
    print(f"  slowest batch (a merge)   {seen['worst_batch_ms']:8.2f} ms")
    print(f"  add_many per URL          {seen['url_us']:8.3f} µs (merges included)")
    print(f"  add (single)              {seen['add_us']:8.2f} µs")
    print(f"  __contains__              {seen['contains_us']:8.2f} µs")
    print(f"  total                     {seen['total_s']:8.2f} s (batch generation included)")
    bulk = measure("bulk", args.n, args.batch)
    print(f"SeenSet.from_fingerprints, {bulk['entries']:,} Python ints")
    print(f"  load                      {bulk['seconds']:8.2f} s")
    print(f"  peak RSS growth / entry   {bulk['rss_growth_per_entry']:8.2f}")
    small = min(args.n, SET_ENTRIES)
    ref = measure("set", small, args.batch)
    print(f"Python set, {ref['entries']:,} entries (for context)")
    print(f"  table / entry             {ref['table_per_entry']:8.2f}")
    print(f"  table + ints / entry      {ref['with_ints_per_entry']:8.2f}")
    print(f"  peak RSS growth / entry   {ref['rss_growth_per_entry']:8.2f}")
    print(f"  in + add per batch        {ref['batch_us']:8.2f} µs")
    if small < args.n:
        same = measure("seen", small, args.batch)
        print(f"SeenSet, {same['entries']:,} entries (same workload)")
        print(f"  nbytes / entry            {same['bytes_per_entry']:8.2f}")
        print(f"  peak RSS growth / entry   {same['rss_growth_per_entry']:8.2f}")
        print(f"  add_many per batch        {same['batch_us']:8.2f} µs")
    if seen["bytes_per_entry"] > LIMIT_BYTES_PER_ENTRY:
        print(f"FAIL: more than {LIMIT_BYTES_PER_ENTRY:g} bytes per entry")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

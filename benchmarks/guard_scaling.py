"""Where the danger of hostile markup is: lexbor's parse, unguarded, and the later stages on
its tree, for each hostile shape at 1, 2, 4 and 8 times a base size.

Each shape and size runs in a child process (CPU seconds of its thread; ``>Ns`` past
``--timeout``, and the larger sizes of that shape are then skipped). The later stages are
those a crawl runs on the tree: the links (``<a href>`` and the like, resolved), the
metadata (`gossamer.extract.meta.gather`) and the main text by both extractors
(`gossamer.extract.tree.main_blocks`, `gossamer.extract.density.main_blocks`). Twice the
input costing twice the time is linear; four times, quadratic.

Run: ``PYTHONPATH=src python benchmarks/guard_scaling.py [--base 65536] [--timeout 30]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable

KB = 1024
SCALES = (1, 2, 4, 8)


def _repeat(unit: bytes, size: int) -> bytes:
    return unit * max(1, size // len(unit))


def _numbered(pattern: bytes, size: int, each: int) -> bytes:
    """``pattern`` with its ``%d`` set to 0, 1, 2 ..., about ``size`` bytes in all."""
    holes = pattern.count(b"%d")
    return b"".join(pattern % ((n,) * holes) for n in range(max(1, size // each)))


SHAPES: dict[str, Callable[[int], bytes]] = {
    "<div> nested": lambda s: _repeat(b"<div>", s),
    "<div></span> nested": lambda s: _repeat(b"<div></span>", s),
    "<ul><li> nested": lambda s: _repeat(b"<ul><li>", s),
    "<a><div> (adoption agency)": lambda s: _repeat(b"<a><div>", s),
    "<span></i> (stray ends)": lambda s: _repeat(b"<span></i>", s),
    "<div><object></div></object>": lambda s: _repeat(b"<div><object></div></object>", s),
    "<p><b c=N>x</p> (reconstruction)": lambda s: _numbered(b"<p><b c=%d>x</p>", s, 18),
    "4,096 <b c=N>, then <p>x": lambda s: _numbered(b"<b c=%d>", 40 * KB, 10) + _repeat(b"<p>x", s),
    "one tag, many attributes": lambda s: b"<a " + _numbered(b"a%d=1 ", s, 8) + b">",
    "one tag behind a quoted >": lambda s: b'<a x=">" ' + _numbered(b"a%d=1 ", s, 8) + b">",
    "distinct attribute names <br aN=1>": lambda s: _numbered(b"<br a%d=1>", s, 12),
    "distinct tag names <xN></xN>": lambda s: _numbered(b"<x%d></x%d>", s, 14),
    "<b><i>x</b></i> (crossed)": lambda s: _repeat(b"<b><i>x</b></i>", s),
    "<b> nested": lambda s: _repeat(b"<b>", s),
    "<span> nested": lambda s: _repeat(b"<span>", s),
    "<svg> nested": lambda s: _repeat(b"<svg>", s),
    "<table><tr><td> nested": lambda s: _repeat(b"<table><tr><td>", s),
    "<template> nested": lambda s: _repeat(b"<template>", s),
    "flat <p>x": lambda s: _repeat(b"<p>x", s),
    "flat <a href>": lambda s: _numbered(b"<a href=/%d>x</a>", s, 20),
}


def stages(body: bytes) -> dict[str, float]:
    """CPU seconds of lexbor's parse and of each later stage on its tree."""
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.extract import density, meta, tree
    from gossamer.parse import links
    from gossamer.urls import Resolver

    times: dict[str, float] = {}
    started = time.thread_time()
    parsed = LexborHTMLParser(body)
    times["lexbor"] = time.thread_time() - started
    started = time.thread_time()
    page = Resolver("http://example.com/")
    nodes = links._read_nodes(parsed.css(links._NODE_SELECTOR), honour_nofollow=True)
    links._resolve_links(nodes, page, page.document, honour_nofollow=True, meta_nofollow=False)
    times["links"] = time.thread_time() - started
    for name, stage in (
        ("meta", meta.gather),
        ("tree", tree.main_blocks),
        ("density", density.main_blocks),
    ):
        started = time.thread_time()
        stage(parsed)
        times[name] = time.thread_time() - started
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", type=int, default=64 * KB, help="bytes at 1x (65536)")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.shape:
        print(json.dumps(stages(SHAPES[args.shape](args.base))))
        return
    sizes = "  ".join(f"{scale * args.base // KB:>5d} KB" for scale in SCALES)
    print(f"CPU s, lexbor / the slowest later stage (which), at {sizes}")
    for shape in SHAPES:
        cells: list[str] = []
        for scale in SCALES:
            command = [sys.executable, __file__, "--shape", shape, "--base", str(scale * args.base)]
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=args.timeout, check=True
                )
            except subprocess.TimeoutExpired:
                cells.append(f">{args.timeout:.0f}s")
                break
            times = json.loads(done.stdout)
            lexbor = times.pop("lexbor")
            slowest = max(times, key=times.__getitem__)
            cells.append(f"{lexbor:.3f} / {times[slowest]:.3f} ({slowest})")
        print(f"  {shape:36s} " + "  ".join(f"{cell:>24s}" for cell in cells), flush=True)


if __name__ == "__main__":
    main()

"""What the formatting scan (`gossamer.parse.formatting.rebuilt_bytes`) costs on real pages.

Over the pages of one or more directories (by default Debian's python3-doc,
``/usr/share/doc/python3-doc/html``), it prints the CPU time of lexbor's parse, of the scan as
it runs (the C part where built, ``parse/_formatscan.c``; the regex with
``GOSSAMER_NATIVE=0``) and of the regex it mirrors (`_rebuilt_bytes_regex`), over the pages a
links-only crawl scans in-process (more than 3 KiB, at most 64 KiB and 4,096 ``<``), each the
least of ``--repeat`` passes; then what the guard adds to lexbor's parse a page over all the
pages (`bench_realpages.guard_ms`). Run it with and without ``GOSSAMER_NATIVE=0``, alternated,
to compare the guard with and without the C scan, and with ``MALLOC_TOP_PAD_=67108864`` as
``bench_realpages.py`` measures the guard (without it lexbor's parse costs up to twice as much
here, the pages held in memory).

Run: ``MALLOC_TOP_PAD_=67108864 python benchmarks/bench_formatscan.py [DIR ...] [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from bench_realpages import guard_ms
from gossamer.parse import native
from gossamer.parse.formatting import SMALL_CHARS, _rebuilt_bytes_regex, rebuilt_bytes

SCANNED_MAX_BYTES = 64 * 1024
SCANNED_MAX_TAGS = 4096


def least_cpu(work: Callable[[bytes], object], pages: Sequence[bytes], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` passes of ``work`` over ``pages``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for page in pages:
            work(page)
        best = min(best, time.process_time() - started)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    """Print the figures as one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "dirs", nargs="*", type=Path, default=[Path("/usr/share/doc/python3-doc/html")]
    )
    parser.add_argument("--repeat", type=int, default=7, help="passes, the least taken (7)")
    args = parser.parse_args(argv)
    pages = [p.read_bytes() for d in args.dirs for p in sorted(d.rglob("*.htm*")) if p.is_file()]
    scanned = [
        p
        for p in pages
        if SMALL_CHARS < len(p) <= SCANNED_MAX_BYTES and p.count(b"<") <= SCANNED_MAX_TAGS
    ]
    lexbor = least_cpu(LexborHTMLParser, scanned, args.repeat)
    scan = least_cpu(rebuilt_bytes, scanned, args.repeat)
    regex = least_cpu(_rebuilt_bytes_regex, scanned, args.repeat)
    figures = {
        "c_parts": native.in_use(),
        "pages": len(pages),
        "scanned_pages": len(scanned),
        "lexbor_ms": round(lexbor * 1e3, 1),
        "scan_ms": round(scan * 1e3, 1),
        "regex_ms": round(regex * 1e3, 1),
        "scan_of_lexbor": round(scan / lexbor, 3),
        "regex_of_lexbor": round(regex / lexbor, 3),
        "guard_ms_per_page": round(guard_ms([(p, "http://x/") for p in pages]), 4),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""The tree extractor's main text on the real pages: a digest per page, CPU ms and instructions.

Every HTML page of the documentation sets of ``realweb.py`` (Debian's python3-doc,
postgresql-doc, sqlite3-doc and git-doc) is decoded and parsed as a crawl parses it
(`gossamer.parse.guard.parse`), then `gossamer.extract.tree.main_blocks` runs on its tree:

- ``--digests FILE`` writes one line per page: its path and the sha256 of every main-text
  block (tag, text, link characters, link density, commas, the markup of its images), so two
  source trees can be compared page by page (``cmp`` or ``diff`` of two such files).
- ``--rounds N`` times the extractor over all the pages N times (``time.process_time``) and
  prints the least round's ms a page (the parse is not timed; class names stay remembered
  across pages, as in a crawl of a site).
- ``--callgrind`` runs itself under valgrind's callgrind over every ``--every``-th page and
  prints the instructions of the extractor alone (collection is toggled on inside
  ``sys.call_tracing``).

Usage: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_walk.py --digests out.txt --rounds 5``
(the gossamer measured is the one this Python imports: ``PYTHONPATH`` picks a source tree).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser
from w3lib.encoding import to_unicode

import realweb
from gossamer.extract.tree import main_blocks
from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import parse


def pages(every: int) -> list[tuple[str, LexborHTMLParser]]:
    """(path, parsed tree) of every ``every``-th HTML page of the sets found, sorted by path."""
    paths: list[Path] = []
    for doc in realweb.DOCS:
        root = doc.root()
        if root is not None:
            paths += (p for p in root.rglob("*") if p.suffix in (".html", ".htm"))
    found = []
    for path in sorted(paths)[::every]:
        raw = path.read_bytes()
        detected = detect_encoding(raw, None)
        tree = parse(to_unicode(raw[detected.bom_length :], detected.encoding)).tree
        if tree is not None:
            found.append((str(path), tree))
    return found


def digest(tree: LexborHTMLParser) -> str:
    """The sha256 of the main-text blocks of ``tree``."""
    sha = hashlib.sha256()
    for block in main_blocks(tree):
        images = "\x1f".join(image.html or "" for image in block.images)
        fields = (block.tag, block.text, block.link_chars, repr(block.density), block.commas)
        sha.update(f"{fields!r}\x1e{images}\x1d".encode())
    return sha.hexdigest()


def extract_all(trees: Sequence[LexborHTMLParser]) -> None:
    for tree in trees:
        main_blocks(tree)


def least_round(trees: Sequence[LexborHTMLParser], rounds: int) -> float:
    """The least round's CPU ms a page."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        extract_all(trees)
        best = min(best, time.process_time() - start)
    return 1000 * best / len(trees)


def callgrind(every: int) -> int:
    """Instructions of the extractor over every ``every``-th page, under callgrind."""
    out = Path("bench-out") / f"walk-callgrind.{os.getpid()}.out"
    out.parent.mkdir(exist_ok=True)
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no"]
    command += ["--toggle-collect=sys_call_tracing", f"--callgrind-out-file={out}"]
    command += [sys.executable, __file__, "--every", str(every), "--counted"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    out.unlink()
    if totals is None:
        raise SystemExit("no totals in callgrind's output")
    return int(totals.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--digests", type=Path, help="write path and sha256 per page here")
    parser.add_argument("--rounds", type=int, default=0, help="timed rounds over the pages")
    parser.add_argument("--every", type=int, default=1, help="read every N-th page (1)")
    parser.add_argument("--callgrind", action="store_true", help="count instructions")
    parser.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.callgrind:
        count = callgrind(args.every)
        print(f"callgrind: {count:,} instructions (every {args.every}th page)")
        return 0
    found = pages(args.every)
    trees = [tree for _, tree in found]
    if args.counted:
        extract_all(trees)  # warm: imports, names remembered
        sys.call_tracing(extract_all, (trees,))
        return 0
    print(f"{len(found)} pages")
    if args.digests:
        lines = (f"{path} {digest(tree)}\n" for path, tree in found)
        args.digests.write_text("".join(lines))
    if args.rounds:
        print(f"least of {args.rounds} rounds: {least_round(trees, args.rounds):.3f} ms a page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the markup guard costs: on real pages against the parse floor, and on hostile shapes.

For every page of a directory holding more than 4,096 ``<`` (by default Debian's python3-doc,
``/usr/share/doc/python3-doc/html``), three figures, each the fastest of ``--repeat`` passes:
the floor (lexbor's parse, then extracting and resolving the links with gossamer's resolver),
``parse_html`` (the guarded parse, robots meta, base, title and the same links), and the
guard's scans and checks alone. It prints the pages that ran the guard's full Python pass,
the totals, and ``parse_html`` against the floor. Then the worst hostile shapes of the test
suite, each parsed once by ``parse_html`` (CPU time of the parsing thread).

Run: ``python benchmarks/bench_guard.py [DIR] [--repeat 5] [--no-hostile]``. Times are
wall-clock minima on a possibly shared machine; instruction counts (valgrind's callgrind)
are the steadier figure, and the README quotes both.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from gossamer.parse import guard, links, scan
from gossamer.parse.links import parse_html
from gossamer.urls import Resolver

BASE = "https://docs.python.org/3/"
MB = 1024 * 1024
HOSTILE: dict[str, Callable[[], bytes]] = {
    "2,000 tags of 500 attributes": lambda: (
        (b"<div " + b" ".join(b'x%03d="ab"' % i for i in range(500)) + b">x</div>\n") * 2000
    ),
    "100,000 distinct attribute names": lambda: b"".join(
        b"<br a%d=1 b%d=2>" % (i, i) for i in range(100_000)
    ),
    "one tag of 10 MB": lambda: b"<a " + b" ".join(b"a%d=1" % i for i in range(1_000_000)) + b">",
    "10 MB of <div>": lambda: b"<div>" * (2 * MB),
    "nested tables": lambda: b"<table><tr><td>" * (10 * MB // 15),
    "stray end tags at depth": lambda: b"<span>" * 600 + b"</p>" * (10 * MB // 4),
    "<span></i> at the ordinary limit": lambda: b"<span></i>" * 8192,
    "<p><b c=N>x</p></i> at the limit": lambda: b"".join(
        b"<p><b c=%d>x</p></i>" % n for n in range(4096)
    ),
    "attributes behind quoted >": lambda: (
        b"<a " + b" ".join(b'x%d=">"' % i for i in range(100_000)) + b">" + b"<p>x</p>" * 6000
    ),
}


def fastest(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def floor(body: bytes, url: str) -> None:
    tree = LexborHTMLParser(body)
    page = Resolver(url)
    links._extract_links(
        tree.css("[href]"), page, page.document, honour_nofollow=True, meta_nofollow=False
    )


def scans(body: bytes) -> None:
    """The guard's work on a page it leaves whole: its scans, and the depth check of an
    ordinary page's tree (the tree itself is the floor's)."""
    tags = scan.tag_count(body)
    if scan.needs_guard(body, tags) and scan.ordinary(body, tags):
        TREES[id(body)].css_first(guard._TOO_DEEP)


TREES: dict[int, LexborHTMLParser] = {}


def real_pages(root: Path, repeat: int) -> None:
    pages = sorted(p for p in root.rglob("*.html") if p.read_bytes().count(b"<") > 4096)
    full_passes: list[str] = []
    run = guard._Guard.run

    def counting(self: guard._Guard) -> guard.Guarded:
        full_passes.append(name)
        return run(self)

    guard._Guard.run = counting  # type: ignore[method-assign]
    totals = [0.0, 0.0, 0.0]
    for path in pages:
        body, name = path.read_bytes(), str(path.relative_to(root))
        url = BASE + name
        TREES[id(body)] = LexborHTMLParser(body)
        figures = (
            fastest(lambda: floor(body, url), repeat),  # noqa: B023
            fastest(lambda: parse_html(body, url), repeat),  # noqa: B023
            fastest(lambda: scans(body), repeat),  # noqa: B023
        )
        TREES.clear()
        totals = [t + f for t, f in zip(totals, figures, strict=True)]
    guard._Guard.run = run  # type: ignore[method-assign]
    passed = sorted(set(full_passes))
    print(f"{len(pages)} pages of more than 4,096 '<' in {root}")
    print(f"  pages that ran the guard's full pass: {len(passed)} {passed[:12]}")
    floor_ms, parse_ms, scan_ms = (t * 1000 for t in totals)
    print(f"  floor (lexbor + links)   {floor_ms:9.1f} ms")
    print(f"  parse_html               {parse_ms:9.1f} ms  = {parse_ms / floor_ms:.2f}x the floor")
    print(f"  guard scans and checks   {scan_ms:9.1f} ms  = {100 * scan_ms / parse_ms:.1f}% of it")


def hostile() -> None:
    print("hostile shapes, parse_html, CPU s of the parsing thread")
    for name, make in HOSTILE.items():
        body = make()
        started = time.thread_time()
        page = parse_html(body, "http://example.com/")
        print(f"  {name:38s} {time.thread_time() - started:6.2f} s  {page.flags}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="/usr/share/doc/python3-doc/html", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-hostile", action="store_true")
    args = parser.parse_args()
    real_pages(args.root, args.repeat)
    if not args.no_hostile:
        hostile()


if __name__ == "__main__":
    main()

"""What the markup guard costs: on real pages against the parse floor, and on hostile shapes.

For every page of one or more directories (by default Debian's python3-doc,
``/usr/share/doc/python3-doc/html``), four CPU times, each the least of ``--repeat`` passes:
lexbor's parse alone, the floor (lexbor's parse, then extracting and resolving the links with
gossamer's resolver), the guarded parse (`gossamer.parse.guard.parse`) and ``parse_html`` (the
guarded parse, robots meta, base, title and the same links). By size bucket (``<`` per page:
up to 4,096, up to 16,384, more) it prints the pages that ran the guard's full Python pass,
``parse_html`` against the floor, and the guard's share of ``parse_html`` (the guarded parse
less lexbor's own). Then, over all the pages, the same by route (how
`gossamer.parse.scan.route` took each page: ``as-is``, ``plain``, ``check``, ``nested``,
``guard``) and
the total: the guard's CPU (the guarded parse less lexbor's own) against lexbor's. Then the
worst hostile shapes, each parsed once by ``parse_html`` in a child process (CPU time of the
parsing thread, and the child's peak resident memory; ``>Ns`` when it ran past ``--timeout``).

Run: ``python benchmarks/bench_guard.py [DIR ...] [--repeat 5] [--no-hostile] [--timeout 60]``.
The four documentation packages of the issue: ``python benchmarks/bench_guard.py
/usr/share/doc/python3-doc/html /usr/share/doc/postgresql-doc-15 /usr/share/doc/sqlite3
/usr/share/doc/git-doc``. To compare with an older guard, run it with ``PYTHONPATH`` pointing
at that tree's ``src``. CPU times on a shared machine still vary by some 10%; instruction
counts (valgrind's callgrind) are the steadier figure.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from gossamer.parse import guard, links, scan
from gossamer.parse.links import parse_html
from gossamer.urls import Resolver

BASE = "https://docs.python.org/3/"
MB = 1024 * 1024
BUCKETS = ((0, 4096), (4096, 16_384), (16_384, 1 << 62))


def distinct_names(tags: int) -> bytes:
    """``tags`` short ``<br>`` tags of 60 attribute names each, every name new, each tag
    followed by a stray end tag (so that up to 8,192 of them pass as an ordinary page)."""
    return b"".join(
        b"<br " + b" ".join(b"a%d" % (60 * i + j) for j in range(60)) + b"></x>"
        for i in range(tags)
    )


NAMES = [b"%c%c" % (a, b) for a in range(97, 123) for b in range(97, 123)]
ATTRIBUTES_100, ATTRIBUTES_200, ATTRIBUTES_250 = (b" ".join(NAMES[:n]) for n in (100, 200, 250))


HOSTILE: dict[str, Callable[[], bytes]] = {
    "2,000 tags of 500 attributes": lambda: (
        (b"<div " + b" ".join(b'x%03d="ab"' % i for i in range(500)) + b">x</div>\n") * 2000
    ),
    "100,000 distinct attribute names": lambda: b"".join(
        b"<br a%d=1 b%d=2>" % (i, i) for i in range(100_000)
    ),
    "8,192 <br> of 60 new names, </x>": lambda: distinct_names(8192),
    "2,048 <br> of 60 new names, </x>": lambda: distinct_names(2048),
    "10 MB of <br> of 60 new names, </x>": lambda: distinct_names(10 * MB // 474),
    "160,000 distinct tag names": lambda: b"".join(b"<x%d></x%d>" % (i, i) for i in range(160_000)),
    "10 MB of distinct tag names": lambda: b"".join(
        b"<x%d></x%d>" % (i, i) for i in range(10 * MB // 18)
    ),
    "one tag of 10 MB": lambda: b"<a " + b" ".join(b"a%d=1" % i for i in range(1_000_000)) + b">",
    "10 MB of <div>": lambda: b"<div>" * (2 * MB),
    "10 MB of <a><div>": lambda: b"<a><div>" * (10 * MB // 8),
    "10 MB of <div></p>": lambda: b"<div></p>" * (10 * MB // 9),
    "10 MB of <ul><li>": lambda: b"<ul><li>" * (10 * MB // 8),
    "nested tables": lambda: b"<table><tr><td>" * (10 * MB // 15),
    "stray end tags at depth": lambda: b"<span>" * 600 + b"</p>" * (10 * MB // 4),
    "<span></i>, 16,384 <": lambda: b"<span></i>" * 8192,
    "<p><b c=N>x</p></i>, 16,384 <": lambda: b"".join(
        b"<p><b c=%d>x</p></i>" % n for n in range(4096)
    ),
    "<p><b c=N>x</p><!--</b>-->, 16,384 <": lambda: b"".join(
        b"<p><b c=%d>x</p><!--</b>-->" % n for n in range(3276)
    ),
    "<p><b c=N>x, 4,096 < (left as it is)": lambda: b"".join(
        b"<p><b c=%d>x" % n for n in range(2048)
    ),
    "1 MB of <p><b c=N>x</p>": lambda: b"".join(b"<p><b c=%d>x</p>" % n for n in range(MB // 18)),
    "<p><b c=N>x, 16 KiB (left as it is)": lambda: b"".join(
        b"<p><b c=%d>x" % n for n in range(1489)
    ),
    "<P><B C=N>x, 4,096 < (left as it is)": lambda: b"".join(
        b"<P><B C=%d>x" % n for n in range(2048)
    ),
    "<p><a><b c=N>x, 4,095 < (left as it is)": lambda: b"".join(
        b"<p><a><b c=%d>x" % n for n in range(1365)
    ),
    "10 <b> of 200 attributes, <p>x, 12 KB": lambda: (
        b"<p>" + b"".join(b"<b c=%d %s>" % (n, ATTRIBUTES_200) for n in range(10)) + b"<p>x" * 1500
    ),
    "<b> of a 60 KB value, <p>x, 4,096 <": lambda: (
        b'<p><b c="%s">x' % (b"v" * 60_000) + b"<p>x" * 4000
    ),
    "16 <b> of 250 attributes, <p>x</p>, 50 KB": lambda: (
        b"<p>"
        + b"".join(b"<b c=%d %s>" % (n, ATTRIBUTES_250) for n in range(16))
        + b"</p>"
        + b"<p>x</p>" * 4000
    ),
    "20 <b> of 100 attributes, <p>x</p>, 16,022 <": lambda: (
        b"<p>"
        + b"".join(b"<b c=%d %s>" % (n, ATTRIBUTES_100) for n in range(20))
        + b"</p>"
        + b"<p>x</p>" * 8000
    ),
    "attributes behind quoted >": lambda: (
        b"<a " + b" ".join(b'x%d=">"' % i for i in range(100_000)) + b">" + b"<p>x</p>" * 6000
    ),
    "10 MB of scripts escaped twice": lambda: (
        b"<div><script><!--<script></script></div><!--</script>-->" * (10 * MB // 56)
    ),
    "10 MB nesting perfectly, 128 deep": lambda: (
        b"<div>" * 127 + b"<p><span><i>x</i></span></p>" * (10 * MB // 29) + b"</div>" * 127
    ),
    "10 MB of <b><i>x</b></i> (crossed)": lambda: b"<b><i>x</b></i>" * (10 * MB // 16),
    "10 MB of values in both quotes": lambda: (
        b"<div a='1' b='x\"y' c=\"it's\">x</div>" * (10 * MB // 36)
    ),
    "10 MB of tags of 256 single-quoted values": lambda: (
        (b"<a " + b" ".join(b"v%d='1'" % i for i in range(256)) + b">x</a>") * (10 * MB // 2030)
    ),
    "1 MB tag behind a quoted >, no other": lambda: (
        b'<a x=">" ' + b" ".join(b"a%d=1" % i for i in range(120_000)) + b">"
    ),
    "10 MB tag behind a quoted >, no other": lambda: (
        b'<a x=">" ' + b" ".join(b"a%d=1" % i for i in range(1_000_000)) + b">"
    ),
}


def least(work: Callable[[], object], repeat: int) -> float:
    """The least CPU time of the calling thread over ``repeat`` runs of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return best


def floor(body: bytes, url: str) -> None:
    tree = LexborHTMLParser(body)
    page = Resolver(url)
    links._extract_links(
        tree.css("[href]"), page, page.document, honour_nofollow=True, meta_nofollow=False
    )


def measure(body: bytes, url: str, repeat: int) -> tuple[float, float, float, float]:
    """lexbor, floor, guarded parse, parse_html: CPU seconds."""
    return (
        least(lambda: LexborHTMLParser(body), repeat),
        least(lambda: floor(body, url), repeat),
        least(lambda: guard.parse(body), repeat),
        least(lambda: parse_html(body, url), repeat),
    )


class Totals:
    """Pages, CPU seconds (lexbor, floor, guarded parse, parse_html) and full passes of a
    group of pages."""

    def __init__(self) -> None:
        self.pages = 0
        self.passes = 0
        self.seconds = [0.0, 0.0, 0.0, 0.0]

    def add(self, figures: tuple[float, float, float, float], *, full_pass: bool) -> None:
        self.pages += 1
        self.passes += full_pass
        for index, figure in enumerate(figures):
            self.seconds[index] += figure

    def row(self, label: str) -> str:
        lexbor, floor_s, guarded, parsed = self.seconds
        share = 100 * max(0.0, guarded - lexbor) / parsed
        return (
            f"  {label:16s} {self.pages:6d} {self.passes:10d} {lexbor * 1e3:8.1f} "
            f"{floor_s * 1e3:8.1f} {guarded * 1e3:8.1f} {parsed * 1e3:11.1f} "
            f"{parsed / floor_s:6.2f}x {share:10.1f}%"
        )


HEADER = "  {:16s}  pages  full pass   lexbor    floor  guarded  parse_html  /floor  guard share"


def real_pages(roots: list[Path], repeat: int) -> None:
    full_passes: set[str] = set()
    run = guard._Guard.run
    name = ""

    def counting(self: guard._Guard) -> guard.Guarded:
        full_passes.add(name)
        return run(self)

    guard._Guard.run = counting  # type: ignore[method-assign]
    routes: dict[str, Totals] = {}
    everything = Totals()
    try:
        for root in roots:
            buckets = {bucket: Totals() for bucket in BUCKETS}
            pages = sorted(root.rglob("*.html"))
            for path in pages:
                body, name = path.read_bytes(), str(path)
                tags = body.count(b"<")
                bucket = next(
                    b for b in BUCKETS if b[0] < tags <= b[1] or (tags == 0 and b[0] == 0)
                )
                before = len(full_passes)
                figures = measure(body, BASE + path.name, repeat)
                full_pass = len(full_passes) > before
                buckets[bucket].add(figures, full_pass=full_pass)
                routes.setdefault(scan.route(body, tags), Totals()).add(
                    figures, full_pass=full_pass
                )
                everything.add(figures, full_pass=full_pass)
            print(f"{len(pages)} pages in {root}; CPU ms, least of {repeat}")
            print(HEADER.format("'<' per page"))
            for (low, high), totals in buckets.items():
                if totals.pages:
                    label = f"{low + 1:,}-{high:,}" if high < 1 << 62 else f">{low:,}"
                    print(totals.row(label))
    finally:
        guard._Guard.run = run  # type: ignore[method-assign]
    print(f"all {everything.pages} pages, by route")
    print(HEADER.format("route"))
    for way, totals in sorted(routes.items()):
        print(totals.row(way))
    print(everything.row("all"))
    lexbor, _, guarded, _ = everything.seconds
    print(
        f"guard CPU over all pages: {(guarded - lexbor) * 1e3:.1f} ms against lexbor's "
        f"{lexbor * 1e3:.1f} ms ({100 * (guarded - lexbor) / lexbor:.1f}% of lexbor)"
    )


def hostile(timeout: float) -> None:
    print("hostile shapes, parse_html, CPU s of the parsing thread")
    for shape in HOSTILE:
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--shape", shape],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
            figure = done.stdout.strip()
        except subprocess.TimeoutExpired:
            figure = f">{timeout:.0f} s"
        print(f"  {shape:38s} {figure}", flush=True)


def one_shape(shape: str) -> None:
    body = HOSTILE[shape]()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.thread_time()
    page = parse_html(body, "http://example.com/")
    seconds = time.thread_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{seconds:6.2f} s  peak {peak >> 10:5d} MB (+{(peak - before) >> 10})  {page.flags}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "roots", nargs="*", default=[Path("/usr/share/doc/python3-doc/html")], type=Path
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-hostile", action="store_true")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.shape:
        one_shape(args.shape)
        return
    real_pages(args.roots, args.repeat)
    if not args.no_hostile:
        hostile(args.timeout)


if __name__ == "__main__":
    main()

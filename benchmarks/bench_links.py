"""CPU per page of link handling on real documentation: guard, parse, resolve, canonicalize.

Every HTML file under a directory (by default Debian's python3-doc, about 530 pages and 170
links a page) is read into memory and served from a made-up URL; each figure is the CPU time
of one pass over all pages divided by the number of pages, the least of ``--passes`` passes
(the machine may be shared: the least is the figure least disturbed by others), with the
median pass beside it:

- ``lexbor+hrefs``: lexbor's parse and every ``<a href>`` read (the floor of ``parsefloor.py``);
- ``lexbor+hrefs+urljoin``: the same, each href resolved with ``urllib.parse.urljoin``;
- ``parse_html``: gossamer's whole parse of a page (charset, guard, tree, title, robots meta,
  links resolved);
- ``link handling``: ``parse_html`` and the frontier admission's ``canonicalize`` of every link.

``python benchmarks/bench_links.py [DIR] [--passes 5]``; with ``PYTHONPATH`` pointing at
another checkout's ``src`` it measures that checkout (only ``parse_html`` and
``canonicalize`` are used).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from gossamer.parse.links import parse_html
from gossamer.urls import InvalidURL, canonicalize

DOCS = Path("/usr/share/doc/python3-doc/html")
Page = tuple[bytes, str]


def load(root: Path) -> list[Page]:
    """Every HTML file under ``root``, with the URL it is taken to come from."""
    files = sorted(root.rglob("*.html"))
    return [(f.read_bytes(), "http://docs.test/" + f.relative_to(root).as_posix()) for f in files]


def hrefs(body: bytes, url: str) -> int:
    return len([n.attributes.get("href") for n in LexborHTMLParser(body).css("a[href]")])


def joined(body: bytes, url: str) -> int:
    nodes = LexborHTMLParser(body).css("a[href]")
    return len([urljoin(url, n.attributes.get("href") or "") for n in nodes])


def parsed(body: bytes, url: str) -> int:
    return len(parse_html(body, url).links)


def handled(body: bytes, url: str) -> int:
    return len([_canonical(link) for link in parse_html(body, url).links])


def _canonical(url: str) -> str | None:
    try:
        return canonicalize(url)
    except InvalidURL:
        return None


def measure(work: Callable[[bytes, str], int], pages: Sequence[Page], passes: int) -> list[float]:
    """CPU milliseconds per page of each pass."""
    times = []
    for _ in range(passes):
        started = time.process_time()
        for body, url in pages:
            work(body, url)
        times.append((time.process_time() - started) * 1000 / len(pages))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, nargs="?", default=DOCS)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    pages = load(args.root)
    links = sum(parsed(body, url) for body, url in pages) / len(pages)
    raw = sum(hrefs(body, url) for body, url in pages) / len(pages)
    size = sum(len(body) for body, _ in pages) / len(pages) / 1024
    print(f"{len(pages)} pages, {size:.0f} KiB and {raw:.0f} <a href> a page ({links:.0f} links")
    print("after duplicates and fragments); CPU ms per page, least and median of the passes:")
    for name, work in (
        ("lexbor+hrefs", hrefs),
        ("lexbor+hrefs+urljoin", joined),
        ("parse_html", parsed),
        ("link handling", handled),
    ):
        times = measure(work, pages, args.passes)
        print(f"  {name:<22} {min(times):6.2f} {statistics.median(times):6.2f}")


if __name__ == "__main__":
    main()

"""The parse floor: the least work a crawler must do per page, measured in-process.

Two figures over the generated pages, on one core: parsing a page with selectolax's lexbor
backend and reading every ``<a href>`` (the fastest parser gossamer uses), and the same plus
``urllib.parse.urljoin`` of each href against the page URL. Each page is timed on its own over
a few passes; a page's time is its fastest pass, and the figures are the median and mean.

The figures run in a fresh subprocess, twice: with glibc's default malloc settings, and with
``MALLOC_TOP_PAD_`` set. By default, freeing a parsed document can shrink the heap and the
next parse faults the pages back in; that churn alone can double lexbor's time per page. The
padded figure is the floor proper; the plain one is what a fresh process gets.

Run alone: ``python benchmarks/parsefloor.py WEB_DIR --port 18473 [--cpu 1] [--top-pad]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

HREFS = "a[href]"
TOP_PAD = str(64 << 20)
"""``MALLOC_TOP_PAD_`` of the padded run: 64 MiB kept at the top of the heap."""


@dataclass(frozen=True)
class Floor:
    """Per-page cost of one way of extracting links, in milliseconds."""

    median_ms: float
    mean_ms: float
    links_per_page: float

    @property
    def pages_per_second(self) -> float:
        """Pages one core gets through at the mean cost."""
        return 1000 / self.mean_ms if self.mean_ms else 0.0


def hrefs(body: bytes, url: str) -> list[str]:
    """Parse with lexbor and return the raw ``href`` of every ``<a href>``."""
    return [node.attributes.get("href") or "" for node in LexborHTMLParser(body).css(HREFS)]


def joined(body: bytes, url: str) -> list[str]:
    """:func:`hrefs`, each resolved against the page URL with ``urljoin``."""
    return [urljoin(url, href) for href in hrefs(body, url)]


def time_pages(
    work: Callable[[bytes, str], list[str]], pages: Sequence[tuple[bytes, str]], passes: int
) -> Floor:
    """``work`` over every page, ``passes`` times; each page's fastest pass counts."""
    best = [float("inf")] * len(pages)
    links = 0
    for _ in range(passes):
        links = 0
        for i, (body, url) in enumerate(pages):
            started = time.perf_counter_ns()
            links += len(work(body, url))
            best[i] = min(best[i], time.perf_counter_ns() - started)
    per_page = [ns / 1e6 for ns in best]
    return Floor(statistics.median(per_page), statistics.fmean(per_page), links / len(pages))


def page_url(file: Path, www: Path, port: int) -> str:
    """The URL a generated file is served at."""
    parts = file.relative_to(www).parts
    path = "/".join(parts[1:])
    path = path.removesuffix("index.html")
    return f"http://{parts[0]}:{port}/{path}"


def measure(
    files: Sequence[Path], www: Path, port: int, cpu: int | None, passes: int = 3
) -> dict[str, Floor]:
    """Both floors over ``files`` (HTML of the web under ``www``), pinned to ``cpu``."""
    pages = [(file.read_bytes(), page_url(file, www, port)) for file in files]
    previous = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    try:
        return {
            "lexbor_hrefs": time_pages(hrefs, pages, passes),
            "lexbor_hrefs_urljoin": time_pages(joined, pages, passes),
        }
    finally:
        os.sched_setaffinity(0, previous)


def sample(web: Path, limit: int) -> list[Path]:
    """An even sample of at most ``limit`` of the web's HTML files."""
    files = sorted((web / "www").rglob("*.html"))
    return files[:: max(1, -(-len(files) // limit))]


def run(
    web: Path, port: int, cpu: int | None, *, limit: int, top_pad: bool, passes: int = 3
) -> dict[str, Floor]:
    """Both floors measured in a fresh Python process (with ``MALLOC_TOP_PAD_`` or without)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if top_pad:
        env["MALLOC_TOP_PAD_"] = TOP_PAD
    command = [sys.executable, __file__, str(web), "--port", str(port), "--limit", str(limit)]
    command += ["--passes", str(passes)] + (["--cpu", str(cpu)] if cpu is not None else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return {k: Floor(**v) for k, v in json.loads(done.stdout).items()}


def main() -> None:
    """Measure the floors of a generated web and print them as JSON."""
    parser = argparse.ArgumentParser(description="parse floor of a generated web")
    parser.add_argument("web", type=Path)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cpu", type=int)
    parser.add_argument("--limit", type=int, default=5000)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    files = sample(args.web, args.limit)
    floors = measure(files, args.web / "www", args.port, args.cpu, args.passes)
    print(json.dumps({k: asdict(v) for k, v in floors.items()}))


if __name__ == "__main__":
    main()

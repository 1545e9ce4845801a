"""Instructions of the crawler's own work per page on the real-pages web, under callgrind.

Everything a links-only ``gossamer crawl`` does but the network and the parse: the crawl loop
and its tasks, the page stage's steps, admission, the frontier, politeness, robots.txt, the
ledger and crawl.db's staging, pages.jsonl. The documentation sets of ``realweb.py`` are
answered from memory (200, a 301 to a directory's slash, else 404; no compression), each
page parsed once in a first crawl whose parse the second one reuses; only the second crawl
is counted (callgrind's collection is toggled on inside ``sys.call_tracing``, the crawl's
main thread; crawl.db's writes on its worker thread are not counted). Checkpoints wait for
1,000 records (``--checkpoint-interval 1000``), so the count does not depend on the crawl's
wall time; the parse sandbox is off (every page read in-process, its robots meta tags and
canonical link too).

Usage: ``.venv/bin/python benchmarks/callgrind_overhead.py [--out DIR]`` (valgrind; the
gossamer measured is the one this Python imports: ``PYTHONPATH`` picks a source tree).
"""

from __future__ import annotations

import argparse
import asyncio
import mimetypes
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import realweb

ROOT = Path(__file__).resolve().parent.parent
PORT = 18511
NOT_FOUND = b"<html><body>404 Not Found</body></html>"


def answer(roots: Mapping[str, Path], url: str) -> tuple[int, str, bytes, str | None]:
    """(status, content type, body, location) of ``url`` as nginx serves the sets."""
    parts = urlsplit(url)
    root = roots.get(parts.hostname or "")
    if root is None:
        return 404, "text/html", NOT_FOUND, None
    path = unquote(parts.path).lstrip("/")
    file = root / path
    if file.is_dir():
        if path and not path.endswith("/"):
            return 301, "text/html", b"<html>moved</html>", url.split("?")[0] + "/"
        file = file / "index.html"
    if not file.is_file():
        return 404, "text/html", NOT_FOUND, None
    kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return 200, kind, file.read_bytes(), None


def serve_from_memory(roots: Mapping[str, Path]) -> None:
    """The fetcher answers from the files; the HTML reader parses each URL once."""
    from gossamer.fetch.http import Fetcher
    from gossamer.fetch.result import FetchResult
    from gossamer.page import read

    answers: dict[str, tuple[int, str, bytes, str | None]] = {}

    async def fetch(self: Any, url: str, *, headers: Any = None) -> FetchResult:
        await asyncio.sleep(0)  # a fetch lets the loop turn
        found = answers.get(url) or answers.setdefault(url, answer(roots, url))
        status, kind, body, location = found
        now = time.monotonic()
        head = {"content-type": kind} | ({"location": location} if location else {})
        return FetchResult(
            url,
            status,
            head,
            body,
            kind,
            None,
            False,
            None,
            now,
            time.time(),
            0.001,
            len(body),
            None,
            location,
            answered_at=now,
        )

    parsed: dict[str, Any] = {}
    page: Callable[..., Awaitable[Any]] = read.HtmlReader.page

    async def parse_once(self: Any, url: str, result: Any) -> Any:
        if url not in parsed:
            parsed[url] = await page(self, url, result)
        return parsed[url]

    Fetcher.fetch = fetch  # type: ignore[method-assign]
    read.HtmlReader.page = parse_once  # type: ignore[method-assign]


def inner(work: Path) -> None:
    """The two crawls, under callgrind (see the module docstring)."""
    from gossamer import cli

    roots = {site.name: site.resolve() for site in (work / "www").iterdir()}
    serve_from_memory(roots)
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"http://{ip}:{PORT}/\n" for ip in sorted(roots)))
    out = work / "crawl"
    argv = ["crawl", "--seeds-file", str(seeds), "--out", str(out), "--overwrite"]
    argv += ["--concurrency", "64", "--per-host", "4", "--delay", "0", "--quiet", "--no-text"]
    argv += ["--parse-sandbox", "off", "--checkpoint-interval", "1000"]
    cli.main(argv)  # every page parsed once
    sys.call_tracing(cli.main, (argv,))  # counted
    with (out / "pages.jsonl").open("rb") as lines:
        print(f"records: {sum(1 for _ in lines)}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Lay out the sets, run the crawls under callgrind, print the instructions."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "overhead")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        inner(args.out)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if not (args.out / "www").exists():
        realweb.lay_out(args.out / "www", realweb.DOCS)
    out_file = args.out / "callgrind.out"
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no"]
    command += ["--toggle-collect=sys_call_tracing", f"--callgrind-out-file={out_file}"]
    command += [sys.executable, __file__, "--out", str(args.out), "--inner"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=os.environ)
    records = int(done.stdout.split("records:")[1].split()[0])
    total = next(
        int(line.split()[1])
        for line in out_file.read_text().splitlines()
        if line.startswith("totals:")
    )
    print(f"Ir {total:,} for {records} records: {total / records:,.0f} a record")
    return 0


if __name__ == "__main__":
    sys.exit(main())

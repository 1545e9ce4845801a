"""Memory of a continuous crawl over 10^6 known URLs on the embedded backend (target: under
500 MB RSS).

A short real ``--recrawl`` crawl of a loopback web makes crawl.db; the benchmark then writes
into it, with crawl.db's own schema, what a continuous crawl of ``--urls`` pages over
``--hosts`` hosts would have left: a finished ``urls`` row, a page record (in crawl.db and
pages.jsonl) and a ``revisits`` row for each (an ``ETag``, an interval; ``--due`` of them due
now, the rest later). ``gossamer crawl --resume --recrawl`` then runs for ``--seconds`` against
the web (which answers every revisit ``304``); the figures are its peak RSS (the kernel's, for
the whole process), the revisits it made, and the backlog it left.

Usage: ``.venv/bin/python benchmarks/bench_revisit_memory.py [--urls 1000000] [--seconds 60]
[--spare 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

from gossamer.crawldb import CrawlDB
from gossamer.urls import fingerprint, host_key

GOSSAMER = [sys.executable, "-m", "gossamer.cli", "crawl"]
WEB = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet", "--sitemaps", "off"]
BODY = "<html><head><title>p</title></head><body><main><p>{}</p></main></body></html>"


async def serve() -> tuple[web.AppRunner, int, list[int]]:
    """The web: any ``/p/N`` of any ``hN.test``; a 304 to a matching ``If-None-Match``."""
    answered = [0, 0]

    async def page(request: web.Request) -> web.Response:
        etag = f'"{request.path}"'
        if request.headers.get("If-None-Match") == etag:
            answered[0] += 1
            return web.Response(status=304, headers={"ETag": etag})
        answered[1] += 1
        text = BODY.format(" ".join(["still water"] * 40))
        return web.Response(text=text, content_type="text/html", headers={"ETag": etag})

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nAllow: /\n")

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    assert site._server is not None
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port, answered


async def crawl(*args: str) -> float:
    """Run gossamer; its seconds."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *GOSSAMER, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"gossamer exited {process.returncode}: {err.decode()[-2000:]}")
    return time.monotonic() - started


def urls(count: int, hosts: int, port: int) -> Iterator[str]:
    """``count`` page URLs spread over ``hosts`` hosts."""
    for n in range(count):
        yield f"http://h{n % hosts}.test:{port}/p/{n}"


def seed_state(db_path: Path, opts: argparse.Namespace, port: int) -> float:
    """Write the known URLs, their records and revisit rows; returns the seconds it took."""
    started = time.monotonic()
    CrawlDB(db_path).close()  # the schema, as the crawl made it
    now = time.time()
    db = sqlite3.connect(db_path)
    seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM urls").fetchone()[0]
    batch: list[tuple[str, int]] = []
    with (db_path.parent / "pages.jsonl").open("a", encoding="utf-8") as jsonl:
        for n, url in enumerate(urls(opts.urls, opts.hosts, port)):
            batch.append((url, n))
            # pages.jsonl holds every committed record, as a crawl leaves it
            jsonl.write(json.dumps({"url": url, "status": 200, "change": "new"}) + "\n")
            if len(batch) == 50_000:
                _write(db, batch, seq, now, opts)
                batch = []
    _write(db, batch, seq, now, opts)
    db.commit()
    db.close()
    return time.monotonic() - started


def _write(
    db: sqlite3.Connection,
    batch: list[tuple[str, int]],
    seq: int,
    now: float,
    opts: argparse.Namespace,
) -> None:
    fetched = now - 3600
    url_rows, page_rows, revisit_rows = [], [], []
    for url, n in batch:
        fp = fingerprint(url)
        url_rows.append((fp, url, host_key(url), 1, seq + n))
        page_rows.append((url, fetched, "still water " * 8))
        # the first --due are due now; the others over the next days
        due = now - 1 if n < opts.due else now + 3600 + (n % 100_000) * 3
        path = url.split(":", 2)[2].split("/", 1)[1]
        revisit_rows.append((fp, f'"/{path}"', fetched, fetched, 86_400.0, due, n % 7, n % 3))
    db.executemany(
        "INSERT OR IGNORE INTO urls (fp, url, host, depth, state, seq) VALUES (?, ?, ?, ?, 1, ?)",
        url_rows,
    )
    db.executemany(
        "INSERT INTO pages (url, status, depth, content_type, bytes, fetched_at, outlinks,"
        " attempts, truncated, text, change) VALUES (?, 200, 1, 'text/html', 1200, ?, 0, 1, 0,"
        " ?, 'new')",
        page_rows,
    )
    db.executemany(
        "INSERT OR REPLACE INTO revisits (fp, etag, fetched_at, captured_at, interval, due,"
        " checks, changes, gone, observed, size, content_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
        " 0, 0, 1200, 'text/html')",
        revisit_rows,
    )


async def main(opts: argparse.Namespace) -> None:
    """Seed, resume, report."""
    runner, port, answered = await serve()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-revisit-memory-") as tmp:
            out = (opts.keep or Path(tmp)) / "out"
            seed = f"http://h0.test:{port}/"
            polite = ["--delay", "0", "--per-host", "2", "--concurrency", "64"]
            await crawl(seed, *WEB, *polite, "--recrawl", "--max-duration", "2", "--out", str(out))
            took = seed_state(out / "crawl.db", opts, port)
            size = sum(p.stat().st_size for p in out.glob("crawl.db*")) / 1e6
            print(
                f"crawl.db: {opts.urls:,} known URLs over {opts.hosts:,} hosts, {opts.due:,} "
                f"due now ({size:.0f} MB, written in {took:.0f} s)"
            )
            before = answered[:]
            resume = [
                "--resume",
                "--recrawl",
                "--revisit-spare",
                str(opts.spare),
                "--out",
                str(out),
            ]
            seconds = await crawl(*WEB, *polite, *resume, "--max-duration", str(opts.seconds))
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            stats = json.loads((out / "stats.json").read_text())
            revisits = stats["revisits"]
            print(
                f"--resume --recrawl for {seconds:.0f} s: {answered[0] - before[0]:,} revisits "
                f"answered 304, {answered[1] - before[1]:,} 200; results {revisits['results']}, "
                f"backlog {revisits['backlog']:,}"
            )
            print(
                f"peak RSS {peak:.0f} MB (stats.json: {stats['peak_rss_mb']:.0f} MB); "
                f"target < 500 MB: {'met' if peak < 500 else 'missed'}"
            )
    finally:
        await runner.cleanup()


def parse() -> argparse.Namespace:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--due", type=int, default=50_000, help="revisits due at the start")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--spare", type=float, default=0.0, help="--revisit-spare of the resumed crawl"
    )
    parser.add_argument("--keep", type=Path, help="a folder to leave crawl.db in (not removed)")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))

"""Hostile pages through whole crawls, focused and plain: what each shape costs the crawler.

For each shape (the markup guard's worst, ``bench_guard.py``'s, each after a link, and pages of
links nested over a big text, which the focus reads for their texts), two crawls of one site
served over loopback (``--port``): ``/`` links to the hostile page and to an ordinary page; one
crawl plain, one with ``--focus-phrase``. Each crawl runs in a child process of its own and
prints: the crawl's wall seconds, the crawler's CPU seconds (its own; its parse workers'
apart), its peak memory (and its workers' peak), the longest the event loop was late on a 5 ms
timer (a stall: claim renewals and heartbeats wait that long), and the hostile page's flags and
outlinks. ``ordinary`` is a site without a hostile page: the floor.

``--docs DIR`` crawls ordinary pages instead, the same figures: ``DIR`` served as it is (a
documentation package's HTML, whose big pages go to the sandbox), ``--pages`` of it from
``--seed`` (its flags column: the pages over 64 KiB crawled).

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/bench_focus_hostile.py --port 19350
        [--shapes NAME ...] [--modes plain focused] [--timeout 120] [--json]
        [--docs /usr/share/doc/python3-doc/html --seed /library/index.html --pages 400]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_guard import HOSTILE as GUARD_SHAPES

MB = 1024 * 1024
LINK = b'<a href="/kept">kept</a>'
PHRASE = "database transactions, isolation levels and locking"
TICK_S = 0.005


def _nested_links(depth: int, inner: bytes) -> bytes:
    """``depth`` links each in a ``<div>`` nested in the last, around ``inner``."""
    opening = b"".join(b'<div><a href="/l%d">link %d</a>' % (i, i) for i in range(depth))
    return b"<html><body>" + opening + inner + b"</div>" * depth + b"</body></html>"


SHAPES: dict[str, Callable[[], bytes]] = {
    "ordinary": lambda: b"<p>nothing hostile</p>",
    "500 links nested over 8 MB of text": lambda: _nested_links(500, b"word " * (8 * MB // 5)),
    "5,000 links nested 2 deep, 8 MB": lambda: b"".join(
        b'<ul><li><a href="/x%d">about locking %d</a> ' % (i, i) + b"words " * 270 + b"</ul>"
        for i in range(5000)
    ),
    **{name: lambda make=make: LINK + make() for name, make in GUARD_SHAPES.items()},
}


def _site(shape: bytes) -> dict[str, bytes]:
    ordinary = (
        b"<html><body><h1>After</h1><p>" + b"An ordinary page. " * 200 + b"</p></body></html>"
    )
    return {
        "/": b'<a href="/hostile">hostile</a> <a href="/after">after</a>',
        "/hostile": shape,
        "/after": ordinary,
        "/kept": b"<p>kept</p>",
    }


def serve(port: int, pages: dict[str, bytes]) -> ThreadingHTTPServer:
    """``pages`` served on 127.0.0.1:``port`` from a thread (text/html; a 404 otherwise)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_dir(port: int, root: Path) -> ThreadingHTTPServer:
    """The files under ``root`` served on 127.0.0.1:``port`` from a thread."""

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Handler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def _ticking(late: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + TICK_S
        await asyncio.sleep(TICK_S)
        late[0] = max(late[0], loop.time() - due)


async def _crawl(port: int, focused: bool, out: Path, seed: str, pages: int) -> dict[str, Any]:
    from gossamer.crawl import run_crawl
    from gossamer.settings import load_settings

    settings: dict[str, Any] = {
        "out": out,
        "seeds": [f"http://127.0.0.1:{port}{seed}"],
        "robots": False,
        "quiet": True,
        "delay": 0,
    }
    if pages:
        settings |= {"max_pages": pages, "concurrency": 16}
    else:
        settings["max_depth"] = 1  # the hostile page's links are not fetched
    if focused:
        settings["focus_phrase"] = PHRASE
    late = [0.0]
    ticker = asyncio.create_task(_ticking(late))
    started, cpu = time.monotonic(), time.process_time()
    stats = await run_crawl(load_settings(settings, env={}))
    wall, cpu = time.monotonic() - started, time.process_time() - cpu
    ticker.cancel()
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    hostile = next((r for r in records if r["url"].endswith("/hostile")), {})
    if pages:
        big = sum((r.get("bytes") or 0) > 64 * 1024 for r in records)
        hostile = {"flags": [f"{big} pages over 64 KiB"]}
    own, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "workers_cpu_s": round(workers.ru_utime + workers.ru_stime, 2),
        "peak_mb": own.ru_maxrss // 1024,
        "workers_peak_mb": workers.ru_maxrss // 1024,
        "stall_s": round(late[0], 3),
        "pages": stats.pages,
        "flags": hostile.get("flags") or [],
        "outlinks": hostile.get("outlinks"),
        "error": hostile.get("error"),
        "sandbox": stats.parse_sandbox,
    }


def child(port: int, focused: bool, seed: str, pages: int) -> None:
    with tempfile.TemporaryDirectory() as out:
        print(json.dumps(asyncio.run(_crawl(port, focused, Path(out) / "out", seed, pages))))


def one(shape: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One crawl of ``shape``'s site (or of ``--docs``), in a child process."""
    port, timeout = args.port, args.timeout
    server = serve_dir(port, args.docs) if args.docs else serve(port, _site(SHAPES[shape]()))
    seed, pages = (args.seed, args.pages) if args.docs else ("/", 0)
    command = [sys.executable, __file__, "--child", mode, "--port", str(port), "--seed", seed]
    command += ["--pages", str(pages)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except subprocess.TimeoutExpired:
        return {"wall_s": f">{timeout:.0f}"}
    except subprocess.CalledProcessError as failed:
        return {"failed": failed.stderr.strip().splitlines()[-1:]}
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES))
    parser.add_argument(
        "--modes", nargs="+", choices=("plain", "focused"), default=["plain", "focused"]
    )
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--docs", type=Path, help="crawl this directory's pages instead")
    parser.add_argument("--seed", default="/library/index.html", help="with --docs")
    parser.add_argument("--pages", type=int, default=400, help="with --docs")
    parser.add_argument("--child", choices=("plain", "focused"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.port, args.child == "focused", args.seed, args.pages)
        return
    found: dict[str, dict[str, Any]] = {}
    print(f"{'shape':44s} {'mode':8s}  wall s  cpu s  workers  peak MB  stall s  flags")
    for shape in [str(args.docs)] if args.docs else args.shapes:
        for mode in args.modes:
            figures = found.setdefault(shape, {})[mode] = one(shape, mode, args)
            if "cpu_s" not in figures:
                print(f"{shape[:44]:44s} {mode:8s}  {figures}", flush=True)
                continue
            print(
                f"{shape[:44]:44s} {mode:8s} {figures['wall_s']:7.2f} {figures['cpu_s']:6.2f} "
                f"{figures['workers_cpu_s']:8.2f} {figures['peak_mb']:5d}/"
                f"{figures['workers_peak_mb']:<5d} {figures['stall_s']:7.3f}  "
                f"{','.join(figures['flags'])} "
                f"{figures['outlinks'] or ''} {figures['error'] or ''}",
                flush=True,
            )
    if args.json:
        print(json.dumps(found))


if __name__ == "__main__":
    main()

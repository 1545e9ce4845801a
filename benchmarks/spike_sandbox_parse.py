"""Spike: parse pages unguarded in a sandboxed worker process instead of guarding them.

Built into the crawler since (:mod:`gossamer.parse.sandbox`, :mod:`gossamer.page.sandboxed`:
pages of more than 4,096 ``<``, one worker by default, bodies through shared memory); kept for its
comparisons of the ways (in-process, forked, forkserver, stdio from asyncio).

The markup guard (``gossamer.parse.guard``) bounds lexbor's hostile shapes before parsing, at
about lexbor's own cost again on big real pages. The alternative measured here: no pre-checks,
lexbor's parse plus the links (``parse_html`` with the guard taken out) in a persistent worker
process fed over a pipe, each page under a CPU budget of 50 ms + 20 ms per 100 KB, set in the
worker with ``setitimer(ITIMER_PROF)`` and no handler (SIGPROF's default action ends the
process: the budget holds even inside lexbor's C code, and it is CPU, so a loaded machine does
not kill ordinary pages as a wall-clock deadline would), memory bounded by ``RLIMIT_AS``. The
parent sees the pipe close, records ``parse-timeout`` and starts a new worker.

Over the pages of the given directories (default: every second page of python3-doc), CPU ms
per page, each page's least of ``--repeat`` passes, by size bucket (``<`` per page):

- ``lexbor``: lexbor's parse alone;
- ``floor``: ``parse_html`` without the guard (lexbor, charset, title, robots, links), in-process;
- ``guarded``: ``parse_html`` as it is (the guard's routes), in-process;
- ``sandbox``: the floor in the worker, plus the parent's side (pipe, encoding), both
  processes' CPU (the parent's ``thread_time``, the worker's own per request; the pass totals
  from ``/proc/PID/stat`` are printed beside);
- hybrids: pages under 16 KiB, or of at most N ``<``, parsed in-process guarded, the rest in
  the sandbox.

Then the cost of encoding a body in and the results out (pickle, marshal; raw bytes in), the
time to start a worker again after a kill (fork, forkserver with the parser preloaded, spawn),
and a few of the worst hostile shapes sent to the sandbox.

Run: ``python benchmarks/spike_sandbox_parse.py [DIR ...] [--step 2] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import marshal
import multiprocessing
import os
import pickle
import resource
import signal
import statistics
import struct
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from subprocess import PIPE
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from gossamer.parse import guard, links

BASE = "https://docs.python.org/3/"
BUDGET_S = 0.050
BUDGET_PER_100KB_S = 0.020
MEMORY_LIMIT = 1 << 30
TICK = os.sysconf("SC_CLK_TCK")
HYBRID_TAGS = 4096
"""``--only hybrid``: pages of at most this many ``<`` parsed in-process (guarded), the rest in
the sandbox; counting them is cheap (``route`` itself would run the costly checks)."""
BUCKETS = ((0, 4096), (4096, 16_384), (16_384, 1 << 62))


def unguarded_parse_html(body: bytes, url: str) -> links.ParsedPage:
    """``parse_html`` with lexbor parsing the document as it is."""
    real = links.parse
    links.parse = lambda document: guard._lexbor(document, ())
    try:
        return links.parse_html(body, url)
    finally:
        links.parse = real


BUDGET_SCALE = float(os.environ.get("SPIKE_BUDGET_SCALE", "1"))
"""Under valgrind (50 times slower) the budget needs scaling: ``SPIKE_BUDGET_SCALE=100``."""


def budget(size: int) -> float:
    """The CPU seconds a page of ``size`` bytes may take."""
    return (BUDGET_S + BUDGET_PER_100KB_S * size / 100_000) * BUDGET_SCALE


def serve(conn: Connection, codec: str) -> None:
    """The worker: pages in (url, then body), results out; dies of SIGPROF past the budget."""
    keep_heap()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    dump = marshal.dumps if codec == "marshal" else pickle.dumps
    conn.send_bytes(b"ready")
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            return
        if message == b"\0":  # stop (a forked worker holds the parent's end too: no EOF)
            return
        started = time.thread_time_ns()
        url, body = message.decode(), conn.recv_bytes()
        if not url:  # an empty round trip, for its cost
            conn.send_bytes(dump((None, 0)))
            continue
        signal.setitimer(signal.ITIMER_PROF, budget(len(body)))
        page = unguarded_parse_html(body, url)
        signal.setitimer(signal.ITIMER_PROF, 0)
        result = (page.links, page.title, page.meta_noindex, page.meta_nofollow, page.flags)
        conn.send_bytes(dump((result, time.thread_time_ns() - started)))


def serve_stdio() -> None:
    """The worker as ``gossamer.extract.pdf``'s are run (``python FILE --worker``, stdin and
    stdout): a request is a 4-byte URL length, an 8-byte body length, the URL and the body."""
    keep_heap()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while head := stdin.read(12):
        url_size, body_size = struct.unpack(">IQ", head)
        url, body = stdin.read(url_size).decode(), stdin.read(body_size)
        signal.setitimer(signal.ITIMER_PROF, budget(len(body)))
        page = unguarded_parse_html(body, url)
        signal.setitimer(signal.ITIMER_PROF, 0)
        answer = marshal.dumps((page.links, page.title, page.meta_noindex, page.meta_nofollow))
        stdout.write(struct.pack(">I", len(answer)) + answer)
        stdout.flush()


async def asyncio_pass(pages: list[tuple[str, bytes, int]], repeat: int) -> tuple[float, float]:
    """The pages through one stdio worker from an asyncio loop, as ``PdfPool`` asks its
    workers: the least pass's CPU seconds of the parent and of the worker (/proc)."""
    worker = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--worker", stdin=PIPE, stdout=PIPE
    )
    assert worker.stdin is not None and worker.stdout is not None
    best_parent = best_worker = float("inf")
    for _ in range(repeat):
        parent, child = proc_cpu(os.getpid()), proc_cpu(worker.pid)
        for url, body, _ in pages:
            encoded = url.encode()
            worker.stdin.write(struct.pack(">IQ", len(encoded), len(body)) + encoded)
            worker.stdin.write(body)
            await worker.stdin.drain()
            (size,) = struct.unpack(">I", await worker.stdout.readexactly(4))
            marshal.loads(await worker.stdout.readexactly(size))
        best_parent = min(best_parent, proc_cpu(os.getpid()) - parent)
        best_worker = min(best_worker, proc_cpu(worker.pid) - child)
    worker.stdin.close()
    await worker.wait()
    return best_parent, best_worker


def keep_heap() -> None:
    """glibc keeps 64 MiB at the top of the heap (``MALLOC_TOP_PAD_``, as ``parsefloor.py``
    says): without it, freeing a tree can shrink the heap and the next parse faults it back."""
    libc = ctypes.CDLL(None)
    libc.mallopt(-2, 64 << 20)  # M_TOP_PAD
    libc.mallopt(-1, 128 << 20)  # M_TRIM_THRESHOLD


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Sandbox:
    """One worker process and its pipe; a new one after each kill."""

    def __init__(self, method: str, codec: str = "marshal") -> None:
        self.context = multiprocessing.get_context(method)
        if method == "forkserver":
            self.context.set_forkserver_preload([__name__, "selectolax.lexbor", "gossamer.parse"])
        self.codec = codec
        self.load = marshal.loads if codec == "marshal" else pickle.loads
        self.restarts: list[float] = []
        self.start()

    def start(self) -> float:
        """Start a worker; the wall seconds until it is ready."""
        started = time.perf_counter()
        self.conn, child = self.context.Pipe()
        self.process = self.context.Process(target=serve, args=(child, self.codec), daemon=True)
        self.process.start()
        child.close()
        self.conn.recv_bytes()
        return time.perf_counter() - started

    def close(self) -> None:
        """Let the worker end on its own (so that valgrind writes its counts)."""
        self.conn.send_bytes(b"\0")
        self.conn.close()
        self.process.join()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()

    def parse(self, url: str, body: bytes) -> tuple[Any, int] | None:
        """The worker's result and CPU ns, or None (``parse-timeout``: a new worker started)."""
        self.conn.send_bytes(url.encode())
        self.conn.send_bytes(body)
        if self.conn.poll(10 * budget(len(body)) + 2):
            try:
                return self.load(self.conn.recv_bytes())  # type: ignore[no-any-return]
            except EOFError:
                pass
        self.kill()
        self.restarts.append(self.start())
        return None


def load_pages(roots: list[Path], step: int) -> list[tuple[str, bytes, int]]:
    pages = []
    for root in roots:
        for path in sorted(root.rglob("*.html"))[::step]:
            body = path.read_bytes()
            pages.append((BASE + path.name, body, body.count(b"<")))
    return pages


def least(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return best


def in_process(pages: list[tuple[str, bytes, int]], repeat: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"lexbor": [], "floor": [], "guarded": []}
    for url, body, _ in pages:
        ways: dict[str, Callable[[], object]] = {
            "lexbor": lambda body=body: LexborHTMLParser(body),
            "floor": lambda body=body, url=url: unguarded_parse_html(body, url),
            "guarded": lambda body=body, url=url: links.parse_html(body, url),
        }
        for name, work in ways.items():
            figures[name].append(least(work, repeat))
    return figures


def sandboxed(
    pages: list[tuple[str, bytes, int]], repeat: int, codec: str
) -> tuple[list[float], list[float], float, float]:
    """Per page least parent and worker CPU seconds; and per pass, the parent's and the
    worker's CPU from /proc (least pass)."""
    box = Sandbox("forkserver", codec)
    parent = [float("inf")] * len(pages)
    child = [float("inf")] * len(pages)
    pass_parent = pass_child = float("inf")
    for _ in range(repeat):
        parent_before, child_before = proc_cpu(os.getpid()), proc_cpu(box.process.pid)
        for index, (url, body, _) in enumerate(pages):
            started = time.thread_time()
            answer = box.parse(url, body)
            parent[index] = min(parent[index], time.thread_time() - started)
            if answer is not None:
                child[index] = min(child[index], answer[1] / 1e9)
        pass_parent = min(pass_parent, proc_cpu(os.getpid()) - parent_before)
        pass_child = min(pass_child, proc_cpu(box.process.pid) - child_before)
    box.kill()
    return parent, child, pass_parent, pass_child


def bucket_of(tags: int) -> tuple[int, int]:
    return next(b for b in BUCKETS if b[0] < tags <= b[1] or (tags == 0 and b[0] == 0))


def report(pages: list[tuple[str, bytes, int]], columns: dict[str, list[float]]) -> None:
    names = list(columns)
    print("  {:14s} {:>5s} ".format("'<' per page", "pages") + "".join(f"{n:>11s}" for n in names))
    groups = {b: [i for i, p in enumerate(pages) if bucket_of(p[2]) == b] for b in BUCKETS}
    groups[(-1, -1)] = list(range(len(pages)))
    for (low, high), indices in groups.items():
        if not indices:
            continue
        label = "all" if low < 0 else f"{low + 1:,}-{high:,}" if high < 1 << 62 else f">{low:,}"
        row = "".join(f"{sum(columns[n][i] for i in indices) * 1e3:11.1f}" for n in names)
        print(f"  {label:14s} {len(indices):5d} {row}")


def ipc_codecs(pages: list[tuple[str, bytes, int]], repeat: int) -> None:
    """CPU ms over all pages to encode and decode the body in and the results out."""
    results = [
        (links.parse_html(body, url).links, "A title", False, False, ()) for url, body, _ in pages
    ]
    bodies = [(url, body) for url, body, _ in pages]
    ways: dict[str, Callable[[], object]] = {
        "body in, raw bytes (url, then body)": lambda: [
            (u.encode().decode(), b) for u, b in bodies
        ],
        "body in, pickle": lambda: [pickle.loads(pickle.dumps(x, 5)) for x in bodies],
        "results out, marshal": lambda: [marshal.loads(marshal.dumps(r)) for r in results],
        "results out, pickle": lambda: [pickle.loads(pickle.dumps(r, 5)) for r in results],
    }
    out = sum(len(marshal.dumps(r)) for r in results)
    body_bytes = sum(len(b) for _, b in bodies)
    print(
        f"IPC encoding, CPU ms over {len(pages)} pages ({body_bytes >> 20} MB in, {out >> 10}"
        " KB of results out), least of the passes"
    )
    for label, work in ways.items():
        print(f"  {label:36s} {least(work, repeat) * 1e3:8.1f}")


def round_trips(count: int) -> None:
    """CPU of both processes per request that does nothing: the fixed cost of a page."""
    box = Sandbox("forkserver")
    parent, child = proc_cpu(os.getpid()), proc_cpu(box.process.pid)
    started = time.thread_time()
    for _ in range(count):
        box.parse("", b"")
    mine = time.thread_time() - started
    parent, child = proc_cpu(os.getpid()) - parent, proc_cpu(box.process.pid) - child
    box.kill()
    print(
        f"empty round trip, us CPU each over {count}: parent {mine / count * 1e6:.0f} "
        f"(/proc {parent / count * 1e6:.0f}), worker (/proc) {child / count * 1e6:.0f}"
    )


def respawns(rounds: int) -> None:
    print(f"worker start after a kill, wall ms (median of {rounds}), parent CPU ms each")
    for method in ("fork", "forkserver", "spawn"):
        box = Sandbox(method)
        walls = []
        cpu_before = time.process_time()
        for _ in range(rounds):
            box.kill()
            walls.append(box.start())
        cpu = (time.process_time() - cpu_before) / rounds
        child = proc_cpu(box.process.pid)
        box.kill()
        print(
            f"  {method:11s} {statistics.median(walls) * 1e3:7.1f} ms wall, parent {cpu * 1e3:5.1f}"
            f" ms CPU, a new worker's own start {child * 1e3:5.0f} ms CPU (/proc, 10 ms ticks)"
        )


HOSTILE_SHAPES = (
    "<p><b c=N>x</p></i> at the limit",
    "1 MB of <p><b c=N>x</p>",
    "8,192 <br> of 60 new names, </x>",
    "10 MB of <div>",
    "10 MB of <ul><li>",
    "one tag of 10 MB",
    "160,000 distinct tag names",
    "10 MB nesting perfectly, 128 deep",
)


def hostile() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_guard import HOSTILE

    box = Sandbox("forkserver")
    print("hostile shapes in the sandbox (budget CPU s; wall s until answered or restarted)")
    for shape in HOSTILE_SHAPES:
        body = HOSTILE[shape]()
        started = time.perf_counter()
        answer = box.parse("http://example.com/", body)
        wall = time.perf_counter() - started
        outcome = "parse-timeout" if answer is None else f"{len(answer[0][0])} links"
        print(
            f"  {shape:36s} {len(body) >> 10:6d} KB budget {budget(len(body)):5.2f} s  "
            f"wall {wall:5.2f} s  {outcome}"
        )
    box.kill()


def only(way: str, pages: list[tuple[str, bytes, int]]) -> None:
    """One pass of one way, for instruction counts of every process (callgrind's
    ``--trace-children=yes``); ``none`` loads the pages only, the baseline to subtract."""
    box = Sandbox("fork") if way in ("sandbox", "hybrid") else None
    for url, body, tags in pages:
        if way == "floor":
            unguarded_parse_html(body, url)
        elif way == "guarded" or (way == "hybrid" and tags <= HYBRID_TAGS):
            links.parse_html(body, url)
        elif box is not None:
            box.parse(url, body)
    if box is not None:
        box.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "roots", nargs="*", default=[Path("/usr/share/doc/python3-doc/html")], type=Path
    )
    parser.add_argument("--step", type=int, default=2, help="every Nth page (2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-hostile", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", choices=("none", "floor", "guarded", "sandbox", "hybrid"), help="one pass only"
    )
    args = parser.parse_args()
    if args.worker:
        serve_stdio()
        return
    keep_heap()
    pages = load_pages(args.roots, args.step)
    if args.only:
        only(args.only, pages)
        return
    print(
        f"{len(pages)} pages, {sum(len(b) for _, b, _ in pages) >> 20} MB; load "
        f"{os.getloadavg()[0]:.1f}; CPU ms, each page's least of {args.repeat}"
    )
    columns = in_process(pages, args.repeat)
    parent, child, pass_parent, pass_child = sandboxed(pages, args.repeat, "marshal")
    columns["sb.parent"] = parent
    columns["sb.worker"] = child
    columns["sandbox"] = [p + c for p, c in zip(parent, child, strict=True)]
    # (by the guard's route instead, the route's own checks on big pages would be left out)
    hybrids = {"hyb.<16KiB": lambda i: len(pages[i][1]) < 16_384}
    for limit in (4096, 16_384):
        hybrids[f"hyb.<={limit}"] = lambda i, limit=limit: pages[i][2] <= limit
    for label, inside in hybrids.items():
        columns[label] = [
            columns["guarded"][i] if inside(i) else columns["sandbox"][i] for i in range(len(pages))
        ]
    report(pages, columns)
    floor = sum(columns["floor"])
    for name in ("guarded", "sandbox", *hybrids):
        print(f"  {name:12s} {100 * (sum(columns[name]) / floor - 1):6.1f}% over the floor")
    print(
        f"  sandbox pass totals from /proc: parent {pass_parent * 1e3:.0f} ms, worker "
        f"{pass_child * 1e3:.0f} ms (least pass; 10 ms ticks)"
    )
    aio_parent, aio_worker = asyncio.run(asyncio_pass(pages, args.repeat))
    print(
        f"  stdio worker from asyncio (as PdfPool), pass totals from /proc: parent "
        f"{aio_parent * 1e3:.0f} ms, worker {aio_worker * 1e3:.0f} ms; sandbox "
        f"{100 * ((aio_parent + aio_worker) / floor - 1):.1f}% over the floor"
    )
    ipc_codecs(pages, args.repeat)
    round_trips(2000)
    respawns(10)
    if not args.no_hostile:
        hostile()


if __name__ == "__main__":
    main()

"""A slow web for the latency benchmark: H hosts ``h{i}.lat`` on one port, every page late.

Every page answers after exactly ``--latency`` seconds of server-side delay (a timer set when
the request head arrives; the response is written when it fires). ``/robots.txt`` and unknown
paths or hosts answer 404 at once. Pages are generated on demand and are deterministic from
``--seed``: ``/`` and ``/p{j}.html`` (``j < --pages``), 2-5 KB of HTML with 10-20 links, half
to random pages of the same host (root-relative), half to random pages of other hosts
(absolute, with the port), so a crawl fans out across all hosts within a few hops.

The server is plain asyncio protocols (no per-request coroutine), in ``--procs`` worker
processes sharing the port with SO_REUSEPORT. Each worker logs every request's start (head
parsed), end (response written, or connection lost) and host. On SIGTERM (or after
``--max-seconds``) the workers stop and the parent merges their logs into ``--stats`` (JSON):
request counts, the maximum concurrent requests in all and per host (exact, from the merged
intervals), the number in flight sampled every 10 ms over the same intervals and its mean
over the steady part (between the starts of 10% and of 90% of the requests), the throughput
there and how long pages were held (to show the server kept its timers on time).

``--probe SECONDS`` runs a load generator instead: ``--concurrency`` keep-alive connections
requesting pages in a loop, to measure whether a server reaches concurrency / latency req/s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import queue
import random
import re
import resource
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_HOST = re.compile(rb"h(\d+)\.lat(?::\d+)?$", re.IGNORECASE)
_PAGE = re.compile(rb"/(?:p(\d+)\.html)?$")
_WORDS = ("latency", "crawler", "host", "page", "link", "slow", "timer", "event", "loop", "queue")
_FILLER = " ".join(random.Random(0).choice(_WORDS) for _ in range(1200))
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nContent-Type: text/plain\r\n\r\n"
SAMPLE_EVERY = 0.01


@dataclass(frozen=True)
class Web:
    """The generated web: ``hosts`` hosts of ``pages`` pages each, links from ``seed``."""

    hosts: int
    pages: int
    port: int
    seed: int = 1

    def seeds(self, count: int) -> list[str]:
        """Home pages of the first ``count`` hosts."""
        return [f"http://h{i}.lat:{self.port}/" for i in range(min(count, self.hosts))]

    def page(self, host: int, page: int) -> bytes:
        """The HTML of one page (``page`` 0 is ``/``)."""
        rng = random.Random(self.seed * 1_000_003 + host * 10_007 + page)
        links = []
        for k in range(rng.randint(10, 20)):
            target = rng.randrange(self.pages)
            if k % 2 == 0:
                links.append(f"/p{target}.html")
            else:
                other = rng.randrange(self.hosts)
                links.append(f"http://h{other}.lat:{self.port}/p{target}.html")
        start = rng.randrange(len(_FILLER) // 2)
        text = _FILLER[start : start + rng.randint(1200, 3800)]
        anchors = "\n".join(f'<li><a href="{url}">link {n}</a></li>' for n, url in enumerate(links))
        return (
            f"<!doctype html>\n<html><head><title>h{host} page {page}</title></head>\n"
            f"<body><h1>Host {host}, page {page}</h1>\n<p>{text}</p>\n<ul>\n{anchors}\n</ul>"
            "</body></html>\n"
        ).encode()


def response(body: bytes) -> bytes:
    """A 200 text/html response with keep-alive."""
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}"
    )
    return head.encode() + b"\r\n\r\n" + body


class Recorder:
    """One worker's request log: start, end and host per request, plus live counters."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.hosts: list[int] = []
        self.pages = self.robots = self.other = self.connections = 0

    def begin(self, host: int) -> int:
        """A request started; its index in the log."""
        self.starts.append(time.monotonic())
        self.ends.append(np.nan)
        self.hosts.append(host)
        return len(self.starts) - 1

    def end(self, index: int) -> None:
        """A request ended (answered, or its connection went away)."""
        if np.isnan(self.ends[index]):
            self.ends[index] = time.monotonic()

    def save(self, path: Path) -> None:
        """Write the log and counters as a ``.npz`` file."""
        np.savez(
            path,
            starts=np.array(self.starts),
            ends=np.array(self.ends),
            hosts=np.array(self.hosts, dtype=np.int64),
            counts=np.array([self.pages, self.robots, self.other, self.connections]),
        )


class _Connection(asyncio.Protocol):
    """One keep-alive connection: parses request heads, answers pages when their timer fires."""

    def __init__(self, web: Web, latency: float, log: Recorder) -> None:
        self._web, self._latency, self._log = web, latency, log
        self._buffer = bytearray()
        self._pending: dict[int, asyncio.TimerHandle] = {}
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._log.connections += 1

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while (end := buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(buffer[:end])
            del buffer[: end + 4]
            self._request(head)
        if len(buffer) > 65536 and self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        for index, timer in self._pending.items():
            timer.cancel()
            self._log.end(index)
        self._pending.clear()

    def _request(self, head: bytes) -> None:
        line, _, rest = head.partition(b"\r\n")
        parts = line.split(b" ")
        host = _host_index(rest, self._web.hosts)
        path = parts[1] if len(parts) == 3 else b""
        page = _PAGE.match(path)
        number = int(page.group(1) or 0) if page else -1
        if host is None or not 0 <= number < self._web.pages:
            self._log.robots += path == b"/robots.txt"
            self._log.other += path != b"/robots.txt"
            self._log.end(self._log.begin(-1 if host is None else host))
            self._write(_NOT_FOUND)
            return
        self._log.pages += 1
        index = self._log.begin(host)
        body = response(self._web.page(host, number))
        loop = asyncio.get_running_loop()
        self._pending[index] = loop.call_later(self._latency, self._answer, index, body)

    def _answer(self, index: int, body: bytes) -> None:
        del self._pending[index]
        self._write(body)
        self._log.end(index)

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)


def _host_index(headers: bytes, hosts: int) -> int | None:
    for header in headers.split(b"\r\n"):
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"host":
            match = _HOST.match(value.strip())
            number = int(match.group(1)) if match else -1
            return number if 0 <= number < hosts else None
    return None


def listening_socket(port: int) -> socket.socket:
    """A loopback listening socket with SO_REUSEPORT, so several workers share the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    return sock


async def _serve(
    web: Web, latency: float, log: Recorder, ready: mp.Queue[int], lifetime: float
) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    server = await loop.create_server(
        lambda: _Connection(web, latency, log), sock=listening_socket(web.port)
    )
    ready.put(os.getpid())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), lifetime)
    server.close()


def worker(web: Web, latency: float, path: Path, ready: mp.Queue[int], lifetime: float) -> None:
    """One server process: serve until SIGTERM (or ``lifetime`` seconds), then save the request
    log to ``path``."""
    log = Recorder()
    asyncio.run(_serve(web, latency, log, ready, lifetime))
    log.save(path)


def peak_concurrency(starts: np.ndarray, ends: np.ndarray, hosts: np.ndarray) -> tuple[int, int]:
    """The most requests open at once, in all and on any one host (host -1 ignored)."""
    times = np.concatenate([ends, starts])
    deltas = np.concatenate([np.full(ends.size, -1), np.ones(starts.size, dtype=np.int64)])
    keys = np.concatenate([hosts, hosts])
    total = int(np.cumsum(deltas[np.lexsort((deltas, times))]).max())
    order = np.lexsort((deltas, times, keys))  # an end sorts before a start at the same time
    level = np.cumsum(deltas[order])  # each host's events sum to 0, so this counts per host
    groups = np.flatnonzero(np.r_[True, np.diff(keys[order]) != 0])
    per_host = np.maximum.reduceat(level, groups)[keys[order][groups] >= 0]
    return total, int(per_host.max(initial=0))


def in_flight(starts: np.ndarray, ends: np.ndarray, low: float, high: float) -> np.ndarray:
    """Requests open at every ``SAMPLE_EVERY`` seconds from ``low`` to ``high`` (sorted input)."""
    grid = np.arange(low, high, SAMPLE_EVERY)
    opened = np.searchsorted(starts, grid, "right")
    return np.asarray(opened - np.searchsorted(ends, grid, "right"))


def summarise(paths: list[Path], latency: float) -> dict[str, object]:
    """Merge the workers' logs into the figures described in the module doc."""
    logs = [np.load(p) for p in paths]
    starts, ends, hosts = (
        np.concatenate([g[k] for g in logs]) for k in ("starts", "ends", "hosts")
    )
    counts = sum(g["counts"] for g in logs)
    ends = np.where(np.isnan(ends), time.monotonic(), ends)
    figures: dict[str, object] = {"requests": int(starts.size), "pages": int(counts[0])}
    figures |= {"robots": int(counts[1]), "other": int(counts[2]), "connections": int(counts[3])}
    if starts.size == 0:
        return figures
    figures["max_in_flight"], figures["max_per_host"] = peak_concurrency(starts, ends, hosts)
    held = (ends - starts)[hosts >= 0]
    held = held[held > latency / 2] if latency > 0 else held
    starts, ends = np.sort(starts), np.sort(ends)
    low, high = np.quantile(starts, [0.1, 0.9])
    steady = in_flight(starts, ends, low, high)
    whole = in_flight(starts, ends, starts[0], ends[-1])
    seconds = np.array_split(whole, max(1, whole.size // round(1 / SAMPLE_EVERY)))
    done = np.count_nonzero((ends >= low) & (ends < high))
    return figures | {
        "steady_seconds": float(high - low),
        "steady_mean_in_flight": float(steady.mean()) if steady.size else 0.0,
        "steady_requests_per_second": float(done / (high - low)) if high > low else 0.0,
        "hold_mean_ms": float(held.mean() * 1000) if held.size else 0.0,
        "hold_p99_ms": float(np.quantile(held, 0.99) * 1000) if held.size else 0.0,
        "in_flight_by_second": [round(float(chunk.mean()), 1) for chunk in seconds],
    }


def check_port_free(port: int) -> None:
    """Refuse a port already listened on: SO_REUSEPORT would quietly share it with a stale
    server (of another latency) instead of failing."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise SystemExit(f"latency server: port {port} is taken: {exc.strerror}") from None


def serve(web: Web, latency: float, procs: int, stats: Path, max_seconds: float) -> None:
    """Run the workers until SIGTERM/SIGINT or ``max_seconds``; write ``stats``."""
    check_port_free(web.port)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    context = mp.get_context("fork")
    ready: mp.Queue[int] = context.Queue()
    paths = [stats.with_name(f"{stats.stem}.worker{k}.npz") for k in range(procs)]
    lifetime = max_seconds + 30
    workers = [
        context.Process(target=worker, args=(web, latency, p, ready, lifetime)) for p in paths
    ]
    for process in workers:
        process.start()
    try:
        for _ in workers:
            ready.get(timeout=20)
    except queue.Empty:
        for process in workers:
            process.kill()
        raise SystemExit("latency server: a worker did not start") from None
    print(f"ready: {procs} worker(s) on 127.0.0.1:{web.port}", flush=True)
    signal.sigtimedwait({signal.SIGTERM, signal.SIGINT}, max_seconds)
    for process in workers:
        if process.pid is not None:
            os.kill(process.pid, signal.SIGTERM)
    for process in workers:
        process.join(30)
    figures = summarise([p for p in paths if p.exists()], latency)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    figures |= {"latency": latency, "procs": procs, "hosts": web.hosts, "pages_per_host": web.pages}
    stats.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


async def probe(web: Web, concurrency: int, seconds: float) -> float:
    """Requests per second answered to ``concurrency`` keep-alive clients in a loop."""
    deadline = time.monotonic() + seconds
    rng = random.Random(2)

    async def client(number: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", web.port)
        done = 0
        while time.monotonic() < deadline:
            host, page = number % web.hosts, rng.randrange(web.pages)
            writer.write(f"GET /p{page}.html HTTP/1.1\r\nHost: h{host}.lat\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            done += 1
        writer.close()
        return done

    started = time.monotonic()
    total = sum(await asyncio.gather(*(client(n) for n in range(concurrency))))
    return total / (time.monotonic() - started)


def main() -> None:
    """Serve (default) or probe, from the command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=600)
    parser.add_argument("--pages", type=int, default=40, help="pages per host")
    parser.add_argument("--port", type=int, default=18490)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per page")
    parser.add_argument("--procs", type=int, default=1, help="worker processes")
    parser.add_argument("--stats", type=Path, default=Path("latency-server.json"))
    parser.add_argument("--max-seconds", type=float, default=600.0, help="exit after this")
    parser.add_argument("--probe", type=float, metavar="SECONDS", help="run the load generator")
    parser.add_argument("--concurrency", type=int, default=1000, help="probe connections")
    args = parser.parse_args()
    web = Web(args.hosts, args.pages, args.port, args.seed)
    if args.probe:
        rate = asyncio.run(probe(web, args.concurrency, args.probe))
        ideal = args.concurrency / args.latency
        print(f"probe: {rate:.0f} req/s with {args.concurrency} connections (ideal {ideal:.0f})")
        return
    serve(web, args.latency, args.procs, args.stats, args.max_seconds)


if __name__ == "__main__":
    sys.exit(main())

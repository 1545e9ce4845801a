"""Big pages parsed in worker processes, each page under a CPU budget and a memory limit.

The guard (:mod:`gossamer.parse.guard`) keeps lexbor out of its quadratic cases by reading a
big document in Python first, at about lexbor's own cost again on big real pages. The sandbox
bounds the same hostile markup another way: lexbor parses the page as it is, in a long-lived
worker process (``python -m MODULE``, the module calling :func:`serve` with its job) whose
CPU per page is capped by ``setitimer(ITIMER_PROF)`` with SIGPROF's default action (it ends
the process, even inside lexbor's C code; CPU, not wall time, so a loaded machine does not
end ordinary pages) at `budget` (50 ms and 20 ms per 100 KB of body), and whose address space
is capped (``RLIMIT_AS``). A worker that dies (its budget spent, its memory exhausted, a
crash) answers None: the caller parses the page the guarded way, in-process, and a new worker
is started for the next page. An ordinary page pays lexbor's parse, the pipe and the encoding
of its answer (a tenth of the parse on big real pages; ``benchmarks/spike_sandbox_parse.py``).

The workers' side is :mod:`gossamer.parse.worker` (no asyncio to import there). Workers
start on first use (at most ``workers`` at a time) and stay; `Sandbox.close` stops and
reaps them. None outlives the crawler: each asks Linux to kill it when its parent dies
(``PR_SET_PDEATHSIG``) and ends at the end of its standard input.

Protocol (the worker's standard input and output): a request is a 4-byte length of the
job's own request, an 8-byte length of the body, the request and the body; an answer a 4-byte
length and the job's answer (the page module's: :mod:`gossamer.page.sandboxed`, marshal).
Only this process writes requests; a job's answers must be decoded without running code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import NamedTuple

from gossamer.parse.worker import (
    ANSWER,
    BUDGET_PER_100KB_S,
    BUDGET_S,
    HEAD,
    MEMORY_MB,
    available,
    budget,
    serve,
)

__all__ = [
    "BUDGET_PER_100KB_S",
    "BUDGET_S",
    "MEMORY_MB",
    "Sandbox",
    "SandboxStats",
    "Unavailable",
    "available",
    "budget",
    "serve",
]

log = logging.getLogger(__name__)

_WALL_FACTOR = 20
_WALL_GRACE_S = 10.0
"""A worker that has not answered in this many times its page's budget, and this many seconds
more (a new one starting, a machine loaded to a standstill), is killed all the same."""


class Unavailable(Exception):
    """No worker could take a page: the sandbox is closed, or no process could start."""


class SandboxStats(NamedTuple):
    """What the sandbox did so far: pages sent to a worker, workers that died on a page
    (those pages parsed the guarded way), workers started."""

    pages: int = 0
    killed: int = 0
    started: int = 0


class Sandbox:
    """At most ``workers`` pages at a time, each in a worker process (``python -m module
    MEMORY FACTOR *args``) limited to `budget` CPU seconds (times ``budget_factor``, for a
    job that does more than parse the page) and ``memory_mb`` of address space."""

    def __init__(
        self,
        module: str,
        args: Sequence[str] = (),
        *,
        workers: int = 2,
        memory_mb: int = MEMORY_MB,
        budget_factor: float = 1.0,
    ) -> None:
        self._command = (
            sys.executable,
            "-m",
            module,
            str(memory_mb << 20),
            str(budget_factor),
            *args,
        )
        self._factor = budget_factor
        self._idle: list[asyncio.subprocess.Process] = []
        self._all: set[asyncio.subprocess.Process] = set()
        self._slots = asyncio.Semaphore(workers)
        self._closed = False
        self._pages = self._killed = self._started = 0

    async def ask(self, request: bytes, body: bytes) -> bytes | None:
        """The job's answer for ``request`` and ``body``, or None if the worker died on them:
        the caller parses the page another way. Raises `Unavailable` when no worker could
        take the page (the sandbox closed, or no process to be had)."""
        async with self._slots:
            if self.closed:
                raise Unavailable("the parse sandbox is closed")
            try:
                worker = self._idle.pop() if self._idle else await self._start()
            except OSError as error:  # no process to be had (a limit on processes or files)
                log.warning("no parse worker could start; the page is parsed in-process")
                raise Unavailable("no parse worker could start") from error
            answer = None
            try:
                wall = _WALL_FACTOR * budget(len(body), self._factor) + _WALL_GRACE_S
                async with asyncio.timeout(wall):
                    answer = await _exchange(worker, request, body)
            except (OSError, asyncio.IncompleteReadError, TimeoutError):
                pass
            finally:
                self._pages += 1
                if answer is None:  # died, or cancelled mid-page: its state is unknown
                    await self._discard(worker)
                elif self._closed:
                    await self._kill(worker)
                else:
                    self._idle.append(worker)
            return answer

    @property
    def closed(self) -> bool:
        """Whether `close` was called (pages asked since get None)."""
        return self._closed

    def stats(self) -> SandboxStats:
        """A frozen snapshot of the counts."""
        return SandboxStats(self._pages, self._killed, self._started)

    def json_stats(self) -> dict[str, int]:
        """The counts as the crawl's stats show them."""
        return self.stats()._asdict()

    async def close(self) -> None:
        """Stop every worker and reap it (its CPU then counts in this process's children's)."""
        self._closed = True
        for worker in list(self._idle):
            self._idle.remove(worker)
            self._all.discard(worker)
            assert worker.stdin is not None
            worker.stdin.close()  # the worker ends at the end of its input
            try:
                await asyncio.wait_for(worker.wait(), 5.0)
            except TimeoutError:
                await self._kill(worker)
        for worker in list(self._all):  # busy ones: their pages fall back
            await self._kill(worker)

    async def _start(self) -> asyncio.subprocess.Process:
        worker = await asyncio.create_subprocess_exec(
            *self._command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self._all.add(worker)
        self._started += 1
        return worker

    async def _discard(self, worker: asyncio.subprocess.Process) -> None:
        """A worker that died on its page (or may be mid-page): killed if need be, reaped."""
        if worker not in self._all:
            return
        code = await self._kill(worker)
        self._killed += 1
        log.info("parse worker %d ended on a page (exit %s); another will start", worker.pid, code)

    async def _kill(self, worker: asyncio.subprocess.Process) -> int:
        self._all.discard(worker)
        # os.kill, not worker.kill(): Popen.send_signal polls first, which can reap a worker
        # that just died before asyncio's child watcher does (which then logs "Unknown child
        # process" and reports 255). Until the watcher reaps it, the pid is still the worker's.
        if worker.returncode is None and _running(worker.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
        return await asyncio.shield(worker.wait())


def _running(pid: int) -> bool:
    """Whether child ``pid`` has not exited (asked without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # reaped by asyncio's child watcher already
        return False


async def _exchange(worker: asyncio.subprocess.Process, request: bytes, body: bytes) -> bytes:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(HEAD.pack(len(request), len(body)) + request)
    worker.stdin.write(body)
    await worker.stdin.drain()
    (size,) = ANSWER.unpack(await worker.stdout.readexactly(ANSWER.size))
    return await worker.stdout.readexactly(size)

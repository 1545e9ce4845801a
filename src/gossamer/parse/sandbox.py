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
is started for the next page. So does a worker that makes no progress on its page (stopped
from outside: ``SIGSTOP``, a frozen cgroup), seen within `PROGRESS_S` or two: it is killed.
An ordinary page pays lexbor's parse, one copy of its body and the encoding of its answer.

The workers' side is :mod:`gossamer.parse.worker` (no asyncio to import there). Workers
start on first use (at most ``workers`` at a time) and stay; `Sandbox.close` stops and
reaps them. None outlives the crawler: each asks Linux to kill it when its parent dies
(``PR_SET_PDEATHSIG``) and ends at the end of its standard input. They are started with
:class:`subprocess.Popen` and watched by the event loop through their pipes and a pidfd: no
child watcher, no thread per worker.

Protocol: a page's body goes through memory the crawler shares with its worker alone (a
``memfd`` given as ``PAGES_FD``, grown to the biggest body, never shrunk: sealed so, since a
worker that shrank it would fault the crawler's writes), copied there once; a request, on the
worker's standard input, is a 4-byte length of the job's own request, an 8-byte length of the
body and the request; an answer, on its standard output, a 4-byte length and the job's answer
(the page module's: :mod:`gossamer.page.sandboxed`, marshal). Only this process writes
requests; a job's answers must be decoded without running code. Each is written in one
``write``; the answers' pipe stays registered with the event loop for the worker's life (read
as it comes into a buffer kept for it), and one timer per worker, not per page, looks at its
progress and its page's wall time while a page waits: a page costs the loop its write, one
read and the wake-up of its task (0.08 M instructions of the crawler's against 0.2 M).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import mmap
import os
import signal
import subprocess
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
    "PROGRESS_S",
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
more (a new one starting, a machine loaded to a standstill), is killed all the same (seen at
a look, within `PROGRESS_S`)."""
PROGRESS_S = 1.0
"""While a page waits, its worker's state is read this often (``/proc/PID/stat``): one
stopped (``T``, ``t``) is given up at once, one not running whose CPU time has not moved
since the last look (frozen) too."""
_PAGES_BYTES = 1 << 20
"""The shared memory a worker starts with (grown to the biggest body it is given)."""
_ANSWER_PIPE_BYTES = 1 << 20
"""Linux's default ceiling for a pipe's buffer (``/proc/sys/fs/pipe-max-size``): a big
page's answer in one read."""
_ANSWER_BYTES = 64 * 1024
"""The room an answer is read into (grown for a bigger one)."""
_CLOSE_S = 5.0
_BOOT = (
    "import gc, runpy, sys; gc.disable(); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)
"""A worker's start: its module run as ``python -m`` runs it, its imports with the collector
off (`serve` freezes what they built and turns it on): 9 M instructions of 249 M."""


class Unavailable(Exception):
    """No worker could take a page: the sandbox is closed, or no process could start."""


class SandboxStats(NamedTuple):
    """What the sandbox did so far: pages sent to a worker, workers that died on a page
    (those pages parsed the guarded way), workers started."""

    pages: int = 0
    killed: int = 0
    started: int = 0


class _Stalled(Exception):
    """The worker makes no progress on its page (stopped, or frozen)."""


class Sandbox:
    """At most ``workers`` pages at a time, each in a worker process (``python -m module
    MEMORY FACTOR PAGES_FD *args``, started by `_BOOT`) limited to `budget` CPU seconds
    (times ``budget_factor``, for a job that does more than parse the page) and
    ``memory_mb`` of address space."""

    def __init__(
        self,
        module: str,
        args: Sequence[str] = (),
        *,
        workers: int = 2,
        memory_mb: int = MEMORY_MB,
        budget_factor: float = 1.0,
    ) -> None:
        self._module, self._args = module, tuple(args)
        self._memory = memory_mb << 20
        self._factor = budget_factor
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._slots = asyncio.Semaphore(workers)
        self._closed = False
        self._pages = self._killed = self._started = 0

    async def ask(self, request: bytes, body: bytes) -> bytes | None:
        """The job's answer for ``request`` and ``body``, or None if the worker died on them
        (or stopped making progress): the caller parses the page another way. Raises
        `Unavailable` when no worker could take the page (the sandbox closed, or no process
        to be had)."""
        async with self._slots:
            if self.closed:
                raise Unavailable("the parse sandbox is closed")
            try:
                worker = self._idle.pop() if self._idle else self._start()
            except OSError as error:  # no process to be had (a limit on processes or files)
                log.warning("no parse worker could start; the page is parsed in-process")
                raise Unavailable("no parse worker could start") from error
            answer = None
            try:
                wall = _WALL_FACTOR * budget(len(body), self._factor) + _WALL_GRACE_S
                answer = await worker.exchange(request, body, wall)
            except (OSError, EOFError, _Stalled, TimeoutError):
                pass
            finally:
                self._pages += 1
                if answer is None:  # died, stalled, or cancelled mid-page: state unknown
                    await self._discard(worker)
                elif self._closed:
                    await self._end(worker)
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
            worker.stop()  # the worker ends at the end of its input
            try:
                await asyncio.wait_for(worker.reap(), _CLOSE_S)
            except TimeoutError:
                await worker.kill()
        for worker in list(self._all):  # busy ones: their pages fall back
            await self._end(worker)

    def _start(self) -> _Worker:
        command = (sys.executable, "-c", _BOOT, self._module, str(self._memory), str(self._factor))
        worker = _Worker.start(command, self._args)
        self._all.add(worker)
        self._started += 1
        return worker

    async def _discard(self, worker: _Worker) -> None:
        """A worker that died on its page (or may be mid-page): killed if need be, reaped."""
        if worker not in self._all:
            return
        code = await self._end(worker)
        self._killed += 1
        log.info("parse worker %d ended on a page (exit %s); another will start", worker.pid, code)

    async def _end(self, worker: _Worker) -> int:
        self._all.discard(worker)
        return await asyncio.shield(worker.kill())


class _Pages:
    """The memory a worker reads its pages' bodies from: a sealed ``memfd`` mapped here."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("gossamer-pages", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, _PAGES_BYTES)
            # Never shrunk, by anyone: a worker's ftruncate would fault our writes (SIGBUS).
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
            self._map = mmap.mmap(self.fd, _PAGES_BYTES)
        except BaseException:
            os.close(self.fd)
            raise

    def put(self, body: bytes) -> None:
        """Copy ``body`` to the start of the memory, grown first if it is too small."""
        if len(body) > len(self._map):
            size = max(len(body), 2 * len(self._map))
            os.ftruncate(self.fd, size)
            self._map.close()
            self._map = mmap.mmap(self.fd, size)
        self._map[: len(body)] = body

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)


class _Worker:
    """One worker process: its request and answer pipes (this process's ends, non-blocking;
    the answers' end watched by the event loop as long as the worker lives), its pages'
    memory and a pidfd that turns readable when it ends."""

    def __init__(
        self, process: subprocess.Popen[bytes], pidfd: int, pipes: tuple[int, int], pages: _Pages
    ) -> None:
        self.process, self.pid, self._pidfd = process, process.pid, pidfd
        self._requests, self._answers = pipes
        self._pages = pages
        self._answer = bytearray(_ANSWER_BYTES)
        self._got = 0
        """The bytes of the current answer in `_answer` so far."""
        self._cpu = -1
        self._deadline = 0.0
        self._looking: asyncio.TimerHandle | None = None
        self._pending: asyncio.Future[bytes] | None = None
        self._unsent = memoryview(b"")
        self._ended: BaseException | None = None
        self._released = False
        asyncio.get_running_loop().add_reader(self._answers, self._readable)

    @classmethod
    def start(cls, command: Sequence[str], args: Sequence[str]) -> _Worker:
        """Start ``command PAGES_FD *args`` (raises OSError when no process can start)."""
        pages = _Pages()
        ours: list[int] = []  # this process's ends (and, once started, the pidfd)
        theirs: list[int] = []
        try:
            request_in, requests = os.pipe()
            theirs.append(request_in)
            ours.append(requests)
            answers, answer_out = os.pipe()
            ours.append(answers)
            theirs.append(answer_out)
            with contextlib.suppress(OSError):  # a big page's answer in one read
                fcntl.fcntl(answers, fcntl.F_SETPIPE_SZ, _ANSWER_PIPE_BYTES)
            process = _spawn((*command, str(pages.fd), *args), request_in, answer_out, pages.fd)
        except BaseException:
            for fd in ours + theirs:
                os.close(fd)
            pages.close()
            raise
        for fd in theirs:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(process.pid)
        except OSError:  # no pidfd here (valgrind knows none): a thread waits for its end
            pidfd = -1
        for fd in ours:
            os.set_blocking(fd, False)
        return cls(process, pidfd, (requests, answers), pages)

    async def exchange(self, request: bytes, body: bytes, wall: float) -> bytes:
        """The answer to one page (EOFError if the worker ended, `_Stalled` if it stopped,
        TimeoutError past ``wall`` seconds)."""
        if self._ended is not None:
            raise EOFError("the parse worker ended") from self._ended
        self._pages.put(body)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bytes] = loop.create_future()
        self._pending = answer
        self._cpu, self._deadline = -1, loop.time() + wall
        if self._looking is None:
            self._looking = loop.call_later(PROGRESS_S, self._look)
        try:
            self._send(HEAD.pack(len(request), len(body)) + request)
            return await answer
        finally:
            self._pending = None

    def stop(self) -> None:
        """End the worker's input: it ends once it has answered."""
        with contextlib.suppress(OSError):
            os.close(self._requests)
        self._requests = -1

    async def kill(self) -> int:
        """Kill the worker (if it still runs), reap it; its exit status."""
        if self.process.returncode is None:  # not reaped: the pid is still the worker's
            with contextlib.suppress(ProcessLookupError):
                if self._pidfd >= 0:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
        return await self.reap()

    async def reap(self) -> int:
        """Wait for the worker to end, reap it and release what it held; its exit status."""
        if self.process.returncode is None and self._pidfd >= 0:
            loop = asyncio.get_running_loop()
            ended: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._pidfd, _settle, ended)
            try:
                await ended
            finally:
                loop.remove_reader(self._pidfd)
        elif self.process.returncode is None:  # no pidfd: a thread waits for it
            await asyncio.to_thread(self.process.wait)
        if not self._released:
            self._release()
        return self.process.wait()  # it has ended: no wait

    def _release(self) -> None:
        """Close what the worker held; a page still waiting on it gets EOFError (its
        descriptors unregistered here: their numbers may be another's by the time it runs)."""
        self._released = True
        self._fail(EOFError("the parse worker was killed"))
        if self._looking is not None:
            self._looking.cancel()
        loop = asyncio.get_running_loop()
        for fd in (self._answers, self._requests):
            if fd >= 0:
                loop.remove_reader(fd)
                loop.remove_writer(fd)
        for fd in (self._pidfd, self._answers, self._requests):
            if fd >= 0:
                os.close(fd)
        self._pages.close()

    def _send(self, request: bytes) -> None:
        """Write a request: at once (the worker has read the last one whole, so its pipe is
        empty), else the rest as the pipe takes it."""
        sent = 0
        with contextlib.suppress(BlockingIOError):
            sent = os.write(self._requests, request)
        if sent < len(request):
            self._unsent = memoryview(request)[sent:]
            asyncio.get_running_loop().add_writer(self._requests, self._writable)

    def _writable(self) -> None:
        try:
            self._unsent = self._unsent[os.write(self._requests, self._unsent) :]
        except BlockingIOError:
            return
        except OSError as error:
            self._unsent = memoryview(b"")
            self._end(error)
        if not self._unsent and not self._released:
            asyncio.get_running_loop().remove_writer(self._requests)

    def _readable(self) -> None:
        """Read what the worker wrote of its answer (its end of the pipe is watched as long
        as it lives: no registration per page); the page gets its answer once it is whole."""
        try:
            got = os.readv(self._answers, (memoryview(self._answer)[self._got :],))
        except BlockingIOError:
            return
        except OSError as error:
            self._end(error)
            return
        if not got or self._pending is None or self._pending.done():  # ended, or unasked
            self._end(EOFError("the parse worker ended"))
            return
        self._got += got
        if self._got >= ANSWER.size:
            self._answered()

    def _answered(self) -> None:
        (size,) = ANSWER.unpack_from(self._answer)
        whole = ANSWER.size + size
        if self._got < whole:
            if len(self._answer) < whole:  # room for it, but no more than twice what came
                more = min(whole, 2 * len(self._answer)) - len(self._answer)
                self._answer.extend(bytes(more))
            return
        if self._got > whole:
            self._end(EOFError("the parse worker answered more than it was asked"))
            return
        answer = bytes(memoryview(self._answer)[ANSWER.size : whole])
        self._got = 0
        if len(self._answer) > _ANSWER_PIPE_BYTES:  # a huge page's answer: not kept
            self._answer = bytearray(_ANSWER_BYTES)
        if self._pending is not None and not self._pending.done():
            self._pending.set_result(answer)

    def _end(self, error: BaseException) -> None:
        """The worker ended (or broke the protocol): its answers no longer watched, the page
        waiting on it (and any later one) gets ``error``."""
        self._ended = error
        if not self._released:
            asyncio.get_running_loop().remove_reader(self._answers)
        self._fail(error)

    def _fail(self, error: BaseException) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(error)

    def _look(self) -> None:
        """While a page waits: give it up if its wall time is out, or if the worker is
        stopped, or frozen (not running, its CPU time where it was at the last look); look
        again later. An idle worker is not looked at."""
        self._looking = None
        if self._pending is None or self._pending.done():
            return
        loop = asyncio.get_running_loop()
        if loop.time() >= self._deadline:
            log.info("parse worker %d has not answered in its wall time", self.pid)
            self._fail(TimeoutError())
            return
        state, cpu = _progress(self.pid)
        if state in ("T", "t") or (state not in ("R", "") and cpu == self._cpu):
            log.info("parse worker %d makes no progress (state %s)", self.pid, state)
            self._fail(_Stalled())
            return
        self._cpu = cpu
        self._looking = loop.call_later(PROGRESS_S, self._look)


def _spawn(command: Sequence[str], stdin: int, stdout: int, pages: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command, stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL, pass_fds=(pages,)
    )


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _progress(pid: int) -> tuple[str, int]:
    """A process's state (``R``, ``S``, ``T``...; "" if it cannot be read) and CPU ticks."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return "", -1
    return fields[0].decode("ascii", "replace"), int(fields[11]) + int(fields[12])

"""A parse sandbox's worker: its bounds, its loop and the protocol's framing (see
:mod:`gossamer.parse.sandbox`). Standard library only, so that a worker starts quickly."""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import resource
import signal
import struct
import sys
from collections.abc import Callable

__all__ = [
    "ANSWER",
    "BUDGET_PER_100KB_S",
    "BUDGET_S",
    "HEAD",
    "MEMORY_MB",
    "budget",
    "rest_of_budget",
    "serve",
]

BUDGET_S = 0.050
"""CPU seconds a page may take in a worker, and `BUDGET_PER_100KB_S` more per 100 KB."""
BUDGET_PER_100KB_S = 0.020
MEMORY_MB = 2048
"""A worker's address space (a 10 MB page's tree takes some 250 MB)."""
HEAD = struct.Struct(">IQ")
"""A request's head: the length of the job's request, then the body's."""
ANSWER = struct.Struct(">I")
"""An answer's head: its length."""
_SCALE = float(os.environ.get("GOSSAMER_PARSE_BUDGET_SCALE") or 1)
"""For instruction counts under valgrind (some 50 times slower): ``=100`` there."""
_MEMORY_EXIT = 3


def available() -> bool:
    """Whether workers can be bounded here (``ITIMER_PROF``, ``RLIMIT_AS``: Linux)."""
    return sys.platform.startswith("linux")


def budget(size: int, factor: float = 1.0) -> float:
    """The CPU seconds a page of ``size`` bytes may take in a worker (``factor`` times that
    for a job that does more than parse it)."""
    return (BUDGET_S + BUDGET_PER_100KB_S * size / 100_000) * factor * _SCALE


_rest: list[float] = [0.0]
"""The CPU seconds the current page's job has left after its parse (`rest_of_budget`)."""


def rest_of_budget() -> None:
    """Start the rest of the current page's budget: a job that does more than parse (the main
    text's extraction) calls this once the parse is done, so that a hostile page's parse is
    ended at one parse budget, not at the whole job's (the extraction gets the rest)."""
    signal.setitimer(signal.ITIMER_PROF, _rest[0])


def serve(job: Callable[[bytes, bytes], bytes]) -> None:
    """A worker's loop (``python -m MODULE MEMORY_BYTES BUDGET_FACTOR PAGES_FD ...``, the
    module giving its job): bound itself, then answer requests from standard input until it
    ends, each page's body read from the memory ``PAGES_FD`` shares with the crawler. Past
    its page's budget the process ends (SIGPROF); out of memory it exits. The parse gets one
    budget, the rest of the job (`rest_of_budget`) ``BUDGET_FACTOR`` minus one."""
    memory, factor, pages = int(sys.argv[1]), float(sys.argv[2]), _Pages(int(sys.argv[3]))
    _die_with_parent()
    _keep_heap()
    _batch()
    _tune_gc()
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C reaches the group: the crawler decides
    stdin, answers = sys.stdin.buffer, _answers_out()
    while len(head := stdin.read(HEAD.size)) == HEAD.size:
        request_size, body_size = HEAD.unpack(head)
        request, body = stdin.read(request_size), pages.read(body_size)
        _rest[0] = budget(body_size, max(factor - 1.0, 0.0))
        signal.setitimer(signal.ITIMER_PROF, budget(body_size))
        try:
            answer = job(request, body)
        except MemoryError:
            os._exit(_MEMORY_EXIT)
        signal.setitimer(signal.ITIMER_PROF, 0)
        del request, body
        _write_all(answers, ANSWER.pack(len(answer)) + answer)


def _write_all(fd: int, data: bytes) -> None:
    """``data`` written to ``fd`` in one ``write`` (a blocking pipe takes it all at once but
    for a signal between its parts): the crawler wakes once for an answer, head and all."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Pages:
    """The crawler's memory of pages' bodies (a ``memfd``), mapped read-only, again when a
    body is past what is mapped (the crawler grew it)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._map: mmap.mmap | None = None

    def read(self, size: int) -> bytes:
        """The body of ``size`` bytes at the start of the memory."""
        if size == 0:
            return b""
        if self._map is None or size > len(self._map):
            if self._map is not None:
                self._map.close()
            self._map = mmap.mmap(self._fd, 0, prot=mmap.PROT_READ)
        return self._map[:size]


def _answers_out() -> int:
    """The answers' descriptor: a copy of standard output kept for them alone, file
    descriptor 1 and ``sys.stdout`` pointed at standard error (the crawler's null device). A
    job's library that prints went into the answers: the crawler read its text as an answer's
    length and waited for it until the page's wall time ran out, for every page."""
    answers = os.dup(1)
    with contextlib.suppress(OSError):  # no standard error: prints go where they went
        os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the crawler dies (``kill -9`` leaves none behind)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the crawler died before the request took hold
        os._exit(0)


def _batch() -> None:
    """Run as a batch task (``SCHED_BATCH``): a request wakes the worker without preempting
    the crawler that wrote it, which goes on with its other pages until it waits. On a CPU
    the two share (the benchmarks pin them to one) the crawler sat preempted in its write
    for much of the parse, which a sampling profile counts as the write's (a page of 4 ms,
    on one CPU of a loaded machine: 1.3 to 1.9 ms in the write, 0.4 to 0.8 ms as a batch
    task; 8 us of CPU either way). Every budget is CPU time: none changes."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def _tune_gc() -> None:
    """Collect as the crawler does (`gossamer.crawl.run.tune_gc`): what the job's modules
    built is frozen out of the collector, young collections run less often. The main text of
    120 big real pages: 9.4 ms a page against 9.8-11.0 with the default thresholds. The
    collector is turned on: the sandbox starts a worker with it off for its imports."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    gc.enable()


def _keep_heap() -> None:
    """glibc keeps 64 MiB at the top of the heap: without it, freeing a big page's tree
    shrinks the heap and the next page faults it back in (as ``benchmarks/parsefloor.py``
    measures the floor)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-2, 64 << 20)  # M_TOP_PAD
        libc.mallopt(-1, 128 << 20)  # M_TRIM_THRESHOLD

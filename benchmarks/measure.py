"""Run one command pinned to a core and measure it: wall time, CPU time, peak RSS.

CPU time and peak RSS come from ``os.wait4`` on the child itself (the crawlers here are one
process each; ``taskset`` execs the command, so the child is the crawler). A watchdog kills
the child's process group when it outruns its time limit.

Linux starts a child's ``ru_maxrss`` at the high-water mark of the process that spawned it
(the parent's memory is the child's until it execs), so a benchmark that once held a lot, a
web generated in-process, say, would lend that peak to every crawler it starts. The high-water
mark of this process is reset (``/proc/self/clear_refs``) before each start: a child's figure
is its own, or at most this process's RSS at that moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measurement:
    """What one run of a command cost."""

    wall: float
    """Seconds from start to exit."""
    user: float
    system: float
    peak_rss_mb: float
    minor_faults: int
    """Page faults served without I/O: heap growth and shrink churn shows here."""
    returncode: int
    timed_out: bool
    core_busy: float | None
    """CPU seconds the pinned core spent on anything during the run (``/proc/stat``)."""

    @property
    def cpu(self) -> float:
        """User plus system CPU seconds."""
        return self.user + self.system

    @property
    def others(self) -> float | None:
        """CPU seconds other processes took on the pinned core during the run."""
        return None if self.core_busy is None else max(0.0, self.core_busy - self.cpu)


def core_busy_seconds(cpu: int | None) -> float | None:
    """Busy (not idle, not iowait) seconds of one core since boot; None when unknown."""
    if cpu is None:
        return None
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, *ticks = line.split()
        if name == f"cpu{cpu}":
            values = [int(t) for t in ticks]
            busy = sum(values[:8]) - values[3] - values[4]
            return busy / os.sysconf("SC_CLK_TCK")
    return None


def pinned(command: Sequence[str], cpu: int | None) -> list[str]:
    """``command`` under ``taskset -c cpu`` (unchanged when ``cpu`` is None)."""
    return ["taskset", "-c", str(cpu), *command] if cpu is not None else list(command)


def _forget_own_peak() -> None:
    """Reset this process's RSS high-water mark to its RSS now, so that a child started next
    does not inherit it as its ``ru_maxrss`` (Linux only; elsewhere nothing)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _sample_rss(pid: int, path: Path, stop: threading.Event, every: float = 1.0) -> None:
    """Append ``seconds<TAB>RSS MB<TAB>tree RSS MB`` every ``every`` seconds: the RSS of
    process ``pid``, and the sum over it and its descendants (a crawler's parse and PDF
    workers are processes of their own)."""
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as out:
        while not stop.wait(every):
            own = _rss_kb(pid)
            if own is None:
                return
            tree = own + sum(_rss_kb(child) or 0 for child in _descendants(pid))
            out.write(f"{time.perf_counter() - started:.1f}\t{own / 1024:.1f}\t{tree / 1024:.1f}\n")
            out.flush()


def _rss_kb(pid: int) -> int | None:
    """The resident set of ``pid`` in KiB; None once it has ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(
        (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
    )


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux's ``/proc/PID/task/TID/children``)."""
    found: list[int] = []
    waiting = [pid]
    while waiting:
        parent = waiting.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            waiting.extend(children)
    return found


def run_measured(
    command: Sequence[str],
    log: Path,
    *,
    cpu: int | None,
    timeout: float,
    rss_log: Path | None = None,
) -> Measurement:
    """Run ``command`` with output to ``log``; kill it after ``timeout`` seconds. With
    ``rss_log``, the command's RSS is sampled into that file every second."""
    busy_before = core_busy_seconds(cpu)
    with log.open("wb") as out:
        _forget_own_peak()
        started = time.perf_counter()
        process = subprocess.Popen(
            pinned(command, cpu),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        watchdog = threading.Timer(timeout, _kill_group, (process.pid,))
        watchdog.start()
        stop = threading.Event()
        if rss_log is not None:
            args = (process.pid, rss_log, stop)
            threading.Thread(target=_sample_rss, args=args, daemon=True).start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            _kill_group(process.pid)
            process.wait()
            raise
        finally:
            watchdog.cancel()
            stop.set()
        wall = time.perf_counter() - started
    busy_after = core_busy_seconds(cpu)
    process.returncode = os.waitstatus_to_exitcode(status)
    return Measurement(
        wall=wall,
        user=usage.ru_utime,
        system=usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        minor_faults=usage.ru_minflt,
        returncode=process.returncode,
        timed_out=wall >= timeout,
        core_busy=None if busy_before is None or busy_after is None else busy_after - busy_before,
    )

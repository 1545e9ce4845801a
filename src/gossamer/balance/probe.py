"""What a worker measures about itself for the balancer: its resources and its download rate.

`probe_capability` runs once as a worker starts: CPU cores and frequency, available memory
and a short write+fsync probe of the output directory (in a thread, well under a second).
`BandwidthMeter` is fed by the fetcher with every body chunk; its recent peak is the
worker's bandwidth. `capability_figures` and `live_figures` build the two dicts a heartbeat
carries (``figures["capability"]`` and ``figures["live"]``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gossamer.balance.capability import Capability, Live
from gossamer.fetch.http import FetchStats
from gossamer.stats import CrawlStats

__all__ = [
    "BandwidthMeter",
    "capability_figures",
    "cpu_cores",
    "cpu_freq_mhz",
    "disk_write_rate",
    "live_figures",
    "measure_capability",
    "memory_available_mb",
    "probe_capability",
]

MIB = 1 << 20
_DISK_BLOCK = 512 * 1024
_DISK_LIMIT = 8 * MIB
_DISK_BUDGET = 0.25


def cpu_cores() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return int(_psutil().cpu_count() or os.cpu_count() or 1)


def cpu_freq_mhz() -> float:
    """The nominal (else current) CPU frequency in MHz; 0 when the platform does not say."""
    try:
        freq = _psutil().cpu_freq()
    except (OSError, NotImplementedError):
        return 0.0
    if freq is None:
        return 0.0
    return float(freq.max or freq.current or 0.0)


def memory_available_mb() -> float:
    """Memory available without swapping, MiB."""
    return float(_psutil().virtual_memory().available) / MIB


def _psutil() -> Any:
    """psutil, imported when a worker probes itself: a crawl that only meters its downloads
    starts without it."""
    import psutil  # type: ignore[import-untyped]

    return psutil


def disk_write_rate(
    directory: Path,
    *,
    budget: float = _DISK_BUDGET,
    limit: int = _DISK_LIMIT,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """MiB/s of sequential write+fsync in ``directory`` (0 when it cannot be written).

    Writes blocks of random bytes (so compressing file systems cannot cheat), each followed by
    an fsync, until ``limit`` bytes are written or ``budget`` seconds have passed; the file is
    removed. Blocking: call it in a thread from async code.
    """
    block = os.urandom(_DISK_BLOCK)
    try:
        fd, name = tempfile.mkstemp(prefix=".gossamer-probe-", dir=directory)
    except OSError:
        return 0.0
    written = 0
    elapsed = 0.0
    try:
        with open(fd, "wb", buffering=0) as file:
            started = clock()
            while written < limit and elapsed < budget:
                written += file.write(block) or 0
                os.fsync(fd)
                elapsed = clock() - started
    except OSError:
        pass
    finally:
        Path(name).unlink(missing_ok=True)
    return written / elapsed / MIB if written and elapsed > 0 else 0.0


def measure_capability(out_dir: Path, concurrency: int, max_bandwidth: int | None) -> Capability:
    """Probe this machine (blocking, well under a second); see `probe_capability`."""
    return Capability(
        cores=cpu_cores(),
        freq_mhz=round(cpu_freq_mhz(), 1),
        memory_mb=round(memory_available_mb(), 1),
        disk_mb_s=round(disk_write_rate(out_dir), 1),
        bandwidth_bps=float(max_bandwidth or 0),
        concurrency=concurrency,
        max_bandwidth=None if max_bandwidth is None else float(max_bandwidth),
    )


async def probe_capability(
    out_dir: Path, concurrency: int, max_bandwidth: int | None
) -> Capability:
    """A worker's resources, probed in a thread. ``bandwidth_bps`` is ``max_bandwidth`` (or 0)
    until traffic is measured: pass the result to `capability_figures` with the meter."""
    return await asyncio.to_thread(measure_capability, out_dir, concurrency, max_bandwidth)


class BandwidthMeter:
    """Bytes per second received: now (a sliding window) and the recent peak.

    Byte counts go into slots of ``step`` seconds kept for ``horizon`` seconds. `rate` is the
    bytes of the last ``window`` seconds over the time they span (less since the meter
    started); `peak` the highest such rate over the horizon, or the last peak seen when the
    horizon holds no traffic. ``total`` counts every byte since the start. ``clock`` is
    monotonic seconds (injectable for exact tests).
    """

    __slots__ = (
        "_clock",
        "_first",
        "_head",
        "_last_peak",
        "_slots",
        "_start",
        "_step",
        "_width",
        "total",
        "window",
    )

    def __init__(
        self,
        window: float = 5.0,
        horizon: float = 60.0,
        step: float = 0.5,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < step <= window <= horizon:
            raise ValueError("need 0 < step <= window <= horizon")
        self.window = window
        self._step = step
        self._width = math.ceil(window / step)
        self._slots = [0] * max(math.ceil(horizon / step), self._width)
        self._clock = clock
        self._start = clock()
        self._head = 0
        self._first: float | None = None
        self._last_peak = 0.0
        self.total = 0

    def add(self, n: int) -> None:
        """Count ``n`` bytes received now."""
        now = self._clock()
        slot = int((now - self._start) / self._step)
        if slot != self._head:
            self._advance(slot)
        self._slots[self._head % len(self._slots)] += n
        self.total += n
        if self._first is None:
            self._first = now

    @property
    def settled(self) -> bool:
        """True once the first bytes arrived at least one window ago."""
        return self._first is not None and self._clock() - self._first >= self.window

    def rate(self) -> float:
        """Bytes per second over the last window."""
        now = self._clock()
        self._advance(int((now - self._start) / self._step))
        return self._window_rate(self._head, now - self._start)

    def peak(self) -> float:
        """The highest `rate` over the horizon (at every slot's end, and now)."""
        best = self.rate()
        size = len(self._slots)
        oldest = self._head - size + 1
        first_end = oldest + self._width - 1 if oldest > 0 else 0
        for end in range(first_end, self._head):
            best = max(best, self._window_rate(end, (end + 1) * self._step))
        if best > 0:
            self._last_peak = best
        return self._last_peak

    def _window_rate(self, end: int, end_time: float) -> float:
        size = len(self._slots)
        first = max(end - self._width + 1, self._head - size + 1, 0)
        total = sum(self._slots[k % size] for k in range(first, end + 1))
        return total / max(end_time - first * self._step, self._step)

    def _advance(self, slot: int) -> None:
        """Move the newest slot to ``slot``, clearing the slots in between."""
        if slot > self._head:
            size = len(self._slots)
            for k in range(max(self._head + 1, slot - size + 1), slot + 1):
                self._slots[k % size] = 0
            self._head = slot


def measured_bandwidth(meter: BandwidthMeter, max_bandwidth: float | None) -> float:
    """The capability's bandwidth: the meter's recent peak (at most the cap) once it has
    measured a window of traffic, else the cap (0 when there is none)."""
    if not meter.settled:
        return float(max_bandwidth or 0)
    peak = meter.peak()
    return min(peak, max_bandwidth) if max_bandwidth else peak


def capability_figures(base: Capability, meter: BandwidthMeter) -> dict[str, Any]:
    """The heartbeat's ``capability`` dict: the probed ``base`` with the measured bandwidth."""
    bandwidth = round(measured_bandwidth(meter, base.max_bandwidth), 1)
    return dataclasses.replace(base, bandwidth_bps=bandwidth).to_json()


def live_figures(
    stats: CrawlStats, fetch: FetchStats, meter: BandwidthMeter, queue_depth: int
) -> dict[str, Any]:
    """The heartbeat's ``live`` dict from the crawler's and the fetcher's snapshots.

    ``queue_depth`` is the number of URLs the worker holds in memory waiting to be fetched
    (for the embedded frontier, ``stats.queued``).
    """
    return Live(
        pages=stats.pages,
        pages_per_second=round(stats.pages_per_second, 2),
        mean_latency=round(fetch.mean_latency, 4),
        queue_depth=queue_depth,
        errors=stats.errors,
        bandwidth_bps=round(meter.rate(), 1),
    ).to_json()

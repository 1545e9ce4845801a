"""The capability probe (real machine, bounded time) and the bandwidth meter (fake clock)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from pathlib import Path
from types import MappingProxyType

import psutil  # type: ignore[import-untyped]
import pytest

from gossamer.balance import probe
from gossamer.balance.capability import Capability, Live, worker_state
from gossamer.balance.probe import (
    BandwidthMeter,
    capability_figures,
    disk_write_rate,
    live_figures,
    measured_bandwidth,
    probe_capability,
)
from gossamer.fetch.http import FetchStats
from gossamer.stats import CrawlStats


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- the probe ------------------------------------------------------------------------------


async def test_probe_reports_sane_figures_quickly(tmp_path: Path) -> None:
    started = time.monotonic()
    cap = await probe_capability(tmp_path, 32, None)
    took = time.monotonic() - started
    assert took < 2.0  # the disk probe stops after 0.25 s (plus one block)
    assert cap.cores == len(os.sched_getaffinity(0))
    assert cap.freq_mhz >= 0.0
    assert 0 < cap.memory_mb <= psutil.virtual_memory().total / 2**20
    assert cap.disk_mb_s > 0
    assert cap.concurrency == 32
    assert cap.bandwidth_bps == 0.0
    assert cap.max_bandwidth is None
    assert os.listdir(tmp_path) == []  # the probe file is gone


async def test_probe_starts_from_the_cap_as_bandwidth(tmp_path: Path) -> None:
    cap = await probe_capability(tmp_path, 4, 500_000)
    assert cap.bandwidth_bps == 500_000.0
    assert cap.max_bandwidth == 500_000.0


async def test_probe_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow_disk(directory: Path) -> float:
        time.sleep(0.5)
        return 12.5

    monkeypatch.setattr(probe, "disk_write_rate", slow_disk)
    loop = asyncio.get_running_loop()
    ticks: list[float] = []

    async def tick() -> None:
        for _ in range(100):
            ticks.append(loop.time())
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    cap = await probe_capability(tmp_path, 1, None)
    ticker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ticker
    assert cap.disk_mb_s == 12.5
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 10
    assert max(gaps) < 0.4  # a probe run on the loop would stall it for 0.5 s


def test_disk_probe_stops_at_its_time_budget(tmp_path: Path) -> None:
    times = iter([0.0, 0.1, 0.2, 0.3, 0.4])
    rate = disk_write_rate(tmp_path, budget=0.25, clock=lambda: next(times))
    # three blocks of 512 KiB, each written and synced, in 0.3 s
    assert rate == pytest.approx(1.5 / 0.3)
    assert list(tmp_path.iterdir()) == []


def test_disk_probe_stops_at_its_byte_limit(tmp_path: Path) -> None:
    clock = FakeClock()

    def tick() -> float:
        clock.now += 0.01
        return clock.now

    rate = disk_write_rate(tmp_path, limit=2 * 2**20, clock=tick)
    assert rate == pytest.approx(2 / 0.04)  # four blocks, then the limit


def test_disk_probe_of_an_unwritable_directory_is_zero(tmp_path: Path) -> None:
    assert disk_write_rate(tmp_path / "missing") == 0.0


# --- the meter ------------------------------------------------------------------------------


def _steady(meter: BandwidthMeter, clock: FakeClock, until: float, per_quarter: int) -> None:
    """``per_quarter`` bytes every 0.25 s from now until ``until`` (exclusive)."""
    while clock.now < until:
        meter.add(per_quarter)
        clock.now += 0.25


def test_meter_rate_of_a_steady_flow_is_exact() -> None:
    clock = FakeClock()
    meter = BandwidthMeter(window=5.0, step=0.5, clock=clock)
    assert meter.rate() == 0.0
    _steady(meter, clock, 2.0, 2500)
    assert meter.rate() == 10_000.0  # less than a window since the start
    _steady(meter, clock, 10.0, 2500)
    assert meter.rate() == 10_000.0
    assert meter.peak() == 10_000.0
    assert meter.total == 40 * 2500


def test_meter_forgets_old_traffic_but_keeps_the_last_peak() -> None:
    clock = FakeClock()
    meter = BandwidthMeter(window=5.0, horizon=60.0, step=0.5, clock=clock)
    _steady(meter, clock, 10.0, 5000)
    _steady(meter, clock, 20.0, 2500)
    assert meter.rate() == 10_000.0
    assert meter.peak() == 20_000.0
    clock.now = 40.0
    assert meter.rate() == 0.0
    assert meter.peak() == 20_000.0
    clock.now = 500.0  # past the horizon: nothing left in the slots
    assert meter.rate() == 0.0
    assert meter.peak() == 20_000.0


def test_meter_peak_sees_a_burst_between_two_reads() -> None:
    clock = FakeClock()
    meter = BandwidthMeter(window=1.0, horizon=30.0, step=0.5, clock=clock)
    _steady(meter, clock, 10.0, 1000)
    assert meter.peak() == 4000.0
    _steady(meter, clock, 11.0, 4000)  # one second at 16 kB/s
    _steady(meter, clock, 20.0, 1000)
    assert meter.rate() == 4000.0
    assert meter.peak() == 16_000.0


def test_meter_settles_one_window_after_the_first_bytes() -> None:
    clock = FakeClock(7.0)
    meter = BandwidthMeter(window=5.0, clock=clock)
    clock.now = 20.0
    assert not meter.settled
    meter.add(1)
    clock.now = 24.9
    assert not meter.settled
    clock.now = 25.0
    assert meter.settled


@pytest.mark.parametrize(("window", "horizon", "step"), [(5, 60, 0), (5, 4, 1), (1, 60, 2)])
def test_meter_refuses_bad_shapes(window: float, horizon: float, step: float) -> None:
    with pytest.raises(ValueError):
        BandwidthMeter(window, horizon, step)


# --- the heartbeat figures --------------------------------------------------------------------


def test_bandwidth_is_the_cap_until_measured_then_the_peak_under_the_cap() -> None:
    clock = FakeClock()
    meter = BandwidthMeter(window=5.0, step=0.5, clock=clock)
    assert measured_bandwidth(meter, None) == 0.0
    assert measured_bandwidth(meter, 50_000) == 50_000.0
    _steady(meter, clock, 10.0, 2500)
    assert measured_bandwidth(meter, None) == 10_000.0
    assert measured_bandwidth(meter, 50_000) == 10_000.0
    assert measured_bandwidth(meter, 8_000) == 8_000.0


def test_figures_round_trip_through_the_heartbeat() -> None:
    clock = FakeClock()
    meter = BandwidthMeter(window=5.0, step=0.5, clock=clock)
    _steady(meter, clock, 10.0, 2500)
    base = Capability(cores=2, freq_mhz=2600.0, memory_mb=4096.0, disk_mb_s=80.0, concurrency=16)
    stats = CrawlStats(
        pages=120,
        ok=110,
        errors=3,
        robots_blocked=0,
        retries=1,
        requests=125,
        duplicates=0,
        rejected={},
        status_counts={},
        queued=42,
        in_flight=5,
        elapsed=10.0,
        pages_per_second=12.0,
        peak_rss_mb=50.0,
    )
    fetch = FetchStats(
        requests=125,
        in_flight=5,
        waiting=0,
        responses=MappingProxyType({"2xx": 110, "4xx": 10}),
        errors=MappingProxyType({}),
        truncated=0,
        wire_bytes=0,
        body_bytes=0,
        latency=6.0,
    )
    figures = {
        "capability": capability_figures(base, meter),
        "live": live_figures(stats, fetch, meter, queue_depth=42),
    }
    state = worker_state("w1", figures)
    assert state.capability == Capability(
        cores=2,
        freq_mhz=2600.0,
        memory_mb=4096.0,
        disk_mb_s=80.0,
        bandwidth_bps=10_000.0,
        concurrency=16,
    )
    assert state.live == Live(
        pages=120,
        pages_per_second=12.0,
        mean_latency=0.05,
        queue_depth=42,
        errors=3,
        bandwidth_bps=10_000.0,
    )

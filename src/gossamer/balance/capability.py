"""What a worker reports about itself with every heartbeat, and what the balancer reads.

:class:`Capability` holds the performance figures (CPU cores and frequency, memory, disk I/O
rate, network bandwidth) plus the worker's configured limits; :class:`Live` its running
figures. Both travel as JSON in the heartbeat (``figures["capability"]``,
``figures["live"]``); :func:`worker_state` rebuilds them on the leader.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Capability:
    """A worker's resources (the runtime model's inputs)."""

    cores: int = 1
    freq_mhz: float = 0.0
    """Nominal CPU frequency; 0 when the platform does not say."""
    memory_mb: float = 0.0
    """Memory available to the worker."""
    disk_mb_s: float = 0.0
    """Sequential write+fsync rate of the output directory, measured by a short probe."""
    bandwidth_bps: float = 0.0
    """Bytes per second downloaded, measured from the worker's own fetch traffic (a recent
    peak), or its ``max_bandwidth`` before it has fetched enough to tell."""
    concurrency: int = 1
    """Requests in flight the worker allows."""
    max_bandwidth: float | None = None
    """The worker's configured download cap in bytes per second, if any."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Capability:
        """Unknown keys are ignored; missing ones, and values that are not finite numbers,
        take their defaults (the figures come from Redis: anything may stand there)."""
        return cls(**_numbers(cls, data))


@dataclass(frozen=True, slots=True)
class Live:
    """A worker's running figures."""

    pages: int = 0
    pages_per_second: float = 0.0
    mean_latency: float = 0.0
    queue_depth: int = 0
    """URLs held in the worker's memory, waiting to be fetched."""
    errors: int = 0
    bandwidth_bps: float = 0.0
    """Bytes per second downloaded over the last few seconds."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Live:
        """As :meth:`Capability.from_json`."""
        return cls(**_numbers(cls, data))


def _numbers(cls: type[Capability] | type[Live], data: object) -> dict[str, Any]:
    """The fields of ``cls`` that ``data`` gives as finite numbers (bools are not numbers)."""
    if not isinstance(data, Mapping):
        return {}
    names = {f.name for f in fields(cls)}
    return {
        k: v
        for k, v in data.items()
        if k in names
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)
    }


@dataclass(frozen=True, slots=True)
class WorkerState:
    """One live worker as the balancer sees it."""

    name: str
    capability: Capability
    live: Live


def worker_state(name: str, figures: Mapping[str, Any]) -> WorkerState:
    """Rebuild a worker's state from its heartbeat figures (missing parts default)."""
    return WorkerState(
        name,
        Capability.from_json(figures.get("capability")),
        Live.from_json(figures.get("live")),
    )

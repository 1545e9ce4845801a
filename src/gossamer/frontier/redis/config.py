"""How a Redis frontier is sized and timed: :class:`RedisFrontierConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gossamer.frontier.hosts import DEFAULT_SLACK

__all__ = ["RedisFrontierConfig"]


@dataclass(frozen=True, slots=True)
class RedisFrontierConfig:
    """How a :class:`~gossamer.frontier.redis.frontier.RedisFrontier` is sized and timed."""

    partitions: int = 4096
    """Partitions of the job's queues (every worker of a job must use the same number)."""
    lease_timeout: float = 600.0
    """Seconds a claim, a lease or a host slot is held before another worker may take it."""
    claim_batch: int = 256
    """Entries claimed from a partition at a time."""
    memory_budget: int = 10_000
    """URLs held in memory; more are claimed when fewer than half this are held."""
    refresh_interval: float = 1.0
    """Least seconds between ``done()``'s looks at every partition's counts."""
    defer_acks: bool = False
    """Acks wait in memory, their claims renewed, until the frontier's ``take_acks()``."""
    partition_by: Literal["host", "url"] = "host"
    """Partition by host (one worker per host) or by URL (hosts' slots from a shared limiter)."""
    handover_grace: float = 2.0
    """Host mode: seconds a worker that gained a partition waits at most for its holder, a
    live worker, to hand it over (see :mod:`gossamer.frontier.redis.holders`): time for any
    worker to follow a new assignment (0.3 s at the 99th percentile with 1,000 workers)."""
    slack: float = DEFAULT_SLACK
    """How far the best-first ordering may stray from the best URL to keep hosts busy (see
    :mod:`gossamer.frontier.hosts`)."""

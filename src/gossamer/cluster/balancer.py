"""The balancer: the leader's partition planning, and the observations that train its model.

The leader calls :meth:`Balancer.rebalance` every half second; a turn that changes nothing
reads the live workers' names and the assignment's version, never every worker's figures or
the whole assignment (read again only when the version moves). With ``equal`` it only reacts
to workers joining and leaving (the baseline: the same share of the queued URLs for every
worker). With the other allocators (:mod:`gossamer.balance.allocate`) it also re-plans every
``plan_every`` seconds from the workers' heartbeat figures and each partition's load (queued
plus claimed URLs), so the shares follow the figures as they change; the allocators'
hysteresis keeps partitions still while every worker is near its target. A partition moves
whole, and its old owner fences it until its requests there have ended (see
:mod:`gossamer.frontier.redis.fences`), so a host never has two owners at once.

Every worker feeds the runtime model: an :class:`Observer` cuts its crawl into windows
and, for each window in which it was busy throughout (URLs waiting in memory at every
sample, so the time measures the worker and not a lack of work), records "``n`` URLs finished
in ``t`` seconds with these figures". The leader refits the model from those every
``train_every`` seconds, in a thread, and keeps it in Redis so the next leader, and the next
job on the same machines, starts with it. Keys (hash tag ``{gossamer-balance}``, shared by
every job of this Redis: the model describes machines, not jobs)::

    gs:{gossamer-balance}:observations  LIST    Observation JSON, newest first, capped
    gs:{gossamer-balance}:model         STRING  the fitted model (model_to_json)
    gs:{gossamer-balance}:report        STRING  JSON: model kind, observations, held-out MAPE
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gossamer.balance.allocate import Kind, allocate
from gossamer.balance.capability import Capability, worker_state
from gossamer.balance.model import (
    FitReport,
    Observation,
    RuntimeModel,
    fit_runtime_model,
    model_from_json,
    model_to_json,
)
from gossamer.cluster.control import Control
from gossamer.frontier.redis import read_counts

log = logging.getLogger(__name__)
_TAG = "gs:{gossamer-balance}:"
KEYS = {name: _TAG + name for name in ("observations", "model", "report")}
MAX_OBSERVATIONS = 5000
WINDOWS = (4.0, 7.0, 10.0, 14.0)
"""Observation window lengths in seconds, cycled: batches of different sizes train better."""


async def partition_load(control: Control, partitions: int) -> dict[int, int]:
    """Queued plus claimed URLs of every partition with any."""
    counts = await read_counts(control.redis, control.job, partitions)
    return {part: queued + claimed for part, (queued, claimed) in counts.busy.items()}


async def record(control: Control, observation: Observation) -> None:
    """Store one observation (the list is capped at :data:`MAX_OBSERVATIONS`)."""
    async with control.redis.pipeline(transaction=True) as pipe:
        pipe.lpush(KEYS["observations"], json.dumps(observation.to_json()))
        pipe.ltrim(KEYS["observations"], 0, MAX_OBSERVATIONS - 1)
        await pipe.execute()


async def observations(control: Control) -> list[Observation]:
    """Every stored observation (malformed ones skipped)."""
    raw = await control.redis.lrange(KEYS["observations"], 0, -1)
    out = []
    for item in raw:
        try:
            out.append(Observation.from_json(json.loads(item)))
        except (ValueError, KeyError, TypeError):
            continue
    return out


async def load_model(control: Control) -> RuntimeModel | None:
    """The stored model, or None (none yet, or unreadable)."""
    raw = await control.redis.get(KEYS["model"])
    if raw is None:
        return None
    try:
        return model_from_json(raw.decode() if isinstance(raw, bytes) else raw)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError):
        return None  # not a model gossamer wrote


async def model_report(control: Control) -> dict[str, Any] | None:
    """What the last fit reported (``cluster status`` shows it); None if none or unreadable."""
    raw = await control.redis.get(KEYS["report"])
    try:
        report = None if raw is None else json.loads(raw)
    except ValueError:
        return None
    if not isinstance(report, dict) or not isinstance(report.get("summary"), str):
        return None
    return report


def report_json(report: FitReport) -> dict[str, Any]:
    def pct(value: float | None) -> float | None:
        return None if value is None or value != value else round(value * 100, 2)

    return {
        "kind": report.model.kind,
        "observations": report.trained,
        "held_out": report.held_out,
        "linear_mape_pct": pct(report.linear_error),
        "bpnn_mape_pct": pct(report.bpnn_error),
        "summary": report.summary(),
    }


class Balancer:
    """The leader's planning for one job (see the module docstring)."""

    def __init__(
        self,
        control: Control,
        partitions: int,
        allocator: Kind,
        *,
        plan_every: float = 2.0,
        train_every: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._control = control
        self._partitions = partitions
        self._allocator = allocator
        self._plan_every = plan_every
        self._train_every = train_every
        self._clock = clock
        self._next_plan = float("-inf")
        self._next_train = float("-inf")
        self._trained_on = -1
        self._model: RuntimeModel | None = None
        self._model_loaded = False
        self._seen_version = -1
        self._seen: dict[str, frozenset[int]] = {}

    async def rebalance(self, leader: str) -> int | None:
        """Publish a new assignment when it should change; its version, else None."""
        names = await self._control.live_workers()
        current = await self._current()
        members_changed = set(names) != {n for n, parts in current.items() if parts}
        now = self._clock()
        replan = self._allocator != "equal" and now >= self._next_plan
        if not names or not (members_changed or replan):
            return None
        self._next_plan = now + self._plan_every
        infos = await self._control.figures_of(names)
        states = [worker_state(w.name, w.figures) for w in infos]
        load = await partition_load(self._control, self._partitions)
        model = await self._current_model() if self._allocator == "bpnn-pso" else None
        # in a thread: half a second of CPU for 1,000 workers, during which the event loop
        # (and the keeper's pulse, renewing the lease) goes on
        wanted = await asyncio.to_thread(
            allocate, self._allocator, states, load, self._partitions, current or None, model
        )
        if not wanted or wanted == current:
            return None
        version = await self._control.publish(leader, wanted)
        if version >= 0:
            moved = sum(
                len(parts - current.get(name, frozenset())) for name, parts in wanted.items()
            )
            log.info(
                "assignment v%d published by %s: %d partitions moved over %d workers (%s)",
                version,
                leader,
                moved,
                len(wanted),
                "members" if members_changed else "re-plan",
                extra={
                    "event": "assignment-published",
                    "leader": leader,
                    "version": version,
                    "workers": len(wanted),
                    "moved": moved,
                    "allocator": self._allocator,
                    "reason": "members" if members_changed else "replan",
                },
            )
        return version

    async def _current(self) -> dict[str, frozenset[int]]:
        """The published assignment: read again only when its version moved (one GET a
        turn, not the whole table)."""
        version = await self._control.version()
        if version != self._seen_version:
            self._seen_version, self._seen = await self._control.versioned()
        return self._seen

    async def train(self, leading: Callable[[], bool] = lambda: True) -> FitReport | None:
        """Refit the model from the stored observations when new ones arrived; stored unless
        ``leading()`` says the leadership was lost during the fit."""
        now = self._clock()
        if now < self._next_train:
            return None
        self._next_train = now + self._train_every
        seen = await observations(self._control)
        if len(seen) == self._trained_on or not seen:
            return None
        self._trained_on = len(seen)
        report = await asyncio.to_thread(fit_runtime_model, seen)
        if not leading():
            return None
        async with self._control.redis.pipeline(transaction=True) as pipe:
            pipe.set(KEYS["model"], model_to_json(report.model))
            pipe.set(KEYS["report"], json.dumps(report_json(report)))
            await pipe.execute()
        self._model = report.model
        self._model_loaded = True
        return report

    async def _current_model(self) -> RuntimeModel | None:
        if not self._model_loaded:
            self._model = await load_model(self._control)
            self._model_loaded = True
        return self._model


@dataclass(slots=True)
class _Window:
    start: float
    pages: int
    length: float


class Observer:
    """A worker's observation windows (see the module docstring).

    Call :meth:`sample` about once a second with the pages finished so far and whether URLs
    were waiting in memory; it returns an observation when a busy window closes.
    """

    def __init__(self, windows: tuple[float, ...] = WINDOWS) -> None:
        self._windows = windows
        self._count = 0
        self._window: _Window | None = None
        self.busy_rate = 0.0
        """Pages per second over the last busy window (0 before one closed)."""

    def sample(
        self, now: float, pages: int, busy: bool, capability: Capability
    ) -> Observation | None:
        window = self._window
        if window is None or not busy:
            self._open(now, pages, busy)
            return None
        if now - window.start < window.length:
            return None
        self._open(now, pages, busy)
        n = pages - window.pages
        if n <= 0:
            return None
        seconds = now - window.start
        self.busy_rate = n / seconds
        return Observation(capability, n, seconds)

    def _open(self, now: float, pages: int, busy: bool) -> None:
        if not busy:
            self._window = None
            return
        length = self._windows[self._count % len(self._windows)]
        self._count += 1
        self._window = _Window(now, pages, length)

"""Simulated workers: the real control plane of a cluster job, without the crawl.

A :class:`SimWorker` is a cluster worker's :class:`~.keeper.Keeper` with everything the
keeper runs being the real thing (heartbeats and their figures, the leader lease and the
leader's balancer, assignment-following and its notices, wake hints, the job's state, the
Redis frontier's claim renewals, reclaims and looks at every partition), around a crawl that
fetches nothing but asks the frontier ``done()`` as an idle crawl loop does. :func:`seed`
queues a URL on many hosts first, so the job is busy as a real one is (the entries stay queued:
nothing leases them).
Many of them run as asyncio tasks of one process; the control-plane benchmark
(``benchmarks/bench_control_plane.py``) and its small twin in the test suite run them to see
how the control plane bears hundreds of workers.

Each worker notes when it saw each assignment version (wall clock: workers in other
processes of the same machine compare), and the leader when it published one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gossamer.cluster.assignment import Assignment
from gossamer.cluster.balancer import Balancer
from gossamer.cluster.control import Control
from gossamer.cluster.keeper import Keeper, Pace
from gossamer.cluster.leadership import Leadership
from gossamer.cluster.membership import Membership, Report
from gossamer.cluster.notices import cancel_and_wait
from gossamer.cluster.resilient import RedisGuard
from gossamer.engine import Crawler
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import Ownership, RedisFrontier, RedisFrontierConfig
from gossamer.urls import Scope

_CAPABILITY = {
    "cores": 2,
    "memory_mb": 4096,
    "concurrency": 32,
    "bandwidth": 12_500_000,
    "parse_ms": 4.0,
    "storage_mbps": 200.0,
}
"""Figures the size and shape of a real worker's capability report."""
IDLE_TURN = 0.5
"""Seconds between a simulated crawl's ``done()`` questions (an idle engine asks every turn,
at most a second apart; the frontier answers from Redis once per ``refresh_interval``)."""


@dataclass(frozen=True, slots=True)
class SimConfig:
    """The job the simulated workers follow."""

    url: str
    job: str
    partitions: int = 4096
    heartbeat_ttl: float = 10.0
    claim_timeout: float = 60.0
    idle: bool = True
    """The simulated crawl asks ``done()`` as an idle worker's does (False: as a busy worker's
    crawl, which has fetches in flight and does not ask)."""


@dataclass(slots=True)
class Seen:
    """When each assignment version reached a worker (and was published, by its leader)."""

    reached: dict[int, float] = field(default_factory=dict)
    published: dict[int, float] = field(default_factory=dict)


class _Idle:
    """The crawl of a simulated worker: it fetches nothing and waits to be stopped."""

    def __init__(self) -> None:
        self.paused = False
        self.stopping = False

    def stop(self) -> None:
        self.stopping = True

    def pause(self, paused: bool) -> None:
        self.paused = paused


class _Figures:
    """A simulated worker's heartbeat figures, the shape of a real :class:`Report`'s."""

    def __init__(self, name: str) -> None:
        self._started = round(time.time(), 3)
        self._name = name

    def figures(self, partitions: int) -> dict[str, Any]:
        live = {"pages_per_second": 0.0, "in_memory": 0, "fetching": 0, "cpu": 0.0}
        return {
            "pages": 0,
            "pages_per_second": 0.0,
            "started": self._started,
            "partitions": partitions,
            "pid": os.getpid(),
            "host": "sim",
            "capability": _CAPABILITY,
            "live": live,
        }

    def capability(self) -> None:
        return None  # no observations: nothing is crawled


class _TimedControl(Control):
    """A :class:`Control` noting when it published each assignment version."""

    def __init__(self, redis: Redis, job: str, seen: Seen) -> None:
        super().__init__(redis, job)
        self._seen = seen

    async def publish(self, leader: str, assignment: Mapping[str, Iterable[int]]) -> int:
        version = await super().publish(leader, assignment)
        if version >= 0:
            self._seen.published[version] = time.time()
        return version


class _TimedAssignment(Assignment):
    """An :class:`Assignment` noting when each new version reached this worker."""

    def __init__(self, control: Control, name: str, seen: Seen) -> None:
        super().__init__(control, name)
        self._seen = seen

    async def follow(self) -> Ownership | None:
        share = await super().follow()
        version = self.ownership.version
        if version >= 0 and version not in self._seen.reached:
            self._seen.reached[version] = time.time()
        return share


class SimWorker:
    """One simulated worker: its keeper, nothing crawled. It uses ``redis`` (the workers of one
    process may share a client: its pool opens a connection per command in flight, as many
    workers' own clients would, without a thousand idle ones) or a client of its own."""

    def __init__(self, config: SimConfig, name: str, redis: Redis | None = None) -> None:
        self.name = name
        self.seen = Seen()
        self._config = config
        self._own = redis is None
        self._redis = Redis.from_url(config.url) if redis is None else redis
        guard = RedisGuard(config.url)
        control = _TimedControl(self._redis, config.job, self.seen)
        self.assignment = _TimedAssignment(control, name, self.seen)
        frontier = RedisFrontier(
            self._redis,
            config.job,
            Scope.for_seeds([], ["sim.test"], max_depth=1),
            PolitenessPolicy(),
            config=RedisFrontierConfig(
                partitions=config.partitions, lease_timeout=config.claim_timeout
            ),
            ownership=self.assignment.ownership,
        )
        self._frontier = frontier
        self._idle: asyncio.Task[None] | None = None
        self.keeper = Keeper(
            control,
            name,
            frontier,
            cast(Crawler, _Idle()),
            membership=Membership(
                control, name, config.heartbeat_ttl, cast(Report, _Figures(name))
            ),
            leadership=Leadership(
                control,
                name,
                config.heartbeat_ttl,
                Balancer(control, config.partitions, "equal"),
                guard,
                settle=config.heartbeat_ttl + config.claim_timeout / 3,
                train=False,
            ),
            assignment=self.assignment,
            guard=guard,
            pace=Pace(config.heartbeat_ttl, config.claim_timeout, partitions=config.partitions),
        )

    async def start(self) -> None:
        """Join the job and run the keeper's duties and the idle crawl in the background."""
        await self.keeper.start()
        if self._config.idle:
            self._idle = asyncio.create_task(self._ask_done())

    async def _ask_done(self) -> None:
        """The crawl loop of a worker with nothing to fetch: is the job done? (Once it is, the
        crawl would end.)"""
        while True:
            with contextlib.suppress(RedisError, OSError):
                if await self._frontier.done():
                    return
            await asyncio.sleep(IDLE_TURN)

    async def _stop(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            await _cancel(idle)
        await self.keeper.stop()

    async def leave(self) -> None:
        """Stop and leave the job as a worker that ends does (its partitions move at once)."""
        await self._stop()
        with contextlib.suppress(RedisError, OSError):
            await self._frontier.close()
            await self.keeper.leave()
        if self._own:
            await self._redis.aclose()

    async def die(self) -> None:
        """Stop without a word, as a killed worker: its heartbeat and lease run out."""
        await self._stop()
        if self._own:
            await self._redis.aclose()


async def start_all(workers: list[SimWorker], spread: float = 0.0, batch: int = 1) -> None:
    """Start ``workers``, ``batch`` at a time, spread over ``spread`` seconds (as a fleet
    comes up)."""
    groups = [workers[i : i + batch] for i in range(0, len(workers), batch)]
    for i, group in enumerate(groups):
        await asyncio.gather(*(worker.start() for worker in group))
        if spread > 0 and i + 1 < len(groups):
            await asyncio.sleep(spread / len(groups))


async def seed(config: SimConfig, hosts: int) -> int:
    """Queue one URL on each of ``hosts`` hosts of the simulated job; how many were queued."""
    redis = Redis.from_url(config.url)
    try:
        frontier = RedisFrontier(
            redis,
            config.job,
            Scope.for_seeds([], ["sim.test"], max_depth=1),
            PolitenessPolicy(),
            config=RedisFrontierConfig(partitions=config.partitions),
        )
        urls = [Candidate(f"http://h{i}.sim.test/", seed=True) for i in range(hosts)]
        return (await frontier.add(urls)).added
    finally:
        await redis.aclose()


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for its end (:func:`cancel_and_wait`: an idle worker's loop
    whose cancel was lost would ask until the job is done). An error it ended with is raised."""
    await cancel_and_wait({task})
    if task.done() and not task.cancelled():
        task.result()

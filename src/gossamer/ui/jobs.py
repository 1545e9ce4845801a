"""Cluster jobs as the dashboard sees them: read from the job's Redis keys
(:mod:`gossamer.cluster.control`), paused, resumed and stopped there.

A job's page shows what ``cluster status`` shows (totals, the live workers with their
partitions, pages/s and capability figures, the allocator and the runtime model's report) and
the pages/s of each minute, from the finished count sampled at each look. A worker whose
heartbeat expired is gone: it is not listed.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import JOB_STATES, Control
from gossamer.cluster.jobs import open_control, status_of
from gossamer.frontier.redis import RedisClient

MAX_JOBS = 200
"""Jobs listed, at most."""
SCAN_BATCH = 500
MINUTES = 60
_SAMPLES = 4 * 60 * MINUTES
"""Samples of a job's finished count kept (a look every second or so: an hour's worth)."""
_PREFIX, _SUFFIX = b"gs:{", b"}:job"


class Jobs:
    """The jobs of one Redis (connected at the first look)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._redis: RedisClient | None = None
        self._connecting = asyncio.Lock()
        self._samples: dict[str, deque[tuple[float, int]]] = {}

    async def _client(self) -> RedisClient:
        async with self._connecting:
            if self._redis is None:
                self._redis = (await open_control(self._url, DEFAULT_JOB)).redis
            return self._redis

    def _control(self, redis: RedisClient, job: str) -> Control:
        return Control(redis, job)

    async def names(self) -> list[str]:
        """The jobs submitted to this Redis (their ``gs:{J}:job`` keys), sorted."""
        redis = await self._client()
        found: set[str] = set()
        async for key in redis.scan_iter(match="gs:{*}:job", count=SCAN_BATCH):
            raw = key if isinstance(key, bytes) else str(key).encode()
            if raw.startswith(_PREFIX) and raw.endswith(_SUFFIX):
                name = raw[len(_PREFIX) : -len(_SUFFIX)].decode("utf-8", "replace")
                if name and "{" not in name and "}" not in name:
                    found.add(name)
            if len(found) >= MAX_JOBS:
                break
        return sorted(found)

    async def summary(self, job: str) -> dict[str, Any]:
        """The job's line in the list: its state and live workers (no partition is read)."""
        control = self._control(await self._client(), job)
        return {
            "job": job,
            "state": await control.state(),
            "workers": len(await control.live_workers()),
        }

    async def detail(self, job: str) -> dict[str, Any]:
        """Everything the job's page shows."""
        redis = await self._client()
        state = await status_of(self._control(redis, job))
        state["workers"] = [w for w in state["workers"] if w["alive"]]
        state["rate"] = self._rate(job, state["totals"]["finished"])
        return state

    def _rate(self, job: str, finished: int) -> list[dict[str, Any]]:
        """Pages/s of each of the last minutes, from the finished counts seen."""
        now = time.time()
        samples = self._samples.setdefault(job, deque(maxlen=_SAMPLES))
        samples.append((now, finished))
        end = int(now // 60)
        first: dict[int, tuple[float, int]] = {}
        last: dict[int, tuple[float, int]] = {}
        for moment, count in samples:
            minute = int(moment // 60)
            first.setdefault(minute, (moment, count))
            last[minute] = (moment, count)
        out = []
        before: tuple[float, int] | None = None
        for minute in range(end - MINUTES + 1, end + 1):
            rate = 0.0
            if minute in last:
                start = before or first[minute]
                moment, count = last[minute]
                if moment > start[0]:
                    rate = max(0, count - start[1]) / (moment - start[0])
                before = last[minute]
            out.append({"t": minute * 60, "rate": round(rate, 2)})
        return out

    async def set_state(self, job: str, state: str) -> str:
        """Pause (``paused``), resume (``running``) or stop (``stopped``) the job."""
        if state not in JOB_STATES:
            raise ValueError(state)
        redis = await self._client()
        control = self._control(redis, job)
        if await control.load_job() is None:
            raise LookupError(job)
        await control.set_state(state)
        return state

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

"""A continuous cluster job's revisit counts (``cluster status --json``'s ``freshness``) are
the job's: a worker killed keeps its counts in the totals while another takes its
partitions, and a worker started again under the same name adds to them, never resets them."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.cluster.harness import run, start, worker_args, worker_logs
from tests.redis_server import RedisServer
from tests.revisit.site import serve_site

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import status

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLOCK = ["--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"]
QUICK = ["--checkpoint-interval", "0.05", "--heartbeat-ttl", "1", "--claim-timeout", "2"]


def _total(fresh: dict[str, Any]) -> int:
    return sum(fresh["results"].values())


async def _watch(
    url: str, until: Callable[[dict[str, Any]], bool], floor: dict[str, Any], tmp_path: Path
) -> dict[str, Any]:
    """The job's freshness once ``until`` holds, each count never below ``floor``'s on the
    way (polled for at most 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        fresh = (await status(url, DEFAULT_JOB))["freshness"]
        for name, count in floor["results"].items():
            assert fresh["results"][name] >= count, (name, floor["results"], fresh["results"])
        assert fresh["bytes_saved"] >= floor["bytes_saved"], (floor, fresh)
        if until(fresh):
            return fresh
        assert time.monotonic() < deadline, (fresh, worker_logs(tmp_path, 2))
        await asyncio.sleep(0.1)


async def test_revisit_counts_outlive_the_workers_that_made_them(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    none = {"results": {}, "bytes_saved": 0}
    async with serve_site() as site:
        submit = ["cluster", "submit", "--redis", url, site.url(), *CLOCK, *QUICK,
                  "--no-robots", "--sitemaps", "off", "--delay", "0.05", "--partitions", "8",
                  "--quiet"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        first = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await _watch(url, lambda f: f["results"]["not-modified"] >= 4, none, tmp_path)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        killed = (await status(url, DEFAULT_JOB))["freshness"]
        # another worker takes the partitions: the killed one's counts stay in the totals
        other = await start(tmp_path / "w1.log", *worker_args(url, tmp_path, 1))
        await _watch(url, lambda f: _total(f) >= _total(killed) + 4, killed, tmp_path)
        other.send_signal(signal.SIGKILL)
        await other.wait()
        both = (await status(url, DEFAULT_JOB))["freshness"]
        # the first worker again, under its name: its new counts add to its old ones
        again = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await _watch(url, lambda f: _total(f) >= _total(both) + 4, both, tmp_path)
        again.send_signal(signal.SIGKILL)
        await again.wait()

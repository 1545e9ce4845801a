"""Re-planning during a crawl: unequal workers under the ``weighted`` and ``bpnn-pso``
allocators move partitions while they crawl, and still fetch exactly the single-crawl URL set,
each URL once (a moved partition's held URLs go back to Redis; leased ones finish where they
are)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_status,
    cluster_wait,
    read_records,
    records_so_far,
    reference,
    run,
    small_web,
    start,
    url_counts,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.mark.parametrize("allocator", ["weighted", "bpnn-pso", "least-loaded"])
async def test_replanning_loses_and_repeats_nothing(
    tmp_path: Path, redis_server: RedisServer, allocator: str
) -> None:
    web = small_web(11, hosts=16)
    args = [*FAST, "--per-host", "1", "--delay", "0.1"]
    url = redis_server.url
    async with TestWebServer(web, flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*args, "--concurrency", "16"])
        submit = ["cluster", "submit", "--redis", url, seed, *args, *WEB_ARGS, "--partitions",
                  "64", "--allocator", allocator, "--heartbeat-ttl", "3"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i, "--concurrency", c))
            for i, c in enumerate(("1", "2"))
        ]
        deadline = time.monotonic() + 20
        while sum(records_so_far(tmp_path / f"w{i}") for i in range(2)) < 10:
            assert time.monotonic() < deadline, "the first workers fetched nothing"
            await asyncio.sleep(0.05)
        # A much stronger worker joins mid-crawl: the plan moves partitions (and the URLs the
        # first two hold) to it.
        workers.append(
            await start(tmp_path / "w2.log", *worker_args(url, tmp_path, 2, "--concurrency", "8"))
        )
        await cluster_wait(url, 80)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], worker_logs(tmp_path, 3)
        state = await cluster_status(url)

    counts = url_counts(tmp_path, 3)
    assert set(counts) == expected, sorted(expected ^ set(counts))[:5]
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    assert state["allocator"] == allocator
    # w2's join moved partitions away from two busy workers, and it crawled its share.
    assert state["assignment_version"] >= 2
    assert read_records(tmp_path / "w0") and read_records(tmp_path / "w2")
    shares = {w["name"]: w["partitions"] for w in state["workers"]}
    if allocator != "least-loaded":  # which ends equal: nothing queued, no backlog left
        assert sorted(shares.values()) != [21, 21, 22], shares  # not the equal split

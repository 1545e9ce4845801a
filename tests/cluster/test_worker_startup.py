"""A worker started before its Redis: it waits for Redis as it waits out an outage mid-crawl.

Real worker subprocesses against a real redis-server that is started (again) only once the
worker has said it is waiting; a Redis that never comes ends the worker with one line.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    GOSSAMER,
    LOG_ARGS,
    WEB_ARGS,
    assert_same_urls,
    cluster_wait,
    event_names,
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

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def _holds(log: Path, event: str) -> bool:
    return log.exists() and event in event_names(log.read_text())


async def _logged(log: Path, event: str, limit: float = 30) -> None:
    """Until the JSON log ``log`` holds ``event``."""
    for _ in range(int(limit / 0.05)):
        if _holds(log, event):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no {event!r} in {log} after {limit:g}s")


async def test_workers_started_before_redis_wait_for_it_and_crawl(tmp_path: Path) -> None:
    web = small_web(11, hosts=4, pages_per_host=10)
    async with TestWebServer(web, flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, FAST)
        with RedisServer() as redis:
            redis.halt()  # its port is known and nothing answers on it
            url = redis.url
            logs = [tmp_path / f"w{i}.log" for i in range(2)]
            workers = [
                await start(log, *worker_args(url, tmp_path, i, *LOG_ARGS, "--redis-timeout", "60"))
                for i, log in enumerate(logs)
            ]
            for log in logs:
                await _logged(log, "redis-unreachable")
            assert all(w.returncode is None for w in workers), worker_logs(tmp_path, 2)
            await asyncio.to_thread(redis.resume)
            submit = ["cluster", "submit", "--redis", url, seed, *FAST, *WEB_ARGS]
            assert await run(tmp_path / "submit.log", *submit, "--partitions", "16") == 0
            await cluster_wait(url)
            codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
    texts = worker_logs(tmp_path, 2)

    assert codes == [0, 0], texts
    counts = url_counts(tmp_path, 2)
    assert_same_urls(counts, expected)
    assert max(counts.values()) == 1
    for text in texts:
        assert {"redis-unreachable", "redis-recovered", "worker-started"} <= event_names(text)
        assert "Traceback" not in text
    # The leader was elected once Redis came: one of them published the assignment.
    assert sum("leader-acquired" in event_names(text) for text in texts) >= 1


async def test_a_redis_that_never_comes_is_one_line_exit_75(tmp_path: Path) -> None:
    with RedisServer() as redis:
        redis.halt()
        args = worker_args(redis.url, tmp_path, 0, "--redis-timeout", "2", "--log-json")
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *GOSSAMER, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        waited = time.monotonic() - started
        url = redis.url

    stderr = err.decode()
    assert proc.returncode == 75, stderr
    assert 2 <= waited < 20, waited
    # One warning while it waits (as JSON: --log-json), one line when it gives up.
    waiting, last = stderr.splitlines()
    assert json.loads(waiting)["event"] == "redis-unreachable", stderr
    assert last.startswith(f"gossamer: Redis at {url} unreachable for 2 s: "), stderr
    assert out == b""

"""`gossamer cluster pause|resume|stop` against a real redis-server and the test web."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_status,
    cluster_wait,
    output,
    read_records,
    run,
    small_web,
    start,
    wait_for_records,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


async def until_state(out: Path, state: str, limit: float = 10) -> dict[str, object]:
    """The worker's status.json once it says ``state``."""
    deadline = time.monotonic() + limit
    path = out / "status.json"
    while True:
        if path.exists():
            data: dict[str, object] = json.loads(path.read_text())
            if data["state"] == state:
                return data
        assert time.monotonic() < deadline, f"status.json never said {state}"
        await asyncio.sleep(0.05)


async def test_pause_resume_stop_lose_nothing(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    args = [*FAST, "--concurrency", "4", "--per-host", "1", "--delay", "0.3"]
    async with TestWebServer(small_web(hosts=3, pages_per_host=25), flaky_failures=0) as server:
        submit = ["cluster", "submit", "--redis", url, server.url(0), *args, *WEB_ARGS]
        assert await run(tmp_path / "submit.log", *submit) == 0
        worker = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await wait_for_records(tmp_path, range(1), 5)

        code, out, err = await output("cluster", "pause", "--redis", url)
        assert code == 0 and "paused" in out, err
        await until_state(tmp_path / "w0", "paused")
        assert (await cluster_status(url))["state"] == "paused"
        held = len(read_records(tmp_path / "w0"))
        await asyncio.sleep(1.0)  # paused: nothing more is fetched meanwhile
        assert len(read_records(tmp_path / "w0")) == held

        assert (await output("cluster", "resume", "--redis", url))[0] == 0
        await wait_for_records(tmp_path, range(1), held + 3)

        assert (await output("cluster", "stop", "--redis", url))[0] == 0
        assert await asyncio.wait_for(worker.wait(), 30) == 0, worker_logs(tmp_path, 1)
        state = await cluster_status(url)
        assert state["state"] == "stopped" and not state["done"]
        assert state["totals"]["claimed"] == 0 and state["totals"]["queued"] > 0
        first = [r["url"] for r in read_records(tmp_path / "w0") if r["kind"] == "page"]
        assert state["totals"]["finished"] == len(first)
        assert json.loads((tmp_path / "w0" / "status.json").read_text())["state"] == "stopped"

        # Resumed, a new worker finishes the job: every URL once.
        assert (await output("cluster", "resume", "--redis", url))[0] == 0
        second = await start(tmp_path / "w1.log", *worker_args(url, tmp_path, 1))
        await cluster_wait(url, 45)
        assert await asyncio.wait_for(second.wait(), 30) == 0
        state = await cluster_status(url)
    urls = first + [r["url"] for r in read_records(tmp_path / "w1") if r["kind"] == "page"]
    assert len(urls) == len(set(urls)) == state["totals"]["seen"]


async def test_state_commands_need_a_job(tmp_path: Path, redis_server: RedisServer) -> None:
    code, _, err = await output("cluster", "pause", "--redis", redis_server.url, "--job", "nope")
    assert code == 2 and "no job 'nope'" in err


async def test_wait_ends_at_its_timeout_when_every_reply_is_refused(
    redis_server: RedisServer,
) -> None:
    """A job key whose reply is over the bound on replies is refused on every fresh
    connection; ``cluster wait --timeout`` still ends at its limit."""
    client = Redis.from_url(redis_server.url)
    try:
        await client.set("gs:{huge}:job", b"x" * ((64 << 20) + 1))
    finally:
        await client.aclose()
    started = time.monotonic()
    wait = ("cluster", "wait", "--redis", redis_server.url, "--job", "huge", "--timeout", "2")
    code, _, err = await output(*wait, limit=30)
    assert code == 1, err
    assert time.monotonic() - started < 15

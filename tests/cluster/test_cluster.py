"""`gossamer cluster` as subprocesses against a real redis-server and the in-process test web.

The reference is a single `gossamer crawl` of the same web (same server, so the same URLs):
the union of the workers' pages.jsonl must hold exactly its URL set.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.testweb import TestWebServer, Web, generate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

GOSSAMER = [sys.executable, "-m", "gossamer.cli"]
WEB_ARGS = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet"]
FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--total-timeout", "2"]


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def _web() -> Web:
    return generate(5, hosts=6, pages_per_host=30, specials=(), crawl_delay=None)


async def _start(log: Path, *args: str) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(*GOSSAMER, *args, stdout=out, stderr=out)


async def _run(log: Path, *args: str, limit: float = 60) -> int:
    proc = await _start(log, *args)
    try:
        return await asyncio.wait_for(proc.wait(), limit)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise


async def _output(*args: str, limit: float = 30) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), limit)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _records(out: Path) -> list[dict[str, Any]]:
    path = out / "pages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


async def _reference(tmp_path: Path, seed: str, args: list[str]) -> set[str]:
    out = tmp_path / "reference"
    code = await _run(
        tmp_path / "reference.log", "crawl", seed, *args, *WEB_ARGS, "--out", str(out)
    )
    assert code == 0, (tmp_path / "reference.log").read_text()
    return {r["url"] for r in _records(out)}


async def _status(url: str) -> dict[str, Any]:
    code, out, err = await _output("cluster", "status", "--redis", url, "--json")
    assert code == 0, err
    state: dict[str, Any] = json.loads(out)
    return state


async def _wait_alive(url: str, count: int, limit: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while True:
        state = await _status(url)
        if sum(w["alive"] for w in state["workers"]) >= count:
            return state
        assert time.monotonic() < deadline, state
        await asyncio.sleep(0.2)


async def _first_assignment(url: str, limit: float = 20) -> dict[str, frozenset[int]]:
    """The first published assignment (version 1), read from Redis as soon as it is there."""
    control = Control(Redis.from_url(url), DEFAULT_JOB)
    deadline = time.monotonic() + limit
    try:
        while (version := await control.version()) < 1:
            assert time.monotonic() < deadline, "no assignment published"
            await asyncio.sleep(0.01)
        assignment = await control.assignment()
        assert version == await control.version() == 1, "a second assignment came first"
        return assignment
    finally:
        await control.redis.aclose()


def _busiest(tmp_path: Path, least: int = 5) -> int | None:
    """A worker with at least ``least`` records (the kill must land mid-crawl)."""
    for i in range(3):
        if len(_records(tmp_path / f"w{i}")) >= least:
            return i
    return None


def _worker(url: str, tmp_path: Path, i: int, *extra: str) -> list[str]:
    name = f"w{i}"
    return ["cluster", "worker", "--redis", url, "--name", name,
            "--out", str(tmp_path / name), "--quiet", *extra]  # fmt: skip


async def test_three_workers_crawl_the_web_once(tmp_path: Path, redis_server: RedisServer) -> None:
    args = [*FAST, "--concurrency", "8", "--per-host", "1", "--delay", "0.03"]
    url = redis_server.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await _reference(tmp_path, seed, args)
        # Workers started before the submit wait for the job, beating meanwhile.
        workers = [
            await _start(tmp_path / f"w{i}.log", *_worker(url, tmp_path, i)) for i in range(3)
        ]
        state = await _wait_alive(url, 3)
        assert not state["submitted"]
        submit = ["cluster", "submit", "--redis", url, seed, *args, *WEB_ARGS, "--partitions", "64"]
        assert await _run(tmp_path / "submit.log", *submit) == 0
        first = await _first_assignment(url)
        code, _, err = await _output("cluster", "wait", "--redis", url, "--timeout", "45", limit=50)
        assert code == 0, err
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], [(tmp_path / f"w{i}.log").read_text() for i in range(3)]
        state = await _status(url)

    per_worker = [[r["url"] for r in _records(tmp_path / f"w{i}")] for i in range(3)]
    counts = Counter(u for urls in per_worker for u in urls)
    assert set(counts) == expected, (
        sorted(expected - set(counts))[:5],
        sorted(set(counts) - expected)[:5],
    )
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    # Hosts map to partitions by hash (port included): one worker may own none of the 6.
    assert sum(bool(urls) for urls in per_worker) >= 2, "one worker crawled everything"
    assert all((tmp_path / f"w{i}" / "stats.json").exists() for i in range(3))
    assert state["done"]
    assert sorted(w["name"] for w in state["workers"]) == ["w0", "w1", "w2"]
    assert state["totals"]["queued"] == state["totals"]["claimed"] == 0
    # The first leader's first assignment had all three waiting workers: none joined late.
    assert sorted(first) == ["w0", "w1", "w2"] and all(first.values())


async def test_kill_9_a_worker_survivors_finish(tmp_path: Path, redis_server: RedisServer) -> None:
    concurrency = 4
    slow = [*FAST, "--per-host", "1", "--delay", "0.08", "--concurrency", str(concurrency)]
    url = redis_server.url
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await _reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        submit = ["cluster", "submit", "--redis", url, seed, *slow, *WEB_ARGS, "--partitions", "64",
                  "--heartbeat-ttl", "2", "--claim-timeout", "2"]  # fmt: skip
        assert await _run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await _start(tmp_path / f"w{i}.log", *_worker(url, tmp_path, i)) for i in range(3)
        ]
        await _wait_alive(url, 3)
        deadline = time.monotonic() + 20
        while (v := _busiest(tmp_path)) is None:
            assert time.monotonic() < deadline, "no worker fetched anything"
            await asyncio.sleep(0.05)
        victim = workers[v]
        victim.send_signal(signal.SIGKILL)
        await victim.wait()
        killed_at = time.monotonic()
        state = await _status(url)
        assert not state["done"], "the kill came too late to test anything"
        code, _, err = await _output("cluster", "wait", "--redis", url, "--timeout", "50", limit=55)
        assert code == 0, err
        survivors = [w for i, w in enumerate(workers) if i != v]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in survivors)), 30)
        assert codes == [0, 0]
        state = await _status(url)

    assert time.monotonic() - killed_at < 50
    victim_urls = {r["url"] for r in _records(tmp_path / f"w{v}")}
    counts = Counter(r["url"] for i in range(3) for r in _records(tmp_path / f"w{i}"))
    assert set(counts) == expected, sorted(expected - set(counts))[:5]
    twice = {u for u, n in counts.items() if n > 1}
    assert twice <= victim_urls
    # Fetched again: what the victim had in flight, or recorded but not yet acked in Redis.
    assert len(twice) <= 2 * concurrency, sorted(twice)
    alive = {w["name"]: w["alive"] for w in state["workers"]}
    assert alive[f"w{v}"] is False


async def test_unreachable_redis_is_one_line_exit_1(tmp_path: Path) -> None:
    bad = "redis://127.0.0.1:1/0"
    for args in (
        ["cluster", "status", "--redis", bad],
        ["cluster", "worker", "--redis", bad, "--out", str(tmp_path / "w")],
        ["cluster", "submit", "--redis", bad, "http://site0.test/"],
        ["cluster", "wait", "--redis", bad, "--timeout", "1"],
    ):
        started = time.monotonic()
        code, _, err = await _output(*args)
        assert code == 1, (args, err)
        assert time.monotonic() - started < 8
        assert err.count("\n") == 1 and "Redis" in err and "Traceback" not in err, err


async def test_bad_input_is_one_line_exit_2(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    code, _, err = await _output("cluster", "status", "--redis", "nope://x")
    assert (code, err.count("\n")) == (2, 1), err
    code, _, err = await _output("cluster", "submit", "--redis", url, "not a url")
    assert (code, err.count("\n")) == (2, 1), err
    # No job yet: the worker waits, then gives up with one line.
    code, _, err = await _output("cluster", "worker", "--redis", url, "--job-timeout", "0.5",
                                 "--out", str(tmp_path / "w"))  # fmt: skip
    assert code == 1 and "no job" in err.splitlines()[-1], err
    # A malformed stored job.
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    await client.set("gs:{broken}:job", '{"concurrency": "many"}')
    await client.aclose()
    code, _, err = await _output("cluster", "worker", "--redis", url, "--job", "broken",
                                 "--out", str(tmp_path / "w"))  # fmt: skip
    assert code == 2 and "malformed" in err and err.count("\n") == 1, err


async def test_up_runs_a_local_cluster(tmp_path: Path) -> None:
    async with TestWebServer(_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await _reference(tmp_path, seed, FAST)
        out = tmp_path / "up"
        args = ["cluster", "up", "-n", "2", "--out", str(out), seed, *FAST, *WEB_ARGS]
        code, stdout, err = await _output(*args, "--partitions", "32", limit=60)
        assert code == 0, err
    assert "finished" in stdout
    counts = Counter(r["url"] for i in range(2) for r in _records(out / f"worker-{i}"))
    assert set(counts) == expected and max(counts.values()) == 1
    assert (out / "redis" / "appendonlydir").exists()

"""`gossamer cluster` as subprocesses against a real redis-server and the in-process test web.

The reference is a single `gossamer crawl` of the same web (same server, so the same URLs):
the union of the workers' pages.jsonl must hold exactly its URL set.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    assert_same_urls,
    cluster_status,
    cluster_wait,
    first_assignment,
    output,
    read_records,
    reference,
    run,
    small_web,
    start,
    url_counts,
    wait_alive,
    wait_for_records,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.frontier.redis.keys import partition_of
from gossamer.testweb import TestWebServer
from gossamer.urls import host_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


async def test_three_workers_crawl_the_web_once(tmp_path: Path, redis_server: RedisServer) -> None:
    args = [*FAST, "--concurrency", "8", "--per-host", "1", "--delay", "0.03"]
    url = redis_server.url
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, args)
        # Workers started before the submit wait for the job, beating meanwhile.
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        state = await wait_alive(url, 3)
        assert not state["submitted"]
        submit = ["cluster", "submit", "--redis", url, seed, *args, *WEB_ARGS, "--partitions", "64"]
        assert await run(tmp_path / "submit.log", *submit) == 0
        first = await first_assignment(url)
        await cluster_wait(url, 45)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], worker_logs(tmp_path, 3)
        state = await cluster_status(url)

    per_worker = [[r["url"] for r in read_records(tmp_path / f"w{i}")] for i in range(3)]
    counts = Counter(u for urls in per_worker for u in urls)
    assert_same_urls(counts, expected)
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    # Hosts map to partitions by hash (port included): one worker may own none of the 6, and
    # now and then (the port is random) one owns all of them.
    hosts = {partition_of(host_key(u), 64) for u in counts}
    owners = sum(bool(first[f"w{i}"] & hosts) for i in range(3))
    crawled = sum(bool(urls) for urls in per_worker)
    assert crawled >= min(owners, 2), f"{crawled} worker(s) crawled, {owners} owned hosts"
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
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, [*FAST, "--concurrency", "16"])
        # A survivor whose loop does not run for claim-timeout less a renewal period (a loaded
        # machine) loses its claims and fetches a URL twice, as designed: 2 s lost one on a
        # survivor stopped 2.5 s; 6 s (renewed every 2 s) and a 3 s heartbeat lose none then.
        submit = ["cluster", "submit", "--redis", url, seed, *slow, *WEB_ARGS, "--partitions", "64",
                  "--heartbeat-ttl", "3", "--claim-timeout", "6"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        await wait_alive(url, 3)
        v = await wait_for_records(tmp_path, range(3), 5)
        victim = workers[v]
        victim.send_signal(signal.SIGKILL)
        await victim.wait()
        killed_at = time.monotonic()
        state = await cluster_status(url)
        assert not state["done"], "the kill came too late to test anything"
        await cluster_wait(url, 50)
        survivors = [w for i, w in enumerate(workers) if i != v]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in survivors)), 30)
        assert codes == [0, 0]
        state = await cluster_status(url)

    assert time.monotonic() - killed_at < 50
    victim_urls = {r["url"] for r in read_records(tmp_path / f"w{v}")}
    counts = url_counts(tmp_path, 3)
    assert set(counts) == expected, sorted(expected - set(counts))[:5]
    twice = {u for u, n in counts.items() if n > 1}
    assert twice <= victim_urls
    # Fetched again: what the victim had in flight, or recorded but not yet acked in Redis.
    assert len(twice) <= 2 * concurrency, sorted(twice)
    alive = {w["name"]: w["alive"] for w in state["workers"]}
    assert alive[f"w{v}"] is False


async def test_unreachable_redis_is_one_line_exit_1() -> None:
    """A command run once gives up at once; a worker waits for its Redis as for an outage
    (tests/cluster/test_worker_startup.py)."""
    bad = "redis://127.0.0.1:1/0"
    for args in (
        ["cluster", "status", "--redis", bad],
        ["cluster", "submit", "--redis", bad, "http://site0.test/"],
        ["cluster", "wait", "--redis", bad, "--timeout", "1"],
    ):
        started = time.monotonic()
        code, _, err = await output(*args)
        assert code == 1, (args, err)
        assert time.monotonic() - started < 8
        assert err.count("\n") == 1 and "Redis" in err and "Traceback" not in err, err


async def test_bad_input_is_one_line_exit_2(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    code, _, err = await output("cluster", "status", "--redis", "nope://x")
    assert (code, err.count("\n")) == (2, 1), err
    code, _, err = await output("cluster", "submit", "--redis", url, "not a url")
    assert (code, err.count("\n")) == (2, 1), err
    # No job yet: the worker waits, then gives up with one line.
    code, _, err = await output("cluster", "worker", "--redis", url, "--job-timeout", "0.5",
                                "--out", str(tmp_path / "w"))  # fmt: skip
    assert code == 1 and "no job" in err.splitlines()[-1], err
    # A malformed stored job.
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    await client.set("gs:{broken}:job", '{"concurrency": "many"}')
    await client.aclose()
    code, _, err = await output("cluster", "worker", "--redis", url, "--job", "broken",
                                "--out", str(tmp_path / "w"))  # fmt: skip
    assert code == 2 and "malformed" in err and err.count("\n") == 1, err


async def test_up_runs_a_local_cluster(tmp_path: Path) -> None:
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, FAST)
        out = tmp_path / "up"
        args = ["cluster", "up", "-n", "2", "--out", str(out), seed, *FAST, *WEB_ARGS]
        code, stdout, err = await output(*args, "--partitions", "32", limit=60)
        assert code == 0, err
    assert "finished" in stdout
    counts = Counter(r["url"] for i in range(2) for r in read_records(out / f"worker-{i}"))
    assert set(counts) == expected and max(counts.values()) == 1
    assert (out / "redis" / "appendonlydir").exists()

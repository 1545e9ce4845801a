"""gossamer on a 3-master Redis Cluster: the user gives one node's URL, as to ``redis-cli -c``.

The same end-to-end checks as test_cluster.py, with the job's partitions spread over three
masters: the workers' union holds exactly the URL set of a single ``gossamer crawl``, each URL
once, also after a kill -9.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    assert_same_urls,
    cluster_status,
    cluster_wait,
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
from tests.redis_server import RedisClusterServer, RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import open_control, status
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.testweb import TestWebServer
from gossamer.urls import Scope


@pytest.fixture
def redis_cluster() -> Iterator[RedisClusterServer]:
    with RedisClusterServer() as cluster:
        yield cluster


async def _keys_per_node(cluster: RedisClusterServer) -> list[int]:
    sizes = []
    for url in cluster.urls:
        node = Redis.from_url(url)
        sizes.append(int(await node.dbsize()))
        await node.aclose()
    return sizes


async def test_one_node_url_reaches_the_whole_cluster(redis_cluster: RedisClusterServer) -> None:
    with RedisServer() as single:
        control = await open_control(single.url, "j")
        assert type(control.redis) is Redis
        await control.redis.aclose()
    control = await open_control(redis_cluster.urls[1], "j")
    assert isinstance(control.redis, RedisCluster)
    try:
        scope = Scope.for_seeds([], ["test"], max_depth=5)
        frontier = RedisFrontier(
            control.redis,
            "j",
            scope,
            PolitenessPolicy(),
            config=RedisFrontierConfig(partitions=64, refresh_interval=0.0),
        )
        urls = [f"http://h{h}.test/{i}" for h in range(60) for i in range(2)]
        assert (await frontier.add([Candidate(u) for u in urls])).added == len(urls)
        assert min(await _keys_per_node(redis_cluster)) > 0  # partitions on every master
        # A restarted or promoted node has no scripts: the pipeline loads them and goes on.
        await control.redis.script_flush()
        leased = []
        for _ in range(50):
            batch = await frontier.lease(100)
            for lease in batch:
                await frontier.ack(lease, None)
            leased += [lease.url for lease in batch]
            if await frontier.done():
                break
        assert sorted(leased) == sorted(urls)
        totals = await control.totals(64)
        assert (totals.finished, totals.queued, totals.claimed) == (len(urls), 0, 0)
        await control.heartbeat("w", {"pages": 1}, 5.0)  # a MULTI/EXEC in the {j} slot
        assert [(w.name, w.alive) for w in await control.workers()] == [("w", True)]
    finally:
        await control.redis.aclose()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_three_workers_crawl_the_web_once(
    tmp_path: Path, redis_cluster: RedisClusterServer
) -> None:
    args = [*FAST, "--concurrency", "8", "--per-host", "1", "--delay", "0.03"]
    url = redis_cluster.url
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        seed = server.url(0)
        expected = await reference(tmp_path, seed, args)
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        submit = ["cluster", "submit", "--redis", url, seed, *args, *WEB_ARGS, "--partitions", "64"]
        assert await run(tmp_path / "submit.log", *submit) == 0
        # No wait for all three alive: on a busy machine a small crawl may be over first.
        await cluster_wait(url, 45)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], worker_logs(tmp_path, 3)
        state = await cluster_status(redis_cluster.urls[2])  # any node's URL will do

    counts = url_counts(tmp_path, 3)
    assert_same_urls(counts, expected)
    assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1][:5]
    assert state["done"] and sorted(w["name"] for w in state["workers"]) == ["w0", "w1", "w2"]
    assert state["totals"]["queued"] == state["totals"]["claimed"] == 0
    pages = {u for u in expected if not u.endswith("/sitemap.xml")}  # the hosts' sitemaps
    assert state["totals"]["finished"] == len(pages)


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_kill_9_a_worker_survivors_finish(
    tmp_path: Path, redis_cluster: RedisClusterServer
) -> None:
    concurrency = 4
    slow = [*FAST, "--per-host", "1", "--delay", "0.08", "--concurrency", str(concurrency)]
    url = redis_cluster.url
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
        await wait_alive(url, 3, limit=30)
        v = await wait_for_records(tmp_path, range(3), 5)
        victim = workers[v]
        victim.send_signal(signal.SIGKILL)
        await victim.wait()
        # In-process: a `cluster status` subprocess starts too slowly on a busy machine.
        assert not (await status(url, DEFAULT_JOB))["done"], "the kill came too late"
        await cluster_wait(url, 50)
        survivors = [w for i, w in enumerate(workers) if i != v]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in survivors)), 30)
        assert codes == [0, 0]
        state = await cluster_status(url)

    victim_urls = {r["url"] for r in read_records(tmp_path / f"w{v}")}
    counts = url_counts(tmp_path, 3)
    assert set(counts) == expected, sorted(expected - set(counts))[:5]
    twice = {u for u, n in counts.items() if n > 1}
    assert twice <= victim_urls
    assert len(twice) <= 2 * concurrency, sorted(twice)
    assert {w["name"]: w["alive"] for w in state["workers"]}[f"w{v}"] is False

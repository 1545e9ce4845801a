"""A partition key of the wrong type is one partition's trouble: it is set aside (recorded once
for the job, with the key and what it holds), the workers crawl every other partition and
finish, and ``cluster status`` flags it rather than failing."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.cluster.acl import GOSSAMER_ACL, acl_user
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_status,
    output,
    read_records,
    run,
    small_web,
    start,
    worker_args,
    worker_tails,
)
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import format_status, status
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    RedisFrontier,
    RedisFrontierConfig,
    bad_keys,
    partition_keys,
    partition_of,
)
from gossamer.frontier.redis.faults import read_aside
from gossamer.testweb import TestWebServer
from gossamer.urls import Scope, host_key

PASSWORD = "crawler-secret"

PARTITIONS = 64
KINDS = {"counts": "hash", "hosts": "hash", "claimed": "hash", "deadlines": "zset"}
"""The keys the red team turned into strings, and the type each must have."""


def _victim(urls: list[str]) -> tuple[str, int]:
    """One of ``urls`` alone in its partition, and that partition."""
    parts = [partition_of(host_key(url), PARTITIONS) for url in urls]
    url, part = next((u, p) for u, p in zip(urls, parts, strict=True) if parts.count(p) == 1)
    return url, part


async def _break(redis: Redis, job: str, part: int, name: str) -> str:
    """Make ``name`` of ``part`` a STRING (as ``DEL`` then ``SET`` would); its key."""
    key = partition_keys(job, part)[name]
    await redis.delete(key)
    await redis.set(key, "garbage")
    return key


@pytest.mark.parametrize("name", list(KINDS))
async def test_a_frontier_sets_a_partition_of_a_wrong_type_key_aside(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    redis = Redis.from_url(redis_server.url)
    urls = [f"http://h{i}.test/" for i in range(8)]
    victim, part = _victim(urls)
    config = RedisFrontierConfig(partitions=PARTITIONS, refresh_interval=0.0)
    frontier = RedisFrontier(
        redis, "j", Scope.for_seeds([], ["test"], max_depth=5), PolitenessPolicy(), config=config
    )
    try:
        assert (await frontier.add([Candidate(url) for url in urls])).added == len(urls)
        key = await _break(redis, "j", part, name)
        leased: list[str] = []
        with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
            for _ in range(100):
                for lease in await frontier.lease(10):
                    leased.append(lease.url)
                    await frontier.ack(lease, None)
                if await frontier.done():
                    break
            # a URL found later for the partition set aside is kept with the bad entries
            assert (await frontier.add([Candidate(victim + "later")])).added == 1
        assert await frontier.done()
        assert sorted(leased) == sorted(url for url in urls if url != victim)
        why = f"{key} holds a string, not a {KINDS[name]}"
        assert await read_aside(redis, "j") == {part: why}
        said = [r.message for r in caplog.records if "set aside" in r.message]
        assert len(said) == 1 and key in said[0], said
        kept = [json.loads(raw) for raw in await redis.lrange(bad_keys("j")["entries"], 0, -1)]
        assert [(k["partition"], k["reason"]) for k in kept] == [(part, "partition set aside")]
        assert kept[0]["entry"].startswith(victim.rstrip("/")) and "later" in kept[0]["entry"]
        totals = await Control(redis, "j").totals(PARTITIONS)
        assert totals.aside == {part: why} and totals.queued == totals.claimed == 0
    finally:
        await redis.aclose()


async def test_a_user_with_the_documented_acl_sets_it_aside_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The documented ACL has no TYPE: the scripts' own reply names the key."""
    with RedisServer(password="admin", config=acl_user("crawler", PASSWORD, *GOSSAMER_ACL)) as s:
        admin = Redis.from_url(s.url)
        redis = Redis.from_url(f"redis://crawler:{PASSWORD}@127.0.0.1:{s.port}/0")
        urls = [f"http://h{i}.test/" for i in range(8)]
        victim, part = _victim(urls)
        config = RedisFrontierConfig(partitions=PARTITIONS, refresh_interval=0.0)
        scope = Scope.for_seeds([], ["test"], max_depth=5)
        frontier = RedisFrontier(redis, "j", scope, PolitenessPolicy(), config=config)
        try:
            await frontier.add([Candidate(url) for url in urls])
            key = await _break(admin, "j", part, "hosts")
            leased = []
            with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
                for _ in range(100):
                    for lease in await frontier.lease(10):
                        leased.append(lease.url)
                        await frontier.ack(lease, None)
                    if await frontier.done():
                        break
            assert sorted(leased) == sorted(url for url in urls if url != victim)
            assert await read_aside(redis, "j") == {part: f"{key} is not a hash"}
            assert sum("set aside" in r.message for r in caplog.records) == 1
        finally:
            await redis.aclose()
            await admin.aclose()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(KINDS))
async def test_workers_crawl_every_other_partition_and_status_flags_it(
    tmp_path: Path, redis_server: RedisServer, name: str
) -> None:
    url = redis_server.url
    async with TestWebServer(small_web(hosts=4, pages_per_host=5), flaky_failures=0) as web:
        seeds = [web.url(i) for i in range(4)]
        # the first seed's partition, and every seed in it (the web's port is random, so
        # two hosts may share one)
        part = partition_of(host_key(seeds[0]), PARTITIONS)
        victims = {host_key(s) for s in seeds if partition_of(host_key(s), PARTITIONS) == part}
        submit = ["cluster", "submit", "--redis", url, *seeds, *FAST, *WEB_ARGS]
        assert await run(tmp_path / "submit.log", *submit, "--partitions", str(PARTITIONS)) == 0
        redis = Redis.from_url(url)
        try:
            key = await _break(redis, DEFAULT_JOB, part, name)
            queue = partition_keys(DEFAULT_JOB, part)["queue"]
            held = await redis.lrange(queue, 0, -1)
            workers = [
                start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in (0, 1)
            ]
            procs = await asyncio.gather(*workers)
            codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in procs)), 90)
            assert codes == [0, 0], worker_tails(tmp_path, 2)
            kept = await redis.lrange(queue, 0, -1)  # what it held stays, for an operator
            assert kept[: len(held)] == held  # (and outlinks added before it was met)
        finally:
            await redis.aclose()
    logs = "".join((tmp_path / f"w{i}.log").read_text() for i in (0, 1))
    assert logs.count(f"partition {part} set aside") == 1 and key in logs, logs
    assert "Traceback" not in logs and "WRONGTYPE" not in logs.replace(key, ""), logs
    fetched = {r["url"] for i in (0, 1) for r in read_records(tmp_path / f"w{i}")}
    assert not {u for u in fetched if host_key(u) in victims}
    assert {s for s in seeds if host_key(s) not in victims} <= fetched
    assert len({host_key(u) for u in fetched}) == 4 - len(victims)
    state = await cluster_status(url)
    assert state["done"] and state["aside"] == {
        str(part): f"{key} holds a string, not a {KINDS[name]}"
    }
    assert f"partition {part}: {key} holds a string" in format_status(state)
    code, said, err = await output("cluster", "status", "--redis", url)
    assert code == 0 and "1 partition(s) set aside" in said, (said, err)


async def test_status_flags_a_counts_key_of_the_wrong_type_nobody_met_yet(
    redis_server: RedisServer,
) -> None:
    """``cluster status`` reads the counts itself: an unreadable one is flagged, not fatal."""
    code, _, err = await output(
        "cluster", "submit", "--redis", redis_server.url, "http://a.test/", "--partitions", "8"
    )
    assert code == 0, err
    redis = Redis.from_url(redis_server.url)
    try:
        part = partition_of("http://a.test", 8)
        key = await _break(redis, DEFAULT_JOB, part, "counts")
        state = await status(redis_server.url, DEFAULT_JOB)
    finally:
        await redis.aclose()
    assert state["aside"] == {str(part): f"{key} is not a hash"}
    assert state["totals"]["queued"] == 0


@pytest.mark.parametrize("which", ["entries", "count"])
async def test_bad_entries_of_the_wrong_type_stop_nothing(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture, which: str
) -> None:
    """The job's bad entries (a LIST and its count) of another type, where a partition set
    aside keeps its URLs and a malformed entry goes: said once, the frontier goes on (the
    malformed entry stays claimed: its claim lapses and comes back), status reads on."""
    redis = Redis.from_url(redis_server.url)
    urls = [f"http://h{i}.test/" for i in range(8)]
    victim, part = _victim(urls)
    config = RedisFrontierConfig(partitions=PARTITIONS, refresh_interval=0.0)
    frontier = RedisFrontier(
        redis, "j", Scope.for_seeds([], ["test"], max_depth=5), PolitenessPolicy(), config=config
    )
    try:
        await frontier.add([Candidate(url) for url in urls])
        await _break(redis, "j", part, "counts")
        other = partition_of(host_key(urls[1]), PARTITIONS)
        await redis.rpush(partition_keys("j", other)["queue"], "not an entry")
        await redis.hset(bad_keys("j")[which], "x", "1")  # a HASH: neither LIST nor STRING
        leased: list[str] = []
        with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
            for _ in range(50):
                for lease in await frontier.lease(10):
                    leased.append(lease.url)
                    await frontier.ack(lease, None)
                if not await frontier.lease(10) and await frontier.done():
                    break
            assert (await frontier.add([Candidate(victim + "later")])).added == 1
        assert sorted(leased) == sorted(url for url in urls if url != victim)
        assert sum("bad entries" in r.message for r in caplog.records) == 1
        assert await redis.hlen(partition_keys("j", other)["claimed"]) == 1  # kept, not lost
        totals = await Control(redis, "j").totals(PARTITIONS)
        assert list(totals.aside) == [part]  # the count of a refused list may have moved
    finally:
        await redis.aclose()

"""``read_counts``: one script per chunk of partitions on a plain server, one HMGET per
partition in cluster mode; both give the same sums and busy partitions."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, cast

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.redis import partition_keys, read_counts
from gossamer.frontier.redis.counts import _SLOTLESS

PARTITIONS = 2_500  # three chunks of the script, the last one short


@pytest.fixture(scope="module", params=["plain", "cluster-mode"])
def server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    with RedisServer(cluster=request.param == "cluster-mode") as server:
        yield server


async def test_sums_and_busy_partitions_match_the_hashes(server: RedisServer) -> None:
    rng = random.Random(5)
    redis = Redis.from_url(server.url)
    try:
        expected = {"queued": 0, "claimed": 0, "seen": 0, "finished": 0}
        busy: dict[int, tuple[int, int]] = {}
        async with redis.pipeline(transaction=False) as pipe:
            for part in rng.sample(range(PARTITIONS), 900):  # the rest have no counts key
                row = {name: rng.choice([0, 0, 1, 7, 123_456]) for name in expected}
                pipe.hset(partition_keys("j", part)["counts"], mapping=cast(Any, row))
                for name, value in row.items():
                    expected[name] += value
                if row["queued"] or row["claimed"]:
                    busy[part] = (row["queued"], row["claimed"])
            await pipe.execute()
        counts = await read_counts(redis, "j", PARTITIONS)
        got = {name: getattr(counts, name) for name in expected}
        assert got == expected
        assert counts.busy == busy
        assert counts.waiting == {p for p, (q, _) in busy.items() if q}
        assert counts.holding == {p for p, (_, c) in busy.items() if c}
        # the script ran on the plain server; cluster mode fell back to one read per partition
        assert _SLOTLESS.get(redis, True) is (not server.cluster)
    finally:
        await redis.flushall()
        await redis.aclose()

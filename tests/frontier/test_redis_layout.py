"""What a queued URL costs in Redis: format 2 names a host once per partition, keeps no
fingerprint in an entry, and keeps the seen set in intsets (8 bytes a fingerprint) under
Redis' default settings, however many URLs a partition has seen; format 4 splits a seen SET
in four, reading it once and writing it again in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig, partition_keys
from gossamer.urls import Scope

URLS = 6_000
HOSTS = 30


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url)
    await redis.flushall()
    yield redis
    await redis.aclose()


def _url(i: int) -> str:
    host, page = divmod(i, URLS // HOSTS)
    return f"https://www.h{host}.example/articles/2024/{page % 12 + 1:02d}/title-{page}.html"


async def _frontier(client: Redis) -> RedisFrontier:
    scope = Scope.for_seeds([], ["example"], max_depth=5)
    config = RedisFrontierConfig(partitions=1, refresh_interval=0.0)
    return RedisFrontier(client, "layout", scope, PolitenessPolicy(), config=config)


async def test_a_partition_stores_hosts_once_and_its_seen_set_in_intsets(client: Redis) -> None:
    frontier = await _frontier(client)
    for start in range(0, URLS, 1_000):
        added = await frontier.add([Candidate(_url(i)) for i in range(start, start + 1_000)])
        assert added.added == 1_000
    keys = partition_keys("layout", 0)
    entries = await client.lrange(keys["queue"], 0, 4)
    assert entries[0] == b"1||/articles/2024/01/title-0.html"
    assert not any(b"example" in entry for entry in entries)
    assert await client.hlen(keys["hosts"]) == 2 * HOSTS
    seen = [key async for key in client.scan_iter(match=keys["seen"] + ":*")]
    assert len(seen) > URLS // 512
    assert sum([await client.scard(key) for key in seen]) == URLS
    for key in seen:
        assert await client.object("encoding", key) == b"intset"
        assert await client.scard(key) <= 512
    # a URL seen already is a duplicate, whichever SET holds it now
    again = await _frontier(client)
    assert (await again.add([Candidate(_url(i)) for i in range(0, URLS, 7)])).duplicates == len(
        range(0, URLS, 7)
    )


async def test_a_seen_set_splits_in_four_read_once_and_written_again(client: Redis) -> None:
    """Each split reads one SET (one SMEMBERS) and makes three more: the SETs number
    4^sl + 3 sp, and no fingerprint is removed one by one (no SREM: the SET is deleted and its
    members written again, each an append to an intset)."""
    await client.config_resetstat()
    frontier = await _frontier(client)
    for start in range(0, URLS, 1_000):
        await frontier.add([Candidate(_url(i)) for i in range(start, start + 1_000)])
    keys = partition_keys("layout", 0)
    level, split = (int(n) for n in await client.hmget(keys["counts"], "sl", "sp"))
    seen = [key async for key in client.scan_iter(match=keys["seen"] + ":*")]
    assert len(seen) == 4**level + 3 * split > 1
    stats = await client.info("commandstats")
    assert stats["cmdstat_smembers"]["calls"] == (len(seen) - 1) // 3
    assert "cmdstat_srem" not in stats
    assert sum([await client.scard(key) for key in seen]) == URLS

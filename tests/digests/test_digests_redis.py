"""The job's digest index in a real redis-server (and a 3-master Redis Cluster): exact and
near duplicates across clients, the race of two workers on one content, a stale or hostile
reply, and an unreachable Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from tests.digests.digest_site import ARTICLE, EDITED, OTHER, article
from tests.redis_server import RedisClusterServer, RedisServer

from gossamer.digests.base import Digest, Match, digest
from gossamer.digests.redis import SHARDS, RedisDigests, _first, _simhash, read_totals

pytestmark = pytest.mark.timeout(60)


def text_digest(paragraphs: list[str]) -> Digest:
    found = digest("\n\n".join(paragraphs))
    assert found is not None
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


@pytest.fixture
async def redis(server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(server.url)
    await client.flushall()
    yield client
    await client.aclose()


async def test_two_workers_share_exact_and_near_duplicates(redis: Redis) -> None:
    one, two = RedisDigests(redis, "job"), RedisDigests(redis, "job")
    first = text_digest(ARTICLE)
    assert await one.check("http://a.test/1", first) is None
    assert await two.check("http://b.test/copy", first) == Match("exact", "http://a.test/1")
    near = await two.check("http://b.test/edit", text_digest(EDITED))
    assert near is not None and near.kind == "near" and near.first == "http://a.test/1"
    assert 0 < near.distance <= 3
    assert await two.check("http://b.test/other", text_digest(OTHER)) is None
    assert await one.check("http://a.test/1", first) is None  # met again: itself
    assert await RedisDigests(redis, "another-job").check("http://c.test/", first) is None
    assert (two.stats().exact, two.stats().near) == (1, 1)
    assert await read_totals(redis, "job") == {"exact": 1, "near": 1, "digested": 5}


async def test_racing_workers_agree_on_the_first(server: RedisServer, redis: Redis) -> None:
    clients = [Redis.from_url(server.url) for _ in range(2)]
    try:
        for round_ in range(20):
            content = text_digest(article(100 + round_))
            indexes = [RedisDigests(client, "race") for client in clients]
            urls = [f"http://w{i}.test/{round_}/{n}" for i in range(2) for n in range(5)]
            answers = await asyncio.gather(
                *(indexes[i % 2].check(url, content) for i, url in enumerate(urls))
            )
            firsts = [url for url, answer in zip(urls, answers, strict=True) if answer is None]
            assert len(firsts) == 1
            assert {a.first for a in answers if a is not None} == set(firsts)
    finally:
        for client in clients:
            await client.aclose()


async def test_a_hostile_or_stale_reply_is_no_match() -> None:
    assert _first(b"http://a/") == "http://a/"
    assert _first(b"") == ""
    assert _first(b"x" * (1 << 17)) is None
    assert _first([b"exact"]) is None
    assert _first(1) is None
    assert _first(b"\xff\xfe") == "\ufffd\ufffd"
    assert _simhash(b"00000000000000ff") == 255
    assert _simhash(b"zz") is None and _simhash(b"x" * 16) is None and _simhash(7) is None


async def test_unreachable_redis_means_no_duplicates_and_the_crawl_goes_on() -> None:
    with RedisServer() as gone:
        url = gone.url
    client = Redis.from_url(url, socket_connect_timeout=0.5)
    try:
        digests = RedisDigests(client, "job")
        assert await digests.check("http://a.test/", text_digest(ARTICLE)) is None
        assert digests.stats().digested == 0
    finally:
        await client.aclose()


async def test_redis_cluster_runs_the_script_in_one_slot() -> None:
    with RedisClusterServer() as cluster:
        client = RedisCluster.from_url(cluster.url)
        try:
            one = RedisDigests(client, "job")
            first = text_digest(ARTICLE)
            assert await one.check("http://a.test/1", first) is None
            found = await one.check("http://b.test/1", text_digest(EDITED))
            assert found is not None and found.first == "http://a.test/1"
        finally:
            await client.aclose()


async def test_exact_only_digests_skip_the_bands(redis: Redis) -> None:
    digests = RedisDigests(redis, "exact")
    assert await digests.check("http://a.test/", Digest(5)) is None
    assert await digests.check("http://b.test/", Digest(5)) == Match("exact", "http://a.test/")
    assert await digests.check("http://c.test/", Digest(6)) is None
    assert not [key async for key in redis.scan_iter(match="gs:{exact:d*}:digest:b:*")]


async def test_the_index_spreads_over_its_shards(redis: Redis) -> None:
    digests = RedisDigests(redis, "spread")
    for i in range(200):
        assert await digests.check(f"http://a.test/{i}", text_digest(article(1000 + i))) is None
    tags = {key.split(b"}")[0] async for key in redis.scan_iter(match="gs:{spread:d*")}
    assert len(tags) == SHARDS
    assert not [key async for key in redis.scan_iter(match="gs:{spread}:*")]


async def _calls(redis: Redis) -> dict[str, int]:
    stats = await redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in stats.items()}


async def test_one_server_checks_most_pages_in_one_call(redis: Redis) -> None:
    # On one server every shard is on it: a new content (no band set holding anything) and an
    # exact copy are one script call each, where a Redis Cluster takes two pipelines of five.
    digests = RedisDigests(redis, "calls")
    await digests.check("http://a.test/warm", text_digest(article(7)))  # scripts loaded
    pages = [
        ("http://a.test/1", ARTICLE, None),
        ("http://b.test/copy", ARTICLE, "exact"),
        ("http://c.test/other", OTHER, None),
    ]
    for url, paragraphs, kind in pages:
        await redis.config_resetstat()
        found = await digests.check(url, text_digest(paragraphs))
        assert (found and found.kind) == kind
        assert (await _calls(redis)).get("evalsha") == 1, url
    await redis.config_resetstat()
    near = await digests.check("http://d.test/edit", text_digest(EDITED))
    assert near is not None and (near.kind, near.first) == ("near", "http://a.test/1")
    calls = await _calls(redis)
    assert (calls.get("evalsha"), calls.get("hget"), calls.get("hincrby")) == (1, 2, 2)
    assert await read_totals(redis, "calls") == {"digested": 5, "exact": 1, "near": 1}


async def _contents(client: Redis) -> dict[bytes, object]:
    found: dict[bytes, object] = {}
    async for key in client.scan_iter(match="gs:*"):
        kind = await client.type(key)
        found[key] = await (client.hgetall(key) if kind == b"hash" else client.smembers(key))
    return found


async def test_one_call_and_the_pipelines_keep_the_same_index(redis: Redis) -> None:
    # A one-node Redis Cluster refuses the one call (its keys span slots): the client falls
    # back to the pipelines once and for all, and both ways answer and store alike.
    texts = [ARTICLE, EDITED, OTHER, ARTICLE, *(article(300 + i) for i in range(30)), EDITED]
    with RedisServer(cluster=True) as node:
        cluster = Redis.from_url(node.url)
        try:
            answers = {}
            for client in (redis, cluster):
                digests = RedisDigests(client, "same")
                answers[client] = [
                    await digests.check(f"http://a.test/{i}", text_digest(paragraphs))
                    for i, paragraphs in enumerate(texts)
                ]
            assert answers[redis] == answers[cluster]
            assert [a and a.kind for a in answers[redis]][:4] == [None, "near", None, "exact"]
            assert await _contents(redis) == await _contents(cluster)
            errors = await cluster.info("errorstats")
            assert errors["errorstat_CROSSSLOT"]["count"] == 1
        finally:
            await cluster.aclose()

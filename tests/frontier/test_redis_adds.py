"""The add path of the Redis frontier (``adds.py``, ``add.lua``) against a real redis-server: a
worker sends a known host's entries as the partition stores them, and starts over naming every
host when the partition never gave the numbers it knows (the job cleared under it)."""

from __future__ import annotations

from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.frontier.base import Candidate
from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.redis.adds import Adds
from gossamer.frontier.redis.keys import Entry, PartitionKeys
from gossamer.frontier.redis.scripts import register
from gossamer.urls import fingerprint, host_key

PARTITIONS = 4
HOSTS = ("https://a.test", "https://b.test:8443", "http://c.test")


def admitted(paths: range) -> list[tuple[str, str, int, Candidate]]:
    urls = [f"{host}/p/{i}.html" for i in paths for host in HOSTS]
    return [(url, host_key(url), fingerprint(url), Candidate(url, depth=1)) for url in urls]


async def hgets(client: Redis) -> int:
    """HGETs Redis ran so far (those scripts ran included): the host look-ups."""
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_hget", {}).get("calls", 0))


async def queued(client: Redis, keys: PartitionKeys) -> list[str]:
    """Every queued entry, decoded back into its URL (host numbers replaced by names)."""
    urls = []
    for part in range(PARTITIONS):
        queue, hosts = keys.of(part, "queue", "hosts")
        names = await client.hgetall(hosts)
        for raw in await client.lrange(queue, 0, -1):
            number, rest = raw.decode().split("|", 1)
            stored = names[number.encode()].decode() + "|" + rest
            urls.append(Entry.decode(stored, part, 0).url)
    return sorted(urls)


async def test_known_hosts_go_as_stored_and_a_cleared_job_is_sent_again_by_name() -> None:
    with RedisServer() as server:
        client = Redis.from_url(server.url)
        try:
            keys = PartitionKeys("adds")
            adds = Adds(client, keys, register(client)["add"], PARTITIONS, by_url=False)
            fresh, duplicates = await adds.send(admitted(range(3)))
            assert sum(fresh.values()) == 9 and duplicates == 0
            looked_up = await hgets(client)
            await adds.send(admitted(range(3, 6)))  # every host's number known: sent as stored
            assert await hgets(client) == looked_up
            expected = sorted(url for url, *_ in admitted(range(6)))
            assert await queued(client, keys) == expected
            await client.flushall()  # the job cleared: the partitions gave no number yet
            adds.sent = SeenSet()
            fresh, _ = await adds.send(admitted(range(6, 8)))
            assert sum(fresh.values()) == 6
            assert await queued(client, keys) == sorted(url for url, *_ in admitted(range(6, 8)))
        finally:
            await client.aclose()


async def test_a_known_hosts_url_is_two_arguments_and_a_call_three_keys() -> None:
    """Once the numbers of a call's hosts are known, a URL is its fingerprint and its entry as
    stored, with no argument naming its host (most URLs of a call are of a host of their own),
    and a call names three keys: what Redis reads a call is 9 + 2 per URL arguments."""
    with RedisServer() as server:
        client = Redis.from_url(server.url)
        try:
            keys = PartitionKeys("adds")
            adds = Adds(client, keys, register(client)["add"], PARTITIONS, by_url=False)
            await adds.send(admitted(range(3)))  # learns every host's number
            await client.config_set("slowlog-log-slower-than", 0)  # every command logged
            await client.config_set("slowlog-max-len", 1000)
            await client.slowlog_reset()
            fresh, _ = await adds.send(admitted(range(3, 6)))
            assert sum(fresh.values()) == 9
            calls = [
                entry["command"].split()
                for entry in await client.slowlog_get(1000)
                if entry["command"].startswith(b"EVALSHA")
            ]
            assert calls and all(int(call[2]) == 3 for call in calls)  # numkeys
            assert sum(len(call) for call in calls) == 9 * len(calls) + 2 * 9
        finally:
            await client.aclose()

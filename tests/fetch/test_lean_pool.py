"""The lean client's idle pool on a crawl of many hosts (a real keep-alive server on
127.0.0.1, host names resolved to it): one idle connection kept for each host in rotation,
the oldest of all dropped first when full, no host kept once it has none."""

from __future__ import annotations

import asyncio
import ssl

from tests.fetch.test_lean import serve

from gossamer import eventloop
from gossamer.fetch import FetchConfig, Fetcher
from gossamer.fetch.dns import CachingResolver
from gossamer.fetch.lean import LeanClient, idle_limit
from gossamer.fetch.wire import Connection


async def _keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()


def _client(limit: int) -> LeanClient:
    resolver = CachingResolver(overrides=("*.pool=127.0.0.1",), timeout=5.0)
    return LeanClient(
        resolver.resolve,
        headers={},
        ssl_context=ssl.create_default_context(),
        connect_timeout=5.0,
        read_timeout=5.0,
        total_timeout=10.0,
        keepalive_timeout=60.0,
        limit=limit,
    )


async def _get(client: LeanClient, url: str) -> tuple[tuple[str, str, int], Connection]:
    """GET ``url``, read to its end and release it; its pool key and connection."""
    response = await client.get(url, None, lambda: None)
    while await response.readany():
        pass
    key, conn = response._key, response._conn
    response.release()
    return key, conn


async def test_one_idle_connection_is_kept_for_each_host_beyond_the_concurrency() -> None:
    """Each of 6 x concurrency hosts fetched twice in turn: the second round reuses every
    host's connection (the pool held only `concurrency` of them: 2 connections a host)."""
    concurrency = 4
    hosts = 6 * concurrency
    assert idle_limit(concurrency) >= hosts
    async with serve(_keep_alive) as (base, accepted):
        port = base.rpartition(":")[2]
        config = FetchConfig(
            concurrency=concurrency,
            resolve=("*.pool=127.0.0.1",),
            read_timeout=5.0,
            total_timeout=10.0,
        )
        async with Fetcher(config) as fetcher:
            for page in range(2):
                for i in range(hosts):
                    result = await fetcher.fetch(f"http://h{i}.pool:{port}/p{page}")
                    assert (result.status, result.error) == (200, None)
    assert len(accepted) == hosts


async def test_the_oldest_idle_connection_of_all_hosts_is_dropped_first() -> None:
    """Pool of 3: a's two, then b's; c's released drops a's older one (not b's, the oldest of
    its own host); a's newer one is reused first; d's drops b's, and b leaves the pool."""
    client = _client(limit=3)
    async with serve(_keep_alive) as (base, accepted):
        port = base.rpartition(":")[2]
        a, b, c, d = (f"http://{name}.pool:{port}/" for name in "abcd")
        first = await asyncio.gather(*(client.get(a, None, lambda: None) for _ in range(2)))
        for response in first:
            while await response.readany():
                pass
            response.release()
        old_a, new_a = (response._conn for response in first)
        _, conn_b = await _get(client, b)
        key_c, conn_c = await _get(client, c)
        assert not old_a.usable
        assert new_a.usable and conn_b.usable and conn_c.usable
        key_a, reused = await _get(client, a)
        assert reused is new_a
        key_d, _ = await _get(client, d)
        assert not conn_b.usable and conn_c.usable and new_a.usable
        assert list(client._idle) == [key_c, key_a, key_d]
        assert len(accepted) == 5
        client.close()
    assert not client._idle


async def test_no_host_is_kept_once_its_connections_are_gone() -> None:
    """Hosts past the limit, and a host whose only connection is taken, leave the pool."""
    client = _client(limit=2)
    async with serve(_keep_alive) as (base, accepted):
        port = base.rpartition(":")[2]
        keys = [(await _get(client, f"http://h{i}.pool:{port}/"))[0] for i in range(5)]
        assert list(client._idle) == keys[-2:]
        response = await client.get(f"http://h4.pool:{port}/", None, lambda: None)
        assert list(client._idle) == [keys[3]]
        response.close()
        response.release()
        assert list(client._idle) == [keys[3]]
        client.close()
    assert len(accepted) == 5


def test_the_idle_limit_stays_within_half_the_open_file_limit() -> None:
    """32 idle connections per request in flight, within half the open-file limit less the
    requests in flight; at least one."""
    assert idle_limit(64, nofile=1_000_000) == 2048
    assert idle_limit(64, nofile=1024) == 512 - 64
    assert idle_limit(64, nofile=256) == 64
    assert idle_limit(512, nofile=1024) == 1


def test_asyncio_s_own_loop_keeps_fewer_idle_connections() -> None:
    """Its TLS transport holds a 256 KiB buffer for a connection's life."""
    assert idle_limit(64, nofile=1_000_000, loop="asyncio") == 256
    assert idle_limit(4, nofile=1_000_000, loop="asyncio") == 128


def test_a_fetcher_on_asyncio_s_own_loop_bounds_its_pool() -> None:
    async def limit() -> int:
        async with Fetcher(FetchConfig(concurrency=64)) as fetcher:
            assert fetcher._lean is not None
            return fetcher._lean._limit

    assert asyncio.run(limit()) == 256  # pytest's loop: asyncio's own
    assert eventloop.run(limit(), "uvloop") == idle_limit(64)

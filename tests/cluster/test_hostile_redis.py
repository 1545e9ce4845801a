"""A "Redis" that lies about reply sizes: a real TCP server on loopback answers every command
with a hostile reply; gossamer's clients refuse it at its header, never allocating it."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException, RedisError
from tests.cluster.harness import output
from tests.redis_server import RedisServer

from gossamer.cluster.bounded import MAX_BULK, BoundedRESP2Parser, BoundedRESP3Parser, ReplyRefused
from gossamer.cluster.jobs import connect
from gossamer.frontier.redis import RedisClient

_MIB = 1 << 20


@asynccontextmanager
async def fake_redis(header: bytes, body: Callable[[int], bytes], most: int) -> AsyncIterator[str]:
    """A server answering anything with ``header`` then ``body(i)`` chunks, up to ``most``
    bytes while the client listens; yields its redis:// URL."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read(65536)
            writer.write(header)
            sent = 0
            i = 0
            while sent < most:
                chunk = body(i)
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
                i += 1
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.close()
        await server.wait_closed()


def _once(client: RedisClient) -> RedisClient:
    """No repeats: the test sees the first refusal."""
    assert not isinstance(client, list)
    client.set_retry(Retry(NoBackoff(), 0))  # type: ignore[union-attr]
    return client


HOSTILE = [
    pytest.param(b"$10000000000\r\n", lambda i: b"x" * _MIB, 300 * _MIB, "string of", id="10GB"),
    pytest.param(b"$" + str(MAX_BULK + 1).encode() + b"\r\n", lambda i: b"x" * _MIB, 100 * _MIB,
                 "string of", id="bulk-over-64MiB"),
    pytest.param(b"*100000000\r\n", lambda i: b":1\r\n" * 4096, 300 * _MIB, "elements",
                 id="100M-elements"),
    pytest.param(b"", lambda i: b"*1\r\n", 100_000, "nested", id="deep-nesting"),
    pytest.param(b"+", lambda i: b"a" * _MIB, 100 * _MIB, "line longer", id="endless-line"),
    pytest.param(b"$abc\r\n", lambda i: b"", 0, "malformed reply header", id="bad-length"),
    pytest.param(b"$-5\r\n", lambda i: b"", 0, "malformed reply header", id="negative-length"),
    pytest.param(b"*-5\r\n", lambda i: b"", 0, "malformed reply header", id="negative-count"),
    pytest.param(b":12x\r\n", lambda i: b"", 0, "malformed number", id="bad-integer"),
]  # fmt: skip


@pytest.mark.parametrize(("header", "body", "most", "says"), HOSTILE)
@pytest.mark.parametrize("protocol", ["2", "3"])
async def test_a_hostile_reply_is_refused_at_its_header(
    header: bytes, body: Callable[[int], bytes], most: int, says: str, protocol: str
) -> None:
    async with fake_redis(header, body, most) as url:
        client = _once(connect(f"{url}?protocol={protocol}"))
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises(ReplyRefused, match=says):
                await client.get("k")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            await client.aclose()
    assert time.monotonic() - started < 5
    assert peak < 8 * _MIB, f"{peak / _MIB:.1f} MiB allocated"


async def test_a_cluster_client_reads_with_the_bounds_too() -> None:
    async with fake_redis(b"*100000000\r\n", lambda i: b":1\r\n" * 4096, 300 * _MIB) as url:
        client = connect(url, cluster=True)
        tracemalloc.start()
        try:
            with pytest.raises((RedisError, RedisClusterException), match="elements"):
                await client.ping()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            await client.aclose()
    assert peak < 8 * _MIB, f"{peak / _MIB:.1f} MiB allocated"


async def test_real_replies_pass_the_bounds(redis_server: RedisServer) -> None:
    for protocol, parser in (("2", BoundedRESP2Parser), ("3", BoundedRESP3Parser)):
        client = connect(f"{redis_server.url}?protocol={protocol}")
        try:
            await client.set("big", b"x" * (8 * _MIB))
            await client.rpush("list", *range(10_000))
            assert len(await client.get("big") or b"") == 8 * _MIB
            assert len(await client.lrange("list", 0, -1)) == 10_000
            assert await client.hgetall("none") == {}
            connection = await client.connection_pool.get_connection()  # type: ignore[union-attr]
            assert isinstance(connection._parser, parser)
            await client.connection_pool.release(connection)  # type: ignore[union-attr]
        finally:
            await client.flushall()
            await client.aclose()


# A worker treats a refused reply as an outage, from its first connection: it waits it out
# (a warning), then gives up with status 75.
@pytest.mark.parametrize(
    ("command", "status", "lines"),
    [(["status"], 1, 1), (["worker", "--redis-timeout", "1"], 75, 2)],
)
async def test_cluster_commands_fail_with_one_line(
    command: list[str], status: int, lines: int
) -> None:
    async with fake_redis(b"$10000000000\r\n", lambda i: b"x" * _MIB, 300 * _MIB) as url:
        started = time.monotonic()
        code, out, err = await output("cluster", *command, "--redis", url, limit=30)
    assert code == status, (out, err)
    assert err.count("\n") == lines, err
    assert "string of 10000000000 bytes" in err.splitlines()[-1], err
    assert "Traceback" not in err and "MemoryError" not in err
    assert time.monotonic() - started < 20


async def test_a_negative_length_is_a_redis_error_not_the_job_s() -> None:
    """A bulk length below -1 (the real redis-server never sends one; this "Redis" is a
    fake): one line saying Redis sent a malformed reply, naming the server; not an invalid
    --job setting (exit 2), as redis-py's reader made of it."""
    async with fake_redis(b"$-5\r\n", lambda i: b"", 0) as url:
        code, out, err = await output("cluster", "status", "--redis", url, "--job", "rt", limit=30)
    assert code == 1, (out, err)
    assert err.count("\n") == 1, err
    assert "malformed reply header" in err and url.split("//")[1].split("/")[0] in err, err
    assert "'job'" not in err and "Traceback" not in err

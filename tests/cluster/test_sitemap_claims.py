"""One read of each sitemap per job (`gossamer.cluster.sitemaps`): a worker that finds a
sitemap claimed waits for the claim to end instead of leaving the sitemap unread."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest
import xxhash
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.cluster.sitemaps import SitemapClaims
from gossamer.frontier.redis import RedisClient

URL = "http://site.test/sitemap.xml"


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[RedisClient]:
    redis: RedisClient = Redis.from_url(redis_server.url)
    yield redis
    await redis.aclose()


async def test_a_claim_given_back_is_taken_by_the_waiting_worker(client: RedisClient) -> None:
    leaver, owner = SitemapClaims(client, "j", "w1", 60), SitemapClaims(client, "j", "w2", 60)
    assert await leaver.claim(URL)
    waiting = asyncio.create_task(owner.claim(URL))
    await asyncio.sleep(0.3)  # the owner found the claim taken and waits
    assert not waiting.done()
    await leaver.release(URL)
    assert await asyncio.wait_for(waiting, 5) is True


async def test_a_finished_read_is_not_made_again(client: RedisClient) -> None:
    first, second = SitemapClaims(client, "j", "w1", 60), SitemapClaims(client, "j", "w2", 60)
    assert await first.claim(URL)
    await first.finish(URL)
    assert await asyncio.wait_for(second.claim(URL), 1) is False
    await second.release(URL)  # not its claim, and done: nothing happens
    assert await asyncio.wait_for(second.claim(URL), 1) is False


async def test_another_workers_claim_is_not_given_back(client: RedisClient) -> None:
    holder, other = SitemapClaims(client, "j", "w1", 60), SitemapClaims(client, "j", "w2", 60)
    assert await holder.claim(URL)
    await other.release(URL)
    assert await client.get("gs:{j}:sitemap:" + xxhash.xxh3_64_hexdigest(URL.encode())) == b"w1"


def _reread(url: str) -> float:
    return 30.0


async def test_a_continuous_jobs_read_is_due_again_one_interval_after_it_began(
    client: RedisClient,
) -> None:
    clock = [100.0]
    reader = SitemapClaims(client, "j", "w1", 60, reread=_reread, clock=lambda: clock[0])
    other = SitemapClaims(client, "j", "w2", 60, reread=_reread, clock=lambda: clock[0])
    assert await reader.claim(URL)
    assert await reader.claim(URL), "a claim repeated after a lost reply holds"
    assert not await asyncio.wait_for(other.claim(URL), 1), "claimed: no wait, asked later"
    assert 59 <= (other.later(URL) or 0) <= 60
    clock[0] += 10  # the read took 10 s: the next is due 20 s from now
    await reader.finish(URL)
    assert not await other.claim(URL)
    assert 19 <= (other.later(URL) or 0) <= 20
    key = "gs:{j}:sitemap:" + xxhash.xxh3_64_hexdigest(URL.encode())
    await client.pexpire(key, 1)
    await asyncio.sleep(0.01)
    assert await other.claim(URL), "due: the next worker to ask reads it"


async def test_a_continuous_job_reads_a_sitemap_an_ended_run_finished(client: RedisClient) -> None:
    ended = SitemapClaims(client, "j", "w1", 60)
    assert await ended.claim(URL)
    await ended.finish(URL)
    assert await SitemapClaims(client, "j", "w2", 60, reread=_reread).claim(URL)


async def test_a_sitemap_s_password_is_not_hashed_into_its_claim(client: RedisClient) -> None:
    """A claim's key hashes the sitemap's URL with its password masked: a hash of a short
    password is reversed by trying them all."""
    claims = SitemapClaims(client, "j", "w1", 60, reread=_reread)
    assert await claims.claim("http://alice:pw@site.test/sitemap.xml")
    masked = xxhash.xxh3_64_hexdigest(b"http://alice:***@site.test/sitemap.xml")
    assert [key async for key in client.scan_iter(match="gs:{j}:sitemap:*")] == [
        f"gs:{{j}}:sitemap:{masked}".encode()
    ]


@pytest.mark.parametrize("reread", [None, _reread], ids=["ends", "continuous"])
async def test_a_claim_key_of_the_wrong_type_is_read_without_a_claim_and_mended(
    client: RedisClient, caplog: pytest.LogCaptureFixture, reread: Callable[[str], float] | None
) -> None:
    """A HASH where the claim's STRING goes: the sitemap is read all the same (no error, a
    warning once), and its finish writes the claim again, so the next worker finds it read."""
    key = "gs:{j}:sitemap:" + xxhash.xxh3_64_hexdigest(URL.encode())
    other = "http://site.test/other.xml"
    await client.hset(key, "x", "1")
    await client.hset("gs:{j}:sitemap:" + xxhash.xxh3_64_hexdigest(other.encode()), "x", "1")
    reader = SitemapClaims(client, "j", "w1", 60, reread=reread)
    with caplog.at_level(logging.WARNING, logger="gossamer.cluster.sitemaps"):
        assert await asyncio.wait_for(reader.claim(URL), 1) is True
        assert await asyncio.wait_for(reader.claim(other), 1) is True
        await reader.release(other)  # nothing to give back: let be
    assert sum("unusable" in r.message for r in caplog.records) == 1
    await reader.finish(URL)
    assert await client.get(key) == b"done"
    assert await SitemapClaims(client, "j", "w2", 60, reread=reread).claim(URL) is False

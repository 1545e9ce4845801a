"""A job's queues carry the format they were written in: a worker refuses a job of another."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis
from tests.cluster.harness import output, worker_args
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import job_json, parse_job
from gossamer.frontier.redis.keys import FORMAT
from gossamer.settings import JobSettings, settings_to_json


def test_a_stored_job_names_its_format() -> None:
    settings = JobSettings(partitions=8)
    assert f'"frontier_format":{FORMAT}' in job_json(settings)
    assert parse_job(job_json(settings), "j") == settings


async def test_a_worker_refuses_a_job_of_the_old_format(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A job stored as format 1 stored it (settings alone): one clear line, exit status 2,
    and nothing crawled."""
    client = Redis.from_url(redis_server.url)
    try:
        await Control(client, DEFAULT_JOB).store_job(settings_to_json(JobSettings(partitions=8)))
    finally:
        await client.aclose()
    code, _, err = await output(*worker_args(redis_server.url, tmp_path, 0))
    assert code == 2, err
    assert "Redis frontier format 1" in err and f"reads format {FORMAT} only" in err, err
    assert err.count("\n") == 1, err

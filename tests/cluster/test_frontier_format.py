"""A job's queues carry the format they were written in: a worker refuses a job of another."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import output, worker_args
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import job_json, parse_job, status_of
from gossamer.frontier.redis.credentials import credentials_key
from gossamer.frontier.redis.keys import FORMAT
from gossamer.settings import JobSettings, SettingsError, settings_to_json


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


def _format_3(settings: JobSettings) -> str:
    return job_json(settings).replace(f'"frontier_format":{FORMAT}', '"frontier_format":3')


def test_a_format_3_job_is_read_unless_its_revisit_states_may_hold_a_password() -> None:
    """Format 3 kept a seed's password in a continuous job's revisit states, and only there."""
    once, continuous = JobSettings(partitions=8), JobSettings(partitions=8, recrawl=True)
    assert parse_job(_format_3(once), "j") == once
    assert parse_job(_format_3(continuous), "j", seed_passwords=False) == continuous
    with pytest.raises(SettingsError, match="continuous job of Redis frontier format 3"):
        parse_job(_format_3(continuous), "j")


async def test_a_worker_refuses_a_continuous_format_3_job_with_a_seed_s_password(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Its revisit states may hold the password: one clear line, exit status 2; ``cluster
    status`` reads the same job without a password."""
    client = Redis.from_url(redis_server.url)
    control = Control(client, DEFAULT_JOB)
    try:
        await control.store_job(_format_3(JobSettings(partitions=8, recrawl=True)))
        assert (await status_of(control))["submitted"]
        await client.hset(credentials_key(DEFAULT_JOB), "http://u:***@a.test", "http://u:p@a.test")
    finally:
        await client.aclose()
    code, _, err = await output(*worker_args(redis_server.url, tmp_path, 0))
    assert code == 2, err
    assert "continuous job of Redis frontier format 3" in err and "'cluster clear'" in err, err
    assert err.count("\n") == 1, err

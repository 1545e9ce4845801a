"""A job's queues carry the format they were written in: a worker refuses a job of another."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import output, worker_args
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import job_json, parse_job
from gossamer.frontier.redis.credentials import credentials_key
from gossamer.frontier.redis.keys import FORMAT
from gossamer.settings import JobSettings, SettingsError, settings_to_json

READ = f"reads formats 7, 8 and {FORMAT} only"
"""What a refusal says this gossamer reads: formats 7's and 8's queues are as format 9's."""


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
    assert "Redis frontier format 1" in err and READ in err, err
    assert err.count("\n") == 1, err


def _format(settings: JobSettings, form: int) -> str:
    return job_json(settings).replace(f'"frontier_format":{FORMAT}', f'"frontier_format":{form}')


def test_a_job_of_format_7_is_read_with_its_proxy_s_user_name_as_stored() -> None:
    """Format 7 kept a proxy's user name given alone in the job's settings, its queues as
    format 8 keeps them: a worker takes it as it is."""
    settings = JobSettings(partitions=8, proxies=["http://TOKEN@p.test:3128"])
    assert parse_job(_format(settings, 7), "j") == settings


def test_a_job_of_format_8_is_read_with_its_proxy_check_url_as_stored() -> None:
    """Format 8 kept the user info of the URL that checks proxies in the job's settings, its
    queues as format 9 keeps them: a worker takes it as it is."""
    settings = JobSettings(
        partitions=8,
        proxies=["http://p.test:3128"],
        proxy_check_url="http://user:secret@site.test/check",
    )
    assert parse_job(_format(settings, 8), "j") == settings


@pytest.mark.parametrize("form", [3, 4, 6])
def test_a_job_of_an_earlier_format_is_refused(form: int) -> None:
    """Format 3 kept a seed's password in a continuous job's revisit states; formats 3 and 4
    placed fingerprints in other seen SETs; format 6 masked two tokens of one host as one."""
    for settings in (JobSettings(partitions=8), JobSettings(partitions=8, recrawl=True)):
        with pytest.raises(SettingsError, match=f"Redis frontier format {form}; "):
            parse_job(_format(settings, form), "j")


async def test_a_worker_refuses_a_continuous_format_3_job_with_a_seed_s_password(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Its revisit states may hold the password: one clear line, exit status 2."""
    client = Redis.from_url(redis_server.url)
    control = Control(client, DEFAULT_JOB)
    try:
        await control.store_job(_format(JobSettings(partitions=8, recrawl=True), 3))
        await client.hset(credentials_key(DEFAULT_JOB), "http://u:***@a.test", "http://u:p@a.test")
    finally:
        await client.aclose()
    code, _, err = await output(*worker_args(redis_server.url, tmp_path, 0))
    assert code == 2, err
    assert "Redis frontier format 3; " in err and READ in err, err
    assert err.count("\n") == 1, err

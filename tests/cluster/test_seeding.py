"""A job's seeds: queued in batches a second submit resumes, never in the job's own key.

A million seeds leave the job's key a few KiB, so ``cluster status``, ``wait`` and ``metrics``
read the job (its key used to hold the whole list, past the bound on Redis replies); a submit
killed midway is finished by the next one, each seed queued once and crawled once.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import msgspec
import pytest
from redis.asyncio import Redis
from tests.cluster.harness import (
    assert_same_urls,
    cluster_status,
    cluster_wait,
    output,
    run,
    small_web,
    start,
    url_counts,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisClusterServer, RedisServer
from tests.ui.test_cluster_metrics import free_port, scrape_until

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import job_keys
from gossamer.cluster.jobs import open_control, submit
from gossamer.frontier.redis import partition_keys
from gossamer.settings import JobSettings, SettingsError
from gossamer.testweb import TestWebServer

SEEDS = 1_000_000
HOSTS = 1_000
JOB = frozenset({("job", DEFAULT_JOB)})


def write_seeds(path: Path, count: int) -> None:
    """``count`` seeds of about 72 bytes on :data:`HOSTS` hosts (a port named: the scope
    must keep it), written in one go."""
    path.write_text(
        "".join(
            f"http://host-{i % HOSTS}.example.test:8080/section/page-{i}.html?q=abcdefghij\n"
            for i in range(count)
        )
    )


async def until_queued(client: Redis, least: int, submitting: asyncio.subprocess.Process) -> int:
    """The seeds a running submit recorded as queued, once at least ``least``."""
    key = job_keys(DEFAULT_JOB)["submit"]
    deadline = time.monotonic() + 120
    while True:
        queued = int(await client.hget(key, "queued") or 0)
        if queued >= least:
            return queued
        assert submitting.returncode is None, "the submit ended before it was killed"
        assert time.monotonic() < deadline, f"only {queued} seeds queued"
        await asyncio.sleep(0.02)


async def queue_lengths(client: Redis, partitions: int = 4096) -> int:
    """Entries in every partition's queue."""
    async with client.pipeline(transaction=False) as pipe:
        for part in range(partitions):
            pipe.llen(partition_keys(DEFAULT_JOB, part)["queue"])
        return sum(await pipe.execute())


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_million_seeds_a_killed_submit_resumed_and_the_job_read_back(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    seeds = tmp_path / "seeds.txt"
    write_seeds(seeds, SEEDS)
    args = ["cluster", "submit", "--redis", url, "--seeds-file", str(seeds)]
    client = Redis.from_url(url)
    try:
        first = await start(tmp_path / "first.log", *args)
        killed_at = await until_queued(client, SEEDS // 2, first)
        first.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
        state = await cluster_status(url)
        assert not state["submitted"], "the job was stored before all its seeds were queued"
        assert killed_at <= state["seeds"]["queued"] < SEEDS

        code = await run(tmp_path / "second.log", *args, limit=240)
        said = (tmp_path / "second.log").read_text()
        assert code == 0, said
        assert f"{SEEDS} seed(s) queued" in said and "resumed" in said, said
        assert await queue_lengths(client) == SEEDS  # each seed once

        state = await cluster_status(url)
        totals = state["totals"]
        assert state["submitted"] and totals["queued"] == totals["seen"] == SEEDS
        assert state["seeds"]["total"] == state["seeds"]["queued"] == SEEDS
        assert state["seeds"]["origins"] == HOSTS
        assert 0 < state["seeds"]["job_bytes"] < 16 << 10
        code, said, err = await output("cluster", "status", "--redis", url)
        assert code == 0 and f"{SEEDS} seeds from {HOSTS} origins" in said, err

        code, _, err = await output("cluster", "wait", "--redis", url, "--timeout", "0.5")
        assert code == 1 and err.strip().endswith("not finished after 0.5s"), err

        port = free_port()
        exporter = await start(tmp_path / "metrics.log", "cluster", "metrics", "--redis", url,
                               "--metrics-port", str(port))  # fmt: skip
        scrape = await scrape_until(port, lambda s: ("gossamer_job_queued_urls", JOB) in s)
        assert scrape[("gossamer_job_queued_urls", JOB)] == SEEDS
        exporter.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(exporter.wait(), 10) == 0
    finally:
        await client.aclose()


class Killed(Exception):
    """The submit stops here, as if killed."""


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_interrupted_submit_is_finished_once_and_each_url_crawled_once(
    tmp_path: Path,
    any_redis: RedisServer | RedisClusterServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gossamer.cluster import seeding

    url = any_redis.url
    web = small_web(hosts=3, pages_per_host=20)
    record = seeding._record

    async def record_then_stop(control: object, progress: object, **fields: object) -> None:
        await record(control, progress, **fields)  # type: ignore[arg-type]
        if fields.get("queued") == 30:
            raise Killed

    monkeypatch.setattr(seeding, "SEED_BATCH", 10)
    monkeypatch.setattr(seeding, "_record", record_then_stop)
    async with TestWebServer(web, flaky_failures=0) as server:
        pages = sorted(web.page_urls(server.port))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(pages))
        settings = JobSettings(
            seeds_file=seeds, max_depth=0, resolve=["*.test=127.0.0.1"], partitions=16,
            robots_retry=0.3, retry_backoff=0.05, total_timeout=2.0, quiet=True,
        )  # fmt: skip
        with pytest.raises(Killed):
            await submit(settings, url, DEFAULT_JOB)
        state = await cluster_status(url)
        assert not state["submitted"] and state["seeds"]["queued"] == 30

        other = tmp_path / "other.txt"
        other.write_text("\n".join(pages[:-1]))
        with pytest.raises(SettingsError, match="unfinished submit of other seeds"):
            await submit(msgspec.structs.replace(settings, seeds_file=other), url, DEFAULT_JOB)
        assert (await cluster_status(url))["seeds"] == state["seeds"]  # nothing changed

        done = await submit(settings, url, DEFAULT_JOB)
        assert (done.queued, done.seeds, done.resumed_at) == (len(pages), len(pages), 30)
        await assert_job_key_small(url)

        worker = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await cluster_wait(url)
        assert await asyncio.wait_for(worker.wait(), 30) == 0, worker_logs(tmp_path, 1)
    counts = url_counts(tmp_path, 1)
    for sitemap in [u for u in counts if u.endswith("/sitemap.xml")]:  # the hosts' sitemaps
        del counts[sitemap]
    assert_same_urls(counts, set(pages))
    assert set(counts.values()) == {1}


async def assert_job_key_small(url: str) -> None:
    """The job's key holds its settings, no seed."""
    control = await open_control(url, DEFAULT_JOB)
    try:
        job = await control.load_job()
        assert job is not None and 0 < len(job) < 16 << 10
        assert '"seeds":[]' in job.replace(" ", "")
    finally:
        await control.redis.aclose()


async def test_hostile_origins_are_skipped_and_a_garbled_record_is_one_line(
    redis_server: RedisServer,
) -> None:
    from gossamer.cluster.control import MalformedReply
    from gossamer.cluster.seeding import load_origins, read_progress

    control = await open_control(redis_server.url, DEFAULT_JOB)
    keys = control.keys
    try:
        good = "http://a.test:8080/"
        hostile = [b"\xff/", "javascript:alert(1)/", "http://a.test/path/", f"http://{'a' * 400}/"]
        hostile += ["http://[/", "http://a.test:x/", "http://a.test:1:2/", "http://[::1/"]
        await control.redis.sadd(keys["origins"], good, *hostile)
        assert await load_origins(control) == [good]
        await control.redis.hset(keys["submit"], mapping={"digest": "f" * 64, "seeds": "x"})
        with pytest.raises(MalformedReply, match="submit record"):
            await read_progress(control)
    finally:
        await control.redis.aclose()
    code, _, err = await output("cluster", "status", "--redis", redis_server.url)
    assert code == 1 and err.count("\n") == 1 and "submit record" in err, err

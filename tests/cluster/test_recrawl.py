"""Continuous cluster jobs (``cluster submit --recrawl``) against a real redis-server: revisits
with conditional requests, ``--max-duration`` or ``cluster stop`` ending the job, a killed
worker's partitions revisited by the others, a sitemap's newer ``lastmod`` making a page due
now."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_status,
    output,
    read_records,
    run,
    small_web,
    start,
    wait_alive,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer
from tests.revisit.site import NOW, serve_site
from warcio.archiveiterator import ArchiveIterator

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import load_job, open_control
from gossamer.crawl.revisiting import revisit_bounds
from gossamer.frontier.redis.keys import partition_keys, partition_of
from gossamer.frontier.revisit import Bounds
from gossamer.sinks.base import IDENTICAL_PAYLOAD, NOT_MODIFIED
from gossamer.testweb import TestWebServer
from gossamer.urls import fingerprint, host_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLOCK = ["--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"]
"""A continuous job on the 1-second revisit clock."""
QUICK = ["--checkpoint-interval", "0.05", "--heartbeat-ttl", "2", "--claim-timeout", "2"]


async def test_a_job_keeps_its_revisit_settings(tmp_path: Path, redis_server: RedisServer) -> None:
    config = tmp_path / "job.toml"
    config.write_text('[[revisit]]\nurl = "*/feed*"\nmin = 5\nmax = 50\n')
    submit = ["cluster", "submit", "--redis", redis_server.url, "http://a.test/", *CLOCK,
              "--revisit-max", "7", "--max-duration", "30", "--config", str(config)]  # fmt: skip
    assert await run(tmp_path / "submit.log", *submit) == 0
    control = await open_control(redis_server.url, DEFAULT_JOB)
    try:
        job = await load_job(control)
    finally:
        await control.redis.aclose()
    assert job is not None and job.recrawl and job.max_duration == 30
    assert (job.revisit_initial, job.revisit_min, job.revisit_max) == (1, 1, 7)
    assert revisit_bounds(job)("http://a.test/feed.xml", None) == Bounds(5, 5, 50)


def _changes(found: list[dict[str, Any]], page: str) -> list[str | None]:
    return [r["change"] for r in found if r["url"].endswith(f"/{page}")]


async def test_a_cluster_job_revisits_with_conditional_requests(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    duration = 5.0
    async with serve_site() as site:
        submit = ["cluster", "submit", "--redis", url, site.url(), *CLOCK, *QUICK,
                  "--max-duration", str(duration), "--no-robots", "--sitemaps", "off",
                  "--delay", "0.05", "--partitions", "8", "--quiet", "--warc"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        started = time.monotonic()
        code = await run(tmp_path / "w0.log", *worker_args(url, tmp_path, 0), limit=40)
        took = time.monotonic() - started
        assert code == 0, worker_logs(tmp_path, 1)
        code, _, err = await output("cluster", "wait", "--redis", url, "--timeout", "10")
        assert code == 0, err
        state = await cluster_status(url)
    assert duration <= took < duration + 15, "--max-duration ends the worker, and the job"
    assert state["done"]
    found = read_records(tmp_path / "w0")
    for page in ("etag", "lm", "both", "still", "changing", "gone"):
        seen = _changes(found, page)
        assert seen[0] == "new" and len(seen) >= 2, (page, seen)
    for record in found:
        assert (record["change"] == "new") == (record["previous_fetched_at"] is None), record
    # validators: a 304 at each revisit, no body downloaded
    for page in ("etag", "lm"):
        assert set(_changes(found, page)[1:]) == {"unchanged"}, page
    etag = site.hits("etag")
    assert [h.if_none_match for h in etag[1:]] == ['"e1"'] * (len(etag) - 1)
    assert all(h.status == 304 for h in etag[1:] + site.hits("lm")[1:])
    assert set(_changes(found, "still")[1:]) == {"unchanged"}
    assert set(_changes(found, "changing")[1:]) == {"changed"}
    assert set(_changes(found, "gone")[1:]) == {"gone"}
    profiles = set()
    for path in (tmp_path / "w0" / "warc").glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "revisit":
                    profiles.add(record.rec_headers.get_header("WARC-Profile"))
    assert profiles == {NOT_MODIFIED, IDENTICAL_PAYLOAD}, profiles
    revisits = json.loads((tmp_path / "w0" / "stats.json").read_text())["revisits"]
    assert revisits["results"]["not-modified"] >= 2, revisits
    assert revisits["results"]["changed"] >= 1 and revisits["bytes_saved"] > 0, revisits
    fresh = state["freshness"]  # the job's, summed over its workers
    assert fresh["results"] == revisits["results"], (fresh, revisits)
    assert fresh["bytes_saved"] == revisits["bytes_saved"] and fresh["spared"] == 0, fresh
    # the worker left: its pages fall due (one-second intervals) and wait in Redis
    for _ in range(40):
        if (backlog := (await cluster_status(url))["freshness"]["backlog"]) >= 6:
            break
        await asyncio.sleep(0.1)
    assert backlog >= 6, backlog  # every page fetched but the gone and moved ones


async def test_revisits_keep_the_hosts_pace_across_workers(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    delay = 0.2
    async with serve_site() as site:
        # By URL, both workers lease the one host's pages (as their partitions fall): the
        # shared limiter paces revisits and first fetches alike.
        submit = ["cluster", "submit", "--redis", url, site.url(), *CLOCK, *QUICK,
                  "--max-duration", "5", "--no-robots", "--sitemaps", "off", "--delay",
                  str(delay), "--partition-by", "url", "--partitions", "8"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(2)
        ]
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 40)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
    found = [r for i in range(2) for r in read_records(tmp_path / f"w{i}")]
    assert sum(r["change"] not in ("new", None) for r in found) >= 3, "revisits happened"
    times = sorted(hit.at for hit in site.log)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= delay * 0.9, min(gaps)


async def test_a_killed_workers_revisits_move_with_its_partitions(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    concurrency = 4
    async with TestWebServer(small_web(hosts=4, pages_per_host=3), flaky_failures=0) as server:
        submit = ["cluster", "submit", "--redis", url, server.url(0), *CLOCK, *QUICK, *FAST,
                  *WEB_ARGS, "--max-duration", "45", "--no-robots", "--sitemaps", "off",
                  "--delay", "0.05", "--concurrency", str(concurrency),
                  "--partitions", "16"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(2)
        ]
        await wait_alive(url, 2)
        # Kill the first worker that has revisited a page: its revisit state is in Redis.
        victim = await _first_to_revisit(tmp_path)
        workers[victim].send_signal(signal.SIGKILL)
        await workers[victim].wait()
        killed_at = time.time()
        survivor = workers[1 - victim]
        fetched = {r["url"] for r in read_records(tmp_path / f"w{victim}") if r["status"] == 200}
        for _ in range(600):  # until the survivor has fetched every page the victim had
            after = [
                r for r in read_records(tmp_path / f"w{1 - victim}") if r["fetched_at"] > killed_at
            ]
            if fetched <= {r["url"] for r in after} or survivor.returncode is not None:
                break
            await asyncio.sleep(0.05)
        code, _, err = await output("cluster", "stop", "--redis", url)
        assert code == 0, err
        assert await asyncio.wait_for(survivor.wait(), 30) == 0, worker_logs(tmp_path, 2)
        code, _, err = await output("cluster", "wait", "--redis", url, "--timeout", "10")
        assert code == 0, "a stopped continuous job is finished once its workers left"
    after = [r for r in read_records(tmp_path / f"w{1 - victim}") if r["fetched_at"] > killed_at]
    revisited = {r["url"] for r in after if r["change"] in ("changed", "unchanged")}
    # Every page the killed worker fetched is revisited by the survivor, knowing its last
    # fetch (its state came from Redis); those in flight or not acked yet come back as new.
    assert fetched <= {r["url"] for r in after}, sorted(fetched - {r["url"] for r in after})[:5]
    assert len(fetched - revisited) <= 2 * concurrency, sorted(fetched - revisited)
    assert revisited & fetched


async def _first_to_revisit(tmp_path: Path) -> int:
    """The first of workers 0 and 1 whose records hold a revisit."""
    for _ in range(800):
        for i in range(2):
            if any(r["change"] not in ("new", None) for r in read_records(tmp_path / f"w{i}")):
                return i
        await asyncio.sleep(0.05)
    raise AssertionError(worker_logs(tmp_path, 2))


async def test_a_newer_sitemap_lastmod_makes_a_page_due_now(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with serve_site() as site, serve_site() as other:
        # The sitemap is another host's, named by the site's robots.txt (so its fetch, which
        # waits for the gate, holds no slot of the site's); its port in scope, or it is not
        # fetched.
        pages = [site.url("etag"), site.url("lm")]
        other.listed = {pages[0]: NOW, pages[1]: "2015-10-21T07:28:00Z"}
        site.robots = f"User-agent: *\nAllow: /\nSitemap: {other.url('sitemap.xml')}\n"
        submit = ["cluster", "submit", "--redis", url, site.url(), "--recrawl",
                  "--revisit-initial", "3600", "--revisit-min", "3600", *QUICK,
                  "--max-duration", "6", "--delay", "0.05", "--partitions", "8",
                  "--allow-port", str(other.port), "--quiet"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        worker = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        # The sitemap answers once both pages' revisit states are in Redis.
        redis = Redis.from_url(url)
        try:
            for _ in range(400):
                if await _states(redis, pages, 8) == 2 or worker.returncode is not None:
                    break
                await asyncio.sleep(0.02)
            assert await _states(redis, pages, 8) == 2, worker_logs(tmp_path, 1)
        finally:
            await redis.aclose()
        other.sitemap_gate.set()
        assert await asyncio.wait_for(worker.wait(), 30) == 0, worker_logs(tmp_path, 1)
    etag, lm = site.hits("etag"), site.hits("lm")
    assert len(etag) == 2, etag
    assert etag[1].if_none_match == '"e1"' and etag[1].status == 304
    assert len(lm) == 1, "an older lastmod makes nothing due"


async def _states(redis: Redis, urls: list[str], partitions: int) -> int:
    """How many of ``urls`` have a revisit state in Redis."""
    found = 0
    for page in urls:
        keys = partition_keys(DEFAULT_JOB, partition_of(host_key(page), partitions))
        found += await redis.hexists(keys["revisits"], str(fingerprint(page)))
    return found

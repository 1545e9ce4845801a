"""Best first across a cluster: three `gossamer cluster worker` subprocesses, one Redis, the
in-process test web. The job's URLs carry priorities (queued in their partitions as a focused
crawl's outlinks would be); each worker fetches one URL at a time, so the order of its
pages.jsonl is its fetch order. On hosts whose robots.txt answers plainly (no Crawl-delay),
every worker fetches the URLs of the partitions it owns best first, and the best URL of the
job is the first its owner fetched.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from tests.cluster.harness import (
    cluster_wait,
    first_assignment,
    read_records,
    small_web,
    start,
    wait_alive,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import job_json, job_settings, open_control
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.settings import JobSettings, canonical_seeds, crawl_scope
from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

PARTITIONS = 64


async def submit_ranked(url: str, priorities: dict[str, float]) -> None:
    """`cluster submit` of ``priorities``' URLs as seeds, each queued with its priority."""
    settings = JobSettings(
        seeds=list(priorities),
        max_depth=0,
        concurrency=1,
        partitions=PARTITIONS,
        resolve=["*.test=127.0.0.1"],
        allow_domains=["test"],
        quiet=True,
        robots_retry=0.3,
        retry_backoff=0.05,
        total_timeout=2.0,
    )
    seeds = canonical_seeds(settings)
    settings = job_settings(settings, seeds)
    control = await open_control(url, DEFAULT_JOB)
    try:
        frontier = RedisFrontier(
            control.redis,
            DEFAULT_JOB,
            crawl_scope(settings, seeds),
            PolitenessPolicy(),
            config=RedisFrontierConfig(partitions=PARTITIONS),
        )
        added = await frontier.add([Candidate(u, priority=p) for u, p in priorities.items()])
        assert added.added == len(priorities)
        await control.store_job(job_json(settings))
    finally:
        await control.redis.aclose()


def fetch_order(record: dict[str, Any]) -> float:
    return float(record["fetched_at"])


async def test_each_worker_fetches_its_partitions_best_first(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    rng = random.Random(7)
    async with TestWebServer(small_web(hosts=12, pages_per_host=20), flaky_failures=0) as server:
        # Hosts whose robots.txt answers plainly: the others' URLs wait for it or are blocked
        # (robots.txt, not priority, orders those).
        plain = {name for name, host in server.web.hosts.items() if host.robots.kind == "rules"}
        pages = sorted(
            page
            for page in server.web.page_urls(server.port)
            if page.split("/")[2].split(":")[0] in plain - {"site1.test"}
            and "/private/" not in page
        )
        chosen = rng.sample(pages, 60)
        priorities = {page: round(rng.random(), 4) for page in chosen}
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        await wait_alive(url, 3)
        await submit_ranked(url, priorities)
        first = await first_assignment(url)
        await cluster_wait(url, 45)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], worker_logs(tmp_path, 3)

    per_worker = [  # in the order of their fetches (a record is written once its page's
        # digest and links are through, which may be after the next page's fetch started)
        [r["url"] for r in sorted(read_records(tmp_path / f"w{i}"), key=fetch_order)]
        for i in range(3)
    ]
    assert sorted(u for urls in per_worker for u in urls) == sorted(priorities)
    assert sorted(first) == ["w0", "w1", "w2"] and all(first.values())
    assert sum(bool(urls) for urls in per_worker) >= 2, "one worker crawled everything"
    for i, urls in enumerate(per_worker):
        fetched = [priorities[u] for u in urls]
        assert fetched == sorted(fetched, reverse=True), (f"w{i}", fetched)
    # The best URL of the job went first on the worker owning it.
    best = max(priorities, key=priorities.__getitem__)
    assert any(urls and urls[0] == best for urls in per_worker)

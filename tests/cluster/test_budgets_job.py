"""Per-host page budgets in a cluster job: two `gossamer cluster worker` processes share one
job submitted with `--max-pages-per-host`; each host ends at the budget, whichever worker
fetched its pages, its other URLs recorded once as `budget`."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_wait,
    read_records,
    run,
    small_web,
    start,
    wait_alive,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.testweb import TestWebServer
from gossamer.urls import host_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


async def test_two_workers_stop_each_host_at_its_budget(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with TestWebServer(small_web(hosts=3), flaky_failures=0) as server:
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in (0, 1)
        ]
        await wait_alive(url, 2)
        submit = [
            "cluster",
            "submit",
            "--redis",
            url,
            server.url(0),
            *FAST,
            *WEB_ARGS,
            "--partitions",
            "16",
            "--max-pages-per-host",
            "7",
        ]
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 45)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
    records = [r for i in (0, 1) for r in read_records(tmp_path / f"w{i}")]
    pages = [r for r in records if r["kind"] == "page"]  # a sitemap's record is no page
    fetched = Counter(host_key(r["url"]) for r in pages if r["status"] is not None)
    budget = Counter(host_key(r["url"]) for r in records if r["error"] == "budget")
    assert len(fetched) == 3 and set(fetched.values()) == {7}, fetched
    assert budget and set(budget) <= set(fetched)
    assert len({r["url"] for r in records}) == len(records)  # each URL recorded once

"""The parse sandbox in a cluster job: a worker parses big pages in its own worker processes,
as a local crawl does (the page stage is the same): a hostile page's worker killed at its
budget, the page guarded and flagged. Real redis-server, a real site on loopback, the worker as
a subprocess."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    cluster_wait,
    read_records,
    run,
    start,
    until_waiting,
    worker_args,
    worker_logs,
)
from tests.local_app import serve_pages
from tests.page.test_sandbox_crawl import PAGES
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_cluster_worker_parses_big_pages_in_the_sandbox(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with serve_pages(PAGES.get) as port:
        proc = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
        await until_waiting([tmp_path / "w0.log"])
        options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--digests", "off"]
        submit = ["cluster", "submit", "--redis", url, f"http://site.test:{port}/", *FAST]
        assert await run(tmp_path / "submit.log", *submit, *options) == 0
        await cluster_wait(url, 60)
        assert await asyncio.wait_for(proc.wait(), 30) == 0, worker_logs(tmp_path, 1)
    records = {r["url"].split("/", 3)[3]: r for r in read_records(tmp_path / "w0")}
    assert records["bomb"]["flags"] == ["html-flattened", "html-sandbox-killed"]
    assert records["bomb"]["outlinks"] == 2 and "after" in records
    assert records["two"]["title"] == "Page two" and records["two"]["text"]
    assert records["one"]["canonical"] == f"http://site.test:{port}/one-canonical"
    assert records["noindex"]["flags"] == ["noindex", "nofollow"]

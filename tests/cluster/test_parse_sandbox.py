"""The parse sandbox in a cluster job: a worker parses big pages in its own worker processes,
as a local crawl does (the page stage is the same): a hostile page's worker killed at its
budget, the page guarded and flagged. Real redis-server, a real site on loopback, the worker as
a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cluster.harness import FAST, one_worker_job
from tests.local_app import serve_pages
from tests.page.test_sandbox_crawl import PAGES
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_cluster_worker_parses_big_pages_in_the_sandbox(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--digests", "off"]
    async with serve_pages(PAGES.get) as port:
        seed = f"http://site.test:{port}/"
        found = await one_worker_job(tmp_path, redis_server.url, seed, *FAST, *options)
    records = {r["url"].split("/", 3)[3]: r for r in found}
    assert records["bomb"]["flags"] == ["html-flattened", "html-sandbox-killed"]
    assert records["bomb"]["outlinks"] == 2 and "after" in records
    assert records["two"]["title"] == "Page two" and records["two"]["text"]
    assert records["one"]["canonical"] == f"http://site.test:{port}/one-canonical"
    assert records["noindex"]["flags"] == ["noindex", "nofollow"]

"""X-Robots-Tag, robots meta and canonical links on the Redis frontier: a cluster job's
worker obeys them as a local crawl does (the page stage is the same). Real redis-server, a
real site on loopback, the worker as a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cluster.harness import FAST, one_worker_job
from tests.local_app import serve
from tests.redis_server import RedisServer
from tests.test_canonical_crawl import HEADER as CANONICAL_HEADERS
from tests.test_canonical_crawl import handle as canonical_site
from tests.test_robots_directives_crawl import NOFOLLOW, NOINDEX, PAGES
from tests.test_robots_directives_crawl import handle as robots_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_worker_obeys_noindex_nofollow_and_follows_canonicals(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--digests", "off"]
    options += ["--canonical", "follow"]
    async with serve(robots_site) as robots_port, serve(canonical_site) as canonical_port:
        seeds = [f"http://robots.test:{robots_port}/", f"http://canon.test:{canonical_port}/"]
        found = await one_worker_job(tmp_path, redis_server.url, *seeds, *FAST, *options)
    records = {r["url"].split("/", 2)[2]: r for r in found}
    robots = {"/" + k.split("/", 1)[1]: r for k, r in records.items() if k.startswith("robots")}
    canon = {"/" + k.split("/", 1)[1]: r for k, r in records.items() if k.startswith("canon")}
    for path in PAGES:
        record = robots[path]
        assert ("noindex" in record["flags"]) == (path in NOINDEX), record
        assert ("nofollow" in record["flags"]) == (path in NOFOLLOW), record
        assert (record["text"] is None) == (path in NOINDEX), record
    assert "/from/h-nofollow" not in robots and "/from/h-noindex" in robots
    for path in ("/agree", "/header-only", "/doc.pdf"):
        assert path in CANONICAL_HEADERS
        assert "canonical-followed" in canon[path]["flags"] and canon[path]["text"] is None
    assert canon["/main-agree"]["text"] and canon["/main.pdf"]["text"]
    assert "canonical-loop" in canon["/loop-b"]["flags"]

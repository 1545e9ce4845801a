"""Bodies the connection cuts short in a cluster job (real redis-server, the worker a
subprocess, a raw loopback server): tried again as in an embedded crawl
(`tests/test_cut_body_crawl.py`): whole at the second try, or the last partial copy kept once
the retries are spent; a body cut at the job's own ``--max-body-bytes`` is asked for once."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cluster.harness import FAST, one_worker_job
from tests.cut_body_site import ALWAYS, BIG, KEPT, ONCE, PAGE, CutBodySite
from tests.raw_site import serving
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_worker_fetches_a_cut_body_again(tmp_path: Path, redis_server: RedisServer) -> None:
    options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--no-robots"]
    options += ["--max-retries", "2", "--max-body-bytes", "2048", "--max-host-delay", "0.5"]
    site = CutBodySite(host="cut.test")
    async with serving(site):
        found = await one_worker_job(tmp_path, redis_server.url, site.url("/"), *FAST, *options)
    records = {r["url"]: r for r in found}
    seen = site.requests()
    for path in ONCE:
        record = records[site.url(path)]
        whole = (record["status"], record["error"], record["truncated"], record["bytes"])
        assert whole == (200, None, False, len(PAGE)), (path, record)
        assert (record["attempts"], seen[path]) == (2, 2), (path, record, seen)
    always = records[site.url(ALWAYS)]
    partial = (always["status"], always["error"], always["truncated"], always["bytes"])
    assert partial == (200, "incomplete-body", True, KEPT), always
    assert (always["attempts"], seen[ALWAYS]) == (3, 3), (always, seen)
    big = records[site.url(BIG)]
    assert (big["error"], big["truncated"], big["attempts"], seen[BIG]) == (None, True, 1, 1)

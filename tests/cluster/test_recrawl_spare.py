"""Work-conserving revisits in a continuous cluster job (``--revisit-spare``): a host's free
politeness slot is filled with its page of the greatest spare index, long before its due
time, at the host's pace; ``cluster status`` and ``cluster metrics`` show them with the
revisits by result, the bytes 304s saved and the sitemap URLs found."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from tests.cluster.harness import cluster_status, output, run, worker_args, worker_logs
from tests.redis_server import RedisServer
from tests.revisit.site import serve_site

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.jobs import open_control
from gossamer.cluster.metrics import job_metrics

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

DELAY = 0.1
QUICK = ["--checkpoint-interval", "0.05", "--heartbeat-ttl", "2", "--claim-timeout", "2"]
SLOW_CLOCK = ["--recrawl", "--revisit-initial", "600", "--revisit-min", "600"]
"""No page is due by its interval while the job runs: every revisit is a spare one."""


async def test_spare_revisits_fill_free_slots_and_operators_see_them(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with serve_site() as site:
        site.robots = f"User-agent: *\nAllow: /\nSitemap: {site.url('sitemap.xml')}\n"
        site.listed = {site.url("etag"): "2015-10-21T07:28:00Z"}  # older: nothing due
        site.sitemap_gate.set()
        submit = ["cluster", "submit", "--redis", url, site.url(), *SLOW_CLOCK,
                  "--revisit-spare", "1", *QUICK, "--max-duration", "5", "--delay",
                  str(DELAY), "--partitions", "8", "--quiet"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        code = await run(tmp_path / "w0.log", *worker_args(url, tmp_path, 0), limit=40)
        assert code == 0, worker_logs(tmp_path, 1)
        state = await cluster_status(url)
        _, human, _ = await output("cluster", "status", "--redis", url)
    for page in ("etag", "lm", "changing"):
        assert len(site.hits(page)) >= 2, (page, site.hits(page))  # before its 600 s
    assert all(hit.status == 304 for hit in site.hits("etag")[1:])
    times = sorted(hit.at for hit in site.log)
    assert min(b - a for a, b in itertools.pairwise(times)) >= DELAY * 0.9, "the host's pace"
    revisits = json.loads((tmp_path / "w0" / "stats.json").read_text())["revisits"]
    assert revisits["spared"] >= sum(revisits["results"].values()) >= 3, revisits  # all spare
    fresh = state["freshness"]
    assert fresh["spared"] == revisits["spared"], (fresh, revisits)
    assert fresh["results"] == revisits["results"], (fresh, revisits)
    assert fresh["results"]["not-modified"] >= 1 and fresh["results"]["changed"] >= 1, fresh
    assert fresh["bytes_saved"] > 0 and fresh["backlog"] == 0, fresh
    assert fresh["sitemap_files"] == 1 and fresh["sitemap_entries"] == 1, fresh
    assert f"spare {fresh['spared']}, due 0" in human, human
    control = await open_control(url, DEFAULT_JOB)
    try:
        metrics = (await job_metrics(control)).decode()
    finally:
        await control.redis.aclose()
    job = f'job="{DEFAULT_JOB}"'
    spared = f"gossamer_job_revisits_spared_total{{{job}}} {float(fresh['spared'])}"
    assert spared in metrics, metrics
    changed = f'gossamer_job_revisits_total{{{job},result="changed"}}'
    assert f"{changed} {float(fresh['results']['changed'])}" in metrics, metrics
    assert f"gossamer_job_sitemap_files_total{{{job}}} 1.0" in metrics, metrics


async def test_a_job_by_url_refuses_spare_revisits(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    code, _, err = await output("cluster", "submit", "--redis", redis_server.url,
                                "http://a.test/", "--recrawl", "--revisit-spare", "0.5",
                                "--partition-by", "url")  # fmt: skip
    assert code == 2 and "invalid setting 'revisit-spare'" in err, err
    assert len(err.strip().splitlines()) == 1, err

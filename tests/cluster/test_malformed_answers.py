"""Answers no client may accept in a cluster job (real redis-server, the worker a subprocess,
two raw loopback servers): a malformed head is asked for once and recorded ``protocol-error``
without slowing its host's other pages, while answers cut short before their head ended are
retried, as in an embedded crawl (`tests/test_malformed_answers_crawl.py`)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from tests.cluster.harness import FAST, one_worker_job
from tests.malformed_site import CHAIN, CUT, MALFORMED, MalformedSite
from tests.raw_site import serving
from tests.redis_server import RedisServer
from tests.test_malformed_answers_crawl import PACE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_worker_asks_for_a_malformed_head_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    options = ["--resolve", "*.test=127.0.0.1", "--quiet", "--no-robots"]
    options += ["--max-host-delay", "1"]
    malformed = MalformedSite(bad=tuple(MALFORMED), host="bad.test")
    cut = MalformedSite(bad=tuple(CUT), host="cut.test")
    async with serving(malformed), serving(cut):
        seeds = [malformed.url("/"), cut.url("/")]
        found = await one_worker_job(tmp_path, redis_server.url, *seeds, *FAST, *options)
    records = {r["url"]: r for r in found}
    seen = malformed.requests()
    for path in MALFORMED:
        record = records[malformed.url(path)]
        assert (record["status"], record["error"], record["attempts"]) == (
            None,
            "protocol-error",
            1,
        ), path
        assert seen[path] == 1, (path, seen)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(malformed.chain_times())]
    assert len(gaps) == CHAIN - 1 and max(gaps) < PACE, gaps
    for path in CUT:
        record = records[cut.url(path)]
        assert record["status"] is None and record["attempts"] == 4, (path, record)
        assert cut.requests()[path] >= 4

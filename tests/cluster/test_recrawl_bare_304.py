"""A continuous cluster job (Redis frontier) and a 304 to a URL's first fetch (no validators
sent): as on the embedded frontier, its record has no ``change`` and the URL stays due one
initial interval later until an answer says something (a 2xx one is then ``new``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cluster.harness import read_records, run, worker_args, worker_logs
from tests.local_app import serve
from tests.redis_server import RedisServer
from tests.test_revisit_hostile_answers import FirstNotModified

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLOCK = ["--recrawl", "--revisit-initial", "1", "--revisit-min", "1", "--revisit-max", "1"]
QUICK = ["--checkpoint-interval", "0.05", "--heartbeat-ttl", "2", "--claim-timeout", "2"]


async def test_a_304_to_a_first_fetch_keeps_the_url_due_in_a_job(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url, site = redis_server.url, FirstNotModified()
    async with serve(site.handle) as port:
        submit = ["cluster", "submit", "--redis", url, f"http://127.0.0.1:{port}/", *CLOCK,
                  *QUICK, "--max-duration", "5", "--no-robots", "--sitemaps", "off",
                  "--delay", "0.05", "--partitions", "8", "--quiet", "--allow-private"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        code = await run(tmp_path / "w0.log", *worker_args(url, tmp_path, 0), limit=40)
        assert code == 0, worker_logs(tmp_path, 1)
    found = read_records(tmp_path / "w0")
    x = [(r["status"], r["change"]) for r in found if r["url"].endswith("/x")]
    assert x[:4] == [(304, None), (304, None), (200, "new"), (200, "unchanged")], x
    assert site.asked.count("/y") >= 3, site.asked
    assert {r["change"] for r in found if r["url"].endswith("/y")} == {None}

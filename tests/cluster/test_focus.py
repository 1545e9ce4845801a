"""A focused cluster job: the focus settings travel with the job, every worker fetches the
example page, judges its pages and orders its links the same way, and what each learns reaches
the other through the job's Redis.

Real redis-server, the in-process topical test web, workers as subprocesses.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_wait,
    read_records,
    run,
    start,
    until_waiting,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.testweb.topical import TopicalServer, generate_topical

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
PHRASE = "database transactions, isolation levels and locking"


async def test_every_worker_focuses(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    async with TopicalServer(generate_topical()) as server:
        procs = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(2)
        ]
        await until_waiting([tmp_path / f"w{i}.log" for i in range(2)])
        example = server.url("docs.test", "/reference/storage/engine/concurrency/0/")
        submit = ["cluster", "submit", "--redis", url, server.url("www.test"), *FAST, *WEB_ARGS,
                  "--partitions", "64", "--partition-by", "url", "--concurrency", "8",
                  "--max-depth", "3", "--focus-phrase", PHRASE,
                  "--focus-example", example]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 60)
        codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in procs)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
        fetched_example = [h for h in server.log if h.path.endswith("/concurrency/0/")]
    for i in range(2):
        records = read_records(tmp_path / f"w{i}")
        pages = [r for r in records if r["status"] == 200 and r["content_type"] == "text/html"]
        assert pages, f"worker {i} fetched no page"
        assert all(r["relevance"] is not None for r in pages), i
        stats = json.loads((tmp_path / f"w{i}" / "stats.json").read_text())
        assert stats["focus"]["judged"] == len(pages), i
        assert stats["focus"]["shared_sent"] > 0 and stats["focus"]["shared_received"] > 0, i
        assert stats["focus"]["shared_bad"] == 0, i
    assert len(fetched_example) >= 2  # each worker fetched the example itself

"""A cluster worker whose outputs fill their disk ends as ``gossamer crawl`` does: one line
naming the file and what to do, exit 1, no traceback; and it hands its partitions back first,
so another worker crawls on at once and no URL is lost.

The full disk is a real one: a 3 MiB tmpfs (``small_disk``, tests/conftest.py: mounting it
needs root; skipped otherwise); the pages, ~20 KB each, are kept in a WARC."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from tests.cluster.harness import (
    cluster_wait,
    read_records,
    run,
    start,
    until_waiting,
    worker_args,
)
from tests.local_app import serve
from tests.redis_server import RedisServer
from tests.test_storage_errors import PAGES, handle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_a_worker_on_a_full_disk_is_one_line_and_loses_nothing(
    tmp_path: Path, small_disk: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    full = small_disk / "w0"
    async with serve(handle) as port:
        seed = f"http://127.0.0.1:{port}/"
        log = tmp_path / "w0.log"
        args = worker_args(url, tmp_path, 0)
        args[args.index("--out") + 1] = str(full)
        worker = await start(log, *args)
        await until_waiting([log])
        submit = ["cluster", "submit", "--redis", url, seed, "--allow-private", "--warc"]
        flags = ["--max-depth", "2", "--digests", "off", "--partitions", "16"]
        assert await run(tmp_path / "submit.log", *submit, *flags) == 0
        code = await asyncio.wait_for(worker.wait(), 60)
        text = log.read_text("utf-8")
        assert code == 1, text
        assert "Traceback" not in text, text
        told = [line for line in text.splitlines() if line.startswith("gossamer: ")]
        assert len(told) == 1, text
        assert told[0].startswith(f"gossamer: cannot write {full}/"), text
        assert told[0].endswith(
            "no space left on device (free some space, then start the worker again)"
        ), text
        # Its claims handed back, a worker on a roomy disk takes them at once (the claims
        # would expire after 60 s, past the wait's limit) and finishes the job.
        second = await start(tmp_path / "w1.log", *worker_args(url, tmp_path, 1))
        await cluster_wait(url, 40)
        assert await asyncio.wait_for(second.wait(), 30) == 0
    with sqlite3.connect(full / "crawl.db") as db:
        kept = {row[0] for row in db.execute("SELECT url FROM pages")}
    crawled = kept | {r["url"] for r in read_records(tmp_path / "w1")}
    assert len(crawled) == PAGES


async def test_a_worker_with_a_corrupt_crawl_db_is_one_line(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    out = tmp_path / "w0"
    out.mkdir()
    (out / "crawl.db").write_bytes(b"not a database, " * 512)
    async with serve(handle) as port:
        log = tmp_path / "w0.log"
        worker = await start(log, *worker_args(url, tmp_path, 0))
        await until_waiting([log])
        submit = ["cluster", "submit", "--redis", url, f"http://127.0.0.1:{port}/"]
        assert await run(tmp_path / "submit.log", *submit, "--allow-private") == 0
        code = await asyncio.wait_for(worker.wait(), 30)
    text = log.read_text("utf-8")
    assert code == 1, text
    assert "Traceback" not in text, text
    [told] = [line for line in text.splitlines() if line.startswith("gossamer: ")]
    assert told.startswith(f"gossamer: {out / 'crawl.db'} is corrupt ("), text
    assert told.endswith("restore it from a copy, or move it away, then start the worker again")

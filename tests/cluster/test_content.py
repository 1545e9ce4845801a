"""Content in a cluster job: every worker extracts text by default and archives with
``--warc``; ``--no-text`` and ``--extractor`` reach the workers through the stored job.

Real redis-server, the in-process test web, workers as subprocesses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
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
from tests.warc_check import check_archive, payload

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.cluster.jobs import load_job
from gossamer.testweb import TestWebServer, Web, generate
from gossamer.testweb.payloads import PDF_TEXT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SPECIALS = ("pdf", "charset-windows-1251", "charset-shift-jis", "redirect-301", "status-404")


def web() -> Web:
    return generate(11, hosts=6, pages_per_host=20, specials=SPECIALS, crawl_delay=None)


async def crawl_job(
    tmp_path: Path, url: str, workers: int, *args: str
) -> tuple[list[list[dict[str, Any]]], set[str]]:
    """Run a job of ``workers`` workers on the test web with ``args``: each worker's records
    and the URLs of the normal pages a correct crawl fetches."""
    async with TestWebServer(web(), flaky_failures=0) as server:
        seed = server.url(0)
        procs = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i))
            for i in range(workers)
        ]
        await until_waiting([tmp_path / f"w{i}.log" for i in range(workers)])
        submit = ["cluster", "submit", "--redis", url, seed, *FAST, *WEB_ARGS,
                  "--partitions", "64", "--concurrency", "8", *args]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 60)
        codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in procs)), 30)
        assert codes == [0] * workers, worker_logs(tmp_path, workers)
        normal = server.web.reachable([seed], port=server.port)
    return [read_records(tmp_path / f"w{i}") for i in range(workers)], normal


async def test_every_worker_extracts_content_and_archives_it(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    # by URL, every worker holds some of each host's pages (by host, one of two workers may
    # own none of the six hosts)
    per_worker, normal = await crawl_job(
        tmp_path, redis_server.url, 2, "--warc", "--partition-by", "url"
    )
    assert all(per_worker), "a worker crawled nothing"
    assert normal <= {r["url"] for records in per_worker for r in records if r["status"] == 200}
    for i, records in enumerate(per_worker):
        pages = [r for r in records if r["url"] in normal and r["status"] == 200]
        assert pages, f"worker {i} fetched no normal page"
        for record in pages:
            assert record["text"] and record["text_chars"] == len(record["text"]), record
            assert record["lang"] == "en" and record["authors"] == [], record
            start = record["text"].splitlines()[0][:30]  # a heading or a paragraph's start
            assert start.encode() in payload(tmp_path / f"w{i}" / "warc", record)
        check_archive(tmp_path / f"w{i}", records)
    by_path = {r["url"].split("/", 3)[3]: r for records in per_worker for r in records}
    assert by_path["files/doc.pdf"]["text"] == PDF_TEXT
    assert by_path["charset/shift_jis"]["lang"] == "ja"
    assert "Съешь же ещё" in by_path["charset/windows-1251"]["text"]
    for path in ("status/404", "redirect/301"):
        assert (by_path[path]["text"], by_path[path]["images"]) == (None, []), path


async def test_no_text_and_the_extractor_reach_the_workers(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    args = ("--no-text", "--extractor", "readability")
    per_worker, _ = await crawl_job(tmp_path, redis_server.url, 2, *args)
    records = [r for records in per_worker for r in records]
    assert sum(r["status"] == 200 for r in records) > 20
    assert all(r["text"] is None and r["lang"] is None for r in records)
    assert not (tmp_path / "w0" / "warc").exists()
    control = Control(Redis.from_url(redis_server.url), DEFAULT_JOB)
    try:
        job = await load_job(control)
    finally:
        await control.redis.aclose()
    assert job is not None and (job.text, job.extractor, job.warc) == (False, "readability", False)

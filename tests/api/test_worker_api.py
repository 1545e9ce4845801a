"""A cluster worker run from Python (:class:`gossamer.Worker`) with a real redis-server: two
workers of one job in this process, their page handlers giving items and links, their records
streamed."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.redis_server import RedisServer

import gossamer
from gossamer import JobSettings, Link, Page, PageRecord, Worker, WorkerOptions
from gossamer.api.running import Running
from gossamer.testweb import TestWebServer, generate

pytestmark = pytest.mark.timeout(60)


async def _drain(worker: Worker, into: list[PageRecord]) -> None:
    async for record in worker.records():
        into.append(record)


async def _until_both_wait(url: str) -> None:
    for _ in range(200):
        state = await gossamer.job_status(url)
        if sum(worker["alive"] for worker in state["workers"]) == 2:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("the workers did not register")


async def test_two_workers_with_handlers_crawl_a_job(tmp_path: Path) -> None:
    web = generate(5, hosts=4, pages_per_host=15, specials=(), crawl_delay=None)
    async with TestWebServer(web) as server:
        seed = server.url(0)
        with RedisServer() as redis:
            job = JobSettings(
                seeds=[seed],
                resolve=["*.test=127.0.0.1"],
                allow_domains=["test"],
                quiet=True,
                sitemaps=False,
                heartbeat_ttl=2.0,
                robots_retry=0.3,
            )
            workers = [
                Worker(redis.url, name=f"w{i}", out=tmp_path / f"w{i}", job_timeout=20)
                for i in range(2)
            ]
            for worker in workers:

                @worker.handler(r"-\d+/$")
                def article(page: Page) -> Iterator[dict[str, Any] | Link]:
                    yield {"title": page.title}
                    yield from (Link(link) for link in page.links)

            streamed: list[list[PageRecord]] = [[], []]
            readers = [
                asyncio.create_task(_drain(w, into))
                for w, into in zip(workers, streamed, strict=True)
            ]
            await asyncio.sleep(0)  # the readers are subscribed before the workers start
            for worker in workers:
                worker.start()
            await _until_both_wait(redis.url)  # the first assignment shares the job
            submitted = await gossamer.submit(redis.url, job)
            assert submitted.queued == 1
            stats = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 45)
            await asyncio.gather(*readers)
        expected = web.reachable([seed], port=server.port)
    urls = [r.url for records in streamed for r in records]
    assert len(urls) == len(set(urls)), "a URL crawled by two workers"
    assert set(urls) >= expected
    # Which worker owns which host is chance (the hosts' ports are random), so one worker
    # may crawl nothing; each streams exactly what it crawled.
    assert [len(records) for records in streamed] == [s.pages for s in stats]
    items = [
        json.loads(line)
        for i in range(2)
        for line in (tmp_path / f"w{i}" / "items.jsonl").read_text("utf-8").splitlines()
    ]
    articles = [r for records in streamed for r in records if r.rule == "article"]
    assert len(items) == len(articles) > 10
    assert all(r.found[0].fields == {"title": r.title} for r in articles)


async def test_a_worker_stopped_before_its_job_came(tmp_path: Path) -> None:
    with RedisServer() as redis:
        worker = Worker(redis.url, out=tmp_path / "w", job_timeout=30)
        worker.start()
        await asyncio.sleep(0.2)
        worker.stop()
        with pytest.raises(RuntimeError, match="before its job came"):
            await asyncio.wait_for(worker.wait(), 5)


async def test_a_stop_before_the_job_ends_the_wait_even_when_its_cancel_is_lost(
    tmp_path: Path,
) -> None:
    """The wait for the job also looks at the stop asked: a cancel lost in a race (here not
    sent at all: the base class's stop) still ends it at the next look, not at the job
    timeout."""
    with RedisServer() as redis:
        worker = Worker(redis.url, out=tmp_path / "w", job_timeout=30)
        worker.start()
        Running.stop(worker)  # the stop asked, without Worker.stop's cancel
        with pytest.raises(RuntimeError, match="before its job came"):
            await asyncio.wait_for(worker.wait(), 5)


async def test_a_worker_from_options_serves_its_metrics_port(tmp_path: Path) -> None:
    """What only :class:`gossamer.WorkerOptions` tells (here the metrics port) reaches the
    worker, as ``gossamer cluster worker --metrics-port`` does: served while it waits."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with RedisServer() as redis:
        options = WorkerOptions(redis.url, name="m0", out=tmp_path / "w", metrics_port=port)
        worker = Worker.from_options(options)
        assert worker.options is options
        worker.start()
        try:
            body = await _metrics_text(port)
        finally:
            worker.stop()
        with pytest.raises(RuntimeError, match="before its job came"):
            await asyncio.wait_for(worker.wait(), 5)
    assert "# TYPE process_" in body


async def _metrics_text(port: int) -> str:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            try:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                    return await response.text()
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
    raise TimeoutError("the worker's metrics port never answered")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"job_timeout": -1}, "job_timeout"),
        ({"job_timeout": float("nan")}, "job_timeout"),
        ({"name": "../../etc"}, "name"),
        ({"name": ".."}, "name"),
        ({"name": "a\nb"}, "name"),
        ({"job": ""}, "job"),
    ],
)
def test_worker_options_are_checked(options: dict[str, Any], field: str) -> None:
    with pytest.raises(gossamer.SettingsError, match=f"invalid worker option '{field}'"):
        Worker("redis://127.0.0.1:1/0", **options)
    with pytest.raises(gossamer.SettingsError, match=f"invalid worker option '{field}'"):
        Worker.from_options(WorkerOptions("redis://127.0.0.1:1/0", **options))
    Worker("redis://127.0.0.1:1/0", name="host-1.example_2")  # a fine one

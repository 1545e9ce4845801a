"""The cluster-wide view: two workers on a real redis-server, each serving its own
``/metrics``, and ``gossamer cluster metrics`` exporting the job; a worker that leaves (cleanly,
or by its heartbeat expiring) has no series anymore."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.cluster.harness import FAST, WEB_ARGS, run, small_web, start, until_waiting, worker_args
from tests.redis_server import RedisServer

from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def get(port: int, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.text()


def series(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def workers_in(scrape: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    return {v for (_, labels), _ in scrape.items() for k, v in labels if k == "worker"}


async def scrape_until(port: int, check: object, limit: float = 30) -> dict:  # type: ignore[type-arg]
    """Scrape the exporter until ``check(series)`` holds (bounded)."""
    for _ in range(int(limit / 0.1)):
        try:
            status, text = await get(port, "/metrics")
        except aiohttp.ClientConnectionError:
            status, text = 0, ""
        if status == 200:
            scrape = series(text)
            if check(scrape):  # type: ignore[operator]
                return scrape
        await asyncio.sleep(0.1)
    raise TimeoutError(f"exporter never satisfied the check: {text[-2000:]}")


async def test_a_worker_that_leaves_has_no_series(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    ports = [free_port(), free_port()]
    exporter_port = free_port()
    args = [*FAST, "--per-host", "1", "--delay", "0.1", "--concurrency", "4"]
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        logs = [tmp_path / f"w{i}.log" for i in range(2)]
        workers = [
            await start(logs[i], *worker_args(url, tmp_path, i, "--metrics-port", str(ports[i]),
                                              "--heartbeat-ttl", "1"))
            for i in range(2)
        ]  # fmt: skip
        exporter = await start(tmp_path / "exporter.log", "cluster", "metrics", "--redis", url,
                               "--metrics-port", str(exporter_port))  # fmt: skip
        await until_waiting(logs)
        assert await get(ports[0], "/healthz") == (200, "ok: waiting for the crawl to start\n")
        scrape = await scrape_until(exporter_port, lambda s: True)
        assert scrape[("gossamer_job_submitted", frozenset({("job", "gossamer")}))] == 0

        submit = ["cluster", "submit", "--redis", url, server.url(0), *args, *WEB_ARGS,
                  "--partitions", "16", "--heartbeat-ttl", "1"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        job = frozenset({("job", "gossamer")})

        def both_crawl(s: dict) -> bool:  # type: ignore[type-arg]
            pages = {
                w: s.get(("gossamer_worker_pages_total", job | {("worker", w)}), 0)
                for w in ("w0", "w1")
            }
            return all(pages.values())

        scrape = await scrape_until(exporter_port, both_crawl)
        assert workers_in(scrape) == {"w0", "w1"}
        assert scrape[("gossamer_job_workers", job)] == 2
        assert scrape[("gossamer_job_seen_urls_total", job)] > 0
        assert ("gossamer_job_queued_urls", job) in scrape
        status, queued = await get(exporter_port, "/queued")
        assert status == 200 and json.loads(queued)["job"] == "gossamer"

        # A worker's own endpoint: its labels are the job's and its name.
        status, text = await get(ports[1], "/metrics")
        own = series(text)
        assert status == 200 and workers_in(own) == {"w1"}
        assert own[("gossamer_requests_total", job | {("worker", "w1")})] > 0
        assert await get(ports[1], "/healthz") == (200, "ok\n")

        workers[1].send_signal(signal.SIGTERM)  # leaves cleanly
        assert await asyncio.wait_for(workers[1].wait(), 30) == 0
        scrape = await scrape_until(exporter_port, lambda s: workers_in(s) == {"w0"})
        assert scrape[("gossamer_job_workers", job)] == 1

        workers[0].send_signal(signal.SIGKILL)  # its heartbeat expires after 1 s
        await workers[0].wait()
        scrape = await scrape_until(exporter_port, lambda s: not workers_in(s))
        assert scrape[("gossamer_job_workers", job)] == 0
        assert not any(name.startswith("gossamer_worker_") for name, _ in scrape)
        exporter.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(exporter.wait(), 10) == 0

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
from aiohttp import web
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
    args = [*FAST, "--per-host", "1", "--delay", "0.2", "--concurrency", "4"]
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

        def pages_of(s: dict, worker: str) -> float:  # type: ignore[type-arg]
            return s.get(("gossamer_worker_pages_total", job | {("worker", worker)}), 0)

        def crawling(s: dict) -> bool:  # type: ignore[type-arg]
            # Hosts hash to partitions (their port included): one worker may own none.
            return workers_in(s) == {"w0", "w1"} and pages_of(s, "w0") + pages_of(s, "w1") > 0

        scrape = await scrape_until(exporter_port, crawling)
        assert scrape[("gossamer_job_workers", job)] == 2
        assert scrape[("gossamer_job_seen_urls_total", job)] > 0
        assert ("gossamer_job_queued_urls", job) in scrape
        status, queued = await get(exporter_port, "/queued")
        assert status == 200 and json.loads(queued)["job"] == "gossamer"

        # A worker's own endpoint: its labels are the job's and its name.
        busy = max((0, 1), key=lambda i: pages_of(scrape, f"w{i}"))
        status, text = await get(ports[busy], "/metrics")
        own = series(text)
        assert status == 200 and workers_in(own) == {f"w{busy}"}
        assert own[("gossamer_requests_total", job | {("worker", f"w{busy}")})] > 0
        assert await get(ports[busy], "/healthz") == (200, "ok\n")
        assert not scrape[("gossamer_job_done", job)], "the job ended too soon to test anything"

        workers[1].send_signal(signal.SIGTERM)  # leaves cleanly
        assert await asyncio.wait_for(workers[1].wait(), 30) == 0
        scrape = await scrape_until(exporter_port, lambda s: workers_in(s) == {"w0"})
        assert scrape[("gossamer_job_workers", job)] == 1

        assert workers[0].returncode is None, "w0 ended before its heartbeat could expire"
        workers[0].send_signal(signal.SIGKILL)  # its heartbeat expires after 1 s
        assert await workers[0].wait() == -signal.SIGKILL
        scrape = await scrape_until(exporter_port, lambda s: not workers_in(s))
        assert scrape[("gossamer_job_workers", job)] == 0
        assert not any(name.startswith("gossamer_worker_") for name, _ in scrape)
        exporter.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(exporter.wait(), 10) == 0


async def test_hostile_figures_and_a_lost_redis(redis_server: RedisServer) -> None:
    """Figures in Redis are read as hostile: strings, NaN and odd names become safe series;
    with Redis gone a scrape answers 503 and the exporter keeps running."""
    from aiohttp.test_utils import TestClient, TestServer

    from gossamer.cluster.jobs import job_json, open_control
    from gossamer.cluster.metrics import cluster_handler, queued_handler
    from gossamer.settings import JobSettings

    control = await open_control(redis_server.url, "j")
    try:
        await control.store_job(job_json(JobSettings(partitions=8)))
        odd = 'w"1\n} x{'
        await control.heartbeat(
            odd,
            {"partitions": "all", "live": {"pages": float("nan"), "errors": 3, "queue_depth": "9"}},
            30,
        )
        await control.heartbeat(
            "w2", {"partitions": 4, "live": {"pages": 12, "pages_per_second": 1e308}}, 30
        )
        await control.redis.hset(control.keys["figures"], "bad", b"\xff not json")
        app = web.Application()
        app.router.add_get("/metrics", cluster_handler(control))
        app.router.add_get("/queued", queued_handler(control))
        async with TestClient(TestServer(app)) as client:
            response = await client.get("/metrics")
            assert response.status == 200
            scrape = series(await response.text())
            assert workers_in(scrape) == {odd, "w2"}
            job = frozenset({("job", "j")})
            assert scrape[("gossamer_worker_pages_total", job | {("worker", odd)})] == 0
            assert scrape[("gossamer_worker_errors_total", job | {("worker", odd)})] == 3
            assert scrape[("gossamer_worker_partitions", job | {("worker", odd)})] == 0
            assert scrape[("gossamer_worker_partitions", job | {("worker", "w2")})] == 4
            assert scrape[("gossamer_job_workers", job)] == 2
            redis_server.stop()
            response = await client.get("/metrics")
            assert response.status == 503
            assert await response.text() == "cannot read job 'j' from Redis\n"
            response = await client.get("/queued")
            assert response.status == 503
    finally:
        await control.redis.aclose()

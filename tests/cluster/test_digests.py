"""Duplicate content across the workers of a cluster job (``--digests near``): one article on
twelve hosts and an edited copy, crawled by two workers (URLs spread by partition); every copy
but one names the same first URL, whichever worker fetched it, and only the first's links are
followed.

Real redis-server, a real HTTP server on loopback, workers as subprocesses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web
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
from tests.digests.digest_site import ARTICLE, EDITED, OTHER, page
from tests.local_app import serve
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

COPIES = 12


async def handle(request: web.Request) -> web.Response:
    host, _, port = request.host.partition(":")
    host = host.split(".")[0]
    if request.path == "/":
        links = [f"http://h{k}.test:{port}/a" for k in range(COPIES)]
        html = page(["Welcome"], [*links, f"http://h0.test:{port}/b"])
    elif request.path == "/a":
        html = page(ARTICLE, [f"/from/{host}", f"http://h1.test:{port}/e"])  # after a first
    elif request.path == "/e":
        html = page(EDITED, ["/from/e"])
    elif request.path == "/b":
        html = page(OTHER, ["/from/b"])
    else:
        html = f"<html><body><p>{request.path}</p></body></html>"
    return web.Response(text=html, content_type="text/html")


def key(url: str) -> str:
    """``host/path`` of a URL (the port left out)."""
    parts = urlsplit(url)
    return f"{parts.hostname}{parts.path}"


async def test_workers_share_digests(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    async with serve(handle) as port:
        logs = [tmp_path / f"w{i}.log" for i in (0, 1)]
        procs = [await start(logs[i], *worker_args(url, tmp_path, i)) for i in (0, 1)]
        await until_waiting(logs)
        submit = ["cluster", "submit", "--redis", url, f"http://h0.test:{port}/", *FAST,
                  *WEB_ARGS, "--no-robots", "--partitions", "64", "--partition-by", "url",
                  "--digests", "near",
                  "--concurrency", "8"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 60)
        codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in procs)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
    per_worker = [read_records(tmp_path / f"w{i}") for i in (0, 1)]
    records = {key(r["url"]): r for rs in per_worker for r in rs}
    copies = [records[f"h{k}.test/a"] for k in range(COPIES)]
    firsts = [r for r in copies if r["duplicate_of"] is None]
    assert len(firsts) == 1
    first = firsts[0]["url"]
    assert all(r["duplicate_of"] == first for r in copies if r is not firsts[0])
    worker_of = {r["url"]: i for i, rs in enumerate(per_worker) for r in rs}
    assert {worker_of[r["url"]] for r in copies} == {0, 1}  # both workers met the article
    host = urlsplit(first).hostname
    assert {k for k in records if "/from/h" in k} == {f"{host}/from/{host.split('.')[0]}"}
    assert records["h0.test/b"]["duplicate_of"] is None and "h0.test/from/b" in records
    assert records["h1.test/e"]["duplicate_of"] == first  # near: a sentence added
    assert "h1.test/from/e" not in records

"""A host's sitemaps are read by the worker that owns the host, at its one pace: three
`gossamer cluster worker` subprocesses crawl four hosts by host, each host's sitemap index
given with ``--sitemap`` (so every worker learns of every sitemap, none from a robots lease).
The server's request log shows every request to a host, sitemap or page, spaced by the delay,
and each host's sitemap records stand in the output of the worker that fetched its pages.
Real redis-server, a real site on loopback."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from pathlib import Path

import pytest
from aiohttp import web
from tests.cluster.harness import (
    FAST,
    cluster_wait,
    read_records,
    run,
    until_waiting,
    worker_args,
    worker_tails,
)
from tests.cluster.test_sitemap_pace import sitemap_site
from tests.local_app import serve
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

DELAY = 0.2
JITTER = 0.01
"""The server stamps arrivals in this process' busy event loop (see test_politeness.py)."""
HOSTS = 4
FILES = 3
WORKERS = 3


class Site:
    """Hosts ``h0.test``..: ``/`` links /p0../p3; /index.xml lists FILES sitemaps, each two
    pages of its own. Every request's arrival is logged by host."""

    def __init__(self) -> None:
        self.log: defaultdict[str, list[tuple[float, str]]] = defaultdict(list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path, base = request.path, f"http://{request.host}"
        self.log[request.host.split(":")[0]].append((time.monotonic(), path))
        return sitemap_site(path, base, files=FILES, links=4, robots="")


async def test_a_hosts_sitemaps_are_read_by_its_owner_at_its_pace(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url, site = redis_server.url, Site()
    async with serve(site.handle) as port:
        hosts = [f"h{n}.test" for n in range(HOSTS)]
        logs = [tmp_path / f"w{i}.log" for i in range(WORKERS)]
        workers = [
            asyncio.create_task(run(logs[i], *worker_args(url, tmp_path, i), limit=90))
            for i in range(WORKERS)
        ]
        await until_waiting(logs)
        seeds = [f"http://{host}:{port}/" for host in hosts]
        maps = [arg for h in hosts for arg in ("--sitemap", f"http://{h}:{port}/index.xml")]
        submit = ["cluster", "submit", "--redis", url, *seeds, *FAST, *maps,
                  "--resolve", "*.test=127.0.0.1", "--quiet", "--delay", str(DELAY),
                  "--partitions", "64", "--partition-by", "host"]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 80)
        codes = await asyncio.wait_for(asyncio.gather(*workers), 30)
        assert codes == [0] * WORKERS, worker_tails(tmp_path, WORKERS)

    for host in hosts:
        paths = [path for _, path in site.log[host]]
        assert sum(path.endswith(".xml") for path in paths) == FILES + 1, (host, paths)
        assert {f"/s{n}-{k}" for n in range(FILES) for k in range(2)} <= set(paths), paths
        times = sorted(t for t, _ in site.log[host])
        gaps = sorted(b - a for a, b in itertools.pairwise(times))
        assert gaps[0] >= DELAY - JITTER, (host, gaps[:3])
    readers = {}
    for i in range(WORKERS):
        for record in read_records(tmp_path / f"w{i}"):
            readers.setdefault(
                (record["url"].split("/")[2].split(":")[0], record["kind"]), set()
            ).add(i)
    for host in hosts:
        assert readers[host, "sitemap"] == readers[host, "page"], (host, readers)

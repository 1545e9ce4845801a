"""Cluster workers run from Python, with page handlers, against a Redis URL.

    python examples/api_worker.py [--redis URL] [--seed URL] [--out DIR]

It starts two workers in this process (each one would usually run on its own machine, with
the same handlers), which wait for their job, then submits the job (``gossamer cluster
submit``); the workers crawl it until it is done, printing the records each one writes.
Without ``--redis`` it starts a private ``redis-server`` on a free port (it must be
installed); without ``--seed`` it crawls the bundled test web.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from demo_web import ALLOW_DOMAINS, RESOLVE, demo_web, options

import gossamer
from gossamer import Handlers, JobSettings, Page, Worker

handlers = Handlers()


@handlers.handler(r"-\d+/$")
def article(page: Page) -> Iterator[dict[str, Any]]:
    """Every article page gives an item; its links are followed as usual."""
    yield {"title": page.title}


async def show(worker: Worker) -> None:
    async for record in worker.records():
        print(worker.options.name, record.status, record.url, len(record.found), "item(s)")


async def both_waiting(redis_url: str) -> None:
    """Until both workers beat in Redis (they register as they start waiting for a job)."""
    for _ in range(200):
        state = await gossamer.job_status(redis_url)
        if sum(worker["alive"] for worker in state["workers"]) >= 2:
            return
        await asyncio.sleep(0.05)  # Redis is polled: there is no event to wait on
    raise TimeoutError("the workers did not start")


async def main(redis_url: str, seed: str, out: Path) -> None:
    job = JobSettings(
        seeds=[seed],
        resolve=RESOLVE,
        allow_domains=ALLOW_DOMAINS,
        heartbeat_ttl=2.0,  # a job of seconds: the workers find each other at once
        quiet=True,
    )
    workers = [
        Worker(redis_url, name=f"w{i}", out=out / f"w{i}", handlers=handlers) for i in range(2)
    ]
    readers = [asyncio.create_task(show(worker)) for worker in workers]
    await asyncio.sleep(0)  # the readers subscribe before the workers start
    for worker in workers:
        worker.start()  # each waits for the job, beating in Redis
    await both_waiting(redis_url)  # the job's first assignment shares it between them
    submitted = await gossamer.submit(redis_url, job)
    print(f"submitted: {submitted.queued} seed(s) queued")
    stats = await asyncio.gather(*(worker.wait() for worker in workers))
    await asyncio.gather(*readers)
    print(
        " ".join(f"{w.options.name}: {s.pages} pages" for w, s in zip(workers, stats, strict=True))
    )


@contextmanager
def private_redis() -> Iterator[str]:
    """A throwaway redis-server on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as data:
        command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        server = subprocess.Popen([*command, "--dir", data], stdout=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    args = options(__doc__, "api-out/worker", redis=True)
    with demo_web(args.seed) as seed:
        if args.redis:
            asyncio.run(main(args.redis, seed, args.out))
        else:
            with private_redis() as url:
                asyncio.run(main(url, seed, args.out))

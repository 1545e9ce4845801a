"""``gossamer cluster up``: a local demo cluster (redis-server plus N worker processes)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import time
from asyncio.subprocess import DEVNULL, Process
from collections.abc import Sequence
from pathlib import Path

import msgspec
from redis.exceptions import RedisError

from gossamer.cluster.control import Control
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.jobs import connect, format_status, status, submit
from gossamer.cluster.redisurl import PASSWORD_ENV
from gossamer.cluster.resilient import run
from gossamer.retry import Backoff, Outage, retry
from gossamer.settings import JobSettings, SettingsError

_START_TIMEOUT = 10.0
_PING_EVERY = Backoff(0.05, 0.05)


def up(settings: JobSettings, workers: int, job: str, log_flags: Sequence[str] = ()) -> int:
    """Start redis-server in ``out/redis`` and ``workers`` workers (each given ``log_flags``,
    logging to ``out/worker-N.log``), submit, run to the end."""
    if workers < 1:
        raise SettingsError("invalid setting 'workers': give at least 1")
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise ClusterError("redis-server is not installed (apt-get install redis-server)")
    out = settings.out.resolve()
    try:
        (out / "redis").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {out}") from exc
    resolved = msgspec.structs.replace(settings, out=out)
    return run(_up(resolved, workers, job, binary, log_flags, shown=settings.out))


async def _up(
    settings: JobSettings,
    workers: int,
    job: str,
    binary: str,
    log_flags: Sequence[str],
    shown: Path,
) -> int:
    """``up`` with ``settings.out`` absolute (Redis and the workers run elsewhere); the summary
    names the folder as it was given (``shown``), as ``gossamer crawl`` names its outputs."""
    out = settings.out
    started = time.monotonic()
    url, proc = await _start_redis(binary, out / "redis")
    procs: list[Process] = []
    try:
        for i in range(workers):
            procs.append(await _start_worker(url, job, out, i, settings.store, log_flags))
        await _await_workers(url, job, procs)  # all in the first assignment: none moves
        await submit(settings, url, job)
        codes = await asyncio.gather(*(p.wait() for p in procs))
        state = await status(url, job)
        print(format_status(state))
        print(
            f"{state['totals']['finished']} URLs finished by {workers} workers in "
            f"{time.monotonic() - started:.1f}s; pages in {shown}/worker-*/pages.jsonl"
        )
        return 0 if all(code == 0 for code in codes) and state["done"] else 1
    finally:
        for p in procs:
            if p.returncode is None:
                p.terminate()
        await asyncio.gather(*(p.wait() for p in procs))
        proc.terminate()
        await proc.wait()


async def _await_workers(url: str, job: str, procs: list[Process]) -> None:
    """Wait until every worker beats while it waits for the job (or one exits, or time
    passes: the job is submitted anyway and late workers join it)."""
    control = Control(connect(url), job)
    deadline = time.monotonic() + _START_TIMEOUT
    try:
        while time.monotonic() < deadline and all(p.returncode is None for p in procs):
            if sum(w.alive for w in await control.workers()) >= len(procs):
                return
            await asyncio.sleep(0.05)
    finally:
        await control.redis.aclose()


async def _start_redis(binary: str, directory: Path) -> tuple[str, Process]:
    """redis-server on a free loopback port, data in ``directory`` (absolute)."""
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        binary,
        *("--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)),
        *("--appendonly", "yes", "--save", "", "--daemonize", "no"),
        *("--logfile", str(directory / "redis.log")),
        stdout=DEVNULL,
        stderr=DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = connect(url)
    failed = ClusterError(f"redis-server did not start; see {directory}/redis.log")

    async def exited(error: BaseException, failures: int) -> None:
        if proc.returncode is not None:
            raise failed

    try:
        await retry(
            client.ping,
            errors=(RedisError, OSError),
            outage=Outage(_START_TIMEOUT, started=True),
            backoff=_PING_EVERY,
            give_up=lambda error: failed,
            failed=exited,
        )
        return url, proc
    except ClusterError:
        if proc.returncode is None:
            proc.kill()
        raise
    finally:
        await client.aclose()


async def _start_worker(
    url: str, job: str, out: Path, i: int, store: str | None, log_flags: Sequence[str]
) -> Process:
    """A worker process; the store's DSN (password included, the job holds none) goes in its
    environment, never on its command line where ``ps`` shows it."""
    name = f"worker-{i}"
    env = dict(os.environ)
    env.pop("GOSSAMER_METRICS_PORT", None)  # one port, N workers: none would get it but one
    env.pop(PASSWORD_ENV, None)  # the demo's own redis-server wants no password
    if store is not None:
        env["GOSSAMER_STORE"] = store
    log = (out / f"{name}.log").open("ab")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "gossamer.cli", "cluster", "worker", "--redis", url, "--job", job),
            *("--name", name, "--out", str(out / name), "--quiet", *log_flags),
            stdout=log,
            stderr=log,
            env=env,
        )
    finally:
        log.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port

"""Helpers for the cluster tests that run `gossamer` subprocesses against the test web.

Workers are numbered: worker ``i`` is named ``w{i}``, writes to ``tmp_path / f"w{i}"`` and logs
to ``tmp_path / f"w{i}.log"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.testweb import Web, generate

GOSSAMER = [sys.executable, "-m", "gossamer.cli"]
"""The command line that runs the gossamer CLI of this checkout."""
WEB_ARGS = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet"]
"""Crawl options that point the ``*.test`` hosts at the in-process test web."""
FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--total-timeout", "2"]
"""Crawl options that keep retries and timeouts short."""


def small_web(
    seed: int = 5, hosts: int = 6, pages_per_host: int = 30, crawl_delay: float | None = None
) -> Web:
    """A test web without special pages, small enough for a crawl of a few seconds."""
    return generate(
        seed, hosts=hosts, pages_per_host=pages_per_host, specials=(), crawl_delay=crawl_delay
    )


STARTED: list[asyncio.subprocess.Process] = []
"""The processes ``start`` started; ``conftest.py`` kills those left at a test's end."""


REAP_WAIT = 10.0
"""Seconds :func:`reap_started` waits for a killed process to exit."""


async def reap_started() -> None:
    """Kill the processes ``start`` started that still run, and reap them: their handles
    close in the test's event loop, not open as it closes (uvloop reports them then, or the
    next test does). All are killed first, then waited for together, each at most
    :data:`REAP_WAIT` seconds. Only those of the running loop: one of a loop closed already
    (left by a test without this reaping) is neither waited for (it would never end) nor
    killed (reaped with no loop to tell, its pid may be another process's now)."""
    loop = asyncio.get_running_loop()
    started = list(STARTED)
    STARTED.clear()
    ours = [
        proc for proc in started if getattr(proc, "_loop", loop) is loop and proc.returncode is None
    ]  # not reaped: its pid is still its own
    for proc in ours:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    waits = (asyncio.wait_for(proc.wait(), REAP_WAIT) for proc in ours)
    await asyncio.gather(*waits, return_exceptions=True)


async def start(log: Path, *args: str) -> asyncio.subprocess.Process:
    """Start ``gossamer *args``, its stdout and stderr appended to ``log``."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT prints every thread's stack
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            *GOSSAMER, *args, stdout=out, stderr=out, env=env
        )
    STARTED.append(proc)
    return proc


async def until_waiting(logs: list[Path], limit: float = 30) -> None:
    """Until every worker logging to ``logs`` has registered and waits for a job (so a job
    submitted next is shared by all of them, however slowly each started)."""
    for _ in range(int(limit / 0.05)):
        if all(log.exists() and b"waiting for job" in log.read_bytes() for log in logs):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"workers not waiting for a job after {limit:g}s")


DUMP_WAIT = 2.0
"""Seconds a process that timed out has to print its asyncio tasks (SIGUSR1), then its threads'
stacks (SIGABRT), before the kill."""
LOG_TAIL = 6000
"""Characters of a timed-out process' log shown in the failure."""


async def run(log: Path, *args: str, limit: float = 60) -> int:
    """Run ``gossamer *args`` to its end, logging to ``log``; its exit code. Past ``limit`` the
    process prints its stacks (:func:`dump_and_kill`) and the failure shows its log's tail."""
    proc = await start(log, *args)
    try:
        return await asyncio.wait_for(proc.wait(), limit)
    except TimeoutError:
        await dump_and_kill(proc)
        tail = log_tail(log)
        raise TimeoutError(
            f"{log.name} still running after {limit:g}s; its log ends:\n{tail}"
        ) from None


async def dump_and_kill(proc: asyncio.subprocess.Process) -> None:
    """A stuck ``proc`` prints where it waits, then dies: SIGUSR1 prints its asyncio tasks
    (when its event loop still turns), SIGABRT its threads' Python stacks (faulthandler: also
    when the loop is blocked), each given :data:`DUMP_WAIT` seconds; then SIGKILL."""
    for signum in (signal.SIGUSR1, signal.SIGABRT):
        if proc.returncode is not None:
            return
        proc.send_signal(signum)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), DUMP_WAIT)
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


def log_tail(log: Path) -> str:
    """The last :data:`LOG_TAIL` characters of ``log`` (empty before it exists)."""
    if not log.exists():
        return ""
    return log.read_text("utf-8", errors="replace")[-LOG_TAIL:]


async def output(*args: str, limit: float = 30) -> tuple[int, str, str]:
    """Run ``gossamer *args`` to its end; its exit code, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), limit)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def read_records(out: Path) -> list[dict[str, Any]]:
    """The records of the pages.jsonl in the output folder ``out`` (none before it exists)."""
    path = out / "pages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def records_so_far(out: Path) -> int:
    """How many whole records the pages.jsonl in ``out`` holds while a crawl still writes it
    (a line is whole once its newline is written: the last may be half written)."""
    path = out / "pages.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def url_counts(tmp_path: Path, workers: int) -> Counter[str]:
    """How many times each URL stands in the pages.jsonl of workers 0 to ``workers - 1``."""
    return Counter(r["url"] for i in range(workers) for r in read_records(tmp_path / f"w{i}"))


def assert_same_urls(counts: Counter[str], expected: set[str]) -> None:
    """Assert that the workers fetched exactly the ``expected`` URLs, showing a few that differ."""
    assert set(counts) == expected, (
        sorted(expected - set(counts))[:5],
        sorted(set(counts) - expected)[:5],
    )


def worker_logs(tmp_path: Path, workers: int) -> list[str]:
    """The logs of workers 0 to ``workers - 1``."""
    return [(tmp_path / f"w{i}.log").read_text() for i in range(workers)]


def worker_tails(tmp_path: Path, workers: int) -> str:
    """For a failure: the tails of what workers 0 to ``workers - 1`` printed (a stuck one's
    stacks, see :func:`dump_and_kill`) and of their ``crawl.log`` (the events of a quiet one)."""
    return "\n".join(
        f"--- {log.relative_to(tmp_path)}:\n{log_tail(log)}"
        for i in range(workers)
        for log in (tmp_path / f"w{i}.log", tmp_path / f"w{i}" / "crawl.log")
    )


LOG_ARGS = ["--log-level", "info", "--log-json"]
"""Worker options that log every event as one JSON object per line."""


def log_events(log: str) -> list[dict[str, Any]]:
    """The JSON log records of a worker's log (its other lines skipped)."""
    return [json.loads(line) for line in log.splitlines() if line.startswith("{")]


def event_names(log: str) -> set[str]:
    """The names of the events in a worker's log."""
    return {entry["event"] for entry in log_events(log) if "event" in entry}


async def reference(tmp_path: Path, seed: str, args: list[str]) -> set[str]:
    """The URL set of a single `gossamer crawl` from ``seed`` with ``args``."""
    out = tmp_path / "reference"
    code = await run(tmp_path / "reference.log", "crawl", seed, *args, *WEB_ARGS, "--out", str(out))
    assert code == 0, (tmp_path / "reference.log").read_text()
    return {r["url"] for r in read_records(out)}


def worker_args(url: str, tmp_path: Path, i: int, *extra: str) -> list[str]:
    """The arguments of a quiet `gossamer cluster worker` number ``i`` on the Redis at ``url``."""
    name = f"w{i}"
    return ["cluster", "worker", "--redis", url, "--name", name,
            "--out", str(tmp_path / name), "--quiet", *extra]  # fmt: skip


async def one_worker_job(tmp_path: Path, url: str, *submit: str) -> list[dict[str, Any]]:
    """One `gossamer cluster worker` (``w0``) on the Redis at ``url`` takes up the job that
    `gossamer cluster submit` ``submit`` (its arguments after ``--redis``) queues; once the
    job is done and the worker has exited 0, its records."""
    proc = await start(tmp_path / "w0.log", *worker_args(url, tmp_path, 0))
    await until_waiting([tmp_path / "w0.log"])
    assert await run(tmp_path / "submit.log", "cluster", "submit", "--redis", url, *submit) == 0
    await cluster_wait(url, 60)
    assert await asyncio.wait_for(proc.wait(), 30) == 0, worker_logs(tmp_path, 1)
    return read_records(tmp_path / "w0")


async def cluster_status(url: str) -> dict[str, Any]:
    """The job's state, as `gossamer cluster status --json` prints it."""
    code, out, err = await output("cluster", "status", "--redis", url, "--json")
    assert code == 0, err
    state: dict[str, Any] = json.loads(out)
    return state


async def cluster_wait(url: str, limit: int = 50, workers: Path | None = None) -> None:
    """Run `gossamer cluster wait` with a timeout of ``limit`` seconds; assert the job finished
    (if not, the failure shows the job's state: what is still queued, claimed and by whom;
    given ``workers``, the folder of the workers' logs and outputs, each worker's own view
    too: see :func:`workers_view`)."""
    code, _, err = await output(
        "cluster", "wait", "--redis", url, "--timeout", str(limit), limit=limit + 5
    )
    if code != 0:
        _, state, _ = await output("cluster", "status", "--redis", url, "--json")
        view = "" if workers is None else await workers_view(workers)
        raise AssertionError(f"{err.strip()}\njob state: {state}\n{await _partitions(url)}{view}")


async def workers_view(tmp_path: Path) -> str:
    """For a job that did not finish: what each worker under ``tmp_path`` sees, its
    status.json (URLs in flight and held in memory, the hosts politeness holds back, the
    sitemaps being read) and the tails of its logs, where each live one has printed its
    asyncio tasks (SIGUSR1, given :data:`DUMP_WAIT` seconds)."""
    live = [proc for proc in STARTED if proc.returncode is None]
    for proc in live:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGUSR1)
    if live:
        await asyncio.sleep(DUMP_WAIT)  # no event tells that a process has printed
    return _shown(tmp_path)


def _shown(tmp_path: Path) -> str:
    """The workers' status.json and the tails of their logs (:func:`workers_view`)."""
    shown = [
        f"--- {status.relative_to(tmp_path)}:\n{status.read_text('utf-8', errors='replace')}"
        for status in sorted(tmp_path.glob("w*/status.json"))
    ]
    workers = len(list(tmp_path.glob("w*.log")))
    return "\n" + "\n".join([*shown, worker_tails(tmp_path, workers)])


async def _partitions(url: str) -> str:
    """The fences, holder records and counts of the partitions with entries queued or claimed,
    or fenced: what a stalled hand-over leaves behind (a Redis Cluster's keys are read on
    every primary)."""
    lines: list[str] = []
    try:
        probe = Redis.from_url(url)
        cluster = (await probe.info("cluster")).get("cluster_enabled") == 1
        lines.append(f"Redis time (the fences' clock): {await probe.time()}")
        await probe.aclose()
        client: Any = RedisCluster.from_url(url) if cluster else Redis.from_url(url)
        try:
            kinds = ("fence", "counts", "holder")
            keys = [k for kind in kinds async for k in client.scan_iter(match=f"gs:*:{kind}")]
            for key in sorted(keys):
                kind = await client.type(key)
                value = await (client.hgetall(key) if kind == b"hash" else client.get(key))
                lines.append(f"{key!r}: {value!r}")
        finally:
            await client.aclose()
    except Exception as exc:  # the failure shows what it could read
        lines.append(f"(partitions not read: {exc!r})")
    return "partitions:\n" + "\n".join(lines)


async def wait_alive(url: str, count: int, limit: float = 20) -> dict[str, Any]:
    """The job's state once at least ``count`` workers are alive."""
    deadline = time.monotonic() + limit
    while True:
        state = await cluster_status(url)
        if sum(w["alive"] for w in state["workers"]) >= count:
            return state
        assert time.monotonic() < deadline, state
        await asyncio.sleep(0.2)


async def wait_for_records(tmp_path: Path, workers: range, least: int, limit: float = 20) -> int:
    """The first of ``workers`` with ``least`` records (so a disturbance lands mid-crawl)."""
    deadline = time.monotonic() + limit
    while True:
        for i in workers:
            if records_so_far(tmp_path / f"w{i}") >= least:
                return i
        assert time.monotonic() < deadline, "no worker fetched anything"
        await asyncio.sleep(0.05)


async def next_leader(url: str, old: str, limit: float = 15) -> tuple[str, float]:
    """The leader after ``old`` and the seconds it took to come, read from Redis every 20 ms
    (a ``cluster status`` each time would take a process start, a second under load)."""
    control = Control(Redis.from_url(url), DEFAULT_JOB)
    started = time.monotonic()
    try:
        while (leader := await control.leader()) in (None, old):
            assert time.monotonic() - started < limit, f"{old} still leads or none does"
            await asyncio.sleep(0.02)
        return leader, time.monotonic() - started
    finally:
        await control.redis.aclose()


async def first_assignment(url: str, limit: float = 20) -> dict[str, frozenset[int]]:
    """The first published assignment (version 1), read from Redis as soon as it is there."""
    control = Control(Redis.from_url(url), DEFAULT_JOB)
    deadline = time.monotonic() + limit
    try:
        while (version := await control.version()) < 1:
            assert time.monotonic() < deadline, "no assignment published"
            await asyncio.sleep(0.01)
        assignment = await control.assignment()
        assert version == await control.version() == 1, "a second assignment came first"
        return assignment
    finally:
        await control.redis.aclose()

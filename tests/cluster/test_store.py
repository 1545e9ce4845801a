"""`gossamer cluster` with `--store postgres://...`: every worker writes the shared table.

Real redis-server, real PostgreSQL, the in-process test web; workers run as subprocesses. The
table must hold exactly the union of the workers' pages.jsonl, one row per URL.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cluster.harness import (
    FAST,
    GOSSAMER,
    WEB_ARGS,
    read_records,
    run,
    small_web,
    start,
    until_waiting,
    wait_for_records,
    worker_args,
    worker_logs,
)
from tests.pg_server import PostgresServer, table_rows
from tests.redis_server import RedisServer

from gossamer.sinks.base import FIELD_NAMES
from gossamer.testweb import TestWebServer
from gossamer.urls import fingerprint

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

WORKERS = 3


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def _submit(url: str, seed: str, store: str, *args: str) -> list[str]:
    return ["cluster", "submit", "--redis", url, seed, *FAST, *WEB_ARGS, "--partitions", "64",
            "--store", store, *args]  # fmt: skip


async def _finish(tmp_path: Path, url: str, workers: list[asyncio.subprocess.Process]) -> None:
    wait = ["cluster", "wait", "--redis", url, "--timeout", "50"]
    assert await run(tmp_path / "wait.log", *wait) == 0, (tmp_path / "wait.log").read_text()
    codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
    assert codes == [0] * len(workers), worker_logs(tmp_path, len(workers))


def _table_records(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The table as {url: record}, checking the key and that no URL is there twice."""
    assert all(row["fp"] == fingerprint(row["url"]) for row in rows)
    by_url = {row["url"]: {k: row[k] for k in FIELD_NAMES} for row in rows}
    assert len(by_url) == len(rows)
    return by_url


def _state(pid: int) -> str:
    """The state letter of process ``pid`` (``T``: stopped by a signal; ``""``: gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return ""


async def _stopped(pid: int, limit: float = 10) -> bool:
    """Once the process ``pid`` is stopped, True (SIGSTOP takes effect after ``kill``
    returns); False if it ended."""
    for _ in range(int(limit / 0.005)):
        state = _state(pid)
        if state == "T":
            return True
        if state in ("", "Z", "X"):
            return False
        await asyncio.sleep(0.005)
    raise TimeoutError(f"process {pid} not stopped after {limit:g}s")


async def _kill_between_writes(
    proc: asyncio.subprocess.Process, out: Path, pg: PostgresServer, table: str, limit: float = 30
) -> None:
    """SIGKILL ``proc`` at a moment the table holds every record of its pages.jsonl.

    A checkpoint writes pages.jsonl, then the table, then acks. Killed between the first two,
    a worker leaves pages the table lacks but others fetch again (they were not acked), and
    sitemap records the table never gets: a sitemap's read is marked done in Redis as it ends,
    before its record's checkpoint. So the worker is frozen while the two are compared, and
    killed only once the table has caught up (between the table write and the acks it still
    may be: its URLs are then fetched twice, the case this test is about)."""
    deadline = time.monotonic() + limit
    missing: list[str] = []
    while True:
        assert proc.returncode is None, f"{out.name} ended, the table lacking its {missing}"
        proc.send_signal(signal.SIGSTOP)
        assert await _stopped(proc.pid), f"{out.name} ended, the table lacking its {missing}"
        recorded = {r["url"] for r in read_records(out)}
        stored = {row["url"] for row in await table_rows(pg.url, table)}
        if recorded <= stored:
            proc.send_signal(signal.SIGKILL)
            return
        proc.send_signal(signal.SIGCONT)
        missing = sorted(recorded - stored)[:5]
        assert time.monotonic() < deadline, f"the table never held all of {out.name}'s: {missing}"
        await asyncio.sleep(0.02)


async def test_workers_fill_one_table_with_the_union_of_their_records(
    tmp_path: Path, redis_server: RedisServer, pg: PostgresServer
) -> None:
    url = redis_server.url
    web = small_web()
    async with TestWebServer(web, flaky_failures=0) as server:
        seed = server.url(0)
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i))
            for i in range(WORKERS)
        ]
        await until_waiting([tmp_path / f"w{i}.log" for i in range(WORKERS)])
        submit = _submit(url, seed, pg.table_url("union"), "--concurrency", "8", "--per-host", "1")
        assert await run(tmp_path / "submit.log", *submit) == 0
        await _finish(tmp_path, url, workers)
        reachable = web.reachable([seed], port=server.port)

    per_worker = [read_records(tmp_path / f"w{i}") for i in range(WORKERS)]
    union = [r for records in per_worker for r in records]
    assert sum(bool(records) for records in per_worker) >= 2, "one worker crawled everything"
    rows = await table_rows(pg.url, "union")
    table = _table_records(rows)
    assert table == {r["url"]: r for r in union}
    assert len(table) == len(union), "a URL is in two workers' pages.jsonl"
    assert reachable <= {u for u, r in table.items() if r["status"] == 200}
    # Each row names the worker that wrote it: grouped by writer, the rows are its pages.jsonl.
    by_writer: defaultdict[str, set[str]] = defaultdict(set)
    for row in rows:
        by_writer[row["worker"]].add(row["url"])
    expected = sorted(sorted(r["url"] for r in records) for records in per_worker if records)
    assert sorted(sorted(urls) for urls in by_writer.values()) == expected


async def test_a_killed_worker_s_records_are_upserted_not_duplicated(
    tmp_path: Path, redis_server: RedisServer, pg: PostgresServer
) -> None:
    url = redis_server.url
    slow = ["--per-host", "1", "--delay", "0.08", "--concurrency", "4"]
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        submit = _submit(url, server.url(0), pg.table_url("killed"), *slow,
                         "--heartbeat-ttl", "2", "--claim-timeout", "2")  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i))
            for i in range(WORKERS)
        ]
        victim = await wait_for_records(tmp_path, range(WORKERS), 5, limit=30)
        await _kill_between_writes(workers[victim], tmp_path / f"w{victim}", pg, "killed")
        await workers[victim].wait()
        await _finish(tmp_path, url, [w for i, w in enumerate(workers) if i != victim])

    per_worker = [read_records(tmp_path / f"w{i}") for i in range(WORKERS)]
    counts = Counter(r["url"] for records in per_worker for r in records)
    table = _table_records(await table_rows(pg.url, "killed"))
    assert set(table) == set(counts)
    # A URL the victim recorded (maybe written to the table) but never acked was fetched
    # again: the table holds one of its records, not both.
    for record in (r for records in per_worker for r in records):
        if counts[record["url"]] == 1:
            assert table[record["url"]] == record
    for url_twice in (u for u, n in counts.items() if n > 1):
        versions = [r for records in per_worker for r in records if r["url"] == url_twice]
        assert table[url_twice] in versions


async def test_worker_with_unreachable_store_is_one_line_exit_1(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with PostgresServer() as down:
        store = down.url
    submit = _submit(redis_server.url, "http://site0.test/", store)
    assert await run(tmp_path / "submit.log", *submit) == 0
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, *worker_args(redis_server.url, tmp_path, 0),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    text = err.decode()
    assert proc.returncode == 1, text
    assert text.count("\n") == 1 and "cannot use PostgreSQL" in text and "Traceback" not in text

"""kill -9 then --resume, graceful Ctrl-C, and a second Ctrl-C: nothing is lost or fetched twice."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from gossamer.testweb import TestWebServer, Web, generate
from gossamer.urls import canonicalize

from .harness import load_records, run_crawl, start_crawl, wait_for_records

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

CONCURRENCY = 4
# Each host answers one request at a time, 20 ms apart: about 100 pages/s over 5 hosts, so
# a checkpoint (every 50 ms) covers a handful of pages and the kill lands mid-crawl.
ARGS = [
    "--concurrency",
    str(CONCURRENCY),
    "--per-host",
    "1",
    "--delay",
    "0.02",
    "--checkpoint-interval",
    "0.05",
    "--robots-retry",
    "0.2",
    "--queue-memory",
    "100",  # smaller than the web: the queue spills to crawl.db and is read back
]


def _web() -> Web:
    return generate(11, hosts=5, pages_per_host=60, specials=(), crawl_delay=0.02)


def _integrity_ok(tmp_path: Path) -> bool:
    with sqlite3.connect(tmp_path / "out" / "crawl.db") as conn:
        return bool(conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok")


def _fetch_counts(server: TestWebServer) -> Counter[str]:
    return Counter(canonicalize(e.url) for e in server.log if not e.path.startswith("/robots"))


async def _reference(tmp_path: Path, web: Web) -> set[str]:
    async with TestWebServer(web) as server:
        code, _ = await run_crawl(tmp_path / "reference", server, [server.url(0), *ARGS])
        assert code == 0
        return {
            r["url"].replace(f":{server.port}/", ":PORT/")
            for r in load_records(tmp_path / "reference")
        }


async def test_kill_9_then_resume_finishes_the_crawl(tmp_path: Path) -> None:
    web = _web()
    (tmp_path / "reference").mkdir()
    expected = await _reference(tmp_path, web)
    async with TestWebServer(web) as server:
        seed = server.url(0)
        proc = await start_crawl(tmp_path, server, [seed, *ARGS])
        await wait_for_records(tmp_path, 60)
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        before = len(load_records(tmp_path))
        assert before < len(expected), "the kill came too late to test anything"

        code, output = await run_crawl(tmp_path, server, ["--resume", *ARGS])
        assert code == 0, output
        fetched = _fetch_counts(server)

    records = load_records(tmp_path)
    urls = [r["url"] for r in records]
    assert len(urls) == len(set(urls)), "pages.jsonl has a URL twice"
    assert {u.replace(f":{server.port}/", ":PORT/") for u in urls} == expected
    twice = {u for u, n in fetched.items() if n > 1}
    # In flight at the kill: leased, or fetched but not yet in a committed checkpoint.
    assert len(twice) <= 2 * CONCURRENCY, sorted(twice)
    assert _integrity_ok(tmp_path)


async def test_ctrl_c_stops_gracefully_and_resume_completes(tmp_path: Path) -> None:
    web = _web()
    async with TestWebServer(web) as server:
        seed = server.url(0)
        proc = await start_crawl(tmp_path, server, [seed, *ARGS])
        await wait_for_records(tmp_path, 40)
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
        assert (tmp_path / "out" / "stats.json").exists()
        assert _integrity_ok(tmp_path)
        first = len(load_records(tmp_path))

        code, output = await run_crawl(tmp_path, server, ["--resume", *ARGS])
        assert code == 0, output
        fetched = _fetch_counts(server)

    records = load_records(tmp_path)
    urls = [r["url"] for r in records]
    assert len(urls) == len(set(urls))
    assert len(urls) > first
    assert set(urls) >= web.reachable([seed], port=server.port)
    assert not {u for u, n in fetched.items() if n > 1}, "a graceful stop refetches nothing"


async def _until_requested(server: TestWebServer, path: str, limit: float = 30) -> None:
    """Until the test web has had a request for ``path`` (its log entry comes before the
    answer, so a ``/hang`` is then in flight)."""
    for _ in range(int(limit / 0.02)):
        if any(entry.path == path for entry in server.log):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"no request for {path} after {limit:g}s")


def _logged(log: Path, text: bytes) -> bool:
    return log.exists() and text in log.read_bytes()


async def _until_logged(log: Path, text: bytes, limit: float = 30) -> None:
    """Until ``log`` holds ``text``."""
    for _ in range(int(limit / 0.02)):
        if _logged(log, text):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{text!r} not in {log.name} after {limit:g}s")


async def test_second_ctrl_c_exits_at_once(tmp_path: Path) -> None:
    web = generate(5, hosts=2, pages_per_host=20, specials=["hang"], crawl_delay=0.0)
    async with TestWebServer(web) as server:
        seed = server.url(0)
        args = [seed, "--total-timeout", "60", "--read-timeout", "60", "--concurrency", "4"]
        proc = await start_crawl(tmp_path, server, args)
        # With /hang in flight the graceful stop cannot end before its grace time: the
        # second Ctrl-C, sent once the crawl said it handled the first, is what ends it.
        await _until_requested(server, "/hang")
        proc.send_signal(signal.SIGINT)
        await _until_logged(tmp_path / "crawl.log", b"stopping: finishing in-flight URLs")
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 5)
        assert code == 128 + signal.SIGINT
        assert _integrity_ok(tmp_path)
        code, output = await run_crawl(tmp_path, server, ["--resume", "--total-timeout", "0.5"])
        assert code == 0, output
    records = load_records(tmp_path)
    assert any(r["url"].endswith("/hang") and r["error"] for r in records)

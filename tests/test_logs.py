"""Logs: one JSON object per line with ``--log-json``, the events a crawl logs, no credential."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

import gossamer.logs
from gossamer import Crawl, CrawlSettings
from gossamer.logs import JsonFormatter, TextFormatter, logging_to_file, logging_to_stderr
from gossamer.testweb import TestWebServer, generate

GOSSAMER = [sys.executable, "-m", "gossamer.cli"]


def record(message: str, *args: Any, **extra: Any) -> logging.LogRecord:
    entry = logging.makeLogRecord({"name": "gossamer.test", "levelno": logging.INFO,
                                   "levelname": "INFO", "msg": message, "args": args})  # fmt: skip
    entry.__dict__.update(extra)
    return entry


def test_json_lines_hold_time_level_logger_message_and_the_event() -> None:
    line = JsonFormatter().format(
        record(
            "Redis at %s unreachable",
            "redis://:pw@h:1/0",
            event="redis-unreachable",
            redis="redis://u:pw@h:1/0",
            budget=60.0,
            parts=[1, 2],
        )
    )
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["time"].endswith("Z") and entry["time"][10] == "T"
    assert (entry["level"], entry["logger"]) == ("info", "gossamer.test")
    assert entry["message"] == "Redis at redis://:***@h:1/0 unreachable"
    assert entry["event"] == "redis-unreachable" and entry["budget"] == 60.0
    assert entry["redis"] == "redis://u:***@h:1/0"
    assert entry["parts"] == "[1, 2]"
    assert "pw" not in line


def test_json_lines_carry_the_exception_redacted() -> None:
    try:
        raise ValueError("cannot reach postgres://u:hunter2@db/x")
    except ValueError:
        entry = record("failed")
        entry.exc_info = sys.exc_info()
    data = json.loads(JsonFormatter().format(entry))
    assert "ValueError" in data["exception"] and "hunter2" not in data["exception"]


def test_json_lines_hold_no_raw_line_break() -> None:
    breaks = "a\u2028b\u2029c\x85d"  # JSON leaves them raw; str.splitlines splits on them
    line = JsonFormatter().format(record("page %s", breaks, event="e", title=breaks))
    assert line.splitlines() == [line]
    entry = json.loads(line)
    assert (entry["message"], entry["title"]) == (f"page {breaks}", breaks)


def test_text_lines_are_redacted() -> None:
    line = TextFormatter().format(record("lost %s", "postgres://u:hunter2@db/x"))
    assert line.endswith("INFO gossamer.test: lost postgres://u:***@db/x")


def test_logging_to_stderr_sets_up_and_restores(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("gossamer.cluster.worker")
    package = logging.getLogger("gossamer")
    before = (package.level, list(package.handlers))
    with logging_to_stderr("info", json_lines=True):
        logger.info("leads", extra={"event": "leader-acquired"})
        logger.debug("not shown")
    logger.warning("after the block: not ours")
    assert (package.level, list(package.handlers)) == before
    lines = capsys.readouterr().err.splitlines()
    events = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert events == ["leader-acquired"]


# -- a crawl --------------------------------------------------------------------------------


def test_the_log_file_rotates_keeping_one_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gossamer.logs, "LOG_FILE_BYTES", 2000)
    path = tmp_path / "crawl.log"
    log = logging.getLogger("gossamer.test")
    with logging_to_file(path):
        for n in range(100):
            log.info("record %03d %s", n, "x" * 50)
    lines = path.read_text("utf-8").splitlines()
    old = (tmp_path / "crawl.log.1").read_text("utf-8").splitlines()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl.log", "crawl.log.1"]
    assert path.stat().st_size < 2000 and (tmp_path / "crawl.log.1").stat().st_size < 2000
    assert json.loads(lines[-1])["message"].startswith("record 099")
    numbers = [int(json.loads(line)["message"].split()[1]) for line in old + lines]
    assert numbers == list(range(numbers[0], 100))  # none lost between the two files


async def handler(request: web.Request) -> web.Response:
    """``broken.test`` cannot serve its robots.txt; ``busy.test`` answers 503 to pages."""
    host = request.host.partition(":")[0]
    if request.path == "/robots.txt":
        return web.Response(status=500 if host == "broken.test" else 404)
    if host == "busy.test":
        return web.Response(status=503, text="busy")
    return web.Response(text="<p>fine</p>", content_type="text/html")


async def crawl(tmp_path: Path, port: int, *flags: str) -> tuple[int, str]:
    seeds = [f"http://broken.test:{port}/", f"http://user:hunter2@busy.test:{port}/"]
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, "crawl", *seeds, "--out", str(tmp_path / "out"),
        "--resolve", "*.test=127.0.0.1", "--max-retries", "1", "--retry-backoff", "0.05",
        "--robots-retry", "0.2", "--quiet", *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.mark.slow
async def test_a_crawl_logs_json_events(tmp_path: Path) -> None:
    async with serve(handler) as port:
        code, err = await crawl(tmp_path, port, "--log-json", "--log-level", "info")
    assert code == 0, err
    entries = [json.loads(line) for line in err.splitlines()]  # every line is one object
    assert all({"time", "level", "logger", "message"} <= set(e) for e in entries), entries
    events = {e.get("event"): e for e in entries}
    robots = events["robots-unreachable"]
    assert robots["origin"] == f"http://broken.test:{port}"
    assert robots["logger"] == "gossamer.frontier.robots" and robots["level"] == "info"
    slowed = events["host-slowed"]
    assert slowed["host"] == f"http://busy.test:{port}" and slowed["delay"] > 0
    assert "hunter2" not in err


@pytest.mark.slow
async def test_a_crawl_at_the_default_level_logs_no_state_changes(tmp_path: Path) -> None:
    async with serve(handler) as port:
        code, err = await crawl(tmp_path, port)
    assert (code, err) == (0, "")


async def test_two_log_files_in_two_tasks_keep_their_own_records(tmp_path: Path) -> None:
    log = logging.getLogger("gossamer.test")
    both_open = asyncio.Barrier(2)

    async def task(name: str) -> None:
        with logging_to_file(tmp_path / f"{name}.log"):
            await both_open.wait()
            log.info("from %s", name)
            await asyncio.gather(asyncio.to_thread(log.info, "thread of %s", name))
            await both_open.wait()

    await asyncio.gather(task("a"), task("b"))
    for name in ("a", "b"):
        lines = (tmp_path / f"{name}.log").read_text("utf-8").splitlines()
        assert [json.loads(line)["message"] for line in lines] == [
            f"from {name}",
            f"thread of {name}",
        ]


@pytest.mark.slow
async def test_two_crawls_in_one_process_keep_to_their_own_crawl_log(tmp_path: Path) -> None:
    web_ = generate(5, hosts=1, pages_per_host=12, specials=(), crawl_delay=0.0)
    async with TestWebServer(web_) as server:
        crawls = {
            name: Crawl(
                CrawlSettings(
                    seeds=[server.url(0)],
                    out=tmp_path / name,
                    resolve=["*.test=127.0.0.1"],
                    allow_domains=["test"],
                    quiet=True,
                )
            )
            for name in ("a", "b")
        }
        for crawl_ in crawls.values():
            crawl_.start()
        await asyncio.wait_for(asyncio.gather(*(c.wait() for c in crawls.values())), 30)
    for name in crawls:
        lines = (tmp_path / name / "crawl.log").read_text("utf-8").splitlines()
        messages = [json.loads(line)["message"] for line in lines]
        started = [m for m in messages if m.startswith("crawl of")]
        assert len(started) == 1, messages
        assert started[0].startswith(f"crawl of 1 seed(s) into {tmp_path / name} started")
        assert len([m for m in messages if m.startswith("crawl ended")]) == 1, messages

"""Requests that are no HTTP aiohttp can parse (an 8 KiB path, garbage bytes) sent to a real
crawl's metrics port: nothing on the crawl's stderr (aiohttp printed a 9-line traceback per
request, ``--quiet`` or not); at debug level, one line for many, without a traceback."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp.http_exceptions import LineTooLong
from tests.local_app import serve_pages

from gossamer.metrics.exporter import application, listen
from gossamer.metrics.serverlog import INTERVAL, BadRequests, server_logger

pytestmark = pytest.mark.timeout(60)

LONG_PATH = b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
GARBAGE = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\xff" * 100 + b"\r\n\r\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def send_raw(port: int, data: bytes) -> bytes:
    """``data`` to the port; its answer (a 400, or nothing), read to the connection's end."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def healthz(port: int) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        return response.status


async def wait_listening(port: int) -> None:
    for _ in range(400):  # bounded: 20 s
        try:
            await healthz(port)
            return
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


async def test_bad_requests_leave_a_quiet_crawl_s_stderr_empty(tmp_path: Path) -> None:
    port = free_port()
    async with serve_pages({"/": "<a href='/b'>b</a>", "/b": "b"}) as site:
        crawl = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gossamer", "crawl", f"http://127.0.0.1:{site}/",
            "--out", str(tmp_path / "out"), "--quiet", "--recrawl", "--revisit-initial", "5",
            "--metrics-port", str(port), "--max-duration", "8",
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            await wait_listening(port)
            answers = [await send_raw(port, LONG_PATH) for _ in range(20)]
            answers += [await send_raw(port, GARBAGE) for _ in range(5)]
            assert await healthz(port) == 200  # still serving
        finally:
            _, err = await asyncio.wait_for(crawl.communicate(), 40)  # its --max-duration
    assert all(a.startswith(b"HTTP/1.0 400") for a in answers[:20]), answers[0][:100]
    assert crawl.returncode == 0, err
    assert err == b"", err.decode(errors="replace")[:2000]


async def test_bad_requests_make_one_debug_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = await listen(application(None), "127.0.0.1", port := free_port())
    try:
        with caplog.at_level(logging.DEBUG, logger="gossamer.metrics.requests"):
            for _ in range(10):
                await send_raw(port, LONG_PATH)
    finally:
        await runner.cleanup()
    records = [r for r in caplog.records if r.name == "gossamer.metrics.requests"]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].levelno == logging.DEBUG and records[0].exc_info is None
    assert "not understood" in records[0].getMessage()
    assert len(records[0].getMessage()) < 400


def test_the_filter_counts_and_limits_its_lines() -> None:
    now = [0.0]
    bad = BadRequests(clock=lambda: now[0])
    logger = server_logger()
    assert sum(isinstance(f, BadRequests) for f in server_logger().filters) == 1

    def record(error: BaseException) -> logging.LogRecord:
        return logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "Error handling request from %s",
            ("127.0.0.1",), (type(error), error, None),
        )  # fmt: skip

    records = [record(LineTooLong(b"x" * 9000, 8190)) for _ in range(5)]
    assert [bad.filter(r) for r in records] == [True, False, False, False, False]
    assert records[0].levelno == logging.DEBUG and records[0].exc_info is None
    assert len(records[0].getMessage()) < 400
    now[0] += INTERVAL
    later = record(LineTooLong(b"x", 8190))
    assert bad.filter(later) and later.getMessage().startswith("5 request(s)")
    other = record(RuntimeError("a handler's bug"))
    assert bad.filter(other) and other.levelno == logging.ERROR and other.exc_info


async def test_the_dashboard_s_stderr_says_nothing_of_bad_requests(tmp_path: Path) -> None:
    """``gossamer ui`` shares the logger: its stderr holds its two start lines only."""
    ui = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer", "ui", "--bind", "127.0.0.1:0", "--out", str(tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert ui.stdout is not None
    try:
        line = await asyncio.wait_for(ui.stdout.readline(), 30)
        port = int(line.decode().split("127.0.0.1:")[1].split("/")[0])
        answers = [await send_raw(port, LONG_PATH) for _ in range(10)]
        answers += [await send_raw(port, GARBAGE) for _ in range(3)]
    finally:
        ui.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(ui.communicate(), 30)
    assert all(a.startswith(b"HTTP/1.0 400") for a in answers[:10]), answers[0][:100]
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "Error handling request" not in text, text[:2000]
    assert text.count("\n") == 2, text  # "showing crawls in ...", "rule editor: ..."

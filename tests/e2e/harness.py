"""Running ``gossamer crawl`` as a real subprocess next to an in-process test web."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from gossamer.testweb import TestWebServer

GOSSAMER = [sys.executable, "-m", "gossamer.cli", "crawl"]


def crawl_args(tmp_path: Path, server: TestWebServer, args: list[str]) -> list[str]:
    """The full command line: out dir, resolver override and scope for the test web."""
    return [
        *GOSSAMER,
        *args,
        "--out",
        str(tmp_path / "out"),
        "--resolve",
        "*.test=127.0.0.1",
        "--allow-domain",
        "test",
        "--quiet",
    ]


async def start_crawl(
    tmp_path: Path, server: TestWebServer, args: list[str]
) -> asyncio.subprocess.Process:
    """Start a crawl; its output goes to files in tmp_path."""
    with (tmp_path / "crawl.log").open("ab") as log:
        return await asyncio.create_subprocess_exec(
            *crawl_args(tmp_path, server, args), stdout=log, stderr=log
        )


async def run_crawl(
    tmp_path: Path, server: TestWebServer, args: list[str], limit: float = 90
) -> tuple[int, str]:
    """Run a crawl to its end; returns the exit code and the crawl's combined output."""
    proc = await start_crawl(tmp_path, server, args)
    try:
        code = await asyncio.wait_for(proc.wait(), limit)
    except TimeoutError:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        raise
    return code, (tmp_path / "crawl.log").read_text(errors="replace")


def load_records(tmp_path: Path) -> list[dict[str, Any]]:
    """Every record of pages.jsonl."""
    text = (tmp_path / "out" / "pages.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


async def wait_for_records(tmp_path: Path, count: int, limit: float = 30) -> None:
    """Wait until pages.jsonl holds at least ``count`` lines."""
    path = tmp_path / "out" / "pages.jsonl"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"fewer than {count} records after {limit}s")

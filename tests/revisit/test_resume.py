"""--resume --recrawl: after kill -9 no due revisit is lost; a crawl that ended (or ran
without --recrawl) is continued as a continuous one."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.revisit.site import PAGES, Site, serve_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLOCK = ["--revisit-min", "1", "--revisit-max", "2", "--checkpoint-interval", "0.05"]


def _command(site: Site, out: Path, args: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gossamer.cli",
        "crawl",
        site.url(),
        "--out",
        str(out),
        "--no-robots",
        "--quiet",
        "--delay",
        "0.02",
        *CLOCK,
        *args,
    ]


async def _run(site: Site, out: Path, args: list[str], limit: float = 30) -> int:
    proc = await asyncio.create_subprocess_exec(*_command(site, out, args))
    return await asyncio.wait_for(proc.wait(), limit)


def _records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def _wait_for_records(out: Path, count: int) -> None:
    path = out / "pages.jsonl"
    for _ in range(1500):
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"fewer than {count} records")


async def test_kill_9_loses_no_due_revisit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        # first revisits 2 s after each fetch: the kill comes before any is due
        args = ["--recrawl", "--revisit-initial", "2"]
        proc = await asyncio.create_subprocess_exec(*_command(site, out, args))
        await _wait_for_records(out, 1 + len(PAGES))
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        killed = len(site.log)
        first = _records(out)
        assert all(r["change"] == "new" for r in first)

        code = await _run(site, out, ["--resume", *args, "--max-duration", "4"])
        assert code == 0
        again = {hit.path.strip("/") for hit in site.log[killed:]}
    # every page fetched before the kill is revisited by the resumed crawl
    assert again >= {"", *PAGES}, again
    later = _records(out)[len(first) :]
    assert {r["change"] for r in later} <= {"changed", "unchanged", "gone"}
    assert {r["url"] for r in later} >= {r["url"] for r in first}


async def test_resume_recrawl_continues_a_crawl_that_ended(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        assert await _run(site, out, []) == 0  # a one-shot crawl: no revisit state kept
        first = _records(out)
        assert {r["change"] for r in first} == {"new"}
        args = ["--resume", "--recrawl", "--revisit-initial", "1", "--max-duration", "3"]
        assert await _run(site, out, args) == 0
    later = _records(out)[len(first) :]
    changes = {r["url"].rsplit("/", 1)[1]: r["change"] for r in later}
    # compared by the main text of the records kept: the unchanged pages are unchanged
    assert changes["still"] == "unchanged" and changes["ad"] == "unchanged"
    assert changes["changing"] == "changed" and changes["gone"] == "gone"

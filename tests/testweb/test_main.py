"""``python -m gossamer.testweb`` prints its banner, serves, and exits on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path

import pytest

from gossamer.testweb.__main__ import parse_args

from .support import client


async def test_module_serves_until_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    args = ["--port", "0", "--seed", "3", "--hosts", "3", "--pages", "10", "--log", str(log)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer.testweb", *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=10)).decode()
        match = re.fullmatch(
            r"serving 3 hosts on http://127\.0\.0\.1:(\d+) \(hosts: site0\.test site1\.test "
            r"site2\.test\)\n",
            line,
        )
        assert match, line
        port = int(match.group(1))
        async with client() as session, session.get(f"http://site2.test:{port}/") as response:
            assert response.status == 200 and "(site2.test #0)" in await response.text()
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=5) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["host"], e["path"], e["status"]) for e in entries] == [("site2.test", "/", 200)]


def test_arguments() -> None:
    args = parse_args(["--specials", "hang,slow", "--crawl-delay", "0"])
    assert args.specials == frozenset({"hang", "slow"}) and args.crawl_delay == 0
    assert parse_args([]).port == 8080
    assert parse_args(["--specials", "none"]).specials == frozenset()
    with pytest.raises(SystemExit):
        parse_args(["--specials", "bogus"])

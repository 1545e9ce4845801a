"""A cluster worker that may not write its output directory or its crawl.db ends with one line
saying so (the file, the operating system's reason), exit 1, no traceback: not "Redis failed".

Root writes any file whatever its mode, so as root the worker runs without the capabilities
that let it (``setpriv``, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from tests.cluster.harness import GOSSAMER, STARTED, run, until_waiting, worker_args
from tests.local_app import serve
from tests.redis_server import RedisServer
from tests.test_storage_errors import handle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


async def _start(log: Path, *args: str) -> asyncio.subprocess.Process:
    """``gossamer *args`` held to the files its user may write, even as root."""
    prefix = AS_A_USER if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("as root, the test needs setpriv to drop the file capabilities")
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            *prefix, *GOSSAMER, *args, stdout=out, stderr=out
        )
    STARTED.append(proc)
    return proc


def _read_only_dir(out: Path) -> Path:
    out.chmod(0o555)
    return out / "crawl.db"


def _read_only_db(out: Path) -> Path:
    db = out / "crawl.db"
    sqlite3.connect(db).close()
    db.chmod(0o444)
    return db


def _read_only_jsonl(out: Path) -> Path:
    jsonl = out / "pages.jsonl"
    jsonl.touch(0o444)
    return jsonl


@pytest.mark.parametrize(
    "refuse",
    [_read_only_dir, _read_only_db, _read_only_jsonl],
    ids=["out", "crawl.db", "pages.jsonl"],
)
async def test_a_worker_refused_its_files_says_so_in_one_line(
    tmp_path: Path, redis_server: RedisServer, refuse: object
) -> None:
    url = redis_server.url
    out = tmp_path / "w0"
    out.mkdir()
    assert callable(refuse)
    refused = refuse(out)
    async with serve(handle) as port:
        log = tmp_path / "w0.log"
        worker = await _start(log, *worker_args(url, tmp_path, 0))
        await until_waiting([log])
        submit = ["cluster", "submit", "--redis", url, f"http://127.0.0.1:{port}/"]
        assert await run(tmp_path / "submit.log", *submit, "--allow-private") == 0
        code = await asyncio.wait_for(worker.wait(), 30)
    out.chmod(0o755)
    text = log.read_text("utf-8")
    assert code == 1, text
    assert "Traceback" not in text and "Redis" not in text, text
    [told] = [line for line in text.splitlines() if line.startswith("gossamer: ")]
    assert told.startswith(f"gossamer: cannot write {refused}: "), text


def test_only_the_outputs_failures_are_told_as_such(tmp_path: Path) -> None:
    """A refused file in --out is one line; another OSError (a file elsewhere, a socket's)
    goes on as it was raised."""
    from gossamer.crawl import storage_errors
    from gossamer.errors import CommandError

    out = tmp_path / "out"
    told = f"^cannot write {out}/warc/a: Permission denied$"
    with pytest.raises(CommandError, match=told), storage_errors(out):
        raise PermissionError(13, "Permission denied", str(out / "warc" / "a"))
    for error in (
        PermissionError(13, "Permission denied", str(tmp_path / "rules.json")),
        ConnectionRefusedError(111, "Connection refused"),
    ):
        with pytest.raises(type(error)), storage_errors(out):
            raise error

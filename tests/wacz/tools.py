"""The replay tool and the independent validator, from their own virtualenv (``.venv-pywb``,
made by ``make test`` from tests/requirements-pywb.txt): pywb (``wb-manager``, ``wayback``)
pins redis, werkzeug and gevent versions of its own, py-wacz brings black and frictionless,
so neither goes into gossamer's environment."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("GOSSAMER_PYWB_VENV", REPO / ".venv-pywb"))
MAKE_IT = "make .venv-pywb/.installed (make test makes it)"


def tool(name: str) -> Path:
    """The path of ``name`` in the tools' virtualenv; skips the test when the virtualenv is
    missing, except in CI, where ``make test`` has made it and its absence is a failure."""
    path = VENV / "bin" / name
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} missing: {MAKE_IT}")
        pytest.skip(f"{path} missing: {MAKE_IT}")
    return path


def run_tool(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tool of the virtualenv to its end (30 s at most), its output captured."""
    return subprocess.run(
        [str(tool(name)), *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
    )


def add_collection(root: Path, name: str, wacz: Path) -> None:
    """A pywb collection ``name`` under ``root`` holding ``wacz`` (its WARC files copied out
    and its own index merged in: pywb does not index the WARC files again)."""
    for args in (("init", name), ("add", "--unpack-wacz", name, str(wacz))):
        done = run_tool("wb-manager", *args, cwd=root)
        assert done.returncode == 0, done.stderr


@asynccontextmanager
async def wayback(root: Path) -> AsyncIterator[str]:
    """pywb's ``wayback`` serving the collections under ``root`` on a loopback port; its
    base URL once it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        str(tool("wayback")),
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        cwd=root,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        await asyncio.wait_for(_started(proc.stderr), 20)
        drain = asyncio.create_task(proc.stderr.read())  # its request log fills no pipe
        await _listening(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        await proc.wait()
    await drain


async def _listening(port: int) -> None:
    """Wait until ``port`` takes connections (gevent logs its start just before it listens);
    100 tries, 50 ms apart."""
    for _ in range(100):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError(f"wayback not listening on {port}")


async def _started(stderr: asyncio.StreamReader) -> None:
    """Wait for wayback's line saying its server started."""
    seen = []
    while line := await stderr.readline():
        seen.append(line)
        if b"Starting Gevent Server" in line:
            return
    raise AssertionError(f"wayback ended: {b''.join(seen)!r}")

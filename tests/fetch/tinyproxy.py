"""A real tinyproxy (Debian's package) on 127.0.0.1 for tests: started in the foreground with
a configuration of its own, stopped and started again on the same port.

tinyproxy adds ``Via`` to every answer it relays and answers a site it cannot reach with its
own ``500 Unable to connect`` (no ``Via``): how gossamer tells the proxy's errors from the
site's.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

BINARY = shutil.which("tinyproxy")
_READY_SECONDS = 5.0
_CONFIG = """\
Port {port}
Listen 127.0.0.1
Timeout 10
MaxClients 32
Allow 127.0.0.1
LogLevel Critical
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Tinyproxy:
    """tinyproxy serving on ``port`` of 127.0.0.1 while started."""

    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        self._config = directory / "tinyproxy.conf"
        self._config.write_text(_CONFIG.format(port=self.port))
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> Tinyproxy:
        """Start it and wait (at most `_READY_SECONDS`) until it accepts connections."""
        assert BINARY is not None
        self._process = await asyncio.create_subprocess_exec(
            BINARY,
            "-d",
            "-c",
            str(self._config),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        async with asyncio.timeout(_READY_SECONDS):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except OSError:
                    await asyncio.sleep(0.02)  # the process binds its port: nothing to wait on
                    continue
                writer.close()
                await writer.wait_closed()
                return self

    async def stop(self) -> None:
        """End the process (its connections drop)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()


@contextlib.asynccontextmanager
async def tinyproxy(directory: Path) -> AsyncIterator[Tinyproxy]:
    """A started tinyproxy, stopped on exit; the test is skipped where it is not installed
    (``scripts/system-deps.sh`` installs it)."""
    if BINARY is None:
        pytest.skip("tinyproxy is not installed")
    proxy = Tinyproxy(directory)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()

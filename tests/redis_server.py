"""A real redis-server for tests: a free loopback port, a temp dir, stopped on exit."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _command(port: int, line: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
        sock.sendall(line)
        return sock.recv(65536)


class RedisServer:
    """``with RedisServer() as server: server.url``.

    No persistence unless ``appendonly``. ``cluster=True`` starts a one-node Redis Cluster that
    owns every slot, so a script or command whose keys span two slots fails with CROSSSLOT, as
    on a real cluster; a plain client still talks to it.
    """

    def __init__(self, *, appendonly: bool = False, cluster: bool = False) -> None:
        self.appendonly = appendonly
        self.cluster = cluster
        self.port = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if not os.path.exists(REDIS_SERVER):
            pytest.skip("redis-server is not installed (make test installs it as root)")
        self._dir = tempfile.TemporaryDirectory(prefix="gossamer-redis-")
        self.port = _free_port()
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self._dir.name,
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(Path(self._dir.name) / "redis.log"),
        ]  # fmt: skip
        if self.cluster:
            bus = str(_free_port())
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
            args += ["--cluster-port", bus]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_for(b"PING\r\n", b"+PONG")
        if self.cluster:
            _command(self.port, b"CLUSTER ADDSLOTSRANGE 0 16383\r\n")
            self._wait_for(b"CLUSTER INFO\r\n", b"cluster_state:ok")

    def _wait_for(self, line: bytes, answer: bytes, timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._proc.returncode}")
            try:
                if answer in _command(self.port, line):
                    return
            except OSError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"redis-server on port {self.port} did not answer {answer!r}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

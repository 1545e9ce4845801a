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
_SLOTS = 16384


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
    on a real cluster; a plain client still talks to it. ``slots`` narrows the node to a range
    of slots (it then waits for no cluster state: see :class:`RedisClusterServer`).
    ``password`` starts it with ``--requirepass`` (its ``url`` then carries the password).
    """

    def __init__(
        self,
        *,
        appendonly: bool = False,
        cluster: bool = False,
        slots: tuple[int, int] = (0, _SLOTS - 1),
        password: str | None = None,
    ) -> None:
        self.appendonly = appendonly
        self.password = password
        self.cluster = cluster
        self.slots = slots
        self.bus_port = 0
        self.port = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if not os.path.exists(REDIS_SERVER):
            pytest.skip("redis-server is not installed (make test installs it as root)")
        self._dir = tempfile.TemporaryDirectory(prefix="gossamer-redis-")
        self.port = _free_port()
        args = self._args()
        if self.cluster:
            self.bus_port = _free_port()
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
            args += ["--cluster-port", str(self.bus_port)]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_for(self._auth() + b"PING\r\n", b"+PONG")
        if self.cluster:
            low, high = self.slots
            _command(self.port, f"CLUSTER ADDSLOTSRANGE {low} {high}\r\n".encode())
            if self.slots == (0, _SLOTS - 1):
                self._wait_for(b"CLUSTER INFO\r\n", b"cluster_state:ok")

    def _args(self) -> list[str]:
        """The command line of a single (not cluster) server on ``port`` in its directory."""
        assert self._dir is not None
        return [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self._dir.name,
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(Path(self._dir.name) / "redis.log"),
            *(["--requirepass", self.password] if self.password else []),
        ]  # fmt: skip

    def _auth(self) -> bytes:
        return f"AUTH {self.password}\r\n".encode() if self.password else b""

    def halt(self) -> None:
        """Stop redis-server with SIGTERM (it writes its AOF out first, with ``appendonly``),
        keeping the port and data directory for :meth:`resume`."""
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

    def resume(self) -> None:
        """Start a halted (single, not cluster) server again on its port and directory."""
        assert self._proc is None and not self.cluster
        self._proc = subprocess.Popen(
            self._args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_for(self._auth() + b"PING\r\n", b"+PONG")

    def restart(self, down: float = 0.0) -> None:
        """:meth:`halt`, stay down ``down`` seconds, :meth:`resume` (this blocks: call it in a
        thread from a test whose event loop serves the crawl)."""
        self.halt()
        time.sleep(down)
        self.resume()

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


class RedisClusterServer:
    """``with RedisClusterServer() as cluster: cluster.url``: a 3-master Redis Cluster.

    Three cluster-mode redis-servers on free loopback ports, each owning a third of the 16384
    slots, joined with CLUSTER MEET; no replicas. ``url`` is one node's URL (what a user gives
    gossamer, as to ``redis-cli -c``), ``urls`` every node's.
    """

    def __init__(self, masters: int = 3) -> None:
        bounds = [_SLOTS * i // masters for i in range(masters + 1)]
        self.nodes = [
            RedisServer(cluster=True, slots=(bounds[i], bounds[i + 1] - 1)) for i in range(masters)
        ]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    def start(self) -> None:
        try:
            for node in self.nodes:
                node.start()
            first = self.nodes[0]
            for node in self.nodes[1:]:
                meet = f"CLUSTER MEET 127.0.0.1 {node.port} {node.bus_port}\r\n"
                answer = _command(first.port, meet.encode())
                if not answer.startswith(b"+OK"):
                    raise RuntimeError(f"CLUSTER MEET answered {answer!r}")
            known = b"cluster_known_nodes:%d" % len(self.nodes)
            for node in self.nodes:  # a new master waits 2 s before it says ok
                node._wait_for(b"CLUSTER INFO\r\n", b"cluster_state:ok", timeout=30.0)
                node._wait_for(b"CLUSTER INFO\r\n", known, timeout=30.0)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisClusterServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

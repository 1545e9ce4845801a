"""A real redis-server for tests: a free loopback port, a temp dir, stopped on exit."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import pytest
from tests.tls_certs import TlsFiles

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
_SLOTS = 16384


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _command(port: int, line: bytes, tls: TlsFiles | None = None) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as raw:
        if tls is None:
            raw.sendall(line)
            return _replies(raw, line)
        context = ssl.create_default_context(cafile=tls.ca)
        context.load_cert_chain(tls.client_cert, tls.client_key)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            sock.sendall(line)
            return _replies(sock, line)


def _replies(sock: socket.socket, line: bytes) -> bytes:
    """What the server answers to ``line``: after an ``AUTH``, the next reply too (each may
    come in a TLS record of its own)."""
    answer = sock.recv(65536)
    if line.startswith(b"AUTH ") and answer == b"+OK\r\n":
        answer += sock.recv(65536)
    return answer


class RedisServer:
    """``with RedisServer() as server: server.url``.

    No persistence unless ``appendonly``. ``cluster=True`` starts a one-node Redis Cluster that
    owns every slot, so a script or command whose keys span two slots fails with CROSSSLOT, as
    on a real cluster; a plain client still talks to it. ``slots`` narrows the node to a range
    of slots (it then waits for no cluster state: see :class:`RedisClusterServer`).
    ``password`` starts it with ``--requirepass`` (its ``url`` then carries the password).
    ``tls`` serves TLS only (``--port 0 --tls-port``, client certificates required; between
    cluster nodes too): ``url`` is then ``rediss://`` with the CA and client certificate as
    query parameters. ``config`` adds arguments, one word each
    (``("--user", "NAME", "on", ">PW", ...)``).
    """

    def __init__(
        self,
        *,
        appendonly: bool = False,
        cluster: bool = False,
        slots: tuple[int, int] = (0, _SLOTS - 1),
        password: str | None = None,
        tls: TlsFiles | None = None,
        config: tuple[str, ...] = (),
    ) -> None:
        self.appendonly = appendonly
        self.password = password
        self.tls = tls
        self.config = config
        self.cluster = cluster
        self.slots = slots
        self.bus_port = 0
        self.port = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.tls is None:
            return f"redis://{auth}127.0.0.1:{self.port}/0"
        return f"rediss://{auth}127.0.0.1:{self.port}/0?{tls_query(self.tls)}"

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
            line = f"CLUSTER ADDSLOTSRANGE {low} {high}\r\n".encode()
            _command(self.port, self._auth() + line, self.tls)
            if self.slots == (0, _SLOTS - 1):
                self._wait_for(self._auth() + b"CLUSTER INFO\r\n", b"cluster_state:ok")

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
            *(self._tls_args() if self.tls else []),
            *self.config,
        ]  # fmt: skip

    def _tls_args(self) -> list[str]:
        assert self.tls is not None
        return [
            "--port", "0",
            "--tls-port", str(self.port),
            "--tls-cert-file", str(self.tls.server_cert),
            "--tls-key-file", str(self.tls.server_key),
            "--tls-ca-cert-file", str(self.tls.ca),
            "--tls-auth-clients", "yes",
            *(["--tls-cluster", "yes", "--tls-replication", "yes"] if self.cluster else []),
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
                if answer in _command(self.port, line, self.tls):
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
    gossamer, as to ``redis-cli -c``), ``urls`` every node's. ``tls``, ``password`` and
    ``config`` are each node's (see :class:`RedisServer`).
    """

    def __init__(
        self,
        masters: int = 3,
        *,
        tls: TlsFiles | None = None,
        password: str | None = None,
        config: tuple[str, ...] = (),
    ) -> None:
        bounds = [_SLOTS * i // masters for i in range(masters + 1)]
        self.nodes = [
            RedisServer(
                cluster=True,
                slots=(bounds[i], bounds[i + 1] - 1),
                tls=tls,
                password=password,
                config=config,
            )
            for i in range(masters)
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
                answer = _command(first.port, first._auth() + meet.encode(), first.tls)
                if not answer.startswith(b"+OK"):
                    raise RuntimeError(f"CLUSTER MEET answered {answer!r}")
            known = b"cluster_known_nodes:%d" % len(self.nodes)
            for node in self.nodes:  # a new master waits 2 s before it says ok
                info = node._auth() + b"CLUSTER INFO\r\n"
                node._wait_for(info, b"cluster_state:ok", timeout=30.0)
                node._wait_for(info, known, timeout=30.0)
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


def tls_query(tls: TlsFiles, ca: Path | None = None) -> str:
    """The query string of a ``rediss://`` URL trusting ``ca`` (default: the test CA) and
    presenting the client certificate."""
    return (
        f"ssl_ca_certs={ca or tls.ca}&ssl_certfile={tls.client_cert}"
        f"&ssl_keyfile={tls.client_key}&ssl_cert_reqs=required"
    )

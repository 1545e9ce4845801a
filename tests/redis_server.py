"""A real redis-server for tests: a free loopback port, a temp dir, stopped on exit.

The start-up pieces every test Redis shares (:mod:`tests.redis_replicas` too): the command
line (:func:`server_args`), waiting for an answer (:func:`wait_for_answer`), stopping
(:func:`stop_process`) and ``with`` (:class:`StartStop`).
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import AnyStr, Self
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


def server_args(port: int, home: Path, *, appendonly: bool, loglevel: str) -> list[str]:
    """The command line of a redis-server on loopback ``port`` working in ``home``, logging
    to ``home/redis.log``, saving no RDB file."""
    return [
        REDIS_SERVER,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(home),
        "--save", "",
        "--appendonly", "yes" if appendonly else "no",
        "--daemonize", "no",
        "--loglevel", loglevel,
        "--logfile", str(home / "redis.log"),
    ]  # fmt: skip


def wait_for_answer(
    proc: subprocess.Popen[bytes],
    ask: Callable[[], AnyStr],
    answer: AnyStr,
    timeout: float,
    name: str,
) -> None:
    """Until what ``ask`` reads from the server ``proc`` (called ``name`` in errors) holds
    ``answer``; raises once ``proc`` has exited or ``timeout`` seconds have passed."""
    end = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            if answer in ask():
                return
        except OSError:
            pass
        if time.monotonic() > end:
            raise TimeoutError(f"{name} did not answer {answer!r}")
        time.sleep(0.02)


def stop_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM ``proc`` (nothing if it has exited), SIGKILL if it is still there after
    ``grace`` seconds; reaped either way."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class StartStop:
    """``with`` for a test server: ``start()`` on entry, ``stop()`` on exit."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _replies(sock: socket.socket, line: bytes) -> bytes:
    """What the server answers to ``line``: after an ``AUTH``, the next reply too (each may
    come in a TLS record of its own)."""
    answer = sock.recv(65536)
    if line.startswith(b"AUTH ") and answer == b"+OK\r\n":
        answer += sock.recv(65536)
    return answer


class RedisServer(StartStop):
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
        home = Path(self._dir.name)
        return [
            *server_args(self.port, home, appendonly=self.appendonly, loglevel="warning"),
            *(["--requirepass", self.password] if self.password else []),
            *(self._tls_args() if self.tls else []),
            *self.config,
        ]

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
        assert self._proc is not None
        name = f"redis-server on port {self.port}"
        wait_for_answer(
            self._proc, lambda: _command(self.port, line, self.tls), answer, timeout, name
        )

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


class RedisClusterServer(StartStop):
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


def tls_query(tls: TlsFiles, ca: Path | None = None) -> str:
    """The query string of a ``rediss://`` URL trusting ``ca`` (default: the test CA) and
    presenting the client certificate."""
    return (
        f"ssl_ca_certs={ca or tls.ca}&ssl_certfile={tls.client_cert}"
        f"&ssl_keyfile={tls.client_key}&ssl_cert_reqs=required"
    )

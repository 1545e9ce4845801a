"""A Redis Cluster with replicas for failover tests and benchmarks: 3 masters, 1 replica each.

Six cluster-mode redis-servers on free loopback ports, joined by ``redis-cli --cluster create
--cluster-replicas 1``, with a short ``cluster-node-timeout`` so a replica is promoted about
two seconds after its master dies. Each node logs at ``notice`` level to ``redis.log`` in its
directory (a promotion shows there).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.redis_server import StartStop, server_args, stop_process, wait_for_answer

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"


def _free_ports(count: int) -> list[int]:
    """``count`` free loopback ports whose cluster bus port (+10000) is free too."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _ask(port: int, *words: str) -> str:
    """One command to the node on ``port`` over a raw socket (no process to spawn: a loaded
    machine answers in milliseconds); its simple or bulk reply as text, '' on no answer."""
    request = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.sendall(request.encode())
            reply = sock.recv(65536)
            if reply.startswith(b"$"):
                head, _, body = reply.partition(b"\r\n")
                size = int(head[1:])
                while len(body) < size + 2:
                    more = sock.recv(65536)
                    if not more:
                        break
                    body += more
                return body[:size].decode()
            return reply.decode()
    except (OSError, ValueError):
        return ""


class ReplicatedCluster(StartStop):
    """``with ReplicatedCluster() as cluster: cluster.url``: 3 masters with a replica each."""

    def __init__(self, masters: int = 3, node_timeout_ms: int = 1000, aof: bool = True) -> None:
        self.masters = masters
        self.node_timeout_ms = node_timeout_ms
        self.aof = aof
        self.ports: list[int] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        """The first live node's URL (what a user gives gossamer)."""
        port = next(p for p in self.ports if self.procs[p].poll() is None)
        return f"redis://127.0.0.1:{port}/0"

    def start(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="gossamer-replicas-")
        try:
            self._launch()
            nodes = [f"127.0.0.1:{port}" for port in self.ports]
            subprocess.run(
                [REDIS_CLI, "--cluster", "create", *nodes, "--cluster-replicas", "1",
                 "--cluster-yes"],
                capture_output=True, timeout=30, check=True,
            )  # fmt: skip
            for port in self.ports:
                self._wait(port, "CLUSTER INFO", "cluster_state:ok")
            for port in self.replicas():
                self._wait(port, "INFO replication", "master_link_status:up")
            for port in self.master_ports():
                # the master's own view: a replica is online (ROLE lists it) only at its first
                # acknowledgement after the sync, up to a second after the replica's link is up
                self._wait(port, "INFO replication", "state=online")
        except BaseException:
            self.stop()
            raise

    def _launch(self, tries: int = 3) -> None:
        """Start every node on free ports, each answering. A node that exits at once lost one
        of its ports (or its bus port) to another test's connection between their choice and
        its bind: all start again on others."""
        for attempt in range(tries):
            self.ports = _free_ports(self.masters * 2)
            for port in self.ports:
                self._spawn(port)
            try:
                for port in self.ports:
                    self._wait(port, "PING", "PONG")
                return
            except RuntimeError:  # a node exited
                if attempt == tries - 1:
                    raise
                self._end_nodes()

    def _end_nodes(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()  # all at once: each is waited for below
        for proc in self.procs.values():
            stop_process(proc)
        self.procs = {}

    def _spawn(self, port: int) -> None:
        assert self._dir is not None
        home = Path(self._dir.name) / str(port)
        home.mkdir(exist_ok=True)
        args = [
            *server_args(port, home, appendonly=self.aof, loglevel="notice"),
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
        ]  # fmt: skip
        self.procs[port] = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _wait(self, port: int, command: str, answer: str, timeout: float = 30.0) -> None:
        ask = functools.partial(_ask, port, *command.split())
        wait_for_answer(self.procs[port], ask, answer, timeout, f"node {port} ({command})")

    def role(self, port: int) -> str:
        """``master`` or ``slave`` (Redis' word), '' for a node that does not answer."""
        for line in _ask(port, "INFO", "replication").splitlines():
            if line.startswith("role:"):
                return line.split(":", 1)[1].strip()
        return ""

    def replicas(self) -> list[int]:
        """The ports of the live replicas."""
        return [p for p in self.live() if self.role(p) == "slave"]

    def live(self) -> list[int]:
        """The ports of the nodes still running."""
        return [p for p in self.ports if self.procs[p].poll() is None]

    def master_ports(self) -> list[int]:
        """The ports of the live masters."""
        return [p for p in self.live() if self.role(p) == "master"]

    def commands(self, port: int) -> int:
        """Commands the node on ``port`` ran since it started."""
        for line in _ask(port, "INFO", "stats").splitlines():
            if line.startswith("total_commands_processed:"):
                return int(line.split(":", 1)[1])
        return 0

    def busiest_master(self) -> int:
        """The port of the live master that ran the most commands."""
        return max(self.master_ports(), key=self.commands)

    def replica_of(self, master: int) -> int:
        """The port of ``master``'s replica."""
        for port in self.replicas():
            for line in _ask(port, "INFO", "replication").splitlines():
                if line.strip() == f"master_port:{master}":
                    return port
        raise LookupError(f"no replica of {master}")

    def kill(self, port: int) -> None:
        """kill -9 the node on ``port``."""
        proc = self.procs[port]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def wait_promoted(self, port: int, timeout: float = 20.0) -> float:
        """Seconds until the replica on ``port`` calls itself a master and the cluster is ok."""
        started = time.monotonic()
        self._wait(port, "INFO replication", "role:master", timeout)
        self._wait(port, "CLUSTER INFO", "cluster_state:ok", timeout)
        return time.monotonic() - started

    def stop(self) -> None:
        self._end_nodes()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

"""Child processes of the cluster benchmark: a throwaway redis-server, and reaping with CPU.

:class:`LocalRedis` starts redis-server the way ``tests/redis_server.py`` does (loopback, a free
port, a temp dir, no persistence; benchmarks do not import from tests/) and notes the server's
CPU seconds when it stops. :func:`reap` waits for a child (bounded, then SIGKILL to its process
group) and returns its exit status and CPU seconds from ``os.wait4``;
:func:`machine_busy_seconds` tells how busy the whole machine was, to spot other load.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_TIMEOUT = 10.0


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (it was started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def reap(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, float]:
    """Wait at most ``timeout`` s for ``proc`` to exit (then SIGKILL its group and wait).

    Returns its exit status and its user + system CPU seconds. ``proc`` must not have been
    waited for: ``os.wait4`` both reaps it and reads its resource usage.
    """
    if proc.returncode is not None:  # already reaped (by poll): its CPU time is lost
        return proc.returncode, 0.0
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            kill_group(proc)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` has exited, without reaping it (so :func:`reap` still reads its CPU)."""
    if proc.returncode is not None:
        return True
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    return os.waitid(os.P_PID, proc.pid, flags) is not None


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores spent busy (not idle, not iowait) since boot; None when unknown."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    name, *ticks = first.split()
    if name != "cpu":
        return None
    values = [int(t) for t in ticks[:8]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ask(port: int, command: bytes) -> bytes:
    """One inline command's reply (a short one: read in one go)."""
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
        sock.sendall(command + b"\r\n")
        return sock.recv(65536)


def _ping(port: int) -> bool:
    try:
        return _ask(port, b"PING").startswith(b"+PONG")
    except OSError:
        return False


class LocalRedis:
    """``with LocalRedis() as redis: redis.url``; ``redis.cpu`` is set once it has stopped."""

    def __init__(self) -> None:
        self.port = 0
        self.cpu: float | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait (at most ``START_TIMEOUT`` s) until it answers PING."""
        if not Path(REDIS_SERVER).exists():
            raise RuntimeError("redis-server is not installed (bash scripts/system-deps.sh)")
        self._dir = tempfile.TemporaryDirectory(prefix="gossamer-bench-redis-")
        self.port = free_port()
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self._dir.name,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(Path(self._dir.name) / "redis.log"),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def used_memory(self) -> int | None:
        """Bytes the server holds (``INFO memory``'s ``used_memory``), None when it cannot say."""
        try:
            reply = _ask(self.port, b"INFO memory")
        except OSError:
            return None
        for line in reply.decode("ascii", "replace").splitlines():
            name, _, value = line.partition(":")
            if name == "used_memory":
                return int(value)
        return None

    def stop(self) -> None:
        """SIGTERM the server (SIGKILL after 10 s), note its CPU seconds, remove its dir."""
        if self._proc is not None:
            self._proc.terminate()
            _, self.cpu = reap(self._proc, 10.0)
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> LocalRedis:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

"""Serve a generated web with nginx on loopback: one ``server`` per host address, one port.

The configuration, pid file, logs and temp paths all live in a private directory; nginx runs
in the foreground (``daemon off``) as a child of the benchmark and is stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

NGINX = Path("/usr/sbin/nginx")
_TEMPS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


class NginxError(RuntimeError):
    """nginx is missing, refused its configuration or did not start."""


def render_config(
    prefix: Path, www: Path, ips: Sequence[str], port: int, gzip: bool = False
) -> str:
    """The nginx.conf text serving ``www/<ip>/`` on ``<ip>:<port>`` for every ip; with
    ``gzip``, pages compressed for clients that accept it, as most sites serve them."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join(f"    {name}_temp_path {prefix / 'tmp' / name};\n" for name in _TEMPS)
    servers = "".join(
        f"    server {{ listen {ip}:{port}; server_name {ip}; root {www / ip}; }}\n" for ip in ips
    )
    return (
        f"{user}daemon off;\nworker_processes 1;\nworker_rlimit_nofile 16384;\n"
        f"pid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'} warn;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        "    access_log off;\n    log_not_found off;\n"
        "    sendfile on;\n    tcp_nopush on;\n    tcp_nodelay on;\n"
        # Files are read in nginx's thread pool: this machine keeps little page cache, and a
        # big web read from disk would otherwise stall the one worker on every file.
        "    aio threads;\n"
        "    keepalive_requests 1000000;\n    keepalive_timeout 120s;\n"
        "    open_file_cache max=4000 inactive=120s;\n"
        "    types { text/html html; text/plain txt; }\n"
        "    default_type application/octet-stream;\n    charset utf-8;\n"
        "    index index.html;\n"
        + ("    gzip on;\n    gzip_types text/plain;\n" if gzip else "")
        + f"{temps}{servers}}}\n"
    )


def _listening(ips: Sequence[str], port: int) -> bool:
    for ip in ips:
        try:
            socket.create_connection((ip, port), timeout=0.2).close()
        except OSError:
            return False
    return True


def port_free(ips: Sequence[str], port: int) -> bool:
    """Whether nothing listens on ``port`` at any of the addresses."""
    for ip in ips:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((ip, port))
            except OSError:
                return False
    return True


@contextlib.contextmanager
def serve(
    prefix: Path,
    www: Path,
    ips: Sequence[str],
    port: int,
    cpu: int | None = None,
    gzip: bool = False,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run nginx (pinned to ``cpu`` when given; ``gzip`` as `render_config`) until the block
    ends."""
    if not NGINX.exists():
        raise NginxError(f"{NGINX} is missing: apt-get install -y nginx-light")
    if not port_free(ips, port):
        raise NginxError(f"port {port} is taken on one of {ips[0]}..{ips[-1]}; pass --port")
    for name in _TEMPS:
        (prefix / "tmp" / name).mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(render_config(prefix, www, ips, port, gzip), encoding="utf-8")
    command = [str(NGINX), "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")]
    check = subprocess.run([*command, "-t", "-q"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise NginxError(f"nginx rejected {conf}:\n{check.stderr}")
    if cpu is not None:
        command = ["taskset", "-c", str(cpu), *command]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    try:
        _wait_ready(process, ips, port)
        yield process
    finally:
        _stop(process)


def cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """User + system CPU seconds of nginx so far: the master and its workers (``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    pids = [process.pid]
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text()
        pids += [int(pid) for pid in children.split()]
    except OSError:
        return 0.0
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def _wait_ready(process: subprocess.Popen[bytes], ips: Sequence[str], port: int) -> None:
    deadline = time.monotonic() + 10
    while not _listening(ips, port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise NginxError("nginx did not start listening (see error.log in its directory)")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

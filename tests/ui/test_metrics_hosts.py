"""The metrics endpoints answer only the ``Host`` names they can be reached by: real HTTP
requests to a crawl's exporter and to ``gossamer cluster metrics`` (a real redis-server),
with the ``Host`` a DNS-rebinding page would send, those Prometheus, a kubelet probe and KEDA
send, and none."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest
from tests.cluster.harness import start
from tests.redis_server import RedisServer

from gossamer.cli import main
from gossamer.metrics.exporter import MetricsServer
from gossamer.metrics.hostcheck import HostCheck
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

REFUSED = ["evil.example:{port}", "evil.example", "127.0.0.1.evil.example:{port}", "a b", "",
           "[127.0.0.1]:{port}", "[fe80::1%eth0]:{port}", "1.2.3.4.5:{port}"]  # fmt: skip
"""Names a page can be served under, and what no URL's host is (a bracketed IPv4 address, a
zone id, five numbers)."""
ANSWERED = ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.:{port}", "[::1]:{port}",
            "10.1.2.3:{port}", "127.0.0.1:9200", socket.gethostname() + ":{port}",
            "0x7f.1:{port}", "127.1:{port}", "2130706433", "[::ffff:127.0.0.1]:{port}"]  # fmt: skip
"""Addresses (in every form a URL's host reads as one: no page is served under them), and
names of this machine."""


async def status_of(port: int, path: str, host: str | None) -> int:
    """The status of a GET of ``path`` with this ``Host`` header (None: none sent, as an
    HTTP/1.0 client does)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = f"GET {path} HTTP/1.0\r\n" if host is None else f"GET {path} HTTP/1.1\r\n"
        head += "" if host is None else f"Host: {host}\r\n"
        writer.write((head + "Connection: close\r\n\r\n").encode())
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        return int(status_line.split()[1])
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_crawl_s_exporter_refuses_other_host_names() -> None:
    server = MetricsServer("local", "w")
    await server.start("127.0.0.1", 0, ["prometheus-target.lan"])
    assert server.port
    try:
        for path in ("/metrics", "/healthz"):
            for host in REFUSED:
                assert await status_of(server.port, path, host.format(port=server.port)) == 400
            for host in [*ANSWERED, "prometheus-target.lan:{port}"]:
                status = await status_of(server.port, path, host.format(port=server.port))
                assert status == 200, (path, host)
            assert await status_of(server.port, path, None) == 200
    finally:
        await server.close()


async def test_the_job_exporter_checks_the_host_of_queued_metrics_and_healthz(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "exporter.log"
    exporter = await start(log, "cluster", "metrics", "--redis", redis_server.url, "--job", "j",
                           "--metrics-port", str(port),
                           "--metrics-hosts", "gossamer-metrics.gossamer.svc")  # fmt: skip
    try:
        for _ in range(200):  # until it listens (bounded: 20 s)
            if b"serving job" in log.read_bytes():
                break
            await asyncio.sleep(0.1)
        for path in ("/queued", "/metrics", "/healthz"):
            assert await status_of(port, path, f"rebind.example:{port}") == 400, path
            assert await status_of(port, path, f"10.0.3.7:{port}") == 200, path  # a pod's IP
            keda = f"gossamer-metrics.gossamer.svc:{port}"
            assert await status_of(port, path, keda) == 200, path
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/queued") as response,
        ):
            assert await response.json() == {"job": "j", "queued": 0, "claimed": 0}
    finally:
        exporter.terminate()
        await asyncio.wait_for(exporter.wait(), 10)


def test_host_names_are_settings_and_a_star_answers_any() -> None:
    settings = load_settings({}, env={"GOSSAMER_METRICS_HOSTS": "a.svc, b.svc"})
    assert settings.metrics_hosts == ["a.svc", "b.svc"]
    assert HostCheck.for_bind("0.0.0.0", ["*"]).allows("anything.example:1")
    check = HostCheck.for_bind("crawler.lan", [])
    assert check.allows("crawler.lan:9100") and not check.allows("other.lan:9100")


def test_a_bad_host_name_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["crawl", "http://127.0.0.1:9/", "--out", str(tmp_path), "--metrics-port", "9"]
    assert main([*args, "--metrics-hosts", "ok.svc,not a name"]) == 2
    assert "invalid setting 'metrics_hosts'" in capsys.readouterr().err
    worker = ["cluster", "metrics", "--redis", "redis://127.0.0.1:9/0", "--metrics-port", "9"]
    assert main([*worker, "--metrics-hosts", "x/y"]) == 2
    assert "invalid setting 'metrics_hosts'" in capsys.readouterr().err

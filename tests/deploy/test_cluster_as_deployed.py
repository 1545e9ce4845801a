"""The Kubernetes manifests' cluster, run on one machine: redis-server with the StatefulSet's
arguments (password, AOF), a PostgreSQL that wants a password, two workers, the exporter, the
UI and the submit started with exactly their containers' arguments and environment (Secret
and ConfigMap values resolved, $(VAR)s expanded as Kubernetes does; only the Redis URL, the
store's address, the ports and the output paths replaced for loopback), no password in any
process's command line, the workers' /healthz and /metrics answering, the UI's /healthz open
and the rest behind its token, one worker stopped with SIGTERM as Kubernetes stops a pod, and
the crawl completing with nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import psutil  # type: ignore[import-untyped]
import pytest
from redis.asyncio import Redis
from redis.exceptions import BusyLoadingError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.cluster.harness import (
    FAST,
    GOSSAMER,
    STARTED,
    WEB_ARGS,
    cluster_wait,
    read_records,
    reap_started,
    records_so_far,
)
from tests.deploy.kustomize import Manifest, build
from tests.pg_server import PostgresServer, table_rows
from tests.redis_server import REDIS_SERVER

from gossamer.testweb import TestWebServer, generate

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
JOB_EXTRA = [*FAST, *WEB_ARGS, "--partitions", "64", "--per-host", "1", "--delay", "0.3"]
"""Settings the test adds to the submit's arguments: the test web's hosts on loopback, and a
pace slow enough that the SIGTERM lands mid-crawl."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def container(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    (found,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    spec = found["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    result: Manifest = spec["containers"][0]
    return result


def environment(spec: Manifest, config: dict[str, str], secret: dict[str, str]) -> dict[str, str]:
    """A container's environment as the kubelet builds it: ConfigMap and Secret keys, and
    $(VAR) references to variables defined before."""
    env: dict[str, str] = {}
    for item in spec.get("env", []):
        ref = item.get("valueFrom", {})
        if "configMapKeyRef" in ref:
            value = config[ref["configMapKeyRef"]["key"]]
        elif "secretKeyRef" in ref:
            value = secret[ref["secretKeyRef"]["key"]]
        else:
            value = expand(item["value"], env)
        env[item["name"]] = value
    return env


def expand(text: str, env: dict[str, str]) -> str:
    return VAR.sub(lambda m: env.get(m.group(1), m.group(0)), text)


def command_line(spec: Manifest, env: dict[str, str], **replace: str) -> list[str]:
    """The container's arguments with $(VAR)s expanded, the value after each flag named in
    ``replace`` (``metrics_port`` for --metrics-port) replaced."""
    args = [expand(arg, env) for arg in spec["args"]]
    for flag, value in replace.items():
        index = args.index("--" + flag.replace("_", "-"))
        args[index + 1] = value
    return args


class Redis_:
    """redis-server started with the StatefulSet's arguments, on a loopback port."""

    def __init__(self, args: list[str], data: Path) -> None:
        data.mkdir()
        self.port = _free_port()
        args = [*args]
        args[args.index("--dir") + 1] = str(data)
        self.args = [REDIS_SERVER, *args, "--port", str(self.port), "--bind", "127.0.0.1"]
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Redis_:
        if not Path(REDIS_SERVER).exists():
            pytest.skip("redis-server is not installed (make test installs it as root)")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(10)


PG_PASSWORD = "Pg-" + secrets.token_hex(12)


@pytest.fixture(autouse=True)
async def no_process_outlives_its_test() -> AsyncIterator[None]:
    """The processes started here are reaped in the test's own event loop, and leave
    ``STARTED`` empty: a later cluster test never waits for one of a loop closed since."""
    yield
    await reap_started()


@pytest.fixture
def pg() -> Iterator[PostgresServer]:
    with PostgresServer(password=PG_PASSWORD) as server:
        yield server


def cmdline(pid: int) -> str:
    """What ``ps`` shows of a process: its /proc/PID/cmdline."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def assert_no_password(
    manifests: list[Manifest], config: dict[str, str], secret: dict[str, str]
) -> None:
    """No argument of a gossamer container holds or expands to one of the Secret's values."""
    for manifest in manifests:
        spec = (manifest.get("spec", {}).get("template") or {}).get("spec")
        for found in (spec or {}).get("containers", []):
            if found["image"].startswith("redis:"):
                continue  # --requirepass: redis-server overwrites its title (checked below)
            env = environment(found, config, secret)
            args = [expand(arg, env) for arg in found.get("args", [])]
            assert not [a for a in args if any(p in a for p in secret.values())], found["name"]


async def _get(url: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=3)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
        return response.status, await response.text()


def _text(log: Path) -> str:
    return log.read_text(errors="replace")


async def _until_healthy(url: str, proc: asyncio.subprocess.Process, log: Path) -> None:
    """Until ``url`` answers 200 and ``proc`` is what listens on its port (a free port
    picked here can be taken by another test's server meanwhile: its answer is not ours)."""
    port = int(url.split("//", 1)[1].split("/", 1)[0].rpartition(":")[2])
    for _ in range(300):
        assert proc.returncode is None, _text(log)
        try:
            status, _ = await _get(url)
        except (aiohttp.ClientError, TimeoutError):
            status = 0
        if status == 200:
            assert _listens(proc.pid, port), f"another process answers on port {port}"
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url} not healthy: {_text(log)}")


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` (or a child of it) listens on TCP ``port``."""
    process = psutil.Process(pid)
    for each in (process, *process.children(recursive=True)):
        with contextlib.suppress(psutil.Error):
            for conn in each.net_connections("tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port:
                    return True
    return False


async def _start(log: Path, args: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            *GOSSAMER, *args, stdout=out, stderr=out, env={**os.environ, **env}
        )
    STARTED.append(proc)
    return proc


async def _redis_ready(url: str) -> None:
    client = Redis.from_url(url)
    try:
        for _ in range(200):
            with contextlib.suppress(RedisConnectionError, BusyLoadingError):
                if await client.ping():
                    return
            await asyncio.sleep(0.05)
        raise AssertionError("redis-server did not start")
    finally:
        await client.aclose()


async def test_the_manifests_cluster_crawls_and_survives_a_sigterm(
    tmp_path: Path, pg: PostgresServer
) -> None:
    manifests = build(K8S / "base")
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    secret = {
        "redis-password": secrets.token_hex(16),
        "store-password": PG_PASSWORD,
        "ui-token": secrets.token_hex(16),
    }
    passwords = [secret["redis-password"], PG_PASSWORD, secret["ui-token"]]
    assert_no_password(manifests, config_map["data"], secret)
    redis_spec = container(manifests, "StatefulSet", "gossamer-redis")
    redis_env = environment(redis_spec, config_map["data"], secret)
    redis_args = command_line(redis_spec, redis_env)
    assert "--requirepass" in redis_args and "--appendonly" in redis_args

    web = generate(3, hosts=6, pages_per_host=20, specials=())
    with Redis_(redis_args, tmp_path / "redis") as redis:
        config = {
            **config_map["data"],
            "GOSSAMER_REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
            "GOSSAMER_STORE": f"postgres://postgres@127.0.0.1:{pg.port}/postgres",
        }
        redis_url = f"redis://:{secret['redis-password']}@127.0.0.1:{redis.port}/0"
        async with TestWebServer(web, flaky_failures=0) as server:
            seed = server.url(0)
            config["GOSSAMER_SEED"] = seed
            worker_spec = container(manifests, "Deployment", "gossamer-worker")
            env = environment(worker_spec, config, secret)
            assert env["GOSSAMER_REDIS_PASSWORD"] == secret["redis-password"]
            assert env["PGPASSWORD"] == PG_PASSWORD and "GOSSAMER_STORE" not in env
            await _redis_ready(redis_url)
            assert redis.proc is not None
            assert secret["redis-password"] not in cmdline(redis.proc.pid)
            # AOF on, and the password required: an unauthenticated client is refused.
            bare = Redis(port=redis.port)
            with pytest.raises(RedisError, match=r"(?i)auth"):
                await bare.ping()
            await bare.aclose()
            client = Redis.from_url(redis_url)
            assert (await client.config_get("appendonly"))["appendonly"] == "yes"
            await client.aclose()

            ports = [_free_port() for _ in range(2)]
            workers = []
            for i, port in enumerate(ports):
                args = command_line(
                    worker_spec, env, metrics_port=str(port), metrics_bind="127.0.0.1",
                    out=str(tmp_path / f"w{i}"),
                )  # fmt: skip
                workers.append(await _start(tmp_path / f"w{i}.log", args, env))
            for i, port in enumerate(ports):
                url = f"http://127.0.0.1:{port}/healthz"
                await _until_healthy(url, workers[i], tmp_path / f"w{i}.log")

            exporter_spec = container(manifests, "Deployment", "gossamer-metrics")
            exporter_env = environment(exporter_spec, config, secret)
            exporter_port = _free_port()
            exporter_args = command_line(
                exporter_spec, exporter_env, metrics_port=str(exporter_port),
                metrics_bind="127.0.0.1",
            )  # fmt: skip
            exporter = await _start(tmp_path / "exporter.log", exporter_args, exporter_env)
            exporter_url = f"http://127.0.0.1:{exporter_port}"
            await _until_healthy(exporter_url + "/healthz", exporter, tmp_path / "exporter.log")
            ui, ui_url = await _start_ui(manifests, config, secret, tmp_path)
            for proc in (*workers, exporter, ui):
                shown = cmdline(proc.pid)
                assert "gossamer" in shown and not [p for p in passwords if p in shown], shown

            submit_spec = container(manifests, "Job", "gossamer-submit")
            submit_env = environment(submit_spec, config, secret)
            submit_args = command_line(submit_spec, submit_env)
            assert submit_args[-1] == seed
            submit = await _start(tmp_path / "submit.log", [*submit_args, *JOB_EXTRA], submit_env)
            assert await asyncio.wait_for(submit.wait(), 30) == 0, (
                tmp_path / "submit.log"
            ).read_text()
            assert secret["redis-password"] not in (tmp_path / "submit.log").read_text()

            victim = await _mid_crawl(tmp_path, exporter_url)
            status, text = await _get(f"http://127.0.0.1:{ports[victim]}/metrics")
            assert status == 200 and "gossamer_pages_total" in text, text[:500]
            # Kubernetes stops a pod with SIGTERM (tini passes it on), then waits up to
            # terminationGracePeriodSeconds: the worker hands its partitions back and exits 0.
            workers[victim].send_signal(15)
            log = tmp_path / f"w{victim}.log"
            assert await asyncio.wait_for(workers[victim].wait(), 30) == 0, log.read_text()
            survivor = workers[1 - victim]
            assert survivor.returncode is None, (tmp_path / f"w{1 - victim}.log").read_text()

            await _ui_shows_the_job(ui_url, secret["ui-token"], config["GOSSAMER_JOB"])
            await cluster_wait(redis_url, limit=60)
            assert await asyncio.wait_for(survivor.wait(), 30) == 0
            queued = json.loads((await _get(exporter_url + "/queued"))[1])
            assert queued["queued"] == 0 and queued["claimed"] == 0, queued
            exporter.send_signal(15)
            assert await asyncio.wait_for(exporter.wait(), 15) == 0
            ui.send_signal(15)
            assert await asyncio.wait_for(ui.wait(), 15) == 0
            reachable = web.reachable([seed], port=server.port)

    per_worker = [{r["url"] for r in read_records(tmp_path / f"w{i}")} for i in range(2)]
    assert all(per_worker), "a worker crawled nothing"
    crawled = per_worker[0] | per_worker[1]
    assert reachable <= crawled, sorted(reachable - crawled)[:5]
    # A SIGTERM leaves nothing in flight: no URL is crawled twice.
    assert not per_worker[0] & per_worker[1], sorted(per_worker[0] & per_worker[1])[:5]
    # Every record reached the page store the ConfigMap's DSN names, PGPASSWORD its password.
    rows = await table_rows(pg.url, "pages")
    assert {row["url"] for row in rows} == crawled


async def _start_ui(
    manifests: list[Manifest], config: dict[str, str], secret: dict[str, str], tmp_path: Path
) -> tuple[asyncio.subprocess.Process, str]:
    """The UI as its Deployment runs it (on a loopback port), once its /healthz answers 200
    without the token: the probes' path. Anything else wants the token."""
    spec = container(manifests, "Deployment", "gossamer-ui")
    env = environment(spec, config, secret)
    assert env["GOSSAMER_UI_TOKEN"] == secret["ui-token"]
    probe = spec["readinessProbe"]["httpGet"]
    assert spec["livenessProbe"]["httpGet"] == probe and probe["port"] == "http"
    for attempt in range(3):  # a free port may be taken before the UI binds it: another one
        port = _free_port()
        args = command_line(spec, env, bind=f"127.0.0.1:{port}", out=str(tmp_path / "ui-out"))
        proc = await _start(tmp_path / "ui.log", args, env)
        url = f"http://127.0.0.1:{port}"
        try:
            await _until_healthy(url + probe["path"], proc, tmp_path / "ui.log")
            break
        except AssertionError:
            if attempt == 2:
                raise
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    assert (await _get(url + "/"))[0] == 401
    assert (await _get(url + "/api/overview"))[0] == 401
    return proc, url


async def _ui_shows_the_job(url: str, token: str, job: str) -> None:
    """The UI reads the job from Redis: its password came from GOSSAMER_REDIS_PASSWORD."""
    headers = {"Authorization": f"Bearer {token}"}
    timeout = aiohttp.ClientTimeout(total=5)
    async with (
        aiohttp.ClientSession(timeout=timeout, headers=headers) as session,
        session.get(url + "/api/overview") as response,
    ):
        assert response.status == 200
        body = await response.json()
    assert body["redis_error"] is None, body
    assert job in [entry["job"] for entry in body["jobs"]], body


async def _mid_crawl(tmp_path: Path, exporter: str, limit: float = 30) -> int:
    """The first worker with a few records, once the exporter counts the job's queue."""
    deadline = time.monotonic() + limit
    seen_queue = False
    while True:
        if not seen_queue:
            status, text = await _get(exporter + "/metrics")
            seen_queue = status == 200 and _gauge(text, "gossamer_job_queued_urls") is not None
        for i in range(2):
            if seen_queue and records_so_far(tmp_path / f"w{i}") >= 3:
                return i
        assert time.monotonic() < deadline, "no worker fetched anything"
        await asyncio.sleep(0.05)


def _gauge(text: str, name: str) -> Any:
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None

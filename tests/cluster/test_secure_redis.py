"""Cluster jobs over a secured Redis: requirepass with the password from a file or the
environment, an ACL user with only the rules of docs/security.md, TLS with client certificates,
and a Redis Cluster over TLS. Real redis-servers on loopback; the workers are subprocesses.

Nothing a command prints, no file a worker writes and not the job stored in Redis holds a
password; a wrong password, an unknown user and an untrusted server certificate are one line
and exit status 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from redis.asyncio import Redis
from tests.cluster.acl import CLUSTER_ACL, GOSSAMER_ACL, acl_user
from tests.cluster.harness import FAST, GOSSAMER, WEB_ARGS, read_records, small_web
from tests.redis_server import RedisClusterServer, RedisServer, tls_query
from tests.tls_certs import TlsFiles

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import job_keys
from gossamer.cluster.jobs import open_control
from gossamer.cluster.notices import Notices
from gossamer.cluster.redisurl import PASSWORD_ENV, resolve_redis_url
from gossamer.cluster.resilient import install_guard
from gossamer.settings import SettingsError
from gossamer.testweb import TestWebServer

ADMIN = "Adm1n-s3cret-Qw"
PASSWORD = "Cr@wl/s3cret:9%"
"""The crawler's password: characters a URL must escape."""
WRONG = "Wr0ng-s3cret-Zx"
SECRETS = (ADMIN, PASSWORD, WRONG)
PAGES = 4
LIMIT = 50
"""Seconds a command may run before it is killed (its output then goes in the failure)."""


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


def _files_clean(*folders: Path) -> None:
    """No secret in any file the workers wrote (records, stats.json, crawl.db, logs)."""
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not any(s.encode() in data for s in SECRETS), path


async def _gossamer(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``gossamer *args`` to its end; its exit code and its stdout and stderr together."""
    environ = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV}
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**environ, **(env or {})},
    )
    communicate = asyncio.ensure_future(proc.communicate())
    try:
        out, _ = await asyncio.wait_for(asyncio.shield(communicate), LIMIT)
    except TimeoutError:
        said = await _last_words(proc, communicate)
        raise TimeoutError(f"gossamer {' '.join(args)} still ran after {LIMIT}s:\n{said}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def _last_words(
    proc: asyncio.subprocess.Process, communicate: asyncio.Future[tuple[bytes, bytes]]
) -> str:
    """What a command that ran too long printed, its asyncio tasks last (a worker prints
    them on SIGUSR1), once it is killed."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGUSR1)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(communicate), 2)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        out, _ = await asyncio.wait_for(communicate, 10)
    except TimeoutError:  # a child of its own still holds the pipe
        return "(its output could not be read)"
    return out.decode(errors="replace")


async def _crawl_job(
    tmp_path: Path,
    url: str,
    *,
    env: dict[str, str] | None = None,
    password_file: Path | None = None,
    workers: int = 2,
    extra: tuple[str, ...] = (),
) -> str:
    """Submit a job of ``PAGES`` pages and run ``workers`` workers to its end; returns every
    command's output. The submit and half the workers take the password from ``env``, the
    other workers from ``password_file`` (when given)."""
    by_file = ("--redis-password-file", str(password_file)) if password_file else ()
    async with TestWebServer(small_web(hosts=2, pages_per_host=PAGES), flaky_failures=0) as web:
        job = [web.url(0), *FAST, *WEB_ARGS[:-1], "--partitions", "8", *extra]
        code, said = await _gossamer("cluster", "submit", "--redis", url, *job, env=env)
        assert code == 0, said
        runs = [
            _gossamer(
                *("cluster", "worker", "--redis", url, "--name", f"w{i}"),
                *("--out", str(tmp_path / f"w{i}"), "--log-level", "info"),
                *(by_file if i % 2 else ()),
                env=None if i % 2 and by_file else env,
            )
            for i in range(workers)
        ]
        results = await asyncio.gather(*runs)
        assert all(code == 0 for code, _ in results), results
        outputs = [said, *(out for _, out in results)]
        for args in (("status",), ("status", "--json"), ("wait", "--timeout", "5")):
            code, said = await _gossamer("cluster", *args, "--redis", url, env=env)
            assert code == 0, said
            outputs.append(said)
    records = [r for i in range(workers) for r in read_records(tmp_path / f"w{i}")]
    urls = {r["url"] for r in records if r["kind"] == "page"}  # and the hosts' sitemaps
    assert len(urls) == 2 * PAGES, sorted(urls)
    assert "finished" in outputs[-3]
    _files_clean(*(tmp_path / f"w{i}" for i in range(workers)))
    transcript = "\n".join(outputs)
    _clean(transcript)
    return transcript


async def _stored_job(admin_url: str) -> str:
    """The job as stored in Redis (read as the admin)."""
    client = Redis.from_url(admin_url)
    try:
        raw = await client.get(job_keys(DEFAULT_JOB)["job"])
    finally:
        await client.aclose()
    assert raw is not None
    return raw.decode()


# -- the URL and its password -------------------------------------------------------------


def test_password_from_file_or_environment_completes_the_url(tmp_path: Path) -> None:
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    url = "redis://crawler@h:6379/0"
    with_file = resolve_redis_url(url, password_file=secret, env={})
    assert with_file == "redis://crawler:Cr%40wl%2Fs3cret%3A9%25@h:6379/0"
    assert resolve_redis_url("redis://h/0", env={PASSWORD_ENV: "pw"}) == "redis://:pw@h/0"
    assert resolve_redis_url("redis://:own@h/0", env={PASSWORD_ENV: "pw"}) == "redis://:own@h/0"
    assert resolve_redis_url("redis://h/0", env={}) == "redis://h/0"
    # The file wins over the environment; the URL's own password and a file clash.
    assert resolve_redis_url("redis://h/0", password_file=secret, env={PASSWORD_ENV: "x"}) == (
        "redis://:Cr%40wl%2Fs3cret%3A9%25@h/0"
    )
    with pytest.raises(SettingsError, match="not both") as both:
        resolve_redis_url(f"redis://:{WRONG}@h/0", password_file=secret)
    _clean(str(both.value))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://h/0", "expected redis://"),
        ("redis:///0", "expected redis://"),
        ("redis://h:port/0", "Port could not be cast"),
        ("redis://h/zero", "not a number"),
        ("redis://h/0?ssl_cert_reqs=required", "needs a TLS URL"),
        ("rediss://h/0?ssl_ca_certs=/nonexistent/ca.pem", "no readable file"),
        ("rediss://h/0?ssl_cert_reqs=maybe", "must be one of"),
        ("redis://h/0?sockettimeout=1", "unknown URL parameter"),
        ("redis://h/0?timeout=1", "unknown URL parameter"),
        ("redis://u:p@ss/word@h/0", "percent-escape"),
        ("redis://u:pa#ss@h/0", "percent-escape"),
    ],
)
def test_bad_urls_are_settings_errors(url: str, problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        resolve_redis_url(url, env={})


def test_an_empty_or_missing_password_file_is_a_settings_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    for path, problem in ((empty, "is empty"), (tmp_path / "missing", "cannot read")):
        with pytest.raises(SettingsError, match=problem):
            resolve_redis_url("redis://h/0", password_file=path, env={})


def test_a_password_file_is_read_to_4_kib_at_most(tmp_path: Path) -> None:
    huge = tmp_path / "huge"
    with huge.open("wb") as file:
        file.truncate(64 << 20)  # sparse: a line of NULs with no end
    with pytest.raises(SettingsError, match=r"'/.*/huge' is larger than 4 KiB$"):
        resolve_redis_url("redis://h/0", password_file=huge, env={})


# -- jobs over secured servers ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_requirepass_job_takes_its_password_from_env_and_file(tmp_path: Path) -> None:
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    with RedisServer(password=PASSWORD) as server:
        url = f"redis://127.0.0.1:{server.port}/0"  # no password: ps shows none
        env = {PASSWORD_ENV: PASSWORD}
        transcript = await _crawl_job(tmp_path, url, env=env, password_file=secret)
        assert f"queued at {url}" in transcript
        _clean(await _stored_job(server.url))


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("partition_by", ["host", "url"])
async def test_job_as_an_acl_user_with_the_documented_rules(
    tmp_path: Path, partition_by: str
) -> None:
    """The user may touch only ``gs:*`` keys and run only the commands of docs/security.md."""
    config = acl_user("crawler", PASSWORD, *GOSSAMER_ACL)
    with RedisServer(password=ADMIN, config=config) as server:
        url = f"redis://crawler@127.0.0.1:{server.port}/0"
        env = {PASSWORD_ENV: PASSWORD}
        await _crawl_job(tmp_path, url, env=env, extra=("--partition-by", partition_by))
        stored = json.loads(await _stored_job(server.url))
        assert stored["partition_by"] == partition_by


@pytest.mark.timeout(60)
async def test_notices_the_acl_refuses_stop_when_the_worker_does() -> None:
    """Without Pub/Sub rules each subscription fails at its reply and the listener subscribes
    again, its commands written under redis-py's ``asyncio.wait_for``, which on Python 3.11
    loses a cancel that comes as the write ends. A worker stopped at such a moment hung in
    its ``keeper.stop()`` (the job test above, about 1 run in 9 with two CPU burners); the
    listener is never reported up either (no flip to slow polls and back at every try)."""
    config = acl_user("crawler", PASSWORD, *GOSSAMER_ACL)
    with RedisServer(password=ADMIN, config=config) as server:
        url = f"redis://crawler:{quote(PASSWORD, safe='')}@127.0.0.1:{server.port}/0"
        control = await open_control(url, DEFAULT_JOB)
        install_guard(control.redis, url)
        ups: list[bool] = []
        try:
            for _ in range(5):
                notices = Notices(control, "w0", lambda word: None, ups.append)
                notices.start()
                listener = next(t for t in asyncio.all_tasks() if _is_listener(t))
                await _until_a_write_ends(listener)
                async with asyncio.timeout(5) as bound:  # (its cancel reaches the listener)
                    await notices.stop()  # its cancel comes at once, before the listener runs
                assert not bound.expired() and listener.done()
            notices = Notices(control, "w0", lambda word: None, ups.append)
            notices.start()
            await asyncio.sleep(1.0)  # two refused subscriptions
            await notices.stop()
        finally:
            await control.redis.aclose()
    assert True not in ups, ups


def _is_listener(task: asyncio.Task[Any]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "") == "Notices._listen"


async def _until_a_write_ends(task: asyncio.Task[Any], limit: float = 5.0) -> None:
    """Until ``task`` awaits an ``asyncio.wait_for`` whose write just ended: it resumes at
    the next turn of the loop (on Python 3.12 and later nothing waits so; ``limit`` then)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        awaited = task.get_coro()
        while (frame := getattr(awaited, "cr_frame", None)) is not None:
            if frame.f_code.co_name == "wait_for":
                waiter = frame.f_locals.get("waiter")
                if isinstance(waiter, asyncio.Future) and waiter.done():
                    return
                break
            awaited = getattr(awaited, "cr_await", None)
        await asyncio.sleep(0)  # one turn of the loop: the listener's wake-up comes after


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_job_over_tls_with_a_client_certificate(tmp_path: Path, tls_files: TlsFiles) -> None:
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD)
    with RedisServer(password=PASSWORD, tls=tls_files) as server:
        url = f"rediss://127.0.0.1:{server.port}/0?{tls_query(tls_files)}"
        await _crawl_job(tmp_path, url, env={PASSWORD_ENV: PASSWORD}, password_file=secret)
        _clean(await _stored_job(server.url))


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_redis_cluster_over_tls_as_an_acl_user(tmp_path: Path, tls_files: TlsFiles) -> None:
    config = acl_user("crawler", PASSWORD, *GOSSAMER_ACL, *CLUSTER_ACL)
    with RedisClusterServer(tls=tls_files, password=ADMIN, config=config) as cluster:
        node = cluster.nodes[1]
        url = f"rediss://crawler@127.0.0.1:{node.port}/0?{tls_query(tls_files)}"
        await _crawl_job(tmp_path, url, env={PASSWORD_ENV: PASSWORD}, workers=1)


# -- refusals ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_refusals_are_one_line_exit_2_without_secrets(
    tmp_path: Path, tls_files: TlsFiles
) -> None:
    config = (
        *acl_user("crawler", PASSWORD, *GOSSAMER_ACL),
        *acl_user("reader", PASSWORD, "~gs:*", "+get"),
    )
    with RedisServer(password=ADMIN, tls=tls_files, config=config) as server:
        base = f"127.0.0.1:{server.port}/0"
        good = tls_query(tls_files)
        escaped = quote(PASSWORD, safe="")
        other_ca = tls_query(tls_files, tls_files.other_ca)
        by_env = {PASSWORD_ENV: PASSWORD}
        status, worker = ("status",), ("worker", "--redis-timeout", "1")
        # (command, URL, environment, exit status, what the line says); run in parallel.
        cases = [
            (status, f"rediss://crawler:{WRONG}@{base}?{good}", {}, 2, "refused the credentials"),
            (worker, f"rediss://nobody@{base}?{good}", by_env, 2, "refused the credentials"),
            (status, f"rediss://default@{base}?{good}", {PASSWORD_ENV: WRONG}, 2, "refused the"),
            (worker, f"rediss://crawler@{base}?{other_ca}", by_env, 2, "TLS with Redis"),
            (status, f"rediss://crawler:{escaped}@{base}", {}, 2, "TLS with Redis"),
            (status, f"rediss://reader@{base}?{good}", by_env, 2, "docs/security.md"),
            (status, f"redis://crawler:{escaped}@{base}?{good}", {}, 2, "needs a TLS URL"),
            (status, f"rediss://crawler:{PASSWORD}@{base}?{good}", {}, 2, "percent-escape"),
            (status, f"redis://{base}", by_env, 1, "use rediss://"),
        ]
        said = await asyncio.gather(
            *(_gossamer("cluster", *command, "--redis", url, env=env)
              for command, url, env, _, _ in cases)
        )  # fmt: skip
    for (_, url, _, status_code, problem), (code, out) in zip(cases, said, strict=True):
        assert code == status_code and problem in out, (url, out)
        assert len(out.strip().splitlines()) == 1, out
        _clean(out)


@pytest.mark.slow
async def test_a_missing_acl_rule_stops_the_worker_with_one_line(tmp_path: Path) -> None:
    """The rule is missing inside a script, where Redis answers with a plain error."""
    partial = tuple(rule for rule in GOSSAMER_ACL if rule != "+zrem")
    config = (
        *acl_user("crawler", PASSWORD, *GOSSAMER_ACL),
        *acl_user("partial", PASSWORD, *partial),
    )
    with RedisServer(password=ADMIN, config=config) as server:
        env = {PASSWORD_ENV: PASSWORD}
        async with TestWebServer(small_web(hosts=1, pages_per_host=2), flaky_failures=0) as web:
            job = [web.url(0), *FAST, *WEB_ARGS, "--partitions", "4"]
            url = f"redis://crawler@127.0.0.1:{server.port}/0"
            code, said = await _gossamer("cluster", "submit", "--redis", url, *job, env=env)
            assert code == 0, said
            url = f"redis://partial@127.0.0.1:{server.port}/0"
            code, said = await _gossamer(
                "cluster", "worker", "--redis", url, "--out", str(tmp_path / "w"), env=env
            )
    assert code == 2 and "lacks a rule gossamer needs" in said, said
    assert len(said.strip().splitlines()) == 1, said
    _clean(said)


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_every_command_taking_redis_completes_its_password(tmp_path: Path) -> None:
    """pause, resume, stop and the exporter take the password from the file or environment
    as submit, worker, status and wait do (the manifests give it in the environment only)."""
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    with RedisServer(password=PASSWORD) as server:
        url = f"redis://127.0.0.1:{server.port}/0"
        env = {PASSWORD_ENV: PASSWORD}
        code, said = await _gossamer(
            "cluster", "submit", "--redis", url, "https://a.test/", env=env
        )
        assert code == 0, said
        for state, by in (("pause", env), ("resume", None), ("stop", env)):
            by_file = () if by else ("--redis-password-file", str(secret))
            code, said = await _gossamer("cluster", state, "--redis", url, *by_file, env=by)
            assert code == 0 and f"job {DEFAULT_JOB!r}" in said, said
            _clean(said)
        code, said = await _gossamer("cluster", "stop", "--redis", url)
        assert code != 0 and "GOSSAMER_REDIS_PASSWORD" in said, said
        port = _free_port()
        exporter = await asyncio.create_subprocess_exec(
            *GOSSAMER, "cluster", "metrics", "--redis", url, "--metrics-port", str(port),
            env={**os.environ, **env}, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            body = await _poll_queued(f"http://127.0.0.1:{port}/queued", exporter)
            assert body["queued"] == 1, body
        finally:
            exporter.terminate()
            await asyncio.wait_for(exporter.wait(), 10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _poll_queued(url: str, proc: asyncio.subprocess.Process) -> dict[str, Any]:
    timeout = aiohttp.ClientTimeout(total=2)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for _ in range(200):
            assert proc.returncode is None, await proc.stderr.read() if proc.stderr else ""
            try:
                async with session.get(url) as response:
                    if response.status == 200:
                        body: dict[str, Any] = await response.json()
                        return body
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError(f"{url} did not answer")

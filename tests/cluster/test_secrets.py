"""No credential in any output: every message and summary of `gossamer cluster`, and the job
stored in Redis, against a password-protected redis-server (right and wrong passwords) and an
unreachable one."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.cluster.harness import FAST, GOSSAMER, WEB_ARGS, small_web
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import job_keys
from gossamer.cluster.jobs import open_control
from gossamer.cluster.resilient import RedisGuard
from gossamer.redact import has_password, redact_text, redact_url, strip_password
from gossamer.settings import SettingsError
from gossamer.testweb import TestWebServer

PASSWORD = "Redis-s3cret-7Qx"
PG_PASSWORD = "Pg-s3cret-9Zk"
WRONG = "Wrong-s3cret-4Mv"
SECRETS = (PASSWORD, PG_PASSWORD, WRONG)


@pytest.fixture
def protected() -> Iterator[RedisServer]:
    """A redis-server that wants ``PASSWORD``."""
    with RedisServer(password=PASSWORD) as server:
        yield server


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _redis(port: int, password: str, scheme: str = "redis") -> str:
    return f"{scheme}://default:{password}@127.0.0.1:{port}/0"


def _store(port: int) -> str:
    return f"postgres://crawler:{PG_PASSWORD}@127.0.0.1:{port}/pages"


async def _gossamer(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``gossamer *args``; its exit code and its stdout and stderr together."""
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def _assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


# -- the helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown", "stored"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://u:pw@h:1/2", "redis://u:***@h:1/2", "redis://u@h:1/2"),
        ("rediss://:pw@h/0", "rediss://:***@h/0", "rediss://h/0"),
        ("postgres://u:p@ss@db/x?table=t", "postgres://u:***@db/x?table=t", "postgres://u@db/x?table=t"),
        ("postgresql://u@h/db?password=pw&table=t", "postgresql://u@h/db?password=***&table=t",
         "postgresql://u@h/db?table=t"),
        ("postgresql://h/db?table=t&sslpassword=pw", "postgresql://h/db?table=t&sslpassword=***",
         "postgresql://h/db?table=t"),
        ("http://user:pa/ss@proxy:8080/", "http://user:***@proxy:8080/", "http://user@proxy:8080/"),
        ("redis://:pw@[::1]:6379/0", "redis://:***@[::1]:6379/0", "redis://[::1]:6379/0"),
        ("http://T0KEN@proxy:8080/", "http://***@proxy:8080/", "http://T0KEN@proxy:8080/"),
        ("postgres://me@db/x", "postgres://***@db/x", "postgres://me@db/x"),
        ("http://APIKEY:@proxy:8011/", "http://***@proxy:8011/", "http://proxy:8011/"),
    ],
)  # fmt: skip
def test_redact_and_strip_every_scheme(url: str, shown: str, stored: str) -> None:
    assert redact_url(url) == shown
    assert strip_password(url) == stored
    assert has_password(url) == (url != stored)  # a user name alone: masked, no password


def test_redact_text_masks_urls_inside_messages() -> None:
    text = "Error connecting to 'redis://:pw1@h:1/0' via http://u:pw2@proxy, host=h password=pw3"
    redacted = redact_text(text)
    assert all(p not in redacted for p in ("pw1", "pw2", "pw3")), redacted
    assert "redis://:***@h:1/0" in redacted and "http://u:***@proxy" in redacted


def test_a_quoted_libpq_password_is_masked_whole() -> None:
    dsn = "host=h password = 'pw a\\' b' user=u"
    assert redact_text(dsn) == "host=h password=*** user=u"
    assert strip_password(dsn) == "host=h  user=u"


# -- in process: errors and the guard -------------------------------------------------------


async def test_open_control_errors_show_no_password(protected: RedisServer) -> None:
    for url in (_redis(protected.port, WRONG), _redis(_closed_port(), PASSWORD, "rediss")):
        with pytest.raises(Exception) as caught:
            await open_control(url, "job")
        _assert_clean(f"{caught.value} {caught.value!r}")
        assert ":***@" in str(caught.value)
    with pytest.raises(SettingsError) as bad:
        await open_control(f"redis://u:{PASSWORD}@127.0.0.1:notaport/0", "job")
    _assert_clean(str(bad.value))


async def test_the_guards_verdict_shows_no_password() -> None:
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    guard = RedisGuard(_redis(1, PASSWORD), 1.0, clock=lambda: now[0], sleep=sleep)

    async def fail() -> None:
        raise RedisConnectionError(f"Error connecting to {_redis(1, PASSWORD)}")

    async def noted(error: Exception) -> None:
        pass

    with pytest.raises(RedisConnectionError) as caught:
        await guard.call_with_retry(fail, noted)
    _assert_clean(str(caught.value))
    assert "default:***@" in str(caught.value)


# -- the commands -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_cluster_commands_print_no_password(tmp_path: Path, protected: RedisServer) -> None:
    good = _redis(protected.port, PASSWORD)
    loud = WEB_ARGS[:-1]  # without --quiet: submit says what it did
    assert "--quiet" not in loud
    async with TestWebServer(small_web(hosts=1, pages_per_host=5), flaky_failures=0) as web:
        seed = web.url(0)
        job = [seed, *FAST, *loud, "--partitions", "8"]
        store = ["--store", _store(_closed_port())]
        code, said = await _gossamer("cluster", "submit", "--redis", good, *job, *store)
        assert code == 0, said
        assert "submitted job" in said and ":***@" in said and "not stored" in said
        transcript = [said]

        # The stored job holds the store's DSN without its password.
        client = Redis.from_url(good)
        try:
            stored = await client.get(job_keys(DEFAULT_JOB)["job"])
        finally:
            await client.aclose()
        assert stored is not None
        _assert_clean(stored.decode())
        assert json.loads(stored)["store"].startswith("postgres://crawler@127.0.0.1:")

        # A job without a store crawls to its end; the worker's summary shows no password.
        code, said = await _gossamer("cluster", "submit", "--redis", good, "--job", "plain", *job)
        transcript.append(said)
        code, said = await _gossamer(
            "cluster", "worker", "--redis", good, "--job", "plain", "--out", str(tmp_path / "p")
        )
        assert code == 0 and "crawled 5 pages" in said, said
        transcript.append(said)
        for args in (("status",), ("status", "--json"), ("wait", "--timeout", "0.1")):
            code, said = await _gossamer("cluster", *args, "--redis", good, "--job", "plain")
            assert code == 0, said
            transcript.append(said)

        for url in (_redis(protected.port, WRONG), _redis(_closed_port(), PASSWORD, "rediss")):
            for args in (("status",), ("submit", seed), ("worker", "--redis-timeout", "1")):
                code, said = await _gossamer("cluster", *args, "--redis", url)
                assert code != 0 and ":***@" in said, said
                transcript.append(said)

        # A worker's own store (from the environment) replaces the job's: it is the one that
        # fails, and its password is not shown either.
        port = _closed_port()
        code, said = await _gossamer(
            "cluster", "worker", "--redis", good, "--out", str(tmp_path / "w"),
            env={"GOSSAMER_STORE": _store(port)},
        )  # fmt: skip
        assert code != 0 and f"crawler:***@127.0.0.1:{port}/" in said, said
        transcript.append(said)
    _assert_clean("\n".join(transcript))

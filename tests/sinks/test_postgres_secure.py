"""`gossamer crawl --store` on a secured PostgreSQL: SCRAM-SHA-256 passwords given by
PGPASSWORD or a passfile, TLS with sslmode require, verify-ca and verify-full and a client
certificate. Real servers on loopback, the crawl a subprocess.

No password reaches the crawl's output or any file it writes; a wrong password and an
untrusted server certificate are one line and exit status 2.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import asyncpg
import pytest
from redis.asyncio import Redis
from tests.cluster.harness import GOSSAMER, WEB_ARGS, small_web
from tests.pg_server import PostgresServer, table_rows
from tests.redis_server import RedisServer
from tests.tls_certs import TlsFiles

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import job_keys
from gossamer.settings import SettingsError
from gossamer.sinks.postgres import parse_store_url
from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ADMIN = "Pg-adm1n-s3cret-Kq"
PASSWORD = "Pg-cr@wl/s3cret#7"
"""No ``:`` nor ``\\``: asyncpg 0.32 keeps a passfile's escapes (``\\:``) in the password."""
WRONG = "Pg-wr0ng-s3cret-Jx"
SECRETS = (ADMIN, PASSWORD, WRONG)
PAGES = 4
FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--total-timeout", "2"]
_PG_ENV = ("PGPASSWORD", "PGPASSFILE", "PGSSLMODE", "PGUSER", "PGSERVICE")


async def _with_crawler(server: PostgresServer) -> PostgresServer:
    """``server`` with the login role ``crawler`` (password ``PASSWORD``), which may create
    its tables in the public schema."""
    conn = await asyncpg.connect(server.url, timeout=10)
    try:
        await conn.execute(f"CREATE ROLE crawler LOGIN PASSWORD '{PASSWORD}'")
        await conn.execute("GRANT CREATE, USAGE ON SCHEMA public TO crawler")
    finally:
        await conn.close()
    return server


@pytest.fixture(scope="module")
def pg_password() -> Iterator[PostgresServer]:
    """PostgreSQL asking TCP clients for a SCRAM-SHA-256 password."""
    with PostgresServer(password=ADMIN) as server:
        yield asyncio.run(_with_crawler(server))


@pytest.fixture(scope="module")
def pg_tls(tls_files: TlsFiles) -> Iterator[PostgresServer]:
    """PostgreSQL taking TLS connections only, with a password and a client certificate."""
    with PostgresServer(password=ADMIN, tls=tls_files) as server:
        yield asyncio.run(_with_crawler(server))


def _store(server: PostgresServer, table: str, query: str = "", password: str = "") -> str:
    auth = f":{password}" if password else ""
    return f"postgresql://crawler{auth}@127.0.0.1:{server.port}/postgres?table={table}{query}"


def _key_value(server: PostgresServer, table: str, extra: str = "", password: str = "") -> str:
    """The store as libpq's ``key=value`` connection string, the password quoted."""
    auth = f" password='{password}'" if password else ""
    return f"host=127.0.0.1 port={server.port} user=crawler{auth} dbname=postgres table={table}" + (
        f" {extra}" if extra else ""
    )


async def _gossamer(tmp_path: Path, *args: str, env: dict[str, str]) -> tuple[int, str]:
    """``gossamer *args`` with ``env`` added to a clean environment (no libpq variables of
    the caller's, no ~/.pgpass but the test's own); its exit code and output."""
    environ = {k: v for k, v in os.environ.items() if k not in _PG_ENV}
    environ["HOME"] = str(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**environ, **env},
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 50)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    said = out.decode()
    for secret in SECRETS:
        assert secret not in said, said
    return proc.returncode, said


async def _crawl(tmp_path: Path, store: str, env: dict[str, str]) -> tuple[int, str]:
    """``gossamer crawl --store store`` of a small web."""
    async with TestWebServer(small_web(hosts=1, pages_per_host=PAGES), flaky_failures=0) as web:
        return await _gossamer(
            tmp_path, "crawl", web.url(0), *FAST, *WEB_ARGS[:-1],
            "--out", str(tmp_path / "out"), "--store", store, env=env,
        )  # fmt: skip


def _files_clean(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(s.encode() in data for s in SECRETS), path


async def _assert_stored(tmp_path: Path, server: PostgresServer, table: str) -> None:
    rows = [row for row in await table_rows(server.url, table) if row["kind"] == "page"]
    assert len(rows) == PAGES and {r["worker"] for r in rows}, rows
    _files_clean(tmp_path / "out")


async def test_password_from_pgpassword(tmp_path: Path, pg_password: PostgresServer) -> None:
    code, said = await _crawl(tmp_path, _store(pg_password, "by_env"), {"PGPASSWORD": PASSWORD})
    assert code == 0, said
    await _assert_stored(tmp_path, pg_password, "by_env")


async def test_a_password_in_the_dsn_reaches_no_file(
    tmp_path: Path, pg_tls: PostgresServer
) -> None:
    password = quote(PASSWORD, safe="")
    store = _store(pg_tls, "in_dsn", "&" + pg_tls.tls_query(), password=password)
    code, said = await _crawl(tmp_path, store, {})
    assert code == 0, said
    await _assert_stored(tmp_path, pg_tls, "in_dsn")
    assert password not in said
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or password.encode() not in path.read_bytes(), path


async def test_a_key_value_dsn_is_used_and_its_password_reaches_no_file(
    tmp_path: Path, pg_tls: PostgresServer
) -> None:
    """``host=... user=crawler password='...' dbname=...``: the crawl writes its pages with
    it; neither its output nor any file it writes (crawl.db's meta key too) holds the
    password."""
    tls = pg_tls.tls_query().replace("&", " ")
    code, said = await _crawl(tmp_path, _key_value(pg_tls, "kv", tls, PASSWORD), {})
    assert code == 0, said
    await _assert_stored(tmp_path, pg_tls, "kv")


@pytest.mark.parametrize("how", ["PGPASSFILE", "~/.pgpass", "passfile="])
async def test_password_from_a_passfile(
    tmp_path: Path, pg_password: PostgresServer, how: str
) -> None:
    passfile = tmp_path / (".pgpass" if how == "~/.pgpass" else "passfile")
    passfile.write_text(f"127.0.0.1:{pg_password.port}:postgres:crawler:{PASSWORD}\n")
    passfile.chmod(0o600)
    table = {"PGPASSFILE": "by_pgpassfile", "~/.pgpass": "by_pgpass", "passfile=": "by_dsn"}[how]
    env = {"PGPASSFILE": str(passfile)} if how == "PGPASSFILE" else {}
    query = f"&passfile={passfile}" if how == "passfile=" else ""
    code, said = await _crawl(tmp_path, _store(pg_password, table, query), env)
    assert code == 0, said
    await _assert_stored(tmp_path, pg_password, table)


@pytest.mark.parametrize("mode", ["require", "verify-ca", "verify-full"])
async def test_tls_with_sslmode(tmp_path: Path, pg_tls: PostgresServer, mode: str) -> None:
    table = f"tls_{mode.replace('-', '_')}"
    store = _store(pg_tls, table, "&" + pg_tls.tls_query(mode))
    code, said = await _crawl(tmp_path, store, {"PGPASSWORD": PASSWORD})
    assert code == 0, said
    await _assert_stored(tmp_path, pg_tls, table)


async def test_refusals_are_one_line_exit_2(
    tmp_path: Path, pg_password: PostgresServer, pg_tls: PostgresServer, tls_files: TlsFiles
) -> None:
    other_ca = "&" + pg_tls.tls_query("verify-full", tls_files.other_ca)
    cases = [
        (_store(pg_password, "t", password=WRONG), {}, "refused the connection"),
        (_key_value(pg_password, "t", password=WRONG), {}, "refused the connection"),
        (_store(pg_password, "t"), {"PGPASSWORD": WRONG}, "password authentication failed"),
        (_store(pg_password, "t"), {}, "refused the connection"),
        (_store(pg_tls, "t", "&sslmode=disable"), {"PGPASSWORD": PASSWORD}, "no encryption"),
        (_store(pg_tls, "t", other_ca), {"PGPASSWORD": PASSWORD}, "TLS with PostgreSQL"),
    ]
    results = await asyncio.gather(
        *(_crawl(tmp_path / str(i), store, env) for i, (store, env, _) in enumerate(cases))
    )
    for (store, _, problem), (code, said) in zip(cases, results, strict=True):
        lines = said.strip().splitlines()
        assert code == 2 and problem in said, (store, said)
        assert len(lines) == 1 and "Traceback" not in said, said


@pytest.mark.parametrize("form", ["url", "key=value"])
async def test_cluster_workers_bring_their_own_password(
    tmp_path: Path, pg_tls: PostgresServer, form: str
) -> None:
    """The job keeps the store's TLS parameters but not its password (a URL's, or a
    ``key=value`` string's): each worker's PGPASSWORD completes the DSN."""
    table = "cluster" if form == "url" else "cluster_kv"
    if form == "url":
        store = _store(pg_tls, table, "&" + pg_tls.tls_query(), password=quote(PASSWORD, safe=""))
    else:
        store = _key_value(pg_tls, table, pg_tls.tls_query().replace("&", " "), PASSWORD)
    with RedisServer() as redis:
        async with TestWebServer(small_web(hosts=1, pages_per_host=PAGES), flaky_failures=0) as web:
            job = [web.url(0), *FAST, *WEB_ARGS[:-1], "--partitions", "4", "--store", store]
            code, said = await _gossamer(
                tmp_path, "cluster", "submit", "--redis", redis.url, *job, env={}
            )
            assert code == 0 and "not stored with the job" in said, said
            code, said = await _gossamer(
                tmp_path, "cluster", "worker", "--redis", redis.url, "--out", str(tmp_path / "out"),
                env={"PGPASSWORD": PASSWORD},
            )  # fmt: skip
            assert code == 0, said
        client = Redis.from_url(redis.url)
        try:
            stored = await client.get(job_keys(DEFAULT_JOB)["job"])
        finally:
            await client.aclose()
    assert stored is not None and PASSWORD.encode() not in stored
    assert "sslmode=verify-full" in json.loads(stored)["store"]
    await _assert_stored(tmp_path, pg_tls, table)


def test_tls_files_are_checked_where_the_url_comes_in(tmp_path: Path, tls_files: TlsFiles) -> None:
    base = "postgresql://crawler@db:5432/pages?sslmode=verify-full"
    ok = f"{base}&sslrootcert={tls_files.ca}&sslcert={tls_files.client_cert}"
    assert parse_store_url(ok).dsn.startswith("postgresql://crawler@db:5432/pages?sslmode=")
    for key in ("sslrootcert", "sslcert", "sslkey", "passfile"):
        with pytest.raises(SettingsError, match=f"{key}: no readable file"):
            parse_store_url(f"{base}&{key}={tmp_path / 'missing.pem'}")

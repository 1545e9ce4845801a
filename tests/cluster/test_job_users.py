"""A proxy's or the page store's user name given alone in a cluster job
(``http://TOKEN@proxy:3128/``, ``postgres://TOKEN@db/pages``): the job's settings name it
masked, the job's ``credentials`` key alone holds it, and a worker puts it back to connect
(real redis-server, a real HTTP proxy that asks for the token, a real PostgreSQL whose role
is named like one, a real site on loopback)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path

import asyncpg
import pytest
from aiohttp import web
from redis.asyncio import Redis
from tests.cluster.harness import output
from tests.cluster.test_seed_credentials import holding
from tests.fetch.proxy_servers import HttpProxy
from tests.local_app import serve, serve_pages
from tests.pg_server import PostgresServer, table_rows
from tests.redis_server import RedisServer

import gossamer
from gossamer import JobSettings, Worker
from gossamer.cluster.control import job_keys
from gossamer.cluster.jobs import job_settings
from gossamer.cluster.jobusers import (
    hide_user,
    holds_password,
    lone_users,
    reveal_users,
    store_users,
)
from gossamer.frontier.redis.credentials import credentials_key
from gossamer.redact import mask_user_alone
from gossamer.settings import SettingsError

pytestmark = pytest.mark.timeout(60)

JOB = "users"
TOKEN = "ghp_pr0xyT0kenAl0ne"
MASKED = mask_user_alone(f"{TOKEN}@p.test:3128")


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (f"http://{TOKEN}@p.test:3128", f"http://{MASKED}"),
        (f"socks5://{TOKEN}@p.test:3128/", f"socks5://{MASKED}/"),
        (f"http://{TOKEN}:@p.test:3128", f"http://{mask_user_alone(f'{TOKEN}:@p.test:3128')}"),
        ("http://u:pw@p.test:3128", "http://u@p.test:3128"),  # a user name, before a password
        ("postgres://crawler@db.test/pages?password=pw", "postgres://crawler@db.test/pages"),
        (
            f"postgres://{TOKEN}@db.test/pages?table=t",
            f"postgres://{mask_user_alone(f'{TOKEN}@db.test')}/pages?table=t",
        ),
        ("http://p.test:3128", "http://p.test:3128"),
    ],
)
def test_a_job_masks_a_user_name_given_alone_and_strips_a_password(given: str, stored: str) -> None:
    assert hide_user(given) == stored
    assert holds_password(given) == (given != stored and "***" not in stored)  # says submit
    if given.startswith("postgres"):
        settings = JobSettings(seeds=["http://a.test/"], store=given)
        assert job_settings(settings, []).store == stored
    else:
        settings = JobSettings(seeds=["http://a.test/"], proxies=[given])
        assert job_settings(settings, []).proxies == [stored]
    head, real = stored.split("/")[:3], given.split("/")[:3]
    masked = {"/".join(head): "/".join(real)} if "***" in stored else {}
    assert lone_users(settings) == masked


async def test_a_worker_without_the_job_s_credentials_is_refused_in_one_line() -> None:
    """The job names a user kept in ``credentials``, which does not hold it (cleared): the
    worker stops with a message that names the proxy masked."""
    settings = job_settings(
        JobSettings(seeds=["http://a.test/"], proxies=[f"http://{TOKEN}@p.test:3128"]), []
    )
    with RedisServer() as redis:
        client = Redis.from_url(redis.url)
        try:
            with pytest.raises(SettingsError, match=r"proxy http://\*\*\*@p.test:3128 ") as info:
                await reveal_users(client, JOB, settings, store=True, proxies=True)
            assert TOKEN not in str(info.value) and "\n" not in str(info.value)
            forged = {f"http://{MASKED}": "http://other@p.test:3128"}  # not what it masks
            await store_users(client, JOB, forged)
            with pytest.raises(SettingsError):
                await reveal_users(client, JOB, settings, store=True, proxies=True)
            kept = await reveal_users(client, JOB, settings, store=True, proxies=False)
            assert kept == settings  # this worker's own proxies replace the job's
        finally:
            await client.aclose()


@pytest.mark.parametrize("userinfo", [TOKEN, f"{TOKEN}:"], ids=["alone", "empty-password"])
async def test_a_proxy_s_token_is_kept_in_credentials_only_and_sent_by_the_worker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, userinfo: str
) -> None:
    """The job's settings name the proxy ``http://***.TAG@...``; no key but ``credentials``
    holds the token, before the crawl and after it; the worker reaches the site through the
    proxy, which lets only the token through; no log line, file or ``cluster status`` of the
    job shows it."""
    caplog.set_level(logging.DEBUG)
    links = {"/": '<a href="/a">a</a>'}

    async def site(request: web.Request) -> web.Response:
        body = f"<html><body><p>{request.path}</p>{links.get(request.path, '')}</body></html>"
        return web.Response(body=body.encode(), content_type="text/html")

    proxy = await HttpProxy(credentials=(TOKEN, "")).start()
    try:
        async with serve(site) as port:
            with RedisServer() as redis:
                job = JobSettings(
                    seeds=[f"http://127.0.0.1:{port}/"],
                    proxies=[f"http://{userinfo}@127.0.0.1:{proxy.port}/"],
                    robots=False,
                    sitemaps=False,
                    quiet=True,
                )
                client = Redis.from_url(redis.url)
                try:
                    await gossamer.submit(redis.url, job, job=JOB)
                    assert await holding(client, TOKEN) == {credentials_key(JOB)}
                    stored = json.loads(await client.get(job_keys(JOB)["job"]))
                    tag = mask_user_alone(f"{userinfo}@127.0.0.1:{proxy.port}")
                    assert stored["proxies"] == [f"http://{tag}/"]
                    worker = Worker(
                        redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20
                    )
                    worker.start()
                    await asyncio.wait_for(worker.wait(), 30)
                    assert await holding(client, TOKEN) == {credentials_key(JOB)}
                finally:
                    await client.aclose()
                for args in (("status",), ("status", "--json")):
                    code, out, err = await output(
                        "cluster", *args, "--redis", redis.url, "--job", JOB
                    )
                    assert code == 0 and TOKEN not in out + err, out + err
    finally:
        await proxy.stop()
    base = f"http://127.0.0.1:{port}"
    assert {f"{base}/", f"{base}/a"} <= set(proxy.targets)  # through the proxy, with the token
    assert not [r.getMessage() for r in caplog.records if TOKEN in r.getMessage()]
    files = [p for p in (tmp_path / "w0").rglob("*") if p.is_file()]
    assert [p.name for p in files if TOKEN.encode() in p.read_bytes()] == []


async def test_a_store_s_user_name_given_alone_is_kept_in_credentials_only(tmp_path: Path) -> None:
    """A store DSN whose role (its name a token) has no password: the job names it masked,
    ``credentials`` alone holds it, and the worker writes its pages as that role."""
    role = "tok_" + TOKEN.lower().replace("-", "_")
    with PostgresServer() as pg:
        conn = await asyncpg.connect(pg.url, timeout=10)
        try:
            await conn.execute(f"CREATE ROLE {role} LOGIN")
            await conn.execute(f"GRANT CREATE, USAGE ON SCHEMA public TO {role}")
        finally:
            await conn.close()
        store = f"postgresql://{role}@127.0.0.1:{pg.port}/postgres?table=by_token"
        async with serve_pages({"/": "<p>one page</p>"}) as port:
            with RedisServer() as redis:
                job = JobSettings(
                    seeds=[f"http://127.0.0.1:{port}/"], store=store, robots=False, quiet=True
                )
                client = Redis.from_url(redis.url)
                try:
                    await gossamer.submit(redis.url, job, job=JOB)
                    assert await holding(client, role) == {credentials_key(JOB)}
                    worker = Worker(
                        redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20
                    )
                    worker.start()
                    await asyncio.wait_for(worker.wait(), 30)
                    assert await holding(client, role) == {credentials_key(JOB)}
                finally:
                    await client.aclose()
        rows = await table_rows(pg.url, "by_token")
    assert [row["url"] for row in rows] == [f"http://127.0.0.1:{port}/"]


CHECK_SECRET = "Ch3ckS3cret-Vq9"


async def test_a_proxy_check_url_s_user_info_comes_back_from_credentials_only() -> None:
    """The job names the check URL's user info masked; a worker puts it back from
    ``credentials``, and is refused in one line when that does not hold it."""
    given = f"http://checker:{CHECK_SECRET}@site.test:81/check?x=1"
    settings = JobSettings(
        seeds=["http://a.test/"], proxies=["http://p.test:3128"], proxy_check_url=given
    )
    tag = mask_user_alone(f"checker:{CHECK_SECRET}@site.test:81")
    stored = job_settings(settings, [])
    assert stored.proxy_check_url == f"http://{tag}/check?x=1"
    users = lone_users(settings)
    assert users == {f"http://{tag}": f"http://checker:{CHECK_SECRET}@site.test:81"}
    with RedisServer() as redis:
        client = Redis.from_url(redis.url)
        try:
            with pytest.raises(SettingsError, match=r"proxy check URL http://\*\*\*@site") as info:
                await reveal_users(client, JOB, stored, store=True, proxies=False)
            assert CHECK_SECRET not in str(info.value) and "\n" not in str(info.value)
            await store_users(client, JOB, users)
            revealed = await reveal_users(client, JOB, stored, store=True, proxies=False)
            assert revealed.proxy_check_url == given
        finally:
            await client.aclose()


@pytest.mark.parametrize("userinfo", [f"checker:{CHECK_SECRET}", CHECK_SECRET])
async def test_the_proxy_check_url_s_user_info_is_kept_in_credentials_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, userinfo: str
) -> None:
    """``--proxy-check-url http://user:secret@site/check``: the job names it masked
    (``http://***.TAG@site/check``), ``credentials`` alone holds the secret, and the worker
    checks its proxy with it as given: the site gets the request with its credentials."""
    caplog.set_level(logging.DEBUG)
    checked: list[str | None] = []

    async def site(request: web.Request) -> web.Response:
        if request.path == "/check":
            checked.append(request.headers.get("Authorization"))
        return web.Response(body=b"<html><body><p>page</p></body></html>", content_type="text/html")

    proxy = await HttpProxy().start()
    try:
        async with serve(site) as port:
            check = f"http://{userinfo}@127.0.0.1:{port}/check"
            with RedisServer() as redis:
                job = JobSettings(
                    seeds=[f"http://127.0.0.1:{port}/"],
                    proxies=[proxy.url],
                    proxy_check_url=check,
                    robots=False,
                    sitemaps=False,
                    quiet=True,
                )
                client = Redis.from_url(redis.url)
                try:
                    await gossamer.submit(redis.url, job, job=JOB)
                    assert await holding(client, CHECK_SECRET) == {credentials_key(JOB)}
                    stored = json.loads(await client.get(job_keys(JOB)["job"]))
                    tag = mask_user_alone(f"{userinfo}@127.0.0.1:{port}")
                    assert stored["proxy_check_url"] == f"http://{tag}/check"
                    worker = Worker(
                        redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20
                    )
                    worker.start()
                    await asyncio.wait_for(worker.wait(), 30)
                    assert await holding(client, CHECK_SECRET) == {credentials_key(JOB)}
                finally:
                    await client.aclose()
                for args in (("status",), ("status", "--json")):
                    code, out, err = await output(
                        "cluster", *args, "--redis", redis.url, "--job", JOB
                    )
                    assert code == 0 and CHECK_SECRET not in out + err, out + err
    finally:
        await proxy.stop()
    pair = userinfo if ":" in userinfo else userinfo + ":"  # a user name alone: no password
    sent = "Basic " + base64.b64encode(pair.encode()).decode()
    assert checked and set(checked) == {sent}, checked
    assert not [r.getMessage() for r in caplog.records if CHECK_SECRET in r.getMessage()]
    files = [p for p in (tmp_path / "w0").rglob("*") if p.is_file()]
    assert [p.name for p in files if CHECK_SECRET.encode() in p.read_bytes()] == []

"""A cluster job with [[auth]] tables (basic and a form login), two `gossamer cluster worker`
subprocesses and a real redis-server: each worker reads the secrets from its own environment
and logs in itself, a session that times out is logged into again on the worker, every page
behind the logins is crawled, and no secret is in any worker's output nor in Redis."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from redis.asyncio import Redis
from tests.cluster.harness import (
    FAST,
    GOSSAMER,
    STARTED,
    cluster_wait,
    read_records,
    run,
    until_waiting,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

USER, PASSWORD = "frank", "cluster-form-pass-852"
DOCS_USER, DOCS_PASSWORD = "gina", "cluster-basic-pass-963"
SECRETS = (PASSWORD, DOCS_PASSWORD, base64.b64encode(f"{DOCS_USER}:{DOCS_PASSWORD}".encode()))
HOSTS = 6
PAGES = 20
SESSION_TTL = 5.5
"""Seconds a session lives: more than a worker's pause between two logins (5 s)."""


@dataclass
class Site:
    """Members hosts behind a form login (a Domain cookie for all of members.test, timing
    out), docs.test behind basic auth; everything else answers 401 or a login redirect."""

    port: int = 0
    sessions: dict[str, float] = field(default_factory=dict)
    logins: int = 0
    refused: Counter[str] = field(default_factory=Counter)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if host == "members.test" and request.path == "/login":
            form = await request.post()
            if (form.get("user"), form.get("pass")) != (USER, PASSWORD):
                return web.Response(status=403)
            self.logins += 1
            sid = f"s{self.logins}"
            self.sessions[sid] = time.monotonic() + SESSION_TTL
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie("sid", sid, domain="members.test", path="/")
            return response
        if host == "docs.test":
            token = base64.b64encode(f"{DOCS_USER}:{DOCS_PASSWORD}".encode()).decode()
            if request.headers.get("Authorization") != f"Basic {token}":
                self.refused[host] += 1
                return web.Response(status=401)
        elif self.sessions.get(request.cookies.get("sid", ""), 0) < time.monotonic():
            self.refused[host] += 1
            login = f"http://members.test:{self.port}/login"
            return web.Response(status=302, headers={"Location": login})
        n = int(request.path.strip("/") or 0)
        links = ""
        if n == 0 and host == "www.members.test":
            hosts = [f"h{i}.members.test" for i in range(HOSTS)] + ["docs.test"]
            links = "".join(f'<a href="http://{h}:{self.port}/">{h}</a>' for h in hosts)
        elif n == 0:
            links = "".join(f'<a href="/{i}">{i}</a>' for i in range(1, PAGES))
        return web.Response(text=f"<p>{host} {n}</p>{links}", content_type="text/html")


@asynccontextmanager
async def serving() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site.port = runner.addresses[0][1]
    try:
        yield site
    finally:
        await runner.cleanup()


def _config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(
        "[[auth]]\n"
        'domain = "members.test"\ntype = "form"\n'
        f'login_url = "http://members.test:{port}/login"\n'
        'username_field = "user"\npassword_field = "pass"\n'
        'username_env = "MEMBERS_USER"\npassword_env = "MEMBERS_PASS"\n'
        "[[auth]]\n"
        f'domain = "http://docs.test:{port}"\ntype = "basic"\n'
        'username_env = "DOCS_USER"\npassword_file = "/run/secrets/docs"\n'
    )
    return path


async def _redis_text(url: str) -> bytes:
    """Every key and value of the Redis at ``url``, as read back."""
    redis = Redis.from_url(url)
    parts: list[bytes] = []
    try:
        async for key in redis.scan_iter(count=1000):
            parts.append(key)
            kind = (await redis.type(key)).decode()
            if kind == "string":
                parts.append(await redis.get(key) or b"")
            elif kind == "hash":
                for k, v in (await redis.hgetall(key)).items():
                    parts += [k, v]
            elif kind == "list":
                parts += await redis.lrange(key, 0, -1)
            elif kind == "set":
                parts += list(await redis.smembers(key))
            elif kind == "zset":
                parts += await redis.zrange(key, 0, -1)
            elif kind == "stream":
                for _, entry in await redis.xrange(key):
                    for k, v in entry.items():
                        parts += [k, v]
    finally:
        await redis.aclose()
    return b"\n".join(parts)


async def test_workers_log_in_themselves(tmp_path: Path, redis_server: RedisServer) -> None:
    url = redis_server.url
    docs_secret = tmp_path / "docs-secret"
    docs_secret.write_text(DOCS_PASSWORD)
    async with serving() as site:
        config = _config(tmp_path, site.port)
        config.write_text(config.read_text().replace("/run/secrets/docs", str(docs_secret)))
        env = {**os.environ, "MEMBERS_USER": USER, "MEMBERS_PASS": PASSWORD, "DOCS_USER": DOCS_USER}
        workers = []
        for i in range(2):
            log = tmp_path / f"w{i}.log"
            with log.open("ab") as out:
                proc = await asyncio.create_subprocess_exec(
                    *GOSSAMER, *worker_args(url, tmp_path, i, "--log-level", "info"),
                    stdout=out, stderr=out, env=env,
                )  # fmt: skip
            STARTED.append(proc)
            workers.append(proc)
        await until_waiting([tmp_path / f"w{i}.log" for i in range(2)])
        seed = f"http://www.members.test:{site.port}/"
        submit = [
            "cluster", "submit", "--redis", url, seed, "--config", str(config), *FAST,
            "--resolve", "*.test=127.0.0.1", "--allow-domain", "members.test",
            "--allow-domain", "docs.test", "--delay", "0.4", "--per-host", "1",
            "--partitions", "64", "--quiet",
        ]  # fmt: skip
        assert await run(tmp_path / "submit.log", *submit) == 0
        await cluster_wait(url, 60)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0], worker_logs(tmp_path, 2)
        stored = await _redis_text(url)

    records = [r for i in range(2) for r in read_records(tmp_path / f"w{i}")]
    twice = [u for u, n in Counter(r["url"] for r in records).items() if n > 1]
    assert len(records) == 1 + HOSTS * PAGES + PAGES, (twice, worker_logs(tmp_path, 2))
    assert Counter(r["status"] for r in records) == {200: len(records)}
    by_worker = [
        {r["url"].split("/")[2].split(":")[0] for r in read_records(tmp_path / f"w{i}")}
        for i in range(2)
    ]
    stats = [json.loads((tmp_path / f"w{i}" / "stats.json").read_text())["auth"] for i in range(2)]
    for hosts, auth in zip(by_worker, stats, strict=True):
        if any(h.endswith("members.test") for h in hosts):
            assert auth["logins"] == 1, auth  # each worker logged in itself, once
    assert sum(a["relogins"] for a in stats) >= 1, stats  # after the session timed out
    assert site.logins == sum(a["logins"] + a["relogins"] for a in stats)
    for i in range(2):
        texts = [(tmp_path / f"w{i}.log").read_bytes(), (tmp_path / "submit.log").read_bytes()]
        texts += [p.read_bytes() for p in (tmp_path / f"w{i}").iterdir() if p.is_file()]
        for text in (*texts, stored):
            for secret in SECRETS:
                secret = secret if isinstance(secret, bytes) else secret.encode()
                assert secret not in text
    assert b"MEMBERS_PASS" in stored  # the job names the variables, never their values

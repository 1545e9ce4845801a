"""A seed's password in a cluster job (real redis-server, real site on loopback): once in the
job's ``credentials`` key and in no other key, queue entries, host names and a continuous
job's revisit states included, and still sent with every request for the seed's pages (its
revisits, the targets of its redirects and a focused job's links too), never to another
origin: as the embedded crawl sends it."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from redis.asyncio import Redis
from tests.credentials_site import (
    AT_SIGN,
    PACED_LINKS,
    PLAIN,
    SECRET,
    UNESCAPED,
    Answered,
    check_paced,
    guarded_site,
    paced_site,
    serve_on,
)
from tests.local_app import serve
from tests.redis_server import RedisServer

import gossamer
from gossamer import JobSettings, Worker
from gossamer.crawl import run_crawl
from gossamer.frontier.admission import Admission
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.frontier.redis.credentials import Credentials, credentials_key
from gossamer.settings import load_settings
from gossamer.urls import Scope

pytestmark = pytest.mark.timeout(60)

JOB = "creds"
PASSWORD = "s3cret-Pw-91"
SEED_AUTH = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
TOKEN = "glpat-t0kenAsUserName"
TOKEN_AUTH = "Basic " + base64.b64encode(f"{TOKEN}:".encode()).decode()


def site(auth: dict[str, set[str | None]]) -> Any:
    """Pages ``/`` -> ``/a``, ``/b`` -> ``/c``; ``auth`` gets each path's Authorization."""
    links = {"/": ["/a", "/b"], "/b": ["/c"]}

    async def handle(request: web.Request) -> web.Response:
        auth.setdefault(request.path, set()).add(request.headers.get("Authorization"))
        anchors = "".join(f'<a href="{href}">{href}</a>' for href in links.get(request.path, []))
        body = f"<html><head><title>{request.path}</title></head><body>{anchors}</body></html>"
        return web.Response(body=body.encode(), content_type="text/html")

    return handle


async def holding(client: Redis, secret: str) -> set[str]:
    """The keys of the Redis whose value (any type) holds ``secret``."""
    found = set()
    async for raw in client.scan_iter(count=1000):
        key = raw.decode()
        kind = (await client.type(key)).decode()
        if kind == "string":
            values: list[Any] = [await client.get(key)]
        elif kind == "list":
            values = await client.lrange(key, 0, -1)
        elif kind == "hash":
            values = [x for pair in (await client.hgetall(key)).items() for x in pair]
        elif kind == "set":
            values = list(await client.smembers(key))
        elif kind == "zset":
            values = [m for m, _ in await client.zrange(key, 0, -1, withscores=True)]
        else:  # a stream: every field of every record
            values = [str(e) for e in await client.xrange(key)]
        if any(secret.encode() in (v if isinstance(v, bytes) else str(v).encode()) for v in values):
            found.add(key)
    return found


@pytest.mark.parametrize("userinfo", [f"alice:{PASSWORD}", "alice"], ids=["password", "user"])
async def test_a_worker_learns_a_seed_s_credentials_from_its_first_claim(userinfo: str) -> None:
    """Another process admitted the seed; the worker takes its user info (a password or a
    user name alone) as a seed's once it claims one of its URLs, and admits a redirect's
    target (found on no page) on the seed's origin, not on another."""
    scope = Scope.for_seeds([], ["test"])
    config = RedisFrontierConfig(partitions=8)
    with RedisServer() as redis:
        client = Redis.from_url(redis.url)
        try:
            submitter, worker = (
                RedisFrontier(client, JOB, scope, PolitenessPolicy(), config=config)
                for _ in range(2)
            )
            seed = f"http://{userinfo}@a.test/r"
            assert (await submitter.add([Candidate(seed, seed=True)])).added == 1
            targets = [
                Candidate(f"http://{userinfo}@a.test/t", hops=1),
                Candidate(f"http://{userinfo}@b.test/t", hops=1),
            ]
            assert (await worker.add(targets)).rejected == {"userinfo": 2}  # nothing claimed
            await worker.refresh()  # finds the seed's partition filled
            assert [lease.url for lease in await worker.lease(1)] == [seed]
            result = await worker.add(targets)
            assert result.added == 1 and result.rejected == {"userinfo": 1}
            kept = {credentials_key(JOB)} if PASSWORD in userinfo else set()
            assert await holding(client, PASSWORD) == kept
        finally:
            await client.aclose()


async def test_a_forged_credential_in_redis_is_not_taken_as_a_seed_s() -> None:
    """A value of ``credentials`` that is not the authority its field masks (another host)
    is no seed's: admission does not take it."""
    with RedisServer() as redis:
        client = Redis.from_url(redis.url)
        try:
            forged = {"http://bob:***@c.test": "http://bob:pw@evil.test"}
            await client.hset(credentials_key(JOB), mapping=forged)
            admission = Admission(Scope.for_seeds([], ["test"]))
            await Credentials(client, JOB, admission).reveal([b"http://bob:***@c.test|/|/"])
            _, rejected = admission.admit([Candidate("http://bob:pw@evil.test/", hops=1)])
            assert rejected == {"userinfo": 1}
        finally:
            await client.aclose()


Seen = list[tuple[str, str, str | None]]
"""(host, path, Authorization) of each request the site was sent."""


async def crawl_both(
    tmp_path: Path, seed: tuple[str, str, str, str], **flags: Any
) -> tuple[set[tuple[str, str, str | None]], Seen, dict[str, int]]:
    """Crawl `guarded_site` from the ``seed`` (host, address, escaped and plain password) once
    embedded, then as a cluster job (one worker): what the embedded crawl sent, what the job
    sent (a set, then the requests) and what its worker turned away. The job's Redis holds
    the password (or its Authorization header) in ``credentials`` only."""
    host, address, escaped, password = seed
    expected = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    settings: dict[str, Any] = {
        "seeds": [f"http://alice:{escaped}@{host}:{{port}}/"],
        "resolve": [f"site.test={address}", f"other.test={address}"],
        "allow_domains": [host.strip("[]"), "other.test"],
        "robots": False,
        "sitemaps": False,
        "quiet": True,
        **flags,
    }
    embedded: Seen = []
    async with serve_on(address, guarded_site(embedded, expected)) as port:
        given = settings | {"seeds": [settings["seeds"][0].format(port=port)]}
        crawl = load_settings(given | {"out": tmp_path / "embedded"}, env={})
        await asyncio.wait_for(run_crawl(crawl), 20)
    seen: Seen = []
    async with serve_on(address, guarded_site(seen, expected)) as port:
        with RedisServer() as redis:
            given = settings | {"seeds": [settings["seeds"][0].format(port=port)]}
            client = Redis.from_url(redis.url)
            try:
                await gossamer.submit(redis.url, JobSettings(**given), job=JOB)
                worker = Worker(redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20)
                worker.start()
                await asyncio.wait_for(worker.wait(), 40)
                for secret in (SECRET, expected.split()[1]):
                    assert await holding(client, secret) <= {credentials_key(JOB)}, secret
            finally:
                await client.aclose()
    stats = json.loads((tmp_path / "w0" / "stats.json").read_text())
    return set(embedded), seen, stats["rejected"]


@pytest.mark.parametrize("seed", [PLAIN, AT_SIGN], ids=["plain", "at-sign"])
async def test_a_seed_s_redirects_send_its_password_on_its_origin_only(
    tmp_path: Path, seed: tuple[str, str, str, str]
) -> None:
    """``/r`` -> ``/t`` (the seed's origin) is fetched with the password; ``/away`` ->
    another origin without it; ``/away-pw``, naming the seed's user info on another origin,
    is turned away: as the embedded crawl does."""
    embedded, seen, rejected = await crawl_both(tmp_path, seed)
    expected = next(auth for _, path, auth in seen if path == "/")
    mine = {(path, auth) for host, path, auth in seen if not host.startswith("other.test")}
    assert mine == {(p, expected) for p in ("/", "/a", "/b", "/r", "/t", "/away", "/away-pw")}
    assert [r for r in seen if r[0] == "other.test"] == [("other.test", "/x", None)]
    assert rejected == {"userinfo": 1}  # /away-pw's target
    assert set(seen) == embedded


async def test_a_focused_job_sends_a_seed_s_password_with_its_links(tmp_path: Path) -> None:
    """A focused job's links of the seed's pages (scored, no source page named) keep the
    seed's password, as the embedded crawl's do."""
    embedded, seen, rejected = await crawl_both(
        tmp_path, PLAIN, focus_phrase="credentials stay with their origin"
    )
    expected = next(auth for _, path, auth in seen if path == "/")
    mine = {(path, auth) for host, path, auth in seen if not host.startswith("other.test")}
    assert mine == {(p, expected) for p in ("/", "/a", "/b", "/r", "/t", "/away", "/away-pw")}
    assert rejected == {"userinfo": 1}  # /away-pw's target
    assert set(seen) == embedded


@pytest.mark.parametrize(
    ("userinfo", "secret", "shown", "sent"),
    [(f"alice:{PASSWORD}", PASSWORD, "alice:***@", SEED_AUTH), (TOKEN, TOKEN, "***.", TOKEN_AUTH)],
    ids=["password", "token"],
)
async def test_a_seed_s_password_is_kept_in_one_key_and_sent_with_its_pages(
    tmp_path: Path, userinfo: str, secret: str, shown: str, sent: str
) -> None:
    """A seed's password, or its user name alone (a token, maybe), is in the job's
    ``credentials`` key only and is sent with each of its pages."""
    auth: dict[str, set[str | None]] = {}
    async with serve(site(auth)) as port:
        with RedisServer() as redis:
            job = JobSettings(
                seeds=[f"http://{userinfo}@site.test:{port}/"],
                resolve=["site.test=127.0.0.1"],
                robots=False,
                sitemaps=False,
                quiet=True,
                heartbeat_ttl=2.0,
            )
            client = Redis.from_url(redis.url)
            try:
                await gossamer.submit(redis.url, job, job=JOB)
                assert await holding(client, secret) == {credentials_key(JOB)}
                queued = [
                    e for k in await client.keys("*:queue") for e in await client.lrange(k, 0, -1)
                ]
                assert len(queued) == 1 and b"|/" in queued[0]  # the host by its number
                hosts = [v for k in await client.keys("*:hosts") for v in await client.hvals(k)]
                named = f"@site.test:{port}".encode()
                assert any(
                    h.startswith(f"http://{shown}".encode()) and h.endswith(named) for h in hosts
                )
                worker = Worker(redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20)
                worker.start()
                await asyncio.wait_for(worker.wait(), 45)
                assert await holding(client, secret) <= {credentials_key(JOB)}
            finally:
                await client.aclose()
    assert auth == {path: {sent} for path in ("/", "/a", "/b", "/c")}
    assert secret not in "".join(p.read_text() for p in (tmp_path / "w0").rglob("*.jsonl"))


async def test_two_seeds_of_one_host_with_tokens_of_their_own_each_send_their_own(
    tmp_path: Path,
) -> None:
    """Seeds ``TOKEN_A@host/a/`` and ``TOKEN_B@host/b/``: both masked, yet the URLs of each
    are fetched with its own token, not the one stored last."""
    auth: dict[str, set[str | None]] = {}
    links = {"/a/": ["/a/1"], "/b/": ["/b/1"]}

    async def handle(request: web.Request) -> web.Response:
        auth.setdefault(request.path, set()).add(request.headers.get("Authorization"))
        anchors = "".join(f'<a href="{href}">x</a>' for href in links.get(request.path, []))
        return web.Response(body=f"<p>{anchors}</p>".encode(), content_type="text/html")

    tokens = {"/a/": "glpat-tokenA", "/b/": "glpat-tokenB"}
    async with serve(handle) as port:
        with RedisServer() as redis:
            seeds = [f"http://{token}@site.test:{port}{path}" for path, token in tokens.items()]
            job = JobSettings(
                seeds=seeds, resolve=["site.test=127.0.0.1"], robots=False, sitemaps=False
            )
            await gossamer.submit(redis.url, job, job=JOB)
            worker = Worker(redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20)
            worker.start()
            await asyncio.wait_for(worker.wait(), 45)
    sent = {p: "Basic " + base64.b64encode(f"{t}:".encode()).decode() for p, t in tokens.items()}
    assert auth == {path: {sent[path[:3]]} for path in ("/a/", "/a/1", "/b/", "/b/1")}


@pytest.mark.parametrize(
    ("users", "by", "delay", "per_host", "workers"),
    [
        (("tokA", "tokB"), "host", 0.3, 2, 1),
        (("tokA", "tokB"), "url", 0.3, 2, 1),
        (("a:pa", "b:pb"), "host", 0.3, 2, 1),
        (("tokA", "tokB"), "host", 0.0, 1, 1),
        (("tokA", "tokB"), "url", -0.3, 2, 2),
    ],
    ids=["tokens", "tokens-by-url", "passwords", "one-slot", "crawl-delay-two-workers-by-url"],
)
async def test_one_host_s_seeds_with_credentials_of_their_own_share_its_pace(
    tmp_path: Path,
    users: tuple[str, str],
    by: str,
    delay: float,
    per_host: int,
    workers: int,
) -> None:
    """Seeds ``tokA@host/`` and ``tokB@host/x`` (or two user:password pairs): one host, one
    partition, one robots.txt (a worker's, by URL), one pace (``--delay``, or robots.txt's
    Crawl-delay for ``delay`` below 0) and one slot (``--per-host``) for the requests of both,
    each sent with its own seed's credentials."""
    answered: Answered = []
    async with serve(paced_site(answered, hold=0.05, crawl_delay=max(-delay, 0))) as port:
        with RedisServer() as redis:
            seeds = [
                f"http://{users[0]}@127.0.0.1:{port}/",
                f"http://{users[1]}@127.0.0.1:{port}/x",
            ]
            job = JobSettings(
                seeds=seeds,
                sitemaps=False,
                delay=max(delay, 0),
                per_host=per_host,
                partition_by=by,
            )
            client = Redis.from_url(redis.url)
            try:
                await gossamer.submit(redis.url, job, job=JOB)
                if by == "host":  # both seeds queued in the host's partition
                    queues = [(k, await client.llen(k)) for k in await client.keys("*:queue")]
                    assert [n for _, n in queues] == [2], queues
            finally:
                await client.aclose()
            crew = [
                Worker(redis.url, job=JOB, name=f"w{i}", out=tmp_path / f"w{i}", job_timeout=20)
                for i in range(workers)
            ]
            for worker in crew:
                worker.start()
            await asyncio.wait_for(asyncio.gather(*(worker.wait() for worker in crew)), 45)
    check_paced(answered, abs(delay))
    user = {"/": users[0], "/x": users[1]}
    sent = {path: name for _, _, path, name in answered}
    assert sent == {"/robots.txt": None} | {
        page: user[seed].partition(":")[0] for seed in user for page in (seed, *PACED_LINKS[seed])
    }
    robots = [path for _, _, path, _ in answered if path == "/robots.txt"]
    assert len(answered) == len(sent) - 1 + len(robots) and 1 <= len(robots) <= workers


@pytest.mark.parametrize(("host", "address", "escaped", "password"), [PLAIN, AT_SIGN, UNESCAPED])
async def test_a_continuous_job_keeps_the_seed_s_password_out_of_its_revisit_state(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    host: str,
    address: str,
    escaped: str,
    password: str,
) -> None:
    """Redis holds the password in ``credentials`` only, through revisits, 304s, duplicates
    found, redirects on the seed's origin and to another; every revisit sends it (a redirect's
    target's too), the other origin never gets it; no log line or file of the worker holds it
    or its Authorization header."""
    caplog.set_level(logging.DEBUG)
    expected = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    seen: list[tuple[str, str, str | None]] = []
    async with serve_on(address, guarded_site(seen, expected)) as port:
        with RedisServer() as redis:
            job = JobSettings(
                seeds=[f"http://alice:{escaped}@{host}:{port}/"],
                resolve=[f"site.test={address}", f"other.test={address}"],
                allow_domains=[host.strip("[]"), "other.test"],
                robots=False,
                sitemap=[f"http://{host}:{port}/sitemap.xml"],
                quiet=True,
                heartbeat_ttl=2.0,
                recrawl=True,
                revisit_initial=1,
                revisit_min=1,
                revisit_max=1,
                max_duration=4,
                delay=0.05,
                partitions=8,
                warc=True,
            )
            client = Redis.from_url(redis.url)
            try:
                await gossamer.submit(redis.url, job, job=JOB)
                worker = Worker(redis.url, job=JOB, name="w0", out=tmp_path / "w0", job_timeout=20)
                worker.start()
                await asyncio.wait_for(worker.wait(), 45)
                assert [k async for k in client.scan_iter(match="*:revisits")], "kept states"
                for secret in (SECRET, expected.split()[1]):
                    assert await holding(client, secret) <= {credentials_key(JOB)}, secret
                    assert not [k async for k in client.scan_iter(match=f"*{secret}*")]
            finally:
                await client.aclose()
    mine = [(path, auth) for name, path, auth in seen if not name.startswith("other.test")]
    for path in ("/", "/a", "/b", "/t"):  # /t: the target of /r's redirect
        sent = [auth for p, auth in mine if p == path]
        assert sent == [expected] * len(sent) and len(sent) >= 2, (path, sent)  # revisited
    away = [auth for name, _, auth in seen if name.startswith("other.test")]
    assert away and set(away) == {None}, away  # the redirect followed, no password sent
    assert len([path for _, path, _ in seen if path == "/sitemap.xml"]) >= 2  # read again
    for secret in (SECRET, expected.split()[1]):
        assert not [r.getMessage() for r in caplog.records if secret in r.getMessage()]
        files = [p for p in (tmp_path / "w0").rglob("*") if p.is_file()]
        assert [p.name for p in files if secret.encode() in p.read_bytes()] == [], secret

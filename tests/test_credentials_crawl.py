"""A seed's user name and password in a whole crawl of a real server on loopback: sent to its
pages, shown as ``***`` in every record and archive, and never replaced by the ones a page
names (a canonical URL with credentials of its own)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.content_site import records_by_path
from tests.credentials_site import PACED_LINKS, Answered, check_paced, paced_site
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

PASSWORD = "s3cretpw"
SEED_AUTH = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
TOKEN = "ghp_t0kenAsUserName"
TOKEN_AUTH = "Basic " + base64.b64encode(f"{TOKEN}:".encode()).decode()
PAGE_AUTH = "Basic " + base64.b64encode(b"user:hunter2").decode()
TEXT = "Pages behind a password hold text the crawl keeps like any other page's. " * 3
CANONICAL = {
    "/": "http://user:hunter2@site.test:{port}/claimed",  # a page's own credentials
    "/copy": "/main",  # relative: keeps the page's (the seed's) credentials
}


def site(auth: dict[str, set[str | None]]) -> Any:
    """A site whose pages name the canonical URLs of `CANONICAL`; ``auth`` gets the
    ``Authorization`` header each path was fetched with."""

    async def handle(request: web.Request) -> web.Response:
        path, port = request.path, request.url.port
        auth.setdefault(path, set()).add(request.headers.get("Authorization"))
        canonical = CANONICAL.get(path)
        head = "" if canonical is None else f'<link rel="canonical" href="{canonical}">'
        links = '<a href="/copy">copy</a><a href="/other">other</a>' if path == "/" else ""
        html = f"<html><head><title>{path}</title>{head.format(port=port)}</head>"
        body = f"{html}<body><p>{TEXT}</p>{links}</body></html>"
        return web.Response(body=body.encode(), content_type="text/html")

    return handle


async def crawl(out: Path, auth: dict[str, set[str | None]], **flags: Any) -> dict[str, Any]:
    async with serve(site(auth)) as port:
        await run(out, port, **flags)
    return records_by_path(out)


async def run(out: Path, port: int, resume: bool = False, **flags: Any) -> None:
    """Crawl from the seed with a password (none with ``resume``: crawl.db's)."""
    settings = {
        "seeds": [] if resume else [f"http://alice:{PASSWORD}@site.test:{port}/"],
        **({"seeds": flags.pop("seeds")} if "seeds" in flags else {}),
        "resume": resume,
        "out": out,
        "resolve": ["site.test=127.0.0.1"],
        "robots": False,
        "quiet": True,
        "warc": True,
    }
    await asyncio.wait_for(run_crawl(load_settings(settings | flags, env={})), 30)


def stored(out: Path, *tables: str) -> str:
    """The rows of ``tables`` of out/crawl.db, as text."""
    with sqlite3.connect(out / "crawl.db") as db:
        return "\n".join(str(row) for t in tables for row in db.execute(f"SELECT * FROM {t}"))


def archived(out: Path) -> bytes:
    return b"".join(gzip.decompress(path.read_bytes()) for path in (out / "warc").iterdir())


async def test_a_seed_s_password_is_sent_and_never_stored_in_clear(tmp_path: Path) -> None:
    auth: dict[str, set[str | None]] = {}
    out = tmp_path / "out"
    records = await crawl(out, auth, canonical="follow")
    assert auth["/"] == auth["/copy"] == auth["/main"] == {SEED_AUTH}
    assert records["/copy"]["canonical"].startswith("http://alice:***@site.test:")
    assert "http://alice:***@site.test:" in records["/other"]["url"]
    assert PASSWORD not in (out / "pages.jsonl").read_text()
    assert PASSWORD not in stored(out, "pages", "digests", "urls")
    assert "http://alice:***@site.test:" in stored(out, "urls")
    assert (out / "crawl.db").stat().st_mode & 0o077 == 0  # its meta keeps the password
    warc = archived(out)
    assert PASSWORD.encode() not in warc and b"alice" not in warc
    assert b"WARC-Target-URI: http://site.test:" in warc  # the URI requested
    assert b"Authorization: ***" in warc  # the credential sent, redacted


async def test_a_seed_s_token_as_its_user_name_is_sent_and_never_stored_in_clear(
    tmp_path: Path,
) -> None:
    """A user name alone (``http://TOKEN@host/``, as many services take a token) is sent as
    the seed's user info and kept out of every output as a password is."""
    auth: dict[str, set[str | None]] = {}
    out = tmp_path / "out"
    async with serve(site(auth)) as port:
        await run(out, port, seeds=[f"http://{TOKEN}@site.test:{port}/"], canonical="follow")
    records = records_by_path(out)
    assert auth["/"] == auth["/copy"] == auth["/main"] == {TOKEN_AUTH}
    assert records["/copy"]["canonical"].startswith("http://***@site.test:")
    assert records["/other"]["url"].startswith("http://***@site.test:")
    assert TOKEN not in (out / "pages.jsonl").read_text()
    assert TOKEN not in stored(out, "pages", "digests", "urls")
    assert "http://***." in stored(out, "urls")  # tagged: see test_two_tokens_of_one_host
    assert TOKEN in stored(out, "meta")  # for --resume, crawl.db readable by its owner only
    assert (out / "crawl.db").stat().st_mode & 0o077 == 0
    assert TOKEN.encode() not in archived(out)


async def test_a_duplicate_names_the_first_page_whose_path_holds_an_at_sign_whole(
    tmp_path: Path,
) -> None:
    """The content digests' index keeps a page's URL with its password masked in the
    authority only: a path's ``@`` (``/@home``) is the path's, not the end of user info."""

    async def handle(request: web.Request) -> web.Response:
        links = '<a href="/copy">copy</a>' if request.path == "/@home" else ""
        body = f"<html><head><title>t</title></head><body><p>{TEXT}</p>{links}</body></html>"
        return web.Response(body=body.encode(), content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        await run(out, port, seeds=[f"http://alice:{PASSWORD}@site.test:{port}/@home"])
        first = f"http://alice:***@site.test:{port}/@home"
    records = records_by_path(out)
    assert records["/@home"]["url"] == first
    assert records["/copy"]["duplicate_of"] == first
    assert PASSWORD not in stored(out, "digests")


async def test_a_token_stays_out_of_the_log_when_the_path_holds_a_colon_and_an_at_sign(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A seed's user name alone before a port and a path with an ``@`` (``TOKEN@host:PORT/@me``):
    the log's messages mask the token, not the port as a password (``TOKEN@host:***@me``)."""

    async def handle(request: web.Request) -> web.Response:
        if request.path != "/@home":
            raise web.HTTPNotFound()
        head = '<link rel="canonical" href="/@gone">'
        body = f"<html><head><title>t</title>{head}</head><body><p>{TEXT}</p></body></html>"
        return web.Response(body=body.encode(), content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        seed = f"http://{TOKEN}@site.test:{port}/@home"
        await run(out, port, seeds=[seed], canonical="follow")
    log = caplog.text + (out / "crawl.log").read_text()
    assert f"canonical URL http://***@site.test:{port}/@gone failed" in log  # and names /@home
    assert TOKEN not in log


async def test_two_tokens_of_one_host_each_go_with_their_own_seed_s_urls_after_resume(
    tmp_path: Path,
) -> None:
    """Seeds ``TOKEN_A@host/a/`` and ``TOKEN_B@host/b/``, stopped and resumed (given no seed,
    then both again): crawl.db keeps their URLs apart, each fetched with its own token (the
    URLs of one were fetched with the token stored last, or given first on resume)."""
    auth: dict[str, set[str | None]] = {}
    links = {"/a/": ["/a/1", "/a/2"], "/b/": ["/b/1", "/b/2"]}

    async def handle(request: web.Request) -> web.Response:
        auth.setdefault(request.path, set()).add(request.headers.get("Authorization"))
        anchors = "".join(f'<a href="{href}">x</a>' for href in links.get(request.path, []))
        return web.Response(body=f"<p>{TEXT}{request.path}{anchors}</p>", content_type="text/html")

    tokens = {"/a/": "ghp_tokenA", "/b/": "ghp_tokenB"}
    sent = {p: "Basic " + base64.b64encode(f"{t}:".encode()).decode() for p, t in tokens.items()}
    out = tmp_path / "out"
    async with serve(handle) as port:
        seeds = [f"http://{token}@site.test:{port}{path}" for path, token in tokens.items()]
        await run(out, port, seeds=seeds, max_pages=2, concurrency=1)
        assert set(auth) == set(tokens)  # the first one's links queued
        await run(out, port, resume=True, max_pages=3, concurrency=1)  # one of them
        queued = next(path[:3] for path in auth if len(path) > 3)
        given = sorted(seeds, key=lambda seed: queued in seed)  # the other seed's first
        await run(out, port, resume=True, seeds=given)  # the other link
    assert len(auth) == 4 and all(auth[path] == {sent[path[:3]]} for path in auth), auth
    assert not any(token in stored(out, "urls") for token in tokens.values())


@pytest.mark.parametrize(
    ("users", "delay", "per_host"),
    [(("tokA", "tokB"), 0.3, 2), (("a:pa", "b:pb"), 0.3, 2), (("tokA", "tokB"), 0.0, 1)],
    ids=["tokens", "passwords", "one-slot"],
)
async def test_one_host_s_seeds_with_credentials_of_their_own_share_its_pace(
    tmp_path: Path, users: tuple[str, str], delay: float, per_host: int
) -> None:
    """Seeds ``tokA@host/`` and ``tokB@host/x`` (or two user:password pairs): one robots.txt,
    one pace (``--delay``) and one slot (``--per-host``) for the requests of both, each sent
    with its own seed's credentials (as a cluster job does)."""
    answered: Answered = []
    async with serve(paced_site(answered, hold=0.05)) as port:
        seeds = [f"http://{users[0]}@127.0.0.1:{port}/", f"http://{users[1]}@127.0.0.1:{port}/x"]
        flags = {"delay": delay, "per_host": per_host, "robots": True, "sitemaps": False}
        await run(tmp_path / "out", port, seeds=seeds, **flags)
    check_paced(answered, delay)
    user = {"/": users[0], "/x": users[1]}
    sent = {path: name for _, _, path, name in answered}
    assert sent == {"/robots.txt": None} | {
        page: user[seed].partition(":")[0] for seed in user for page in (seed, *PACED_LINKS[seed])
    }
    assert len(answered) == len(sent)  # robots.txt fetched once


async def test_a_canonical_url_of_a_seed_page_sends_no_credentials_of_its_own(
    tmp_path: Path,
) -> None:
    auth: dict[str, set[str | None]] = {}
    records = await crawl(tmp_path / "out", auth, canonical="follow")
    assert "/claimed" not in auth and PAGE_AUTH not in set().union(*auth.values())
    assert records["/"]["canonical"].startswith("http://user:***@site.test:")
    assert "hunter2" not in (tmp_path / "out" / "pages.jsonl").read_text()


async def test_a_resumed_crawl_sends_the_seed_s_password_it_did_not_store_with_the_urls(
    tmp_path: Path,
) -> None:
    out, auth = tmp_path / "out", dict[str, set[str | None]]()
    async with serve(site(auth)) as port:
        await run(out, port, max_pages=1)
        assert set(auth) == {"/"} and "/copy" in stored(out, "urls")
        assert PASSWORD not in stored(out, "urls")
        auth.clear()
        await run(out, port, resume=True)  # no seed given: crawl.db's
    assert auth["/copy"] == auth["/other"] == {SEED_AUTH}

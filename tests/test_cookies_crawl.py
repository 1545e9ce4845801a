"""Whole crawls with the cookie jar: a site that hands out a session cookie keeps one session
for the crawl, --resume continues it (crawl.db holds the jar), --cookies off sends none, and
the cookies of the site never reach another host of the crawl: not through a public suffix
(``co.uk``, ``github.io``) the crawl allows, nor by crowding out its session with many hosts;
nor can a sibling host's cookies make another host's requests too big for its server, or
reach its robots.txt."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.cli import main
from gossamer.crawl import run_crawl
from gossamer.fetch.cookies import MAX_HEADER_BYTES, MAX_PER_DOMAIN
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

PAGES = 6


@dataclass
class Site:
    """Pages link to the next; a visitor without the session cookie gets a new session."""

    port: int = 0
    sessions: int = 0
    cookies: dict[str, list[str | None]] = field(default_factory=dict)
    robots: list[str | None] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        if request.path == "/robots.txt":
            self.robots.append(request.headers.get("Cookie"))
            return web.Response(status=404)
        self.cookies.setdefault(host, []).append(request.headers.get("Cookie"))
        n = int(request.path.strip("/") or 0)
        links = f'<a href="/{n + 1}">next</a>' if n + 1 < PAGES else ""
        if host == "www.shop.test" and n == 0:
            links += f'<a href="http://other.test:{self.port}/">other</a>'
        response = web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")
        if host == "www.shop.test" and "sid" not in request.cookies:
            self.sessions += 1
            response.set_cookie("sid", f"s{self.sessions}", path="/", max_age=3600)
        return response


@asynccontextmanager
async def serving() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.port = runner.addresses[0][1]
    try:
        yield site
    finally:
        await runner.cleanup()


async def crawl(out: Path, site: Site, **flags: Any) -> CrawlStats:
    base = {
        "seeds": [f"http://www.shop.test:{site.port}/"],
        "allow_domains": ["other.test"],
        "out": out,
        "resolve": ["www.shop.test=127.0.0.1", "other.test=127.0.0.1"],
        "quiet": True,
        "concurrency": 1,
    }
    return await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), 30)


async def test_one_session_for_the_crawl_and_resume_continues_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serving() as site:
        stats = await crawl(out, site, max_pages=2)
        assert stats.pages == 2 and site.sessions == 1
        db = out / "crawl.db"
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT domain, name, value, host_only FROM cookies").fetchall()
        assert rows == [("www.shop.test", "sid", "s1", 1)]
        stats = await crawl(out, site, resume=True)
        assert stats.pages == 2 * PAGES  # both hosts
        assert site.sessions == 1  # the stored session went on
    shop = site.cookies["www.shop.test"]
    assert shop[0] is None  # the page that set it
    assert shop[1:] and all(c == "sid=s1" for c in shop[1:])
    assert set(site.cookies["other.test"]) == {None}  # another host never gets it
    assert len(site.robots) == 3 and set(site.robots) == {None}  # no robots.txt gets one


async def test_cookies_off_sends_none(tmp_path: Path) -> None:
    async with serving() as site:
        stats = await crawl(tmp_path / "out", site, cookies="off", max_pages=3)
        assert stats.pages == 3 and site.sessions == 3
    assert set(site.cookies["www.shop.test"]) == {None}


def test_cookies_off_with_a_form_login_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        '[[auth]]\ndomain = "a.test"\ntype = "form"\nlogin_url = "http://a.test/login"\n'
        'username_env = "U"\npassword_env = "P"\n'
    )
    argv = ["crawl", "http://a.test/", "--config", str(config), "--cookies", "off"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "type form needs --cookies on or login-only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["crawl", "http://a.test/", "--cookies", "sometimes"])
    assert exited.value.code == 2


@dataclass
class Sites:
    """Many hosts on one port: a page of a ``victim.`` host only records what it was sent;
    any other sets the cookies ``set_cookies`` gives for its host and links to ``links``."""

    set_cookies: Callable[[str], list[str]]
    links: list[str] = field(default_factory=list)
    sent: dict[str, list[str | None]] = field(default_factory=dict)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        if request.path == "/robots.txt":
            return web.Response(status=404)
        self.sent.setdefault(host, []).append(request.headers.get("Cookie"))
        if host.startswith("victim."):
            return web.Response(text="<p>victim</p>", content_type="text/html")
        links = "".join(f'<a href="{link}">x</a>' for link in self.links)
        response = web.Response(text=f"<p>{host}</p>{links}", content_type="text/html")
        for line in self.set_cookies(host):
            response.headers.add("Set-Cookie", line)
        return response


async def crawl_sites(out: Path, seed: str, **flags: Any) -> CrawlStats:
    settings = {"seeds": [seed], "out": out, "quiet": True, "max_depth": 1} | flags
    return await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)


@pytest.mark.parametrize("suffix", ["co.uk", "github.io"])
async def test_a_cookie_for_a_public_suffix_reaches_no_other_site(
    tmp_path: Path, suffix: str
) -> None:
    sites = Sites(lambda host: [f"stolen=1; Domain={suffix}; Path=/", "own=1"])
    async with serve(sites.handle) as port:
        sites.links = [f"http://evil.{suffix}:{port}/1", f"http://victim.{suffix}:{port}/"]
        stats = await crawl_sites(
            tmp_path / "out",
            f"http://evil.{suffix}:{port}/",
            allow_domains=[suffix],
            resolve=[f"*.{suffix}=127.0.0.1"],
            concurrency=1,
        )
    assert stats.pages == 3
    assert sites.sent[f"victim.{suffix}"] == [None]
    assert sites.sent[f"evil.{suffix}"] == [None, "own=1"]  # its own cookie it gets back


async def test_many_hosts_of_one_site_do_not_crowd_out_another_sites_session(
    tmp_path: Path,
) -> None:
    farm = [f"c{j}=v; Max-Age=3600" for j in range(90)]
    sites = Sites(lambda host: ["sid=s1; Max-Age=3600"] if host == "www.shop.test" else farm)
    async with serve(sites.handle) as port:
        # 36 hosts of farm.test set 3,240 cookies in all: more than the jar holds
        sites.links = [f"http://h{i}.farm.test:{port}/" for i in range(36)]
        stats = await crawl_sites(
            tmp_path / "out",
            f"http://www.shop.test:{port}/",
            allow_domains=["farm.test"],
            resolve=["www.shop.test=127.0.0.1", "*.farm.test=127.0.0.1"],
        )
    assert stats.pages == 37
    with sqlite3.connect(tmp_path / "out" / "crawl.db") as conn:
        rows = conn.execute("SELECT domain, name FROM cookies").fetchall()
    assert ("www.shop.test", "sid") in rows  # its session outlived the farm's cookies
    assert len(rows) == 1 + MAX_PER_DOMAIN  # farm.test kept its 200 most recently set


async def test_a_sibling_hosts_cookies_neither_bloat_requests_nor_hide_robots_txt(
    tmp_path: Path,
) -> None:
    """evil.example.test sets 200 cookies of 3.9 KB for all of example.test, half of them
    for robots.txt only (781 KB a request, which the server answers 400 as nginx does):
    www's pages get a bounded Cookie header, its robots.txt none, and its Disallow holds."""
    sent: list[tuple[str, str, str | None]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        sent.append((host, request.path, request.headers.get("Cookie")))
        if host == "www.example.test":
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nDisallow: /private\n")
            return web.Response(text='<a href="/private/secret">s</a>', content_type="text/html")
        if request.path == "/robots.txt":
            return web.Response(status=404)
        page = int(request.path.strip("/") or 0)
        link = "/1" if page == 0 else f"http://www.example.test:{request.url.port}/"
        response = web.Response(text=f'<a href="{link}">next</a>', content_type="text/html")
        path = "/robots.txt" if page == 0 else "/"
        for i in range(100):
            line = f"c{page}_{i}={'v' * 3900}; Domain=example.test; Path={path}"
            response.headers.add("Set-Cookie", line)
        return response

    async with serve(handle) as port:  # aiohttp refuses a header line past 8190 bytes: 400
        stats = await crawl_sites(
            tmp_path / "out",
            f"http://evil.example.test:{port}/",
            allow_domains=["example.test"],
            resolve=["*.example.test=127.0.0.1"],
            max_depth=3,
            concurrency=1,
        )
    assert stats.robots_blocked == 1 and stats.ok == 3  # /private/secret never asked
    www = [(path, cookie) for host, path, cookie in sent if host == "www.example.test"]
    assert [path for path, _ in www] == ["/robots.txt", "/"]
    assert www[0][1] is None  # robots.txt carries no cookie
    page_cookie = www[1][1] or ""
    assert 3900 < len(page_cookie) <= MAX_HEADER_BYTES
    assert all(len(cookie or "") <= MAX_HEADER_BYTES for _, _, cookie in sent)

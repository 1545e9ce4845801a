"""[[auth]] settings and whole crawls that log in: clear errors, secrets from the environment
or files, the form session continued by --resume (cookies in crawl.db), the OAuth token cache
shared by two crawls, and no secret in records, stats or logs."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gossamer.cli import main
from gossamer.crawl import auth_logins, run_crawl
from gossamer.settings import (
    JobSettings,
    SettingsError,
    load_model,
    load_settings,
    settings_from_json,
    settings_to_json,
)
from gossamer.stats import CrawlStats

USER, PASSWORD = "bob", "form-pass-987"
CLIENT, CLIENT_SECRET = "crawler", "client-secret-654"
PAGES = 6


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "crawl.toml"
    path.write_text(text)
    return path


def test_auth_tables_beside_crawl_or_top_level(tmp_path: Path) -> None:
    tables = (
        '[[auth]]\ndomain = "Intranet.Example.org"\ntype = "basic"\n'
        'username_env = "INTRANET_USER"\npassword_file = "/run/secrets/pass"\n'
        '[[auth]]\ndomain = "api.example.org"\ntype = "bearer"\ntoken_env = "API_TOKEN"\n'
    )
    for text in (tables, "[crawl]\nconcurrency = 4\n" + tables):
        settings = load_settings({}, config=_write(tmp_path, text), env={})
        assert [a.domain for a in settings.auth] == ["intranet.example.org", "api.example.org"]
        assert settings.auth[0].password_file == Path("/run/secrets/pass")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('type = "basic"\nusername_env = "U"', "needs password_env or password_file"),
        ('type = "basic"\nusername_env = "U"\npassword_env = "P"\npassword_file = "f"', "not both"),
        ('type = "bearer"', "needs token_env"),
        ('type = "cookies"', "needs cookies_file"),
        ('type = "form"\nusername_env = "U"\npassword_env = "P"', "needs login_url"),
        ('type = "oauth2"\nclient_id_env = "I"\nclient_secret_env = "S"', "needs token_url"),
        ('type = "digest"', "'auth.0.type'"),
        ('type = "bearer"\ntoken_env = "T"\npassword = "inline"', "'auth.0.password'"),
    ],
)
def test_bad_auth_tables_name_the_field(tmp_path: Path, table: str, message: str) -> None:
    config = _write(tmp_path, f'[[auth]]\ndomain = "a.test"\n{table}\n')
    with pytest.raises(SettingsError, match=message):
        load_settings({}, config=config, env={})


def test_bad_domain_and_duplicate_domains(tmp_path: Path) -> None:
    table = '[[auth]]\ndomain = "{}"\ntype = "bearer"\ntoken_env = "T"\n'
    with pytest.raises(SettingsError, match="not a host name"):
        load_settings({}, config=_write(tmp_path, table.format("https://a.test/")), env={})
    twice = table.format("a.test") + table.format("A.test")
    with pytest.raises(SettingsError, match=r"two \[\[auth\]\] tables for a\.test"):
        load_settings({}, config=_write(tmp_path, twice), env={})


@pytest.mark.parametrize(
    ("domain", "login_url", "written", "origin"),
    [
        ("a.test", None, "a.test", ("https", "a.test", 443)),
        ("HTTPS://A.test:443", None, "https://a.test", ("https", "a.test", 443)),
        ("http://a.test:8080", None, "http://a.test:8080", ("http", "a.test", 8080)),
        ("http://a.test:80", None, "http://a.test", ("http", "a.test", 80)),
        ("a.test", "http://www.a.test:8080/login", "a.test", ("http", "a.test", 8080)),
        ("a.test", "http://sso.b.test/login", "a.test", ("https", "a.test", 443)),
        ("https://a.test", "http://a.test/login", "https://a.test", ("https", "a.test", 443)),
    ],
)
def test_an_auth_domain_names_its_origin(
    domain: str, login_url: str | None, written: str, origin: tuple[str, str, int]
) -> None:
    table: dict[str, Any] = {"domain": domain, "type": "form", "login_hook": "m:f"}
    if login_url is not None:
        table["login_url"] = login_url
    [auth] = load_settings({"auth": [table]}, env={}).auth
    assert (auth.domain, auth.origin()) == (written, origin)


@pytest.mark.parametrize(
    "domain", ["https://a.test/", "ftp://a.test", "http://a.test:70000", "a.test:8080", "http://"]
)
def test_an_auth_origin_has_no_path_and_a_known_scheme(domain: str) -> None:
    table = {"domain": domain, "type": "bearer", "token_env": "T"}
    with pytest.raises(SettingsError, match=r"'auth\.0\.domain'"):
        load_settings({"auth": [table]}, env={})


def test_secrets_from_environment_and_files(tmp_path: Path) -> None:
    (tmp_path / "pass").write_text(PASSWORD + "\n")
    text = (
        f'[[auth]]\ndomain = "a.test"\ntype = "basic"\nusername_env = "A_USER"\n'
        f'password_file = "{tmp_path / "pass"}"\n'
    )
    settings = load_settings({}, config=_write(tmp_path, text), env={})
    [login] = auth_logins(settings, {"A_USER": USER})
    assert login.username is not None and login.username.reveal() == USER
    assert login.password is not None and login.password.reveal() == PASSWORD
    with pytest.raises(SettingsError, match="environment variable A_USER is not set"):
        auth_logins(settings, {})
    (tmp_path / "pass").unlink()
    with pytest.raises(SettingsError, match=r"'auth\.0\.password_file'"):
        auth_logins(settings, {"A_USER": USER})


def test_a_missing_secret_exits_2_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOSSAMER_TEST_PASS", raising=False)
    monkeypatch.setenv("GOSSAMER_TEST_USER", USER)
    config = _write(
        tmp_path,
        '[[auth]]\ndomain = "a.test"\ntype = "basic"\nusername_env = "GOSSAMER_TEST_USER"\n'
        'password_env = "GOSSAMER_TEST_PASS"\n',
    )
    out = tmp_path / "out"
    argv = ["crawl", "http://a.test/", "--config", str(config), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "GOSSAMER_TEST_PASS is not set" in err and USER not in err
    assert not (out / "crawl.db").exists()


@dataclass
class Site:
    """A members-only site: a form login sets a session cookie; an API wants a token."""

    port: int = 0
    sessions: set[str] = field(default_factory=set)
    logins: int = 0
    issued: int = 0
    csrf: bool = False

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if request.path == "/login" and request.method == "GET":
            response = web.Response(
                text='<form><input name="csrf" value="c-123"></form>', content_type="text/html"
            )
            response.set_cookie("pre", "p1", path="/")
            return response
        if request.path == "/login" and request.method == "POST":
            form = await request.post()
            if (form.get("user"), form.get("pass")) != (USER, PASSWORD):
                return web.Response(status=403)
            if self.csrf and (form.get("csrf"), request.cookies.get("pre")) != ("c-123", "p1"):
                return web.Response(status=403)
            self.logins += 1
            self.sessions.add(f"s{self.logins}")
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie("sid", f"s{self.logins}", path="/")
            return response
        if request.path == "/token" and request.method == "POST":
            self.issued += 1
            return web.json_response({"access_token": f"t{self.issued}", "expires_in": 3600})
        if request.host.startswith("api."):
            if not request.headers.get("Authorization", "").startswith("Bearer t"):
                return web.Response(status=401)
        elif request.cookies.get("sid") not in self.sessions:
            return web.Response(status=302, headers={"Location": "/login"})
        n = int(request.path.strip("/") or 0)
        link = f'<a href="/{n + 1}">next</a>' if n + 1 < PAGES else ""
        body = f"<html><body><p>page {n}</p>{link}</body></html>"
        return web.Response(text=body, content_type="text/html")


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


async def crawl(out: Path, **flags: Any) -> CrawlStats:
    base = {
        "out": out,
        "resolve": ["intranet.test=127.0.0.1", "api.intranet.test=127.0.0.1"],
        "quiet": True,
        "retry_backoff": 0.01,
    }
    return await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), 30)


def form_auth(site: Site) -> list[dict[str, Any]]:
    return [
        {
            "domain": "intranet.test",
            "type": "form",
            "login_url": f"http://intranet.test:{site.port}/login",
            "username_field": "user",
            "password_field": "pass",
            "username_env": "GOSSAMER_TEST_USER",
            "password_env": "GOSSAMER_TEST_PASS",
        }
    ]


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOSSAMER_TEST_USER", USER)
    monkeypatch.setenv("GOSSAMER_TEST_PASS", PASSWORD)
    monkeypatch.setenv("GOSSAMER_TEST_CLIENT", CLIENT)
    monkeypatch.setenv("GOSSAMER_TEST_SECRET", CLIENT_SECRET)


@pytest.mark.usefixtures("secrets")
async def test_form_login_crawl_and_resume_continue_the_session(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serving() as site:
        seed = f"http://intranet.test:{site.port}/"
        stats = await crawl(out, seeds=[seed], auth=form_auth(site), max_pages=2)
        assert stats.pages == 2 and site.logins == 1
        assert stats.auth["logins"] == 1
        db = out / "crawl.db"
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT domain, name, value FROM cookies").fetchall()
        assert rows == [("intranet.test", "sid", "s1")]

        stats = await crawl(out, seeds=[seed], auth=form_auth(site), resume=True)
        assert stats.pages == PAGES
        assert site.logins == 1  # the stored session went on
        site.sessions.clear()  # and when it ends, the crawl logs in again
        await crawl(out / "again", seeds=[seed], auth=form_auth(site))
        assert site.logins == 2
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in records) == [200] * PAGES
    _no_secret_in(out)


@pytest.mark.usefixtures("secrets")
async def test_oauth_token_cache_serves_two_crawls(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "token.json"
    async with serving() as site:
        auth = [
            {
                "domain": f"http://api.intranet.test:{site.port}",
                "type": "oauth2",
                "token_url": f"http://intranet.test:{site.port}/token",
                "client_id_env": "GOSSAMER_TEST_CLIENT",
                "client_secret_env": "GOSSAMER_TEST_SECRET",
                "token_cache": cache,
            }
        ]
        seed = f"http://api.intranet.test:{site.port}/"
        first = await crawl(tmp_path / "one", seeds=[seed], auth=auth)
        second = await crawl(tmp_path / "two", seeds=[seed], auth=auth)
    assert first.pages == second.pages == PAGES and first.ok == PAGES
    assert site.issued == 1
    assert (first.auth["token_refreshes"], second.auth["token_refreshes"]) == (1, 0)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    _no_secret_in(tmp_path / "one")


def _no_secret_in(out: Path) -> None:
    for name in ("pages.jsonl", "stats.json"):
        text = (out / name).read_text()
        for secret in (PASSWORD, CLIENT_SECRET):
            assert secret not in text


@pytest.mark.usefixtures("secrets")
async def test_the_example_login_hook(tmp_path: Path) -> None:
    hook = Path(__file__).parents[1] / "examples" / "login_hook.py"
    async with serving() as site:
        site.csrf = True
        auth = [form_auth(site)[0] | {"login_hook": f"{hook}:login"}]
        seed = f"http://intranet.test:{site.port}/"
        stats = await crawl(tmp_path / "out", seeds=[seed], auth=auth)
    assert stats.ok == PAGES and site.logins == 1
    assert stats.auth["logins"] == 1 and stats.auth["failures"] == 0


def test_a_login_hook_that_cannot_load_exits_early(tmp_path: Path) -> None:
    settings = load_settings(
        {"auth": [{"domain": "a.test", "type": "form", "login_hook": "no_such_module_x:login"}]},
        env={},
    )
    with pytest.raises(SettingsError, match=r"'auth\.0\.login_hook'.*cannot be imported"):
        auth_logins(settings, {})


def test_a_cluster_job_stores_the_tables_and_no_secret(tmp_path: Path) -> None:
    text = (
        '[[auth]]\ndomain = "a.test"\ntype = "oauth2"\ntoken_url = "https://a.test/token"\n'
        'client_id_env = "CID"\nclient_secret_file = "/run/secrets/cs"\n'
        f'token_cache = "{tmp_path / "t.json"}"\n'
    )
    settings = load_model(JobSettings, {"seeds": ["http://a.test/"]}, _write(tmp_path, text), {})
    stored = settings_to_json(settings)
    assert CLIENT_SECRET not in stored and "/run/secrets/cs" in stored
    again = settings_from_json(JobSettings, stored)
    assert again.auth == settings.auth
    with pytest.raises(SettingsError, match=r"'auth\.0\.client_secret_file'"):
        auth_logins(again, {"CID": CLIENT})  # each worker reads the secrets itself


@dataclass
class Service:
    """Another port of a login domain: what it was sent, and a cookie it tries to plant."""

    port: int = 0
    seen: list[dict[str, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(dict(request.headers))
        response = web.Response(text="<html><body>other</body></html>", content_type="text/html")
        response.set_cookie("sid", "planted", path="/")
        return response


@asynccontextmanager
async def serving_other() -> AsyncIterator[Service]:
    service = Service()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", service.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    service.port = runner.addresses[0][1]
    try:
        yield service
    finally:
        await runner.cleanup()


@pytest.mark.usefixtures("secrets")
async def test_a_login_goes_to_its_own_scheme_and_port_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A form login's session (its origin: login_url's) reaches no other port of its domain,
    which cannot replace it either; a bare domain's token (https) never goes over http."""
    monkeypatch.setenv("GOSSAMER_TEST_TOKEN", "bearer-token-321")
    async with serving() as site, serving_other() as other:
        bearer = {
            "domain": "api.intranet.test",
            "type": "bearer",
            "token_env": "GOSSAMER_TEST_TOKEN",
        }
        seeds = [
            f"http://intranet.test:{site.port}/",
            f"http://intranet.test:{other.port}/a",
            f"http://api.intranet.test:{other.port}/b",
            f"http://intranet.test:{site.port}/1",
        ]
        stats = await crawl(
            tmp_path / "out",
            seeds=seeds,
            auth=[*form_auth(site), bearer],
            allow_ports=[site.port, other.port],
            per_host=1,
        )
    assert (stats.auth["logins"], stats.auth["relogins"], site.logins) == (1, 0, 1)
    assert stats.ok == PAGES + 2  # the session held: every members' page came
    assert len(other.seen) >= 4  # robots.txt and a page, on each host
    for headers in other.seen:
        assert "Cookie" not in headers and "Authorization" not in headers, headers


@pytest.mark.parametrize(
    ("table", "size", "message"),
    [
        ('type = "cookies"\ncookies_file = "{path}"', 17 << 20, "cookies_file.*larger than 16 MiB"),
        (
            'type = "oauth2"\ntoken_url = "https://a.test/token"\nclient_id_env = "I"\n'
            'client_secret_env = "S"\ntoken_cache = "{path}"',
            2 << 20,
            "token_cache.*larger than 1 MiB",
        ),
    ],
)
def test_a_huge_cookies_file_or_token_cache_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, size: int, message: str
) -> None:
    """A cookies file or token cache is read up to a bound (not whole: ``/dev/zero``)."""
    path = tmp_path / "huge"
    with path.open("wb") as file:
        file.truncate(size)  # sparse
    config = _write(tmp_path, '[[auth]]\ndomain = "a.test"\n' + table.format(path=path) + "\n")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("I", CLIENT)
        env.setenv("S", CLIENT_SECRET)
        argv = ["crawl", "http://a.test/", "--config", str(config), "--out", str(tmp_path / "o")]
        assert main([*argv, "--resolve", "a.test=127.0.0.1", "--max-duration", "5"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert re.search(message, line) and CLIENT_SECRET not in line

"""[[auth]] settings and whole crawls that log in: clear errors, secrets from the environment
or files, the form session continued by --resume (cookies in crawl.db), the OAuth token cache
shared by two crawls, and no secret in records, stats or logs."""

from __future__ import annotations

import asyncio
import json
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
                "domain": "api.intranet.test",
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

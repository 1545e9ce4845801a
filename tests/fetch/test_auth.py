"""Logins per domain against a real loopback server: basic, bearer, cookies.txt, form login
with re-login after the session ends, OAuth 2.0 client credentials with a file cache, and no
credential reaching another domain (redirects included)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import stat
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from gossamer.fetch.auth import (
    RELOGIN_INTERVAL,
    Authenticator,
    CookieJar,
    Login,
    LoginContext,
    Secret,
    read_cookies_txt,
)
from gossamer.fetch.cookies import MAX_HEADER_BYTES, MAX_LOGIN_HEADER_BYTES
from gossamer.fetch.http import FetchConfig, Fetcher

FAST = {"connect_timeout": 2.0, "read_timeout": 2.0, "total_timeout": 5.0}
USER, PASSWORD, TOKEN = "alice", "s3cret-pass", "tok-abc-123"
CLIENT, CLIENT_SECRET = "client-1", "client-secret-xyz"
SECRETS = (PASSWORD, TOKEN, CLIENT_SECRET, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())


@dataclass
class Server:
    """The loopback site's state: valid sessions and tokens, what it was sent."""

    sessions: set[str] = field(default_factory=set)
    tokens: dict[str, float] = field(default_factory=dict)
    logins: int = 0
    issued: int = 0
    lifetime: int = 3600
    seen: list[tuple[str, str, Mapping[str, str]]] = field(default_factory=list)


def _app(state: Server) -> web.Application:
    async def echo(request: web.Request) -> web.Response:
        state.seen.append((request.host, request.path, dict(request.headers)))
        return web.json_response(dict(request.headers))

    async def away(request: web.Request) -> web.Response:
        state.seen.append((request.host, request.path, dict(request.headers)))
        port = request.url.port
        return web.Response(status=302, headers={"Location": f"http://other.test:{port}/echo"})

    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("user") != USER or form.get("pass") != PASSWORD or form.get("extra") != "1":
            return web.Response(status=403, text="bad login")
        state.logins += 1
        sid = f"sid{state.logins}"
        state.sessions.add(sid)
        response = web.Response(status=302, headers={"Location": "/private"})
        response.set_cookie("sid", sid, path="/", httponly=True)
        return response

    async def private(request: web.Request) -> web.Response:
        state.seen.append((request.host, request.path, dict(request.headers)))
        if request.cookies.get("sid") not in state.sessions:
            return web.Response(status=302, headers={"Location": "/login"})
        body = "<html><body><p>members only</p></body></html>"
        return web.Response(text=body, content_type="text/html")

    async def backslashed(request: web.Request) -> web.Response:
        if request.cookies.get("sid") not in state.sessions:  # WHATWG: "\\login" is "/login"
            return web.Response(status=302, headers={"Location": "\\login"})
        return web.Response(text="<p>members only</p>", content_type="text/html")

    async def soft(request: web.Request) -> web.Response:
        if request.cookies.get("sid") not in state.sessions:
            return web.Response(text='<form id="login"></form>', content_type="text/html")
        return web.Response(text="<p>soft members</p>", content_type="text/html")

    async def token(request: web.Request) -> web.Response:
        expected = "Basic " + base64.b64encode(f"{CLIENT}:{CLIENT_SECRET}".encode()).decode()
        form = await request.post()
        if request.headers.get("Authorization") != expected:
            return web.json_response({"error": "invalid_client"}, status=401)
        if form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        state.issued += 1
        value = f"access-{state.issued}"
        state.tokens[value] = time.time() + state.lifetime
        return web.json_response(
            {"access_token": value, "token_type": "Bearer", "expires_in": state.lifetime}
        )

    async def api(request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        value = header.removeprefix("Bearer ")
        if state.tokens.get(value, 0) < time.time():
            return web.Response(status=401)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/echo", echo)
    app.router.add_get("/away", away)
    app.router.add_post("/login", login)
    app.router.add_get("/login", echo)
    app.router.add_get("/private", private)
    app.router.add_get("/soft", soft)
    app.router.add_get("/backslashed", backslashed)
    app.router.add_post("/token", token)
    app.router.add_get("/api", api)
    return app


@contextlib.asynccontextmanager
async def serve(state: Server) -> AsyncIterator[int]:
    runner = web.AppRunner(_app(state), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[tuple[Server, int]]:
    state = Server()
    async with serve(state) as port:
        yield state, port


class Clock:
    """Wall-clock time that a test moves on (past `RELOGIN_INTERVAL`)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def later(self) -> None:
        self.offset += RELOGIN_INTERVAL + 1


def fetcher(auth: Authenticator) -> Fetcher:
    resolve = ("intranet.test=127.0.0.1", "*.intranet.test=127.0.0.1", "other.test=127.0.0.1")
    return Fetcher(FetchConfig(resolve=resolve, **FAST), auth=auth)  # type: ignore[arg-type]


def form_login(port: int, **extra: object) -> Login:
    return Login(
        domain="intranet.test",
        kind="form",
        username=Secret(USER),
        password=Secret(PASSWORD),
        login_url=f"http://intranet.test:{port}/login",
        username_field="user",
        password_field="pass",
        fields={"extra": "1"},
        scheme="http",
        port=port,
        **extra,  # type: ignore[arg-type]
    )


def oauth_login(port: int, cache: Path, margin: float = 60.0) -> Login:
    return Login(
        domain="api.intranet.test",
        kind="oauth2",
        token_url=f"http://intranet.test:{port}/token",
        client_id=Secret(CLIENT),
        client_secret=Secret(CLIENT_SECRET),
        token_cache=cache,
        refresh_margin=margin,
        scheme="http",
        port=port,
    )


def test_a_login_covers_its_domain_and_subdomains_only() -> None:
    login = Login(domain="intranet.test", kind="bearer", token=Secret(TOKEN))
    assert login.holds("intranet.test") and login.holds("a.b.intranet.test")
    assert not login.holds("evilintranet.test") and not login.holds("intranet.test.evil")
    assert login.covers("https://a.b.intranet.test/x", "a.b.intranet.test")
    assert login.covers("https://intranet.test:443/", "intranet.test")


def test_a_login_covers_its_scheme_and_port_only() -> None:
    secure = Login(domain="intranet.test", kind="bearer", token=Secret(TOKEN))
    assert not secure.covers("http://intranet.test/", "intranet.test")  # never in clear
    assert not secure.covers("https://intranet.test:8443/", "intranet.test")
    plain = Login(domain="intranet.test", kind="bearer", scheme="http", port=8080)
    assert plain.covers("http://www.intranet.test:8080/a", "www.intranet.test")
    assert not plain.covers("http://intranet.test/", "intranet.test")
    assert not plain.covers("https://intranet.test:8080/", "intranet.test")


def test_the_jar_is_bounded() -> None:
    jar = CookieJar()
    jar.add(("a.test", "/", f"c{i}", "v", False, None) for i in range(1000))
    jar.add([("a.test", "/", "big", "v" * 5000, False, None)])
    assert len(jar) == 200  # the site's 200 most recently set
    jar.add([("a.test", "/", "c0", "new", False, None), ("a.test", "/", "c999", "", False, 1.0)])
    sent = (jar.header("http://a.test/") or "").split("; ")
    assert len(jar) == 199 and "c0=new" in sent and "c800=v" not in sent and "c801=v" in sent


def test_secrets_never_show() -> None:
    login = Login(domain="a.test", kind="basic", username=Secret(USER), password=Secret(PASSWORD))
    assert PASSWORD not in repr(login) and PASSWORD not in str(login)
    assert Secret(PASSWORD).reveal() == PASSWORD


async def test_basic_and_bearer_go_to_their_domain_and_subdomains_only(
    site: tuple[Server, int],
) -> None:
    port = site[1]
    auth = Authenticator(
        [
            Login(
                domain="intranet.test",
                kind="basic",
                username=Secret(USER),
                password=Secret(PASSWORD),
                scheme="http",
                port=port,
            ),
            Login(
                domain="deep.intranet.test",
                kind="bearer",
                token=Secret(TOKEN),
                scheme="http",
                port=port,
            ),
        ]
    )
    async with fetcher(auth) as f:
        top = await f.fetch(f"http://intranet.test:{port}/echo")
        sub = await f.fetch(f"http://www.intranet.test:{port}/echo")
        deep = await f.fetch(f"http://x.deep.intranet.test:{port}/echo")
        other = await f.fetch(f"http://other.test:{port}/echo")
        lookalike = await f.fetch(f"http://127.0.0.1:{port}/echo")
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert json.loads(top.body)["Authorization"] == basic
    assert json.loads(sub.body)["Authorization"] == basic
    assert json.loads(deep.body)["Authorization"] == f"Bearer {TOKEN}"
    assert "Authorization" not in json.loads(other.body)
    assert "Authorization" not in json.loads(lookalike.body)


async def test_a_redirect_to_another_domain_carries_no_credential(
    site: tuple[Server, int],
) -> None:
    state, port = site
    rows = [("intranet.test", "/", "sid", "cookie-value", False, None)]
    auth = Authenticator(
        [
            Login(
                domain="intranet.test", kind="bearer", token=Secret(TOKEN), scheme="http", port=port
            )
        ],
        CookieJar(rows),
    )
    async with fetcher(auth) as f:
        first = await f.fetch(f"http://intranet.test:{port}/away")
        assert first.is_redirect and first.location is not None
        assert first.location.startswith("http://other.test:")
        second = await f.fetch(first.location)
    assert second.ok
    sent = {host.split(":")[0]: headers for host, _, headers in state.seen}
    assert sent["intranet.test"]["Authorization"] == f"Bearer {TOKEN}"
    assert sent["intranet.test"]["Cookie"] == "sid=cookie-value"
    assert "Authorization" not in sent["other.test"] and "Cookie" not in sent["other.test"]


async def test_cookies_txt_within_the_domain(site: tuple[Server, int], tmp_path: Path) -> None:
    port = site[1]
    path = tmp_path / "cookies.txt"
    path.write_text(
        "# Netscape HTTP Cookie File\n"
        ".intranet.test\tTRUE\t/\tFALSE\t0\tsession\tabc\n"
        "#HttpOnly_intranet.test\tFALSE\t/echo\tFALSE\t4102444800\tlong\tdef\n"
        "intranet.test\tFALSE\t/\tTRUE\t0\tsecure\tonly-https\n"
        ".other.test\tTRUE\t/\tFALSE\t0\tforeign\tnever\n"
        "intranet.test\tFALSE\t/\tFALSE\t1000\texpired\told\n"
    )
    rows = read_cookies_txt(path, "intranet.test")
    assert {r[2] for r in rows} == {"session", "long", "secure", "expired"}
    login = Login(domain="intranet.test", kind="cookies", cookies=rows, scheme="http", port=port)
    auth = Authenticator([login])
    async with fetcher(auth) as f:
        page = await f.fetch(f"http://intranet.test:{port}/echo")
        other = await f.fetch(f"http://other.test:{port}/echo")
    assert json.loads(page.body)["Cookie"] == "long=def; session=abc"  # longer path first
    assert "Cookie" not in json.loads(other.body)
    path.write_text("intranet.test\tFALSE\t/\n")
    with pytest.raises(ValueError, match="line 1"):
        read_cookies_txt(path, "intranet.test")


async def test_a_login_domains_big_session_goes_whole_another_sites_is_bounded() -> None:
    """Three 3.9 KB cookies of a single sign-on session (11.7 KB) all reach the login domain
    (a server that takes 64 KiB headers); the same cookies of a site without a login are cut
    to `MAX_HEADER_BYTES`."""
    seen: dict[str, str | None] = {}

    async def handle(request: web.Request) -> web.Response:
        seen[request.host.split(":")[0]] = request.headers.get("Cookie")
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, max_field_size=65536)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    jar = CookieJar()
    chunks = [(f"C{i}", "v" * 3900) for i in range(3)]
    for domain in ("intranet.test", "other.test"):
        jar.add((domain, "/", name, value, False, None, True) for name, value in chunks)
    login = Login(domain="intranet.test", kind="cookies", scheme="http", port=port)
    try:
        async with fetcher(Authenticator([login], jar, cookies="on")) as f:
            for host in ("intranet.test", "other.test"):
                assert (await f.fetch(f"http://{host}:{port}/")).ok
    finally:
        await runner.cleanup()
    assert seen["intranet.test"] == "; ".join(f"{n}={v}" for n, v in chunks)
    assert seen["other.test"] == "C0=" + "v" * 3900  # C1 no longer fits
    assert len(seen["intranet.test"] or "") <= MAX_LOGIN_HEADER_BYTES
    assert len(seen["other.test"] or "") <= MAX_HEADER_BYTES


async def test_form_login_then_relogin_after_the_session_ends(
    site: tuple[Server, int], caplog: pytest.LogCaptureFixture
) -> None:
    state, port = site
    caplog.set_level(logging.DEBUG)
    changes: list[list[object]] = []
    clock = Clock()
    jar = CookieJar(on_change=lambda rows: changes.append(list(rows)), clock=clock)
    auth = Authenticator([form_login(port)], jar, clock=clock)
    async with fetcher(auth) as f:
        first = await f.fetch(f"http://intranet.test:{port}/private")
        assert first.ok and b"members only" in first.body
        assert state.logins == 1
        state.sessions.clear()  # the server ends the session
        clock.later()
        again = await f.fetch(f"http://intranet.test:{port}/private")
        assert again.ok and b"members only" in again.body
        other = await f.fetch(f"http://other.test:{port}/echo")
    assert state.logins == 2
    assert "Cookie" not in json.loads(other.body)
    stats = auth.stats()
    assert (stats.logins, stats.relogins, stats.failures) == (1, 1, 0)
    assert changes and changes[-1][0][2:4] == ("sid", "sid2")  # type: ignore[index]
    assert f.stats().requests == 4  # the logged-out answer counts as a request
    _no_secret_in(caplog.text, repr(stats))


async def test_a_redirect_to_the_login_page_is_resolved_as_links_are(
    site: tuple[Server, int],
) -> None:
    """A Location of ``\\login`` leads to ``/login`` by WHATWG rules (a browser's, and the
    crawl's for links): the page looked logged out, so it is fetched again after a login."""
    state, port = site
    clock = Clock()
    auth = Authenticator([form_login(port)], clock=clock)
    async with fetcher(auth) as f:
        assert (await f.fetch(f"http://intranet.test:{port}/backslashed")).ok
        state.sessions.clear()
        clock.later()
        again = await f.fetch(f"http://intranet.test:{port}/backslashed")
    assert again.ok and b"members only" in again.body
    assert auth.stats().relogins == 1


async def test_logged_out_selector_and_concurrent_pages_log_in_once(
    site: tuple[Server, int],
) -> None:
    state, port = site
    clock = Clock()
    auth = Authenticator([form_login(port, logged_out_selector="form#login")], clock=clock)
    async with fetcher(auth) as f:
        pages = await asyncio.gather(
            *(f.fetch(f"http://intranet.test:{port}/soft") for _ in range(5))
        )
        assert all(b"soft members" in p.body for p in pages)
        assert state.logins == 1
        state.sessions.clear()
        clock.later()
        pages = await asyncio.gather(
            *(f.fetch(f"http://intranet.test:{port}/soft") for _ in range(5))
        )
    assert all(b"soft members" in p.body for p in pages)
    assert state.logins == 2


async def test_a_failing_login_is_counted_and_the_page_kept(
    site: tuple[Server, int], caplog: pytest.LogCaptureFixture
) -> None:
    state, port = site
    login = form_login(port)
    wrong = Login(**{**login.__dict__, "password": Secret("wrong-" + PASSWORD)})
    auth = Authenticator([wrong])
    async with fetcher(auth) as f:
        page = await f.fetch(f"http://intranet.test:{port}/private")
    assert page.status == 302 and state.logins == 0
    assert auth.stats().failures == 1
    assert "login to intranet.test failed: status 403" in caplog.text
    _no_secret_in(caplog.text)


async def test_user_login_hook(site: tuple[Server, int]) -> None:
    state, port = site
    calls: list[str] = []

    async def hook(context: LoginContext) -> Mapping[str, str] | None:
        assert context.username is not None and context.password is not None
        calls.append(context.domain)
        data = {"user": context.username.reveal(), "pass": context.password.reveal(), "extra": "1"}
        async with context.session.post(
            str(context.login_url), data=data, allow_redirects=False
        ) as response:
            return {c.key: c.value for c in response.cookies.values()}

    clock = Clock()
    auth = Authenticator([form_login(port, user_login=hook)], clock=clock)
    async with fetcher(auth) as f:
        page = await f.fetch(f"http://intranet.test:{port}/private")
        state.sessions.clear()
        clock.later()
        again = await f.fetch(f"http://intranet.test:{port}/private")
    assert page.ok and again.ok
    assert calls == ["intranet.test", "intranet.test"]


async def test_oauth_token_cached_0600_shared_and_refreshed(
    site: tuple[Server, int], tmp_path: Path
) -> None:
    state, port = site
    cache = tmp_path / "tokens" / "oauth.json"
    url = f"http://api.intranet.test:{port}/api"
    auth = Authenticator([oauth_login(port, cache)])
    async with fetcher(auth) as f:
        pages = await asyncio.gather(*(f.fetch(url) for _ in range(5)))
    assert all(p.ok for p in pages)
    assert state.issued == 1
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert CLIENT_SECRET not in cache.read_text()

    # a second crawl (a new authenticator) reuses the cached token
    second = Authenticator([oauth_login(port, cache)])
    async with fetcher(second) as f:
        assert (await f.fetch(url)).ok
    assert state.issued == 1 and second.stats().token_refreshes == 0

    # the server forgets the token: a 401 renews it and the page is fetched again
    state.tokens.clear()
    async with fetcher(second) as f:
        assert (await f.fetch(url)).ok
    assert state.issued == 2 and second.stats().token_refreshes == 1

    # a token living less than the margin (30 s, 60 s) serves half its life, not one page
    state.lifetime = 30
    clock = Clock()
    third = Authenticator([oauth_login(port, cache, margin=60.0)], clock=clock)
    async with fetcher(third) as f:
        cache.unlink()
        assert all(page.ok for page in await asyncio.gather(*(f.fetch(url) for _ in range(5))))
        clock.offset = 14
        assert (await f.fetch(url)).ok
        assert state.issued == 3
        clock.offset = 16  # past half its life: renewed before use
        assert (await f.fetch(url)).ok
    assert state.issued == 4 and third.stats().token_refreshes == 2

    # and a later crawl reuses the cached one for as long
    fourth = Authenticator([oauth_login(port, cache, margin=60.0)], clock=clock)
    async with fetcher(fourth) as f:
        assert (await f.fetch(url)).ok
    assert state.issued == 4 and fourth.stats().token_refreshes == 0


async def test_oauth_bad_client_fails_without_leaking(
    site: tuple[Server, int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = site[1]
    login = oauth_login(port, tmp_path / "t.json")
    bad = Login(**{**login.__dict__, "client_secret": Secret("nope-" + CLIENT_SECRET)})
    auth = Authenticator([bad])
    async with fetcher(auth) as f:
        page = await f.fetch(f"http://api.intranet.test:{port}/api")
    assert page.status == 401
    assert auth.stats().failures == 1
    assert not (tmp_path / "t.json").exists()
    _no_secret_in(caplog.text)


def _no_secret_in(*texts: str) -> None:
    for text in texts:
        for secret in (*SECRETS, CLIENT_SECRET):
            assert secret not in text


async def test_an_archived_request_shows_no_credential(site: tuple[Server, int]) -> None:
    port = site[1]
    rows = [("intranet.test", "/", "sid", "cookie-value", False, None)]
    auth = Authenticator(
        [
            Login(
                domain="intranet.test", kind="bearer", token=Secret(TOKEN), scheme="http", port=port
            )
        ],
        CookieJar(rows),
    )
    resolve = ("intranet.test=127.0.0.1",)
    config = FetchConfig(resolve=resolve, keep_wire=True, **FAST)  # type: ignore[arg-type]
    async with Fetcher(config, auth=auth) as f:
        result = await f.fetch(f"http://intranet.test:{port}/echo")
    assert json.loads(result.body)["Authorization"] == f"Bearer {TOKEN}"
    assert result.exchange is not None
    sent = dict(result.exchange.request_headers)
    assert sent["Authorization"] == sent["Cookie"] == "***"


async def test_a_page_refused_with_a_fresh_session_costs_no_new_login(
    site: tuple[Server, int],
) -> None:
    state, port = site
    clock = Clock()
    auth = Authenticator([form_login(port, logged_out_status=frozenset({404}))], clock=clock)
    async with fetcher(auth) as f:
        first = await f.fetch(f"http://intranet.test:{port}/missing")
        second = await f.fetch(f"http://intranet.test:{port}/missing")
        assert first.status == second.status == 404
        assert state.logins == 1  # the first login, no storm of re-logins
        clock.later()
        third = await f.fetch(f"http://intranet.test:{port}/missing")
    assert third.status == 404 and state.logins == 2  # one login, then the page is kept
    assert auth.stats().relogins == 1

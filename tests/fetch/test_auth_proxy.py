"""Logins through the crawl's proxy pool: a form login, a login hook and an OAuth token
request go through the proxy (with credentials) like the pages; with no live proxy a login
is not sent at all; the proxy's password shows nowhere."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import pytest
from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.fetch.test_auth import (
    FAST,
    PASSWORD,
    USER,
    Server,
    _app,
    form_login,
    oauth_login,
)

from gossamer.fetch.auth import Authenticator, Login, LoginContext, Secret
from gossamer.fetch.cookies import CookieJar
from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.proxies import ProxyPool
from gossamer.proxyurl import parse_proxy

PROXY_PASSWORD = "pr0xy-pa55"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve_counted(state: Server, seen: list[str]) -> web.AppRunner:
    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        seen.append(f"{request.method} {request.path}")
        return await handler(request)

    app = _app(state)
    app.middlewares.append(count)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def _hook(context: LoginContext) -> Mapping[str, str] | None:
    assert context.username is not None and context.password is not None
    data = {"user": context.username.reveal(), "pass": context.password.reveal(), "extra": "1"}
    async with context.session.post(
        str(context.login_url), data=data, allow_redirects=False
    ) as response:
        return {c.key: c.value for c in response.cookies.values()}


@pytest.mark.parametrize("kind", ["form", "hook"])
async def test_logins_and_tokens_go_through_the_proxy(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    state, seen = Server(), list[str]()
    runner = await serve_counted(state, seen)
    port = runner.addresses[0][1]
    proxy = await HttpProxy(
        credentials=("carol", PROXY_PASSWORD), resolve={"*.test": "127.0.0.1"}
    ).start()
    try:
        login = form_login(port, user_login=_hook if kind == "hook" else None)
        logins: list[Login] = [login, oauth_login(port, tmp_path / "token.json")]
        auth = Authenticator(logins)
        pool = ProxyPool([parse_proxy(proxy.url)])
        check = f"http://intranet.test:{port}/echo"
        config = FetchConfig(proxy_check_url=check, **FAST)  # type: ignore[arg-type]
        async with Fetcher(config, proxies=pool, auth=auth) as f:
            await pool.check_due()
            page = await f.fetch(f"http://intranet.test:{port}/private")
            api = await f.fetch(f"http://api.intranet.test:{port}/api")
    finally:
        await proxy.stop()
        await runner.cleanup()
    assert page.ok and b"members only" in page.body and api.ok
    assert page.proxy == api.proxy == f"http://127.0.0.1:{proxy.port}"
    assert state.logins == 1 and state.issued == 1
    assert f"http://intranet.test:{port}/login" in proxy.targets
    assert f"http://intranet.test:{port}/token" in proxy.targets
    assert "POST /login" in seen and "POST /token" in seen
    assert len(seen) == proxy.requests  # the site got nothing but through the proxy
    assert PROXY_PASSWORD not in caplog.text and PASSWORD not in caplog.text
    assert USER not in caplog.text


async def test_no_live_proxy_no_login(caplog: pytest.LogCaptureFixture) -> None:
    state, seen = Server(), list[str]()
    runner = await serve_counted(state, seen)
    port = runner.addresses[0][1]
    try:
        auth = Authenticator([form_login(port)])
        pool = ProxyPool([parse_proxy(f"http://u:{PROXY_PASSWORD}@127.0.0.1:{dead_port()}")])
        check = f"http://intranet.test:{port}/echo"
        config = FetchConfig(proxy_check_url=check, **FAST)  # type: ignore[arg-type]
        async with Fetcher(config, proxies=pool, auth=auth) as f:
            await pool.check_due()
            page = await f.fetch(f"http://intranet.test:{port}/private")
    finally:
        await runner.cleanup()
    assert page.error == "no-proxy"
    assert seen == [] and state.logins == 0
    assert auth.stats().failures == 1
    assert PROXY_PASSWORD not in caplog.text


async def test_a_redirect_through_the_proxy_carries_no_credential() -> None:
    state, seen = Server(), list[str]()
    runner = await serve_counted(state, seen)
    port = runner.addresses[0][1]
    proxy = await HttpProxy(
        credentials=("carol", PROXY_PASSWORD), resolve={"*.test": "127.0.0.1"}
    ).start()
    deep = "deep.intranet.test"
    login = Login(
        domain=deep,
        kind="basic",
        username=Secret(USER),
        password=Secret(PASSWORD),
        scheme="http",
        port=port,
    )
    jar = CookieJar([(deep, "/", "sid", "deep-session", False, None, True)])
    try:
        auth = Authenticator([login], jar, cookies="on")
        pool = ProxyPool([parse_proxy(proxy.url)])
        config = FetchConfig(proxy_check_url=f"http://{deep}:{port}/echo", **FAST)  # type: ignore[arg-type]
        async with Fetcher(config, proxies=pool, auth=auth) as f:
            await pool.check_due()
            hop = await f.fetch(f"http://{deep}:{port}/away")
            assert hop.location is not None and hop.proxy is not None
            await f.fetch(hop.location)  # other.test
            await f.fetch(f"http://intranet.test:{port}/echo")  # the parent: not covered
            await f.fetch(f"http://x.{deep}:{port}/echo")  # covered by the login, not the cookie
    finally:
        await proxy.stop()
        await runner.cleanup()
    sent = {host.split(":")[0]: headers for host, _, headers in state.seen}
    assert sent[deep]["Authorization"].startswith("Basic ") and sent[deep]["Cookie"]
    for host in ("other.test", "intranet.test"):
        assert "Authorization" not in sent[host] and "Cookie" not in sent[host], host
    assert "Cookie" not in sent[f"x.{deep}"]
    assert all("Proxy-Authorization" not in headers for headers in sent.values())
    assert len(seen) == proxy.requests

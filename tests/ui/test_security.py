"""The dashboard's security with plain HTTP requests: token, Host, CSRF, headers, and the
refusal to serve beyond loopback with a generated token."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path

import aiohttp
import pytest
from tests.ui.server import Served, dashboard

from gossamer.cli import main
from gossamer.ui.security import CSRF_HEADER, Guard

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with dashboard([tmp_path]) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # A bare session: no cookie jar, no redirects followed unless asked.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


def bearer(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.guard.token}"}


async def test_no_token_or_a_wrong_one_is_401(served: Served, http: aiohttp.ClientSession) -> None:
    for path in ("/", "/api/overview", "/static/app.js", "/editor/ping"):
        async with http.get(served.base + path) as response:
            assert response.status == 401, path
            assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    wrong = {"Authorization": "Bearer " + "x" * 43}
    async with http.get(served.base + "/api/overview", headers=wrong) as response:
        assert response.status == 401
    async with http.get(served.base + "/?token=wrong", allow_redirects=False) as response:
        assert response.status == 401
    cookie = {"Cookie": f"{served.guard.cookie}=wrong"}
    async with http.get(served.base + "/api/overview", headers=cookie) as response:
        assert response.status == 401


async def test_the_token_url_sets_a_strict_cookie(
    served: Served, http: aiohttp.ClientSession
) -> None:
    async with http.get(served.login_url, allow_redirects=False) as response:
        assert response.status == 303
        assert response.headers["Location"] == "/"  # the token leaves the address bar
        cookie = response.headers["Set-Cookie"]
    # The cookie holds a session id, never the token (other local servers receive it).
    assert served.guard.token not in cookie
    match = re.match(rf"{served.guard.cookie}=([\w-]{{43}});", cookie)
    assert match, cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    headers = {"Cookie": f"{served.guard.cookie}={match[1]}"}
    async with http.get(served.base + "/api/overview", headers=headers) as response:
        assert response.status == 200
        assert (await response.json())["crawls"] == []
    token_cookie = {"Cookie": f"{served.guard.cookie}={served.guard.token}"}
    async with http.get(served.base + "/api/overview", headers=token_cookie) as response:
        assert response.status == 401  # the token is no cookie value
    post = {**headers, "Origin": served.base, CSRF_HEADER: served.guard.csrf}
    async with http.post(served.base + "/api/logout", headers=post, json={}) as response:
        assert response.status == 200
        assert f'{served.guard.cookie}=""' in response.headers["Set-Cookie"]
        assert "Max-Age=0" in response.headers["Set-Cookie"]
    async with http.get(served.base + "/api/overview", headers=headers) as response:
        assert response.status == 401  # logged out: the id is worth nothing now


async def test_headers_and_no_inline_script(served: Served, http: aiohttp.ClientSession) -> None:
    async with http.get(served.base + "/", headers=bearer(served)) as response:
        assert response.status == 200
        html = await response.text()
        headers = response.headers
    csp = headers["Content-Security-Policy"]
    for part in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'",
                 "object-src 'none'", "base-uri 'none'"):  # fmt: skip
        assert part in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert_no_inline_code(html)
    async with http.get(served.base + "/static/app.js", headers=bearer(served)) as response:
        assert response.status == 200
        assert "javascript" in response.headers["Content-Type"]
        assert response.headers["Content-Security-Policy"] == csp
    async with http.get(served.base + "/editor/ping", headers=bearer(served)) as response:
        assert response.status == 200  # the mounted sub-application: same checks, same headers
        assert response.headers["Content-Security-Policy"] == csp


class _Inline(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script":
            self._in_script = True
            if "src" not in names:
                self.problems.append("script without src")
        if tag == "style" or "style" in names:
            self.problems.append(f"inline style in <{tag}>")
        self.problems += [f"{name} on <{tag}>" for name in names if name.startswith("on")]
        self.problems += [f"javascript: in <{tag}>" for _, v in attrs if "javascript:" in (v or "")]

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.problems.append("inline script body")


def assert_no_inline_code(html: str) -> None:
    parser = _Inline()
    parser.feed(html)
    assert parser.problems == []
    assert re.search(r"<script[^>]*src=", html)


async def test_cross_site_posts_are_refused(served: Served, http: aiohttp.ClientSession) -> None:
    url = served.base + "/editor/ping"
    own = served.base
    async with http.get(served.base + "/api/session", headers=bearer(served)) as response:
        csrf = (await response.json())["csrf"]
    assert csrf == served.guard.csrf and csrf != served.guard.token
    cases = [
        ({"Origin": "http://evil.example"}, True, 403),
        ({"Origin": "null"}, True, 403),
        ({"Referer": "http://evil.example/page"}, True, 403),
        ({}, True, 403),  # neither Origin nor Referer
        ({"Origin": own}, False, 403),  # no CSRF token
        ({"Origin": own, CSRF_HEADER: "wrong"}, False, 403),
        ({"Origin": own}, True, 200),
        ({"Referer": own + "/#/job/x"}, True, 200),
    ]
    for extra, with_csrf, status in cases:
        headers = {**bearer(served), **extra}
        if with_csrf:
            headers.setdefault(CSRF_HEADER, csrf)
        async with http.post(url, headers=headers, json={}) as response:
            assert response.status == status, (extra, with_csrf)
    # Without the token even a same-origin POST with the CSRF token is refused.
    async with http.post(url, headers={"Origin": own, CSRF_HEADER: csrf}) as response:
        assert response.status == 401
    # No state changes through other methods.
    async with http.put(url, headers={**bearer(served), "Origin": own}) as response:
        assert response.status == 405


async def test_another_host_name_is_refused(served: Served, http: aiohttp.ClientSession) -> None:
    """A DNS-rebinding page reaches the server under its own name: refused."""
    headers = {**bearer(served), "Host": "rebind.example:80"}
    async with http.get(served.base + "/api/overview", headers=headers) as response:
        assert response.status == 400
    port = served.base.rsplit(":", 1)[1]
    headers = {**bearer(served), "Host": f"localhost:{port}"}
    async with http.get(served.base + "/api/overview", headers=headers) as response:
        assert response.status == 200


async def test_job_state_takes_only_known_states(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with dashboard([tmp_path], redis="redis://127.0.0.1:1/0") as served:
        headers = {**bearer(served), "Origin": served.base, CSRF_HEADER: served.guard.csrf}
        url = served.base + "/api/jobs/j/state"
        for body in ({"state": "rm -rf /"}, {"state": None}, ["paused"], {}):
            async with http.post(url, headers=headers, json=body) as response:
                assert response.status == 400, body
        async with http.post(url, headers=headers, data=b"not json") as response:
            assert response.status == 400


def test_non_loopback_bind_needs_a_token_of_the_user(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("GOSSAMER_UI_TOKEN", raising=False)
    assert main(["ui", "--bind", "0.0.0.0:0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not loopback" in err and "GOSSAMER_UI_TOKEN" in err
    monkeypatch.setenv("GOSSAMER_UI_TOKEN", "short")
    assert main(["ui", "--bind", "0.0.0.0:0"]) == 2
    assert "at least 16" in capsys.readouterr().err
    token_file = tmp_path / "token"
    token_file.write_text("x" * 10)
    assert main(["ui", "--bind", "10.1.2.3:0", "--token-file", str(token_file)]) == 2
    with token_file.open("wb") as file:
        file.truncate(64 << 20)  # sparse: a token file that is not one (a device, a dump)
    capsys.readouterr()
    assert main(["ui", "--bind", "10.1.2.3:0", "--token-file", str(token_file)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{token_file} is larger than 4 KiB")
    assert main(["ui", "--bind", "nonsense"]) == 2
    assert "is not HOST:PORT" in capsys.readouterr().err


async def test_the_command_prints_a_url_with_a_fresh_token(tmp_path: Path) -> None:
    # python -m gossamer: the package runs as the gossamer script does.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer", "ui", "--bind", "127.0.0.1:0", "--out",
        str(tmp_path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=([\w-]{40,})", line)
        assert match, line
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            async with session.get(match[1]) as response:
                assert response.status == 401
            # /healthz alone answers without the token (a container's probes), GET or HEAD.
            for method in ("GET", "HEAD"):
                async with session.request(method, match[1] + "healthz") as response:
                    assert response.status == 200
                    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
            async with session.get(match[1] + "healthz") as response:
                assert await response.text() == "ok\n"
            async with session.post(match[1] + "healthz") as response:
                assert response.status == 401
            async with session.get(match[0]) as response:  # the cookie follows the redirect
                assert response.status == 200
                assert str(response.url) == match[1]
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    assert proc.stderr is not None
    assert match[2] not in (await proc.stderr.read()).decode()  # printed once, on stdout


def test_only_a_loopback_server_checks_the_host_name() -> None:
    loopback = Guard.for_server("t" * 20, "127.0.0.1", 8077)
    assert loopback.host_ok("localhost:8077") and loopback.host_ok("127.0.0.1:8077")
    assert not loopback.host_ok("evil.example:8077") and not loopback.host_ok("127.0.0.1:80")
    # Beyond loopback the names it is reached by are unknown: the token alone decides.
    assert Guard.for_server("t" * 20, "0.0.0.0", 8077).host_ok("crawler.lan:8077")
    assert loopback.csrf != Guard.for_server("t" * 20, "127.0.0.1", 8077).csrf  # per process


async def test_public_paths_are_get_only_and_opt_in(tmp_path: Path) -> None:
    public = frozenset({"/editor/ping"})
    async with dashboard([tmp_path], public=public) as served, aiohttp.ClientSession() as http:
        async with http.get(served.base + "/editor/ping") as response:
            assert response.status == 200
            assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        origin = {"Origin": served.base}
        async with http.post(served.base + "/editor/ping", headers=origin) as response:
            assert response.status == 401
        async with http.get(served.base + "/api/overview") as response:
            assert response.status == 401


def test_redis_password_file_needs_redis_and_a_readable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    assert main(["ui", "--out", str(tmp_path), "--redis-password-file", str(empty)]) == 2
    assert "give --redis too" in capsys.readouterr().err
    args = ["ui", "--out", str(tmp_path), "--redis", "redis://127.0.0.1:1/0"]
    assert main([*args, "--redis-password-file", str(empty)]) == 2
    assert "is empty" in capsys.readouterr().err
    assert main([*args, "--redis-password-file", str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err


async def _raw_status(served: Served, head: bytes) -> bytes:
    """The status line of a request sent byte for byte (headers aiohttp's client would not
    send)."""
    port = int(served.base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        await writer.drain()
        return (await asyncio.wait_for(reader.readline(), 10)).strip()
    finally:
        writer.close()
        await writer.wait_closed()


async def test_undecodable_bytes_in_the_token_or_csrf_header_are_refused_not_a_500(
    served: Served,
) -> None:
    host = served.base.split("//")[1].encode()
    start = b"Host: " + host + b"\r\nConnection: close\r\n"
    bad_token = (
        b"GET /api/overview HTTP/1.1\r\n" + start + b"Authorization: Bearer \xff\xfe\r\n\r\n"
    )
    assert await _raw_status(served, bad_token) == b"HTTP/1.1 401 Unauthorized"
    bad_csrf = (
        b"POST /api/logout HTTP/1.1\r\n"
        + start
        + f"Authorization: Bearer {served.guard.token}\r\n".encode()
        + b"Origin: "
        + served.base.encode()
        + b"\r\n"
        + CSRF_HEADER.encode()
        + b": \xff\r\nContent-Length: 0\r\n\r\n"
    )
    assert await _raw_status(served, bad_csrf) == b"HTTP/1.1 403 Forbidden"

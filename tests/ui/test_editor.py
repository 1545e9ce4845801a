"""The rule editor's server side: the address guard of sample fetches, the sanitiser, saving
(names checked, documents that `gossamer rules check` accepts), opening, previews, and the
app's token and CSRF checks on its routes. Real servers on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from tests.ui.editor_pages import editor
from tests.ui.server import Served

from gossamer.cli import main
from gossamer.extract.rules import PROCESSORS, load_rules
from gossamer.ui.editor.documents import Rules, SamplePage, to_toml
from gossamer.ui.editor.editor import PROCESSOR_ARGUMENTS
from gossamer.ui.editor.fetching import EditorGuard, suggest_pattern
from gossamer.ui.editor.sanitize import sanitize

PAGE = """<!DOCTYPE html><html><head><title>T</title></head><body>
<nav><a href="/">Home</a></nav>
<ul><li class="item"><h2>One</h2><span class="price">1</span></li>
<li class="item"><h2>Two</h2></li></ul>
<a href="/items/2">next</a> <a href="/items/3">more</a> <a href="/other">other</a>
</body></html>"""


@asynccontextmanager
async def site() -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback site: /items/N pages; the paths asked for."""
    asked: list[str] = []

    async def item(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(text=PAGE, content_type="text/html")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow:\n")

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/{tail:.*}", item)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", asked
    finally:
        await runner.cleanup()


@asynccontextmanager
async def client(served: Served) -> AsyncIterator[Any]:
    headers = {"Authorization": f"Bearer {served.guard.token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        yield session


def post_headers(served: Served) -> dict[str, str]:
    return {"Origin": served.base, "X-CSRF-Token": served.guard.csrf}


async def post(session: Any, served: Served, path: str, body: Any) -> tuple[int, Any]:
    url = f"{served.base}/editor/api/{path}"
    async with session.post(url, json=body, headers=post_headers(served)) as response:
        return response.status, await response.json()


RULE = {
    "name": "items",
    "url": r"^http://127\.0\.0\.1:\d+/items/\d+$",
    "record": {"css": "li.item"},
    "field": [
        {"name": "title", "css": "h2", "required": True},
        {"name": "price", "css": "span.price", "process": ["int"]},
    ],
    "link": [{"allow": ["/items/"]}],
}


async def test_private_addresses_are_refused_without_the_allow_option(tmp_path: Path) -> None:
    async with site() as (base, asked), editor(tmp_path, [], ["x.test=127.0.0.1"]) as served:  # noqa: SIM117
        async with client(served) as session:
            status, body = await post(session, served, "fetch", {"url": f"{base}/items/1"})
            assert status == 403 and "--editor-allow" in body["error"]
            port = base.rsplit(":", 1)[1]
            status, body = await post(session, served, "fetch", {"url": f"http://x.test:{port}/"})
            assert status == 403 and "blocked" in body["error"]
            for url in ("http://169.254.169.254/", "file:///etc/passwd", "ftp://127.0.0.1/"):
                status, _body = await post(session, served, "fetch", {"url": url})
                assert status == 403
    assert asked == []


async def test_the_uis_own_port_is_refused_even_when_loopback_is_allowed(tmp_path: Path) -> None:
    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    app = web.Application()
    app.router.add_get("/bounce", bounce)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    other = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with editor(tmp_path, ["127.0.0.0/8", "localhost"], robots=False) as served:  # noqa: SIM117
            async with client(served) as session:
                port = served.base.rsplit(":", 1)[1]
                for url in (
                    f"{served.base}/api/overview",
                    f"http://localhost:{port}/",
                    f"{other}/bounce?to={served.base}/api/overview",
                ):
                    status, body = await post(session, served, "fetch", {"url": url})
                    assert status == 403 and "own port" in body["error"], body
    finally:
        await runner.cleanup()


async def test_fetch_preview_save_open(tmp_path: Path) -> None:
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    async with site() as (base, asked), editor(rules_dir, ["127.0.0.1"]) as served:  # noqa: SIM117
        async with client(served) as session:
            status, found = await post(session, served, "fetch", {"url": f"{base}/items/1"})
            assert status == 200
            port = base.rsplit(":", 1)[1]
            assert found["pattern"] == rf"^http://127\.0\.0\.1:{port}/items/\d+$"
            async with session.get(f"{served.base}/editor/frame/{found['id']}") as response:
                assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
                assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
                assert 'data-g-href="/items/2"' in await response.text()
            async with session.get(f"{served.base}/editor/") as response:
                assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"]
                assert response.headers["X-Frame-Options"] == "DENY"

            samples = [found["id"]]
            body = {"rule": RULE, "samples": samples, "more": 5}
            status, preview = await post(session, served, "preview", body)
            assert status == 200 and preview["problems"] == []
            rows = preview["rows"]
            assert [r["url"] for r in rows] == [f"{base}/items/{n}" for n in (1, 2, 3)]
            assert rows[0]["items"] == [
                {"title": "One", "price": 1},
                {"title": "Two", "price": None},
            ]
            assert rows[0]["links"] == [f"{base}/items/2", f"{base}/items/3"]
            bad = {**RULE, "field": [{"name": "x", "css": "h2[", "process": ["nope"]}]}
            status, preview = await post(session, served, "preview", {**body, "rule": bad})
            assert "bad CSS selector" in preview["problems"][0] and preview["rows"] == []

            for name in ("../x.toml", "a/b.toml", "/etc/x.toml", "x.txt", ".toml", "..\\x.toml"):
                save = {"document": name, "rule": RULE, "samples": samples}
                status, _body = await post(session, served, "save", save)
                assert status == 400, name
            assert not (tmp_path / "x.toml").exists()

            save = {"document": "items.toml", "rule": RULE, "samples": samples}
            status, saved = await post(session, served, "save", save)
            assert status == 200, saved
            second = {**RULE, "name": "more", "url": "/other$"}
            status, refused = await post(session, served, "save", {**save, "rule": second})
            assert status == 400 and "is read by rule 'items'" in refused["problems"][0]
            status, _ = await post(session, served, "save", {**save, "rule": second, "samples": []})
            assert status == 200
            duplicate = {**save, "document": "dup.toml"}
            status, refused = await post(session, served, "save", duplicate)
            assert status == 400 and "duplicate rule name" in refused["problems"][0]

            async with session.get(f"{served.base}/editor/api/documents/items.toml") as response:
                opened = await response.json()
            assert [r["name"] for r in opened["rules"]] == ["items", "more"]
            assert opened["rules"][0]["field"] == RULE["field"]
            sample_id = opened["samples"]["items"][0]["id"]
            async with session.get(f"{served.base}/editor/frame/{sample_id}") as response:
                assert response.status == 200
            async with session.get(f"{served.base}/editor/api/documents/..%2Fx.toml") as response:
                assert response.status == 404
            async with session.get(f"{served.base}/editor/api/info") as response:
                assert (await response.json())["documents"] == ["items.toml"]
    assert "/items/2" in asked and len(asked) == 3  # the previews fetched each page once
    rules = load_rules([rules_dir / "items.toml"])
    assert [r.name for r in rules.rules] == ["items", "more"]
    assert await asyncio.to_thread(main, ["rules", "test", str(rules_dir)]) == 0
    assert main(["rules", "check", str(rules_dir)]) == 0


async def test_posts_need_the_token_and_csrf(tmp_path: Path) -> None:
    async with editor(tmp_path, []) as served:
        url = f"{served.base}/editor/api/fetch"
        async with aiohttp.ClientSession() as session:
            async with session.post(url, json={"url": "http://x/"}) as response:
                assert response.status == 401
            async with session.get(f"{served.base}/editor/") as response:
                assert response.status == 401
        async with client(served) as session:
            async with session.post(url, json={}, headers={"Origin": served.base}) as response:
                assert response.status == 403
            evil = {**post_headers(served), "Origin": "http://evil.example"}
            async with session.post(url, json={}, headers=evil) as response:
                assert response.status == 403
            async with session.get(url) as response:
                assert response.status == 405


def test_the_sanitiser_keeps_structure_and_drops_everything_active() -> None:
    clean = sanitize(
        """<html><head><meta http-equiv=refresh content="0;url=/x"><base href="/b/">
        <style>p{color:red}</style><style>b{background:url(javascript:x)}</style>
        <link rel=stylesheet href=/s.css><script>x()</script></head>
        <body onload=x()><div class="a b" id=i data-k=v data-g-pos=1 style="color:red">
        <a href="javascript:x()" onclick="x()">j</a><a href="data:text/html,x">d</a>
        <img src=/i.png srcset="/i2.png 2x" onerror=x() alt=pic>
        <svg><script>x()</script></svg><math><mi>1</mi></math><iframe src=/f></iframe>
        <object data=/o></object><embed src=/e><form action=/f><input autofocus onfocus=x()>
        </form><p style="background:url(/t)">t</p><x-card>c</x-card><blink>b</blink>
        <template><script>x()</script></template><noscript><img src=/n></noscript>
        </div></body></html>"""
    )
    for gone in ("<script", "<svg", "<math", "<iframe", "<object", "<embed", "<meta", "<base",
                 "<link", "<template", "<noscript", "onload", "onclick", "onerror", "onfocus",
                 "javascript:", " href=", " src=", " action=", " srcset=", "url(", "<blink",
                 "data-g-pos", "data:"):  # fmt: skip
        assert gone not in clean, gone
    for kept in ('class="a b"', 'id="i"', 'data-k="v"', 'style="color:red"', "<style>p{color:red}",
                 'data-g-src="/i.png"', 'alt="pic"', "<x-card>c</x-card>b",
                 "<input", "disabled"):  # fmt: skip
        assert kept in clean, kept


def test_suggested_patterns_generalise_digits() -> None:
    assert suggest_pattern("http://site3.test:8642/shop/city-3/") == (
        r"^http://site\d+\.test:8642/shop/[a-z]+-\d+/$"
    )
    assert re.search(suggest_pattern("https://a.org/p?id=12"), "https://a.org/p?id=345")
    assert suggest_pattern("https://a.org/about/") == r"^https://a\.org/about/$"


def test_documents_round_trip_through_toml() -> None:
    tricky = ["it's", 'say "hi"', "back\\slash", "line\nbreak", "tab\tand\x7f", "ünï", "$"]
    rule = {
        "name": "r",
        "url": "^x",
        "priority": 2,
        "record": {"css": "div"},
        "field": [{"name": n, "css": "a", "process": [{"default": v}]} for n, v in
                  zip("abcdefg", tricky, strict=True)],
        "link": [{"allow": tricky, "deny": []}],
    }  # fmt: skip
    assert tomllib.loads(to_toml([rule])) == {"rule": [rule]}


def test_the_named_processors_are_the_schemas() -> None:
    assert set(PROCESSOR_ARGUMENTS) <= set(PROCESSORS)


def test_the_ui_command_checks_the_editor_options(tmp_path: Path) -> None:
    assert main(["ui", "--rules-dir", str(tmp_path / "missing"), "--bind", "127.0.0.1:0"]) == 2
    assert main(["ui", "--editor-allow", "not a host!", "--bind", "127.0.0.1:0"]) == 2


def test_a_saved_rule_checks(tmp_path: Path) -> None:
    text = to_toml([{k: v for k, v in RULE.items() if k != "link"}])
    path = tmp_path / "r.toml"
    path.write_text(text)
    assert main(["rules", "check", str(path)]) == 0


BUILT_BY_SCRIPT = """<!DOCTYPE html><html><body><div id="app"></div>
<script>document.getElementById('app').innerHTML = '<h2 class="made">Built</h2>';</script>
</body></html>"""


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/usr/bin/chromium-headless-shell").exists(), reason="no chromium-headless-shell"
)
async def test_render_reads_pages_built_by_scripts(tmp_path: Path) -> None:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=BUILT_BY_SCRIPT, content_type="text/html")

    app = web.Application()
    app.router.add_get("/app", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/app"
    rule = {"name": "app", "url": "/app$", "field": [{"name": "made", "css": "h2.made"}]}
    try:
        async with editor(tmp_path, ["127.0.0.1"], render="always", robots=False) as served:  # noqa: SIM117
            async with client(served) as session:
                status, found = await post(session, served, "fetch", {"url": url})
                assert status == 200, found
                body = {"rule": rule, "samples": [found["id"]]}
                status, preview = await post(session, served, "preview", body)
                assert preview["rows"][0]["items"] == [{"made": "Built"}]
    finally:
        await runner.cleanup()


def test_the_guard_refuses_the_ui_port_on_every_host_and_names_allowed_addresses() -> None:
    guard = dataclasses.replace(EditorGuard.from_allow(["127.0.0.1", "*.test"]), own_port=8077)
    assert guard.check_url("http://example.org:8077/x") is not None
    assert guard.check_url("http://127.0.0.1:8078/") is None
    assert guard.check_url("http://10.0.0.1/") is not None
    assert guard.verdict("a.test", "10.1.2.3") is None  # a named host
    assert guard.verdict("b.org", "10.1.2.3") is not None
    assert guard.verdict("a.test", "169.254.169.254") is not None  # never
    assert guard.verdict("b.org", "93.184.216.34") is None  # public


async def test_sample_pages_are_fetched_logged_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def private(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Basic " + "ZWQ6czNjcmV0":  # ed:s3cret
            return web.Response(status=401, headers={"WWW-Authenticate": "Basic"})
        return web.Response(text="<h1>Members</h1>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/members", private)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/members"
    config = tmp_path / "crawl.toml"
    config.write_text(
        f'[[auth]]\ndomain = "http://127.0.0.1:{runner.addresses[0][1]}"\ntype = "basic"\n'
        'username_env = "ED_USER"\npassword_env = "ED_PASS"\n'
    )
    monkeypatch.setenv("ED_USER", "ed")
    monkeypatch.setenv("ED_PASS", "s3cret")
    try:
        async with editor(tmp_path, ["127.0.0.1"], robots=False, config=config) as served:  # noqa: SIM117
            async with client(served) as session:
                status, found = await post(session, served, "fetch", {"url": url})
                assert status == 200, found
                async with session.get(f"{served.base}/editor/frame/{found['id']}") as response:
                    assert "<h1>Members</h1>" in await response.text()
    finally:
        await runner.cleanup()
    monkeypatch.delenv("ED_PASS")
    code = main(["ui", "--config", str(config), "--bind", "127.0.0.1:0"])
    assert code == 2


def test_rules_whose_names_differ_keep_their_own_samples(tmp_path: Path) -> None:
    """``a b`` and ``a_b`` made the same file name: saving one overwrote the other's sample."""
    folder = Rules(tmp_path)
    body = b"<html><h1>T</h1></html>"
    rule = {"field": [{"name": "title", "css": "h1"}]}
    first = folder.save(
        "col.toml", rule | {"name": "a b", "url": "/one"}, [SamplePage("http://s.test/one", body)]
    )
    second = folder.save(
        "col.toml", rule | {"name": "a_b", "url": "/two"}, [SamplePage("http://s.test/two", body)]
    )
    rules, _ = folder.open("col.toml")
    files = [r["sample"][0]["html"] for r in rules]
    assert len(set(files)) == 2, files
    assert first and second


async def test_sample_pages_keep_the_sites_cookies_and_robots_txt_gets_none(
    tmp_path: Path,
) -> None:
    """The editor's jar gives the second sample the cookie the first one set; the robots.txt
    request before each sample carries none, as the crawl's do."""
    sent: list[tuple[str, str | None]] = []

    async def handle(request: web.Request) -> web.Response:
        sent.append((request.path, request.headers.get("Cookie")))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private\n")
        response = web.Response(text=PAGE, content_type="text/html")
        response.set_cookie("sid", "s1", path="/")
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with editor(tmp_path, ["127.0.0.1"]) as served, client(served) as session:
            for n in (1, 2):
                status, found = await post(session, served, "fetch", {"url": f"{base}/items/{n}"})
                assert status == 200, found
    finally:
        await runner.cleanup()
    assert sent == [
        ("/robots.txt", None),
        ("/items/1", None),
        ("/robots.txt", None),
        ("/items/2", "sid=s1"),
    ]

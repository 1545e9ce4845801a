"""What the rule editor's preview may read: the sample's own origin unless the user widens
it, and only the ports ``--editor-allow HOST:PORT`` names. Real servers on loopback: the
sample's site, another service on another port, and a stand-in for Redis."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from tests.ui.editor_pages import editor
from tests.ui.server import Served

from gossamer.settings import SettingsError
from gossamer.ui.editor.fetching import EditorGuard, suggest_pattern

pytestmark = pytest.mark.timeout(30)

RULE = {
    "name": "items",
    "url": r"^http://127\.0\.0\.1:\d+/items/\d+$",  # a pattern that matches every port
    "field": [{"name": "title", "css": "h2"}],
}


@asynccontextmanager
async def server(page: str) -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback server answering every path with ``page`` (``{port}`` filled in), and a
    redirect at /items/5 to ``{other}``; its port and the paths asked for."""
    asked: list[str] = []

    async def any_path(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow:\n")
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", any_path)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1], asked
    finally:
        await runner.cleanup()


@asynccontextmanager
async def three_servers() -> AsyncIterator[tuple[int, int, int, dict[int, list[str]]]]:
    """The sample's site (linking to itself, to another service and to "Redis"), another
    service, and a stand-in for Redis: their ports and what each was asked."""
    async with AsyncExitStack() as stack:
        other, other_asked = await stack.enter_async_context(server("<h2>other</h2>"))
        redis, redis_asked = await stack.enter_async_context(server("-ERR wrong protocol"))
        sample = (
            "<h2>sample</h2>"
            '<a href="/items/2">same origin</a>'
            f'<a href="http://127.0.0.1:{other}/items/7">another service</a>'
            f'<a href="http://127.0.0.1:{redis}/items/1">redis</a>'
        )
        site, site_asked = await stack.enter_async_context(server(sample))
        yield site, other, redis, {site: site_asked, other: other_asked, redis: redis_asked}


def post_headers(served: Served) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {served.guard.token}",
        "Origin": served.base,
        "X-CSRF-Token": served.guard.csrf,
    }


async def post(served: Served, path: str, body: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession(headers=post_headers(served)) as session:  # noqa: SIM117
        async with session.post(f"{served.base}/editor/api/{path}", json=body) as response:
            text = await response.text()
            return response.status, json.loads(text) if text.startswith("{") else text


def pages(asked: list[str]) -> list[str]:
    return [path for path in asked if path != "/robots.txt"]


async def test_a_preview_stays_on_the_sample_origin_unless_widened(tmp_path: Path) -> None:
    async with (
        three_servers() as (site, other, redis, asked),
        editor(tmp_path, ["127.0.0.1"]) as served,
    ):
        status, found = await post(served, "fetch", {"url": f"http://127.0.0.1:{site}/items/1"})
        assert status == 200
        assert found["pattern"] == rf"^http://127\.0\.0\.1:{site}/items/\d+$"  # the port kept
        body = {"rule": RULE, "samples": [found["id"]], "more": 5}
        status, preview = await post(served, "preview", body)
        assert status == 200, preview
        assert [row["url"] for row in preview["rows"]] == [
            f"http://127.0.0.1:{site}/items/1",
            f"http://127.0.0.1:{site}/items/2",
        ]
        assert pages(asked[other]) == [] and pages(asked[redis]) == []
        # Widened on purpose (the page's "other sites and ports" box): what the pattern matches.
        status, preview = await post(served, "preview", {**body, "scope": "pattern"})
        assert status == 200, preview
        assert pages(asked[other]) == ["/items/7"] and pages(asked[redis]) == ["/items/1"]
        status, _ = await post(served, "preview", {**body, "scope": "everywhere"})
        assert status == 400


async def test_a_redirect_off_the_origin_is_not_followed_by_a_preview(tmp_path: Path) -> None:
    async with server("<h2>elsewhere</h2>") as (other, other_asked):

        async def page(request: web.Request) -> web.Response:
            if request.path == "/items/2":
                raise web.HTTPFound(f"http://127.0.0.1:{other}/items/3")
            return web.Response(text='<a href="/items/2">2</a>', content_type="text/html")

        app = web.Application()
        app.router.add_get("/{tail:.*}", page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        site = runner.addresses[0][1]
        try:
            async with editor(tmp_path, ["127.0.0.1"], robots=False) as served:
                url = f"http://127.0.0.1:{site}/items/1"
                status, found = await post(served, "fetch", {"url": url})
                assert status == 200, found
                body = {"rule": RULE, "samples": [found["id"]], "more": 5}
                status, preview = await post(served, "preview", body)
                assert status == 200, preview
                assert "not on the sample's origin" in preview["rows"][1]["fetch_error"]
                assert pages(other_asked) == []
        finally:
            await runner.cleanup()


async def test_editor_allow_with_a_port_opens_that_port_only(tmp_path: Path) -> None:
    async with (
        three_servers() as (site, other, redis, asked),
        editor(tmp_path, [f"127.0.0.1:{site}", f"x.test:{site}"], ["x.test=127.0.0.1"]) as served,
    ):
        status, found = await post(served, "fetch", {"url": f"http://127.0.0.1:{site}/items/1"})
        assert status == 200, found
        status, named = await post(served, "fetch", {"url": f"http://x.test:{site}/items/1"})
        assert status == 200, named  # a host name resolved with --resolve: its port checked
        for url in (
            f"http://127.0.0.1:{redis}/",
            f"http://127.0.0.1:{other}/items/1",
            f"http://x.test:{redis}/",  # the name resolves to an allowed address, not port
        ):
            status, refused = await post(served, "fetch", {"url": url})
            assert status == 403, refused  # an address named by the URL, or found for a name:
            assert re.search(r"--editor-allow HOST:PORT|blocked-address", refused["error"])
        body = {"rule": RULE, "samples": [found["id"]], "more": 5, "scope": "pattern"}
        status, preview = await post(served, "preview", body)
        errors = [row.get("fetch_error", "") for row in preview["rows"]]
        assert sum("blocked" in e or "not named" in e for e in errors) == 2, preview["rows"]
    assert pages(asked[other]) == [] and pages(asked[redis]) == []


def test_editor_allow_takes_host_port_forms() -> None:
    guard = EditorGuard.from_allow(["127.0.0.1:8642", "[::1]:8642", "*.test:80", "10.0.0.0/8"])
    assert guard.check_url("http://127.0.0.1:8642/") is None
    assert guard.check_url("http://127.0.0.1:6379/") is not None
    assert guard.check_url("http://[::1]:8642/") is None
    assert guard.check_url("http://[::1]:8643/") is not None
    assert guard.verdict("a.test", "127.0.0.1", 80) is None
    assert guard.verdict("a.test", "127.0.0.1", 6379) is not None
    assert guard.verdict("a.test", "127.0.0.1") is not None  # the port unknown: refused
    assert guard.check_url("http://10.1.2.3:6379/") is None  # a network: every port
    for bad in ("127.0.0.1:99999", "host:port", "[::1]x", "a b:80", ":80"):
        with pytest.raises(SettingsError):
            EditorGuard.from_allow([bad])


def test_the_suggested_pattern_keeps_the_port() -> None:
    pattern = suggest_pattern("http://site3.test:8642/shop/city-3/")
    assert pattern == r"^http://site\d+\.test:8642/shop/[a-z]+-\d+/$"
    assert re.search(pattern, "http://site4.test:8642/shop/town-12/")
    assert not re.search(pattern, "http://site4.test:6379/shop/town-12/")


async def test_editor_allow_reads_an_address_as_a_url_s_host_reads_it(tmp_path: Path) -> None:
    """``127.1`` is the address ``127.0.0.1`` (not a name no URL has); ``::ffff:127.0.0.1``
    is a socket to 127.0.0.1, the endpoint allowed."""
    async with (
        three_servers() as (site, other, redis, asked),
        editor(tmp_path, [f"127.1:{site}"]) as served,
    ):
        for url in (f"http://127.0.0.1:{site}/items/1", f"http://[::ffff:127.0.0.1]:{site}/"):
            status, found = await post(served, "fetch", {"url": url})
            assert status == 200, found
        for url in (f"http://0x7f.1:{redis}/", f"http://[::ffff:7f00:1]:{other}/items/1"):
            status, refused = await post(served, "fetch", {"url": url})
            assert status == 403, refused
    assert pages(asked[other]) == [] and pages(asked[redis]) == []


def test_the_editor_guard_judges_every_form_of_an_address() -> None:
    guard = EditorGuard.from_allow(["127.0.0.1:8642", "0x0a000001", "[::ffff:10.0.0.2]"])
    assert guard.check_url("http://0x7f.1:6379/") is not None  # an address, not a name
    assert guard.check_url("http://2130706433:6379/") is not None
    assert guard.check_url("http://127.1:8642/") is None
    assert guard.check_url("http://[::ffff:127.0.0.1]:8642/") is None
    assert guard.check_url("http://[::ffff:127.0.0.1]:6379/") is not None
    assert guard.check_url("http://10.0.0.1:6379/") is None  # 0x0a000001: every port
    assert guard.check_url("http://[::ffff:10.0.0.1]:6379/") is None
    assert guard.check_url("http://10.0.0.2:6379/") is None
    assert guard.check_url("http://10.0.0.3:6379/") is not None
    assert guard.check_url("http://[fe80::1%25eth0]/") is not None  # the address, zone cut

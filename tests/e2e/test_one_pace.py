"""One pace per host for every request gossamer sends it: a host whose robots.txt asks for a
Crawl-delay of 0.5 s, with every feature aimed at it at once (a focus example there, a proxy
checked against it, rendering with a subrequest, a form login, a rule document), and the
rule editor's sample fetches. The server's own log shows no two requests closer than the
delay."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path

import pytest
from aiohttp import web
from tests.fetch.tinyproxy import tinyproxy

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.ui.editor.fetching import EditorGuard, PageFetcher

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

DELAY = 0.5
USER, PASSWORD = "pace", "pace-pass-77"
TOPIC = "<p>Storage engines keep pages in buffers and write ahead logs for recovery.</p>"
APP = (
    "<html><body><h1>app</h1>" + TOPIC + "<div id='app'></div><script>"
    "fetch('/api/data').then(r => r.json()).then(d => { for (const u of d.links) {"
    " const a = document.createElement('a'); a.href = u; a.textContent = u;"
    " document.getElementById('app').appendChild(a); } });"
    "</script></body></html>"
)
RULES = """
[[rule]]
name = "title"
url = '.'

[[rule.field]]
name = "title"
css = "h1"
"""


class Site:
    """One host: robots.txt with a Crawl-delay, a login, a scripted page, a focus example.
    Logs each request's arrival (monotonic clock) and path."""

    def __init__(self) -> None:
        self.log: list[tuple[float, str]] = []
        self.sessions: set[str] = set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.log.append((time.monotonic(), f"{request.method} {request.path}"))
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nCrawl-delay: {DELAY}\n")
        if request.path == "/login" and request.method == "POST":
            form = await request.post()
            if (form.get("user"), form.get("pass")) != (USER, PASSWORD):
                return web.Response(status=403)
            self.sessions.add(sid := f"s{len(self.sessions) + 1}")
            response = web.Response(status=302, headers={"Location": "/app"})
            response.set_cookie("sid", sid, path="/", httponly=True)
            return response
        if request.path == "/example":
            return web.Response(
                text=f"<html><body>{TOPIC * 3}</body></html>", content_type="text/html"
            )
        if request.cookies.get("sid") not in self.sessions:
            return web.Response(status=302, headers={"Location": "/login"})
        if request.path == "/app":
            return web.Response(text=APP, content_type="text/html")
        if request.path == "/api/data":
            return web.json_response({"links": ["/found/1", "/found/2"]})
        body = f"<html><body><h1>{request.path}</h1>{TOPIC}</body></html>"
        return web.Response(text=body, content_type="text/html")

    def gaps(self) -> list[float]:
        return [b - a for (a, _), (b, _) in itertools.pairwise(self.log)]


async def _serve(site: Site) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, runner.addresses[0][1]


async def test_every_feature_aimed_at_one_host_keeps_its_pace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOSSAMER_PACE_USER", USER)
    monkeypatch.setenv("GOSSAMER_PACE_PASS", PASSWORD)
    rules = tmp_path / "title.toml"
    rules.write_text(RULES)
    site = Site()
    runner, port = await _serve(site)
    base = f"http://127.0.0.1:{port}"
    try:
        async with tinyproxy(tmp_path) as proxy:
            settings = load_settings(
                {
                    "seeds": [f"{base}/app"],
                    "out": tmp_path / "out",
                    "quiet": True,
                    "focus_examples": [f"{base}/example"],
                    "focus_phrase": "storage engines",
                    "proxies": [proxy.url],
                    "render": "always",
                    "render_settle": 0.2,
                    "render_timeout": 15.0,
                    "render_concurrency": 1,
                    "rules": [rules],
                    "auth": [
                        {
                            "domain": "127.0.0.1",
                            "type": "form",
                            "login_url": f"{base}/login",
                            "username_field": "user",
                            "password_field": "pass",
                            "username_env": "GOSSAMER_PACE_USER",
                            "password_env": "GOSSAMER_PACE_PASS",
                        }
                    ],
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 50)
    finally:
        await runner.cleanup()
    sent = [path for _, path in site.log]
    for request in ("GET /robots.txt", "GET /example", "POST /login", "GET /api/data"):
        assert request in sent, sent
    assert sent.count("GET /app") >= 2  # the proxy check (anonymous) and the page
    records = [
        json.loads(line) for line in (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    ]
    found = {r["url"].removeprefix(base): r for r in records}
    assert found["/app"]["rendered"] is True and found["/app"]["rule"] == "title"
    assert found["/found/1"]["status"] == 200
    assert stats.auth is not None and stats.auth["logins"] == 1
    gaps = site.gaps()
    print("requests and the gap before each:", list(zip(sent[1:], gaps, strict=True)))
    assert min(gaps) >= DELAY, list(zip(sent[1:], gaps, strict=True))


async def test_the_rule_editors_samples_keep_the_hosts_pace(tmp_path: Path) -> None:
    site = Site()
    runner, port = await _serve(site)
    base = f"http://127.0.0.1:{port}"
    try:
        settings = load_settings({"seeds": [f"{base}/"], "out": tmp_path / "out"}, env={})
        fetcher = PageFetcher(settings, EditorGuard.from_allow(["127.0.0.1"]), own_port=1)
        first = await fetcher.fetch([f"{base}/example", f"{base}/example?2"])
        again = await fetcher.fetch([f"{base}/example?3"])
    finally:
        await runner.cleanup()
    assert [type(page).__name__ for page in [*first, *again]] == ["Page"] * 3
    robots, example = "GET /robots.txt", "GET /example"
    assert [path for _, path in site.log] == [robots, example, example, robots, example]
    assert min(site.gaps()) >= DELAY


async def test_a_focus_example_waits_for_the_crawl_delay_after_robots_txt(
    tmp_path: Path,
) -> None:
    """The report's case: the example page came 1 ms after its host's robots.txt."""
    site = Site()
    runner, port = await _serve(site)
    base = f"http://127.0.0.1:{port}"
    try:
        settings = load_settings(
            {
                "seeds": [f"{base}/example"],
                "out": tmp_path / "out",
                "quiet": True,
                "focus_examples": [f"{base}/example"],
                "focus_phrase": "storage engines",
                "max_pages": 1,
            },
            env={},
        )
        await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await runner.cleanup()
    assert [path for _, path in site.log][:2] == ["GET /robots.txt", "GET /example"]
    assert min(site.gaps()) >= DELAY

"""A real aiohttp site on 127.0.0.1 whose pages build their links with JavaScript, for the
rendering tests: links written by a script, fetched by XHR, added by a timer, loaded on
scroll; a page that polls forever, one that eats memory, one that asks a robots.txt
disallowed endpoint; server-rendered pages beside them. Every request is logged (``hits``).

Run as a program, it serves until interrupted (the README's example)::

    PYTHONPATH=. .venv/bin/python -m tests.fetch.render.site --port 8080
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from aiohttp import web

ROBOTS = "User-agent: *\nDisallow: /private/\n"
SCROLL_PAGES = 3
APP_PAGES = 6
"""Pages of the JS-only section /app/ (each links the next by script)."""
DUD_PAGES = 12
"""Pages of /dud/: they look empty and ship a script, which adds nothing."""


def _page(body: str, script: str = "", head: str = "") -> str:
    tag = f"<script>{script}</script>" if script else ""
    return (
        f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}{tag}</body></html>"
    )


_PROSE = "<p>" + "Server-rendered prose about the topic of this page. " * 8 + "</p>"


def _static(n: int) -> str:
    links = "".join(f'<a href="/static/{i}">static {i}</a> ' for i in range(8) if i != n)
    return _page(f'<h1>Static {n}</h1>{_PROSE}<nav>{links}<a href="/app/0">app</a></nav>')


PAGES: dict[str, str] = {
    "/": _page(
        "<h1>Index</h1>"
        + _PROSE
        + "<ul>"
        + "".join(
            f'<li><a href="{p}">{p}</a></li>'
            for p in ("/js/built", "/js/xhr", "/js/timer", "/js/scroll", "/static/0")
        )
        + "</ul>"
    ),
    "/js/built": _page(
        '<div id="root"></div>',
        "document.getElementById('root').innerHTML = '<a href=\"/found/built\">built</a>';",
    ),
    "/js/xhr": _page(
        '<div id="app"></div>',
        "fetch('/api/links').then(r => r.json()).then(d => { for (const u of d.links) {"
        " const a = document.createElement('a'); a.href = u; a.textContent = u;"
        " document.getElementById('app').appendChild(a); } });",
    ),
    "/js/timer": _page(
        '<div id="root"></div>',
        "setTimeout(() => { document.getElementById('root').innerHTML ="
        " '<a href=\"/found/timer\">late</a>'; }, 300);",
    ),
    "/js/scroll": _page(
        '<div id="root"></div><div style="height: 3000px"></div>',
        "let n = 0; let busy = false;"
        "window.addEventListener('scroll', () => {"
        f" if (busy || n >= {SCROLL_PAGES}) return; busy = true;"
        " fetch('/api/scroll?n=' + n).then(r => r.text()).then(t => {"
        " const d = document.createElement('div'); d.style.height = '3000px';"
        " d.innerHTML = t; document.getElementById('root').appendChild(d); n += 1; busy = false;"
        " }); });",
    ),
    "/js/poll": _page(
        '<div id="root"><a href="/found/poll">poll</a></div>',
        "setInterval(() => { fetch('/api/poll').then(r => r.text()).then(t => {"
        " document.getElementById('root').setAttribute('data-t', t); }); }, 100);",
    ),
    "/js/hog": _page(
        '<div id="root"></div>',
        "const keep = []; while (true) { keep.push(new Array(1e6).fill(Math.random())); }",
    ),
    "/js/robots": _page(
        '<div id="root"></div>',
        "fetch('/private/data').catch(() => 0); fetch('/api/links').then(r => r.json())"
        ".then(d => { document.getElementById('root').innerHTML ="
        " d.links.map(u => '<a href=\"' + u + '\">x</a>').join(''); });",
    ),
    "/js/crash": _page(
        '<div id="root"></div>',
        "fetch('/api/hang').then(r => r.text()).then(t => {"
        " document.getElementById('root').innerHTML = t; });",
    ),
    "/js/moved": _page(
        '<div id="root"></div>',
        "fetch('/api/moved').then(r => r.json()).then(d => {"
        " document.getElementById('root').innerHTML ="
        " d.links.map(u => '<a href=\"' + u + '\">x</a>').join(''); });",
    ),
    "/js/socket": _page(
        '<div id="root"></div>',
        "const s = new WebSocket('ws://' + location.host + '/ws');"
        " document.getElementById('root').innerHTML = '<a href=\"/found/socket\">s</a>';",
    ),
    "/js/huge": _page(
        '<div id="root"></div>',
        "document.getElementById('root').innerHTML = '<a href=\"/found/huge\">h</a>' +"
        " '<p>' + 'x'.repeat(3000000) + '</p>';",
    ),
    "/js/spin": _page('<div id="root"></div>', "while (true) {}"),
    "/js/image": _page('<div id="root"></div><img src="/img/pic.png">', "1;"),
}
for _n in range(8):
    PAGES[f"/static/{_n}"] = _static(_n)
for _n in range(DUD_PAGES):
    PAGES[f"/dud/{_n}"] = _page(
        f'<div id="root"></div><a href="/dud/{_n + 1}">next</a>' if _n + 1 < DUD_PAGES else "",
        "console.log('analytics');",
    )
_APP_PROSE = "This part of the site is written by JavaScript in the browser. " * 5
for _n in range(APP_PAGES):
    _next = f"/app/{_n + 1}" if _n + 1 < APP_PAGES else "/static/0"
    PAGES[f"/app/{_n}"] = _page(
        '<div id="root"></div><noscript>This app needs JavaScript.</noscript>',
        f"document.getElementById('root').innerHTML = '<h1>App {_n}</h1><p>{_APP_PROSE}</p>"
        f'<a href="{_next}">next</a>\';',
    )


class RenderSite:
    """The site's handler and its request log."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.user_agents: set[str] = set()
        self.pages: dict[str, str] = {}
        """Pages a test adds (served before :data:`PAGES`)."""
        self.page_headers: dict[str, dict[str, str]] = {}
        """Headers a test adds to a page's answer."""
        self.redirects: dict[str, str] = {}
        """Paths a test adds that answer 302 to a location."""
        self.from_browser: Counter[str] = Counter()
        """Requests the browser made itself (none should reach the site)."""
        self.on_hang: Callable[[], None] | None = None
        """Called at the first request of /api/hang, which then answers only after 10 s
        (the test kills the browser meanwhile) unless its client leaves; later requests
        are answered at once."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.hits[path] += 1
        self.user_agents.add(request.headers.get("User-Agent", ""))
        if "Sec-Fetch-Mode" in request.headers:  # sent by browsers, not by gossamer's fetcher
            self.from_browser[path] += 1
        if path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if path in self.redirects:
            raise web.HTTPFound(self.redirects[path])
        if path == "/api/links":
            links = ["/found/xhr-1", "/found/xhr-2"]
            return web.Response(text=json.dumps({"links": links}), content_type="application/json")
        if path == "/api/moved":
            raise web.HTTPFound("/api/links")
        if path == "/api/scroll":
            n = request.query.get("n", "0")
            return web.Response(text=f'<a href="/found/scroll-{n}">more {n}</a>')
        if path == "/api/hang":
            if self.hits[path] == 1 and self.on_hang is not None:
                self.on_hang()
                await asyncio.sleep(10)
            return web.Response(text='<a href="/found/after-crash">after</a>')
        if path == "/api/poll":
            return web.Response(text=str(self.hits[path]))
        if path.startswith("/found/"):
            return web.Response(text=_page(f"<p>{path}</p>"), content_type="text/html")
        if path in self.pages or path in PAGES:
            page = self.pages.get(path) or PAGES[path]
            headers = self.page_headers.get(path)
            return web.Response(text=page, content_type="text/html", headers=headers)
        return web.Response(status=404, text="no")


@asynccontextmanager
async def serve_site(site: RenderSite | None = None) -> AsyncIterator[tuple[RenderSite, int]]:
    """Serve the site on a free port of 127.0.0.1; yields it and the port."""
    site = site or RenderSite()
    app = web.Application()
    app.router.add_get("/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield site, tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_get("/{tail:.*}", RenderSite().handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    print(f"serving http://127.0.0.1:{args.port}/", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_main())

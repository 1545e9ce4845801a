"""A local web that changes on a schedule, for ``bench_freshness.py``: virtual hosts on one
loopback port (dispatched on the Host header), every request logged with its time.

Each page changes as a Poisson process (its rate drawn log-uniformly over a spread of 1,000x;
a share of pages never change); some hosts answer with ``ETag`` and ``Last-Modified`` and honour
conditional requests, the others send no validator. Pages announced later appear only in their
host's sitemap (with ``lastmod``) or feed (RSS 2.0, with ``pubDate``); no page links to them.
Some pages disappear (404 on hosts with validators, 410 on the others). The schedule is drawn
from a seed before the server starts, so the bench compares every run with the same truth:
times are seconds from :attr:`FreshServer.t0` (``time.monotonic``).
"""

from __future__ import annotations

import bisect
import random
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from aiohttp import web

WORDS = ["river", "stone", "garden", "lantern", "harbor", "meadow", "copper", "violet"]


@dataclass(frozen=True)
class WebShape:
    """The web's size, how its pages change and how long the schedule runs."""

    hosts: int = 6
    pages: int = 60
    """Pages per host at the start (all linked from the host's home page)."""
    horizon: float = 600.0
    """Seconds of schedule drawn (longer than any run)."""
    fastest: float = 0.5
    """Changes a second of the fastest page."""
    spread: float = 1000.0
    """How many times less often the slowest changing page changes."""
    never: float = 0.3
    """Share of pages that never change."""
    announce_every: float = 20.0
    """Mean seconds between new pages of one host (announced in its sitemap or feed)."""
    gone: float = 0.05
    """Share of the starting pages that disappear at some time of the schedule."""
    validators: tuple[int, ...] = (0, 1, 2)
    """Hosts that send ETag and Last-Modified and answer 304."""
    feeds: tuple[int, ...] = (1, 4)
    """Hosts announcing new pages in an RSS feed (the others in their sitemap)."""
    words: int = 500
    """Words of a page's main text (about 3.5 KB)."""


@dataclass
class PageSpec:
    """One page: when its content changes, when it appears (0: at the start) and goes."""

    host: int
    path: str
    rate: float
    changes: list[float]
    born: float = 0.0
    gone_at: float | None = None

    def version(self, at: float) -> int:
        """The number of changes made by ``at``."""
        return bisect.bisect_right(self.changes, at)

    def last_change(self, at: float) -> float:
        """When the content seen at ``at`` was made."""
        n = self.version(at)
        return self.changes[n - 1] if n else self.born


@dataclass(frozen=True, slots=True)
class Hit:
    """One request as the server saw it."""

    at: float
    host: int
    path: str
    status: int
    bytes: int
    """Bytes sent: status line, headers and body (approximately the wire's)."""
    conditional: bool


def host_name(i: int) -> str:
    """The name of host ``i`` (``--resolve '*.test=127.0.0.1'`` maps them to loopback)."""
    return f"site{i}.test"


def draw(shape: WebShape, seed: int) -> list[PageSpec]:
    """The pages and their schedule."""
    rng = random.Random(seed)
    pages = []
    for host in range(shape.hosts):
        for k in range(shape.pages):
            rate = _rate(shape, rng)
            spec = PageSpec(host, f"/p/{k}.html", rate, _poisson(rate, 0.0, shape.horizon, rng))
            if rng.random() < shape.gone:
                spec.gone_at = rng.uniform(0.1, 0.6) * shape.horizon
            pages.append(spec)
        born = 0.0
        for k in range(10_000):
            born += rng.expovariate(1.0 / shape.announce_every)
            if born >= shape.horizon:
                break
            rate = _rate(shape, rng)
            changes = _poisson(rate, born, shape.horizon, rng)
            pages.append(PageSpec(host, f"/new/{k}.html", rate, changes, born=born))
    return pages


def _rate(shape: WebShape, rng: random.Random) -> float:
    if rng.random() < shape.never:
        return 0.0
    return shape.fastest * shape.spread ** -rng.random()


def _poisson(rate: float, start: float, horizon: float, rng: random.Random) -> list[float]:
    if rate <= 0:
        return []
    times, at = [], start
    while True:
        at += rng.expovariate(rate)
        if at >= horizon:
            return times
        times.append(at)


@dataclass
class FreshServer:
    """Serves :func:`draw`'s pages; :attr:`log` holds every request."""

    shape: WebShape
    pages: list[PageSpec]
    log: list[Hit] = field(default_factory=list)
    t0: float = 0.0
    wall0: float = 0.0
    port: int = 0

    def __post_init__(self) -> None:
        self._by_key = {(p.host, p.path): p for p in self.pages}
        self._runner: web.AppRunner | None = None

    def now(self) -> float:
        """Seconds since the schedule started."""
        return time.monotonic() - self.t0

    def url(self, host: int, path: str = "/") -> str:
        """The absolute URL of ``path`` on host ``host``."""
        return f"http://{host_name(host)}:{self.port}{path}"

    async def start(self) -> None:
        """Listen on a free loopback port; the schedule's clock starts now."""
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.restart_clock()

    def restart_clock(self) -> None:
        """Start the schedule again from time 0 (a new run against the same truth)."""
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.log = []

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        at = self.now()
        name = request.host.split(":")[0]
        host = int(name[4:-5]) if name.startswith("site") and name.endswith(".test") else -1
        response = self._answer(host, request, at)
        size = len(response.body or b"") + 17  # status line
        size += sum(len(k) + len(v) + 4 for k, v in response.headers.items()) + 60  # + aiohttp's
        conditional = "If-None-Match" in request.headers or "If-Modified-Since" in request.headers
        self.log.append(Hit(at, host, request.path, response.status, size, conditional))
        return response

    def _answer(self, host: int, request: web.Request, at: float) -> web.Response:
        path = request.path
        if host < 0 or host >= self.shape.hosts:
            return web.Response(status=404)
        if path == "/robots.txt":
            name = "feed.xml" if host in self.shape.feeds else "sitemap.xml"
            text = f"User-agent: *\nAllow: /\n\nSitemap: {self.url(host, '/' + name)}\n"
            return web.Response(text=text)
        if path == "/":
            return web.Response(text=self._home(host, at), content_type="text/html")
        if path == "/sitemap.xml":
            return web.Response(body=self._sitemap(host, at), content_type="application/xml")
        if path == "/feed.xml":
            return web.Response(body=self._feed(host, at), content_type="application/rss+xml")
        page = self._by_key.get((host, path))
        if page is None or page.born > at:
            return web.Response(status=404)
        if page.gone_at is not None and at >= page.gone_at:
            return web.Response(status=404 if host in self.shape.validators else 410)
        return self._page(page, request, at)

    def _page(self, page: PageSpec, request: web.Request, at: float) -> web.Response:
        version = page.version(at)
        headers = {}
        if page.host in self.shape.validators:
            etag = f'"{page.host}-{page.path}-{version}"'
            modified = self.wall0 + page.last_change(at)
            headers = {"ETag": etag, "Last-Modified": formatdate(modified, usegmt=True)}
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers=headers)
        body = self._body(page, version)
        return web.Response(body=body, headers=headers, content_type="text/html")

    def _body(self, page: PageSpec, version: int) -> bytes:
        rng = random.Random(f"{page.host}{page.path}{version}")
        words = [rng.choice(WORDS) for _ in range(self.shape.words)]
        paragraphs = "".join(
            f"<p>{' '.join(words[i : i + 50])}.</p>" for i in range(0, len(words), 50)
        )
        k = int(page.path.split("/")[-1].split(".")[0])
        siblings = "".join(
            f'<li><a href="/p/{(k + d) % self.shape.pages}.html">page {(k + d) % self.shape.pages}'
            "</a></li>"
            for d in (1, 7, 13)
        )
        return (
            f"<!doctype html><html><head><title>{page.path} v{version}</title></head><body>"
            f'<nav><a href="/">home</a><ul>{siblings}</ul></nav><main><article>'
            f"<h1>{page.path}, version {version}</h1>{paragraphs}</article></main>"
            "</body></html>"
        ).encode()

    def _live(self, host: int, at: float, *, new: bool) -> list[PageSpec]:
        return [
            p
            for p in self.pages
            if p.host == host
            and (p.born > 0) == new
            and p.born <= at
            and (p.gone_at is None or p.gone_at > at)
        ]

    def _home(self, host: int, at: float) -> str:
        links = "".join(
            f'<li><a href="{p.path}">{p.path}</a></li>' for p in self._live(host, at, new=False)
        )
        head = f"<!doctype html><html><head><title>site {host}</title></head>"
        return f"{head}<body><ul>{links}</ul></body></html>"

    def _w3c(self, at: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.wall0 + at))

    def _sitemap(self, host: int, at: float) -> bytes:
        listed = self._live(host, at, new=False)
        if host not in self.shape.feeds:
            listed += self._live(host, at, new=True)
        rows = "".join(
            f"<url><loc>{self.url(host, p.path)}</loc>"
            f"<lastmod>{self._w3c(p.last_change(at))}</lastmod></url>"
            for p in listed
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
        ).encode()

    def _feed(self, host: int, at: float) -> bytes:
        items = sorted(self._live(host, at, new=True), key=lambda p: -p.born)[:30]
        rows = "".join(
            f"<item><title>{p.path}</title><link>{self.url(host, p.path)}</link>"
            f"<pubDate>{formatdate(self.wall0 + p.born, usegmt=True)}</pubDate></item>"
            for p in items
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
            f"<title>site {host}</title><link>{self.url(host)}</link>{rows}</channel></rss>"
        ).encode()


def announced_in(server: FreshServer, page: PageSpec) -> str:
    """Where ``page`` is announced: ``feed`` or ``sitemap``."""
    return "feed" if page.host in server.shape.feeds else "sitemap"


def summary(pages: list[PageSpec]) -> dict[str, Any]:
    """Counts of the schedule drawn, for the bench's header."""
    start = [p for p in pages if p.born == 0]
    return {
        "pages": len(start),
        "announced": len(pages) - len(start),
        "changing": sum(1 for p in start if p.rate > 0),
        "gone": sum(1 for p in start if p.gone_at is not None),
    }

"""A site whose pages change, keep still or disappear as a continuous crawl revisits them: a
real aiohttp server on 127.0.0.1 that logs every request with its conditional headers.

Pages (each linked from ``/``, itself unchanged, no validators):

* ``/etag``: an ``ETag``, answered 304 to a matching ``If-None-Match``; never changes.
* ``/lm``: a ``Last-Modified``, 304 to an ``If-Modified-Since`` not older; never changes.
* ``/both``: both validators; changes from its third fetch on (a new ETag each time).
* ``/still``: no validators, the same bytes every time.
* ``/changing``: no validators, a new paragraph of text at every fetch.
* ``/ad``: no validators, the same article with another ad (and timestamp) at every fetch.
* ``/gone``: 200 at its first fetch, then 404; ``/moved``: 200, then a 301 to ``/``.

``/sitemap.xml`` lists the URLs of ``Site.listed`` with their ``lastmod`` (``NOW``: the time it
is answered, to the microsecond); it answers once ``Site.sitemap_gate`` is set. ``/robots.txt``
is ``Site.robots`` (404 when empty).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web
from tests.local_app import serve

ARTICLE = " ".join(["The river keeps its course through the valley of the old mill."] * 12)
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
PAGES = ("etag", "lm", "both", "still", "changing", "ad", "gone", "moved")
NOW = "now"
"""A page's ``lastmod`` in the sitemap: the time the sitemap is answered."""


@dataclass(frozen=True)
class Hit:
    """One request the site answered."""

    at: float
    path: str
    status: int
    if_none_match: str | None
    if_modified_since: str | None


@dataclass
class Site:
    """The pages' state and the request log."""

    port: int = 0
    log: list[Hit] = field(default_factory=list)
    fetches: Counter[str] = field(default_factory=Counter)
    listed: dict[str, str] = field(default_factory=dict)
    """URLs the sitemap lists -> their ``lastmod`` (W3C datetime, or ``NOW``)."""
    robots: str = ""
    sitemap_gate: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def hits(self, page: str) -> list[Hit]:
        return [hit for hit in self.log if hit.path == f"/{page}"]


def _html(title: str, body: str, extra: str = "") -> str:
    return (
        f"<html><head><title>{title}</title></head><body><nav>{extra}</nav>"
        f"<article><h1>{title}</h1><p>{body}</p></article></body></html>"
    )


def _answer(site: Site, page: str, request: web.Request) -> web.Response:
    n = site.fetches[page]
    if page == "etag":
        if request.headers.get("If-None-Match") == '"e1"':
            return web.Response(status=304, headers={"ETag": '"e1"'})
        text = _html("etag", ARTICLE)
        return web.Response(text=text, content_type="text/html", headers={"ETag": '"e1"'})
    if page == "lm":
        if request.headers.get("If-Modified-Since") == LAST_MODIFIED:
            return web.Response(status=304)
        headers = {"Last-Modified": LAST_MODIFIED}
        return web.Response(text=_html("lm", ARTICLE), content_type="text/html", headers=headers)
    if page == "both":
        version = max(n - 1, 1)
        tag = f'"b{version}"'
        if request.headers.get("If-None-Match") == tag:
            return web.Response(status=304, headers={"ETag": tag})
        headers = {"ETag": tag, "Last-Modified": LAST_MODIFIED}
        text = _html("both", f"{ARTICLE} version {version}")
        return web.Response(text=text, content_type="text/html", headers=headers)
    if page == "changing":
        text = _html("changing", f"{ARTICLE} news number {n}")
        return web.Response(text=text, content_type="text/html")
    if page == "ad":
        text = _html("ad", ARTICLE, extra=f"<a href='/'>ad {n} at {time.time()}</a>")
        return web.Response(text=text, content_type="text/html")
    if page in ("gone", "moved") and n > 1:
        if page == "gone":
            return web.Response(status=404, text="not found")
        return web.Response(status=301, headers={"Location": "/"})
    return web.Response(text=_html(page, ARTICLE), content_type="text/html")


async def _sitemap(site: Site) -> web.Response:
    await asyncio.wait_for(site.sitemap_gate.wait(), 30)
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    urls = "".join(
        f"<url><loc>{url}</loc><lastmod>{now if lastmod == NOW else lastmod}</lastmod></url>"
        for url, lastmod in site.listed.items()
    )
    text = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    return web.Response(text=text, content_type="application/xml")


def _index() -> web.Response:
    links = "".join(f"<a href='/{page}'>{page}</a> " for page in PAGES)
    return web.Response(text=_html("index", ARTICLE, extra=links), content_type="text/html")


@asynccontextmanager
async def serve_site() -> AsyncIterator[Site]:
    """The site on a free port of 127.0.0.1."""
    site = Site()

    async def handle(request: web.Request) -> web.StreamResponse:
        page = request.path.strip("/")
        site.fetches[page] += 1
        if request.path == "/":
            response: web.StreamResponse = _index()
        elif request.path == "/sitemap.xml":
            response = await _sitemap(site)
        elif request.path == "/robots.txt" and site.robots:
            response = web.Response(text=site.robots)
        elif page in PAGES:
            response = _answer(site, page, request)
        else:
            response = web.Response(status=404)
        headers = request.headers
        conditions = headers.get("If-None-Match"), headers.get("If-Modified-Since")
        hit = Hit(time.monotonic(), request.path, response.status, *conditions)
        site.log.append(hit)
        return response

    async with serve(handle) as port:
        site.port = port
        yield site

"""A site behind basic auth for the tests of a seed's password (cluster and embedded): its
pages revisited with validators, duplicates of each other, redirects on its origin and to
another one; a site recording when each request came and with which user name, for the tests
of one host's pace across its seeds' credentials."""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aiohttp import web

SECRET = "w0rd-Pw-91"
"""The part of each password below that reads the same in every encoding."""
AT_SIGN = ("[::1]", "::1", "p%40ss%3A" + SECRET, "p@ss:" + SECRET)
"""An IPv6 seed whose password holds '@' and ':', percent-escaped in the URL."""
PLAIN = ("site.test", "127.0.0.1", "s3cret-" + SECRET, "s3cret-" + SECRET)
UNESCAPED = ("site.test", "127.0.0.1", "p@ss:" + SECRET, "p@ss:" + SECRET)
"""A password with '@' and ':' as a user may type it, unescaped."""


@asynccontextmanager
async def serve_on(address: str, handler: Any) -> AsyncIterator[int]:
    """Serve ``handler`` (every GET) on a free port of the loopback ``address``."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, address, 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


def guarded_site(seen: list[tuple[str, str, str | None]], expected: str) -> Any:
    """Pages behind basic auth (401 without ``expected``), each with an ETag (revisits are
    conditional): ``/`` -> ``/a``, ``/b`` (the same text), ``/r``, which redirects to ``/t``
    (linked from no page), ``/away`` and ``/away-pw``, which redirect to another origin,
    ``other.test`` (the second naming the seed's user info there);
    ``/sitemap.xml`` (open) lists ``/a`` and ``other.test``'s ``/z`` with the seed's user info,
    changed now; ``seen`` gets each request's (host, path, Authorization)."""
    links = {"/": ["/a", "/b", "/r", "/away", "/away-pw"]}
    text = "<p>" + "Credentials stay with their origin and out of every store. " * 20 + "</p>"

    async def handle(request: web.Request) -> web.Response:
        given = request.headers.get("Authorization")
        seen.append((request.host.rpartition(":")[0], request.path, given))
        if request.path.startswith("/away"):
            userinfo = expected_userinfo(expected) if request.path == "/away-pw" else ""
            return web.Response(
                status=302,
                headers={"Location": f"http://{userinfo}other.test:{request.url.port}/x"},
            )
        if request.path == "/r" and given == expected:
            return web.Response(status=302, headers={"Location": "/t"})
        if request.path == "/sitemap.xml":
            return _sitemap(request, expected_userinfo(expected))
        if request.host.startswith("other.test"):
            return web.Response(body=b"<html><body>other</body></html>", content_type="text/html")
        if given != expected:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="t"'})
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        anchors = "".join(f'<a href="{href}">{href}</a>' for href in links.get(request.path, []))
        head = f"<html><head><title>{request.path}</title></head>"
        body = f"{head}<body>{anchors}{text}</body></html>"
        return web.Response(body=body.encode(), content_type="text/html", headers={"ETag": '"v1"'})

    return handle


def expected_userinfo(authorization: str) -> str:
    """``user:password@`` as a URL writes the Basic ``authorization`` (escaped)."""
    user, _, password = base64.b64decode(authorization.split()[1]).decode().partition(":")
    return f"{quote(user, safe='')}:{quote(password, safe='')}@"


def _sitemap(request: web.Request, userinfo: str) -> web.Response:
    port, now = request.url.port, datetime.now(UTC).isoformat()
    urls = (f"http://{userinfo}{request.host}/a", f"http://{userinfo}other.test:{port}/z")
    entries = "".join(f"<url><loc>{url}</loc><lastmod>{now}</lastmod></url>" for url in urls)
    xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    return web.Response(body=xml.encode(), content_type="application/xml")


Answered = list[tuple[float, float, str, str | None]]
"""(start, end, path, user name sent) of each request a `paced_site` answered, monotonic."""
PACED_LINKS = {"/": ["/1", "/2"], "/x": ["/x1", "/x2"]}
"""The links of `paced_site`'s pages: two seeds' (``/`` and ``/x``) two pages each."""


def paced_site(answered: Answered, hold: float, crawl_delay: float = 0.0) -> Any:
    """The pages of `PACED_LINKS` and a robots.txt allowing them (with ``crawl_delay``), each
    answer held ``hold`` seconds (so that requests let in at once overlap); ``answered`` gets
    each request."""
    robots = "User-agent: *\nAllow: /\n" + (f"Crawl-delay: {crawl_delay}\n" if crawl_delay else "")

    async def handle(request: web.Request) -> web.Response:
        start = time.monotonic()
        await asyncio.sleep(hold)
        given = request.headers.get("Authorization")
        user = base64.b64decode(given.split()[1]).decode().partition(":")[0] if given else None
        answered.append((start, time.monotonic(), request.path, user))
        if request.path == "/robots.txt":
            return web.Response(text=robots)
        anchors = "".join(f'<a href="{href}">x</a>' for href in PACED_LINKS.get(request.path, []))
        return web.Response(body=f"<p>{anchors}</p>".encode(), content_type="text/html")

    return handle


JITTER = 0.05
"""Seconds a request's start stamp may lag its arrival: the server runs in the test's event
loop, beside the crawl, on a busy machine. Two paces for one host start requests a few
milliseconds apart, far below the delay less this."""


def check_paced(answered: Answered, delay: float) -> None:
    """The requests of ``answered`` (one host's) started ``delay`` apart at least (less
    `JITTER`) and none started before the one before it ended: one pace and one slot for the
    host, whatever user info each URL carried."""
    spans = sorted(answered)
    for (start, end, path, _), (after, _, later, _) in itertools.pairwise(spans):
        assert after - start >= delay - JITTER, (path, later, after - start)
        assert after >= end, (path, later, "overlap")

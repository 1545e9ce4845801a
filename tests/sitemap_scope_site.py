"""A site whose robots.txt names sitemaps the crawl may not fetch, for the sitemap scope tests
(embedded and cluster): ``a.test`` (the seed's host) names sitemaps on another port of its
host (that of a listener, which answers every request and records it), on the loopback
address, on ``victim.test`` (a host out of scope) on both ports, one with port 99999, one
that redirects to the listener's port, and one in scope that lists a page only it names."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

LISTED = "/listed"
"""The page only the sitemap in scope lists."""


def _urlset(*urls: str) -> bytes:
    body = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'.encode()


@dataclass
class ScopeSite:
    """``port``: the site's; ``listener``: the other port. Both record what they are asked
    (``Host`` header, path)."""

    port: int = 0
    listener: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    heard: list[tuple[str, str]] = field(default_factory=list)

    def url(self, host: str, path: str, port: int | None = None) -> str:
        return f"http://{host}:{port or self.port}{path}"

    def robots(self) -> str:
        other = self.listener
        named = [
            self.url("a.test", "/other-port.xml", other),
            self.url("127.0.0.1", "/loopback.xml", other),
            self.url("victim.test", "/offsite.xml"),
            self.url("victim.test", "/offsite-port.xml", other),
            "http://a.test:99999/bad-port.xml",
            self.url("a.test", "/redirect.xml"),
            self.url("a.test", "/in-scope.xml"),
        ]
        return "User-agent: *\nAllow: /\n" + "".join(f"Sitemap: {u}\n" for u in named)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.host, request.path))
        if request.host.partition(":")[0] != "a.test":
            return web.Response(body=_urlset(), content_type="application/xml")
        if request.path == "/robots.txt":
            return web.Response(text=self.robots())
        if request.path == "/redirect.xml":
            raise web.HTTPFound(self.url("a.test", "/redirected.xml", self.listener))
        if request.path == "/in-scope.xml":
            body = _urlset(self.url("a.test", LISTED))
            return web.Response(body=body, content_type="application/xml")
        return web.Response(text="<html><body>a page</body></html>", content_type="text/html")

    async def listen(self, request: web.Request) -> web.StreamResponse:
        """The other port: answers a sitemap, records the request."""
        self.heard.append((request.host, request.path))
        return web.Response(body=_urlset(self.url("a.test", "/leak")), content_type="text/xml")

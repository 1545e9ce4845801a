"""A two-host site on one loopback server whose pages are reachable only through its
sitemaps and feeds: ``site.test`` (robots.txt names a sitemap index with a gzip child, a
sitemap it disallows, one on ``other.test``) and ``other.test`` (its robots.txt names a
sitemap listing a ``site.test`` URL it may not list). Every request is logged with the time
it arrived."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import time
from dataclasses import dataclass, field

from aiohttp import web

PAGES = {"/a1", "/a2", "/b1", "/r1", "/t1", "/x1"}
"""``site.test`` pages the sitemaps and feeds list (in scope)."""


def _urlset(*urls: str, lastmod: str = "2024-05-01T10:00:00Z") -> bytes:
    body = "".join(
        f"<url><loc>{u}</loc><lastmod>{lastmod}</lastmod><changefreq>daily</changefreq>"
        "<priority>0.8</priority></url>"
        for u in urls
    )
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{body}</urlset>"
    ).encode()


def _index(*urls: str) -> bytes:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return (
        '<?xml version="1.0"?><sitemapindex '
        f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'
    ).encode()


def _rss(*urls: str) -> bytes:
    items = "".join(
        f"<item><title>t</title><link>{u}</link>"
        "<pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate></item>"
        for u in urls
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel>{items}</channel></rss>'.encode()


def _atom(*urls: str) -> bytes:
    entries = "".join(
        f'<entry><title>t</title><link href="{u}"/><updated>2024-05-01T10:00:00Z</updated></entry>'
        for u in urls
    )
    return f'<feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>'.encode()


LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'.encode()
        for i in range(1, 10)
    )
    + b']><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&lol9;</loc>'
    b"</url></urlset>"
)
BOMB = gzip.compress(b"<urlset>" + b" " * (80 * 1024 * 1024), compresslevel=9)
"""80 MiB of spaces gzipped (some 80 KB): past the protocol's 50 MiB."""


@dataclass
class SitemapSite:
    """The handler and its log: (time, host, path) of every request."""

    port: int = 0
    robots: bool = True
    """Whether site.test's robots.txt names its sitemaps."""
    hostile: bool = False
    """Whether it names the gzip bomb and the billion laughs too."""
    stall: str | None = None
    """A path whose answer waits until ``stalled`` is cleared (to kill a crawl mid-read)."""
    stalled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once ``stall`` was asked for."""
    release: asyncio.Event = field(default_factory=asyncio.Event)
    """Set to let the stalled answer go (after the kill)."""
    log: list[tuple[float, str, str]] = field(default_factory=list)

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def _robots(self, host: str) -> str:
        if host == "other.test":
            return f"User-agent: *\nAllow: /\nSitemap: {self.url('other.test', '/own.xml')}\n"
        lines = ["User-agent: *", "Disallow: /private/"]
        if self.robots:
            for path in ("/sitemap_index.xml", "/private/sitemap.xml"):
                lines.append(f"Sitemap: {self.url('site.test', path)}")
            lines.append(f"Sitemap: {self.url('other.test', '/cross.xml')}")
        if self.hostile:
            for path in ("/bomb.xml.gz", "/laughs.xml"):
                lines.append(f"Sitemap: {self.url('site.test', path)}")
        return "\n".join(lines) + "\n"

    def _body(self, host: str, path: str) -> tuple[bytes, str] | None:
        site = lambda p: self.url("site.test", p)  # noqa: E731
        other = lambda p: self.url("other.test", p)  # noqa: E731
        xml = "application/xml"
        bodies: dict[tuple[str, str], tuple[bytes, str]] = {
            ("site.test", "/sitemap_index.xml"): (
                _index(site("/maps/a.xml.gz"), site("/maps/b.xml")),
                xml,
            ),
            ("site.test", "/maps/a.xml.gz"): (
                gzip.compress(_urlset(site("/a1"), site("/a2"))),
                "application/x-gzip",
            ),
            ("site.test", "/maps/b.xml"): (_urlset(site("/b1")), xml),
            ("site.test", "/private/sitemap.xml"): (_urlset(site("/private/p1")), xml),
            ("site.test", "/feed.rss"): (_rss(site("/r1")), "application/rss+xml"),
            ("site.test", "/atom.xml"): (_atom(site("/t1")), "application/atom+xml"),
            ("site.test", "/bomb.xml.gz"): (BOMB, "application/x-gzip"),
            ("site.test", "/laughs.xml"): (LAUGHS, xml),
            ("other.test", "/cross.xml"): (_urlset(site("/x1"), other("/o1")), xml),
            ("other.test", "/own.xml"): (_urlset(site("/forbidden-cross"), other("/o2")), xml),
        }
        return bodies.get((host, path))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.partition(":")[0]
        path = request.path
        self.log.append((time.monotonic(), host, path))
        if path == self.stall:
            self.stalled.set()
            await asyncio.wait_for(self.release.wait(), 30)  # the crawl is killed meanwhile
        if path == "/robots.txt":
            return web.Response(text=self._robots(host))
        found = self._body(host, path)
        if found is not None:
            return web.Response(body=found[0], content_type=found[1])
        if path.endswith((".xml", ".gz", ".rss")):
            return web.Response(status=404)
        html = f"<!doctype html><title>{host}{path}</title><p>Page {path}.</p>"
        return web.Response(text=html, content_type="text/html")

    def paths(self, host: str) -> list[str]:
        """The paths requested of ``host``, in order."""
        return [p for _, h, p in self.log if h == host]

    def closest(self, host: str) -> float:
        """The shortest time between two requests to ``host``."""
        times = [t for t, h, _ in self.log if h == host]
        return min((b - a for a, b in itertools.pairwise(times)), default=1e9)

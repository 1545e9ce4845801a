"""Map a request to a reply: Host dispatch, robots.txt, sitemaps, pages, special endpoints."""

from __future__ import annotations

from collections import Counter, OrderedDict

from gossamer.testweb import attacks, hostile, payloads, render, specials, trapweb
from gossamer.testweb.model import ROBOTS_REDIRECT_PATH, Host, RobotsKind
from gossamer.testweb.protocol import HTML, Reply, Request, html, page, redirect
from gossamer.testweb.specials import Context, Handler
from gossamer.testweb.truth import normalize_path
from gossamer.testweb.web import Web

LOCAL_NAMES = frozenset({"127.0.0.1", "localhost"})
TEXT = "text/plain; charset=utf-8"

EXACT: dict[str, Handler] = {
    "/slow": hostile.slow,
    "/hang": hostile.hang,
    "/trickle": hostile.trickle,
    "/drop": hostile.drop,
    "/reset": hostile.reset,
    "/broken-chunked": hostile.broken_chunked,
    "/gzip-bomb": hostile.gzip_bomb,
    "/huge": hostile.huge,
    "/hostile/attr-bomb": hostile.attr_bomb,
    "/hostile/deep": hostile.deep,
    "/hostile/unclosed-links": hostile.unclosed_links,
    "/malformed": specials.malformed,
    "/files/doc.pdf": specials.files,
    "/files/image.png": specials.files,
}
PREFIXES: tuple[tuple[str, Handler], ...] = (
    ("/redirect/", specials.redirects),
    ("/status/", specials.status),
    ("/flaky/", specials.flaky),
    ("/encoded/", specials.encoded),
    ("/charset/", specials.charset),
    ("/calendar/", specials.calendar),
    ("/repeat/", specials.repeat),
    ("/long/", specials.long_url),
    ("/app/", specials.app),
    ("/poison/", attacks.poison),
    ("/trap/", trapweb.traps),
)


def find_special(path: str) -> Handler | None:
    """The special endpoint handler for ``path``, if any."""
    if path in EXACT:
        return EXACT[path]
    return next((handler for prefix, handler in PREFIXES if path.startswith(prefix)), None)


class Router:
    """Answers requests for one web served on one port.

    Keeps the per-target hit counters of the flaky endpoints and a bounded cache of
    rendered (and compressed) pages.
    """

    def __init__(
        self,
        web: Web,
        port: int,
        *,
        flaky_failures: int = 2,
        retry_after: int = 1,
        cache_size: int = 4096,
    ) -> None:
        self.web = web
        self.port = port
        self.flaky_failures = flaky_failures
        self.retry_after = retry_after
        self.hits: Counter[tuple[str, str]] = Counter()
        self._cache: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
        self._cache_size = cache_size

    async def __call__(self, req: Request) -> Reply:
        """The reply for ``req``."""
        if not req.host:
            return page(400, "Missing Host header")
        host = self.web.hosts.get(req.host)
        if host is not None:
            return await self._on_host(req, host)
        if req.host in LOCAL_NAMES:
            return html(200, render.index_page(self.web.hosts, self.port))
        return page(404, f"Unknown host {req.host}")

    async def _on_host(self, req: Request, host: Host) -> Reply:
        path = req.path
        if path in ("/robots.txt", ROBOTS_REDIRECT_PATH):
            return self._robots(host, path)
        if path == "/sitemap.xml":
            body = render.sitemap(host, self.port).encode()
            return Reply(200, (("Content-Type", "application/xml"),), body)
        key = normalize_path(path)
        if key in host.pages:
            return self._page(req, host, key)
        if key + "/" in host.pages:
            return redirect(301, key + "/")
        handler = find_special(path)
        if handler is None:
            return page(404, "Not Found")
        context = Context(
            self.web, host, self.port, self.hits, self.flaky_failures, self.retry_after
        )
        return await handler(req, context)

    def _robots(self, host: Host, path: str) -> Reply:
        kind = host.robots.kind
        if kind is RobotsKind.ERROR and path == "/robots.txt":
            return page(500, "Internal Server Error")
        if kind is RobotsKind.REDIRECT and path == "/robots.txt":
            return redirect(301, ROBOTS_REDIRECT_PATH)
        if kind is RobotsKind.OFFSITE and path == "/robots.txt":
            return redirect(302, f"http://127.0.0.1:{self.port}/robots.txt?escape={host.name}")
        wanted = "/robots.txt" if kind is RobotsKind.RULES else ROBOTS_REDIRECT_PATH
        if kind in (RobotsKind.MISSING, RobotsKind.OFFSITE) or path != wanted:
            return page(404, "Not Found")
        body = host.robots.render(host.name, self.port).encode()
        return Reply(200, (("Content-Type", TEXT),), body)

    def _page(self, req: Request, host: Host, path: str) -> Reply:
        coding = host.pages[path].encoding
        if coding != "identity" and not req.accepts(coding):
            coding = "identity"
        headers = [("Content-Type", HTML), ("Vary", "Accept-Encoding")]
        if coding != "identity":
            headers.append(("Content-Encoding", coding))
        return Reply(200, tuple(headers), self._body(host, path, coding))

    def _body(self, host: Host, path: str, coding: str) -> bytes:
        key = (host.name, path, coding)
        body = self._cache.get(key)
        if body is None:
            body = render.render_page(host, host.pages[path], self.port).encode()
            if coding != "identity":
                body = payloads.compress(body, coding)
            self._cache[key] = body
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return body

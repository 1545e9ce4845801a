"""Special endpoints that attack the crawler's handling of what a server says (``/poison/``).

Each answers promptly with values no well-behaved server sends; a correct crawler records one
clean outcome per URL and goes on:

* ``/poison/content-type``: 200 HTML whose ``Content-Type`` holds bytes that are not UTF-8
  (``text/h\\xfftml; charset=\\xfe\\xff``), with a header ``X-Poison`` of raw bytes too.
* ``/poison/charset``: 200 HTML whose declared charset is bytes that name no charset.
* ``/poison/title``: 200 HTML whose ``<title>`` is bytes that are not UTF-8 (also undeclared).
* ``/poison/location``: 302 whose ``Location`` holds raw non-ASCII bytes; it leads, once
  percent-encoded as browsers do, to ``/poison/landed%FF%FE``, which answers 200.
* ``/poison/retry-after``: 503 with a ``Retry-After`` of 300 digits.
* ``/poison/offsite-links``: 200 HTML linking the same host on other ports (6379, 1) and the
  IP address and ``[::1]`` of the server: a crawler with the default scope follows none.

``ATTACK_PATHS`` lists the URLs a crawl of a host linking ``/poison/`` reaches.
"""

from __future__ import annotations

from gossamer.testweb.protocol import HTML, Reply, Request, page
from gossamer.testweb.specials import Context

# Header values are sent as latin-1: "\xff" goes out as the byte 0xFF.
BAD_CONTENT_TYPE = "text/h\xfftml; charset=\xfe\xff"
LANDED = "/poison/landed%FF%FE"
ATTACK_PATHS = (
    "/poison/content-type",
    "/poison/charset",
    "/poison/title",
    "/poison/location",
    "/poison/retry-after",
    "/poison/offsite-links",
)


def index() -> str:
    """Links to every attack (for a page of the web to carry)."""
    return "".join(f'<a href="{path}">{path}</a> ' for path in ATTACK_PATHS)


async def poison(req: Request, ctx: Context) -> Reply:
    """Dispatch ``/poison/<name>``."""
    name = req.path.removeprefix("/poison/")
    if name == "content-type":
        body = page(200, "Bad content type").body
        return Reply(200, (("Content-Type", BAD_CONTENT_TYPE), ("X-Poison", "\xc3\x28\xff")), body)
    if name == "charset":
        return Reply(200, (("Content-Type", "text/html; charset=\xff\xfe-8"),), _doc("Bad charset"))
    if name == "title":
        body = b"<html><head><title>caf\xe9 \xff\xfe\x80 title</title></head><body>x</body></html>"
        return Reply(200, (("Content-Type", "text/html"),), body)
    if name == "location":
        return Reply(302, (("Location", "/poison/landed\xff\xfe"),), b"")
    if name.startswith("landed"):
        return page(200, "Landed")
    if name == "retry-after":
        return Reply(503, (("Retry-After", "9" * 300), ("Content-Type", HTML)), b"busy")
    if name == "offsite-links":
        host = ctx.host.name
        links = [
            f"http://{host}:6379/",
            f"http://{host}:1/x",
            f"http://127.0.0.1:{ctx.port}/",
            f"http://[::1]:{ctx.port}/",
        ]
        extra = "".join(f'<a href="{url}">{url}</a> ' for url in links)
        return page(200, "Offsite ports", extra)
    return page(404, "Not Found")


def _doc(title: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><p>{title}</p></body></html>".encode()

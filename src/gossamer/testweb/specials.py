"""Special endpoints that answer promptly: redirects, statuses, flaky errors, traps, files.

Every host serves all of them (``hostile.py`` has the slow and broken ones):

* ``/redirect/{301,302,303,307,308}`` -> ``/``; ``.../abs`` -> ``http://same-host:port/``;
  ``.../rel`` -> ``../../`` (resolves to ``/``); ``.../cross`` -> next host's ``/``;
  ``?to=URL`` overrides the Location (sent verbatim).
* ``/redirect/chain/N`` -> 302 ``/redirect/chain/N-1`` ... ``/redirect/chain/1`` -> ``/``
  (N hops); ``/redirect/loop/a`` <-> ``/redirect/loop/b`` forever.
* ``/status/CODE`` -> that status (429 and 503 carry ``Retry-After``).
* ``/flaky/{429,500,503}?n=N`` -> the error for the first N hits of that exact target on
  that host (N defaults to the server's ``flaky_failures``), then 200.
* ``/calendar/YYYY/MM`` links the previous and next month forever; ``/repeat/a/`` links
  ``a/`` (``/repeat/a/a/``...); ``/long/S`` links a longer ``/long/S-...`` forever.
* ``/files/doc.pdf``, ``/files/image.png``, ``/malformed``, ``/charset/{windows-1251,
  iso-8859-1,shift_jis}``, ``/encoded/{gzip,deflate,br}`` (encoded whatever the client
  accepts).
* ``/app/N`` (N < ``APP_PAGES``): a section built by JavaScript (``--render``): an empty
  ``<div id="root">`` and a ``<noscript>`` notice; a script writes the page's text and its
  links to ``/app/N+1`` (the last one to ``/``). No generated page links here, so the web's
  truth does not count it: a crawl enters it from a seed, and sees past ``/app/0`` only when
  it renders.
* ``/encoded/gzip-multi``: the same page as a gzip body of three members
  (``Content-Encoding: gzip``); ``/encoded/deflate-raw-lookalike``: as raw deflate whose
  first two bytes pass the zlib header check (``Content-Encoding: deflate``); both decode to
  the page, the second only when read as raw deflate once the zlib reading fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gossamer.testweb import payloads
from gossamer.testweb.model import Host, origin
from gossamer.testweb.protocol import HTML, Reply, Request, html, page, redirect
from gossamer.testweb.web import Web

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
APP_PAGES = 10
FLAKY_CODES = frozenset({429, 500, 503})
MAX_CHAIN = 1000


@dataclass(frozen=True, slots=True)
class Context:
    """What a special endpoint may consult: the web, the host, the port and hit counters."""

    web: Web
    host: Host
    port: int
    hits: Counter[tuple[str, str]]
    flaky_failures: int = 2
    retry_after: int = 1


Handler = Callable[[Request, Context], Awaitable[Reply]]


def not_found(what: str = "Not Found") -> Reply:
    """A 404 page."""
    return page(404, what)


def query_int(req: Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter clamped to ``[low, high]``; ``default`` if absent/bad."""
    try:
        value = int(req.query.get(name, default))
    except ValueError:
        value = default
    return max(low, min(high, value))


def _retry_after(req: Request, ctx: Context) -> tuple[str, str]:
    return ("Retry-After", str(query_int(req, "retry_after", ctx.retry_after, 0, 3600)))


async def redirects(req: Request, ctx: Context) -> Reply:
    """Single redirects, chains and loops (see the module docstring)."""
    parts = req.path.split("/")[2:]
    if len(parts) == 2 and parts[0] == "chain" and parts[1].isdigit():
        hops = min(int(parts[1]), MAX_CHAIN)
        return redirect(302, f"/redirect/chain/{hops - 1}" if hops > 1 else "/")
    if len(parts) == 2 and parts[0] == "loop" and parts[1] in ("a", "b"):
        return redirect(302, "/redirect/loop/" + ("b" if parts[1] == "a" else "a"))
    if not parts[0].isdigit() or int(parts[0]) not in REDIRECT_CODES or len(parts) > 2:
        return not_found()
    names = ctx.web.host_names
    following = names[(names.index(ctx.host.name) + 1) % len(names)]
    targets = {
        "": "/",
        "abs": origin(ctx.host.name, ctx.port) + "/",
        "rel": "../../",
        "cross": origin(following, ctx.port) + "/",
    }
    variant = parts[1] if len(parts) == 2 else ""
    if variant not in targets:
        return not_found()
    return redirect(int(parts[0]), req.query.get("to", targets[variant]))


async def status(req: Request, ctx: Context) -> Reply:
    """``/status/CODE``: any status from 200 to 599."""
    code = req.path.removeprefix("/status/")
    if not code.isdigit() or not 200 <= int(code) <= 599:
        return not_found()
    number = int(code)
    headers = (_retry_after(req, ctx),) if number in (429, 503) else ()
    if number in (204, 304):
        return Reply(number, headers)
    return page(number, f"Status {number}", "", *headers)


async def flaky(req: Request, ctx: Context) -> Reply:
    """``/flaky/CODE``: the error for the first N hits, then 200."""
    code = req.path.removeprefix("/flaky/")
    if not code.isdigit() or int(code) not in FLAKY_CODES:
        return not_found()
    failures = query_int(req, "n", ctx.flaky_failures, 0, 1_000_000)
    ctx.hits[ctx.host.name, req.target] += 1
    if ctx.hits[ctx.host.name, req.target] <= failures:
        headers = (_retry_after(req, ctx),) if int(code) in (429, 503) else ()
        return page(int(code), f"Flaky {code}", "", *headers)
    return page(200, "Recovered", "<p>flaky endpoint recovered</p>")


async def calendar(req: Request, ctx: Context) -> Reply:
    """An endless calendar: each month links its neighbours."""
    parts = req.path.strip("/").split("/")
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return not_found()
    year, month = int(parts[1]), int(parts[2])
    if not (1 <= year <= 999_999 and 1 <= month <= 12):
        return not_found()
    prev_y, prev_m = (year - 1, 12) if month == 1 else (year, month - 1)
    next_y, next_m = (year + 1, 1) if month == 12 else (year, month + 1)
    links = (
        f'<a href="/calendar/{prev_y:04d}/{prev_m:02d}">previous</a> '
        f'<a href="/calendar/{next_y:04d}/{next_m:02d}">next</a>'
    )
    return page(200, f"Calendar {year:04d}-{month:02d}", links)


async def repeat(req: Request, ctx: Context) -> Reply:
    """``/repeat/a/.../a/`` links ``a/`` relative to itself, one segment deeper forever."""
    segments = req.path.strip("/").split("/")[1:]
    if not segments or any(segment != "a" for segment in segments):
        return not_found()
    return page(200, f"Repeat {len(segments)}", '<a href="a/">deeper</a>')


async def long_url(req: Request, ctx: Context) -> Reply:
    """``/long/S`` links ``/long/S-<len>``: URLs grow by about ten characters a hop."""
    tail = req.path.removeprefix("/long/")
    if not tail or "/" in tail:
        return not_found()
    return page(200, f"Long {len(tail)}", f'<a href="/long/{tail}-{len(tail):08d}">longer</a>')


async def app(req: Request, ctx: Context) -> Reply:
    """``/app/N``: a page of the section built by JavaScript (see the module doc)."""
    number = req.path.removeprefix("/app/")
    if not number.isdigit() or int(number) >= APP_PAGES or number != str(int(number)):
        return not_found()
    n = int(number)
    following = f"/app/{n + 1}" if n + 1 < APP_PAGES else "/"
    script = (
        "document.getElementById('root').innerHTML ="
        f" '<h1>App page {n}</h1><p>' + 'This text is written by a script. '.repeat(8) +"
        f" '</p><a href=\"{following}\">next</a>';"
    )
    return html(
        200,
        f"<!DOCTYPE html><html><head><title>App {n}</title></head><body>"
        '<div id="root"></div><noscript>This section needs JavaScript.</noscript>'
        f"<script>{script}</script></body></html>\n",
    )


async def files(req: Request, ctx: Context) -> Reply:
    """A small valid PDF and PNG."""
    if req.path == "/files/doc.pdf":
        return Reply(200, (("Content-Type", "application/pdf"),), payloads.pdf())
    if req.path == "/files/image.png":
        return Reply(200, (("Content-Type", "image/png"),), payloads.png())
    return not_found()


async def malformed(req: Request, ctx: Context) -> Reply:
    """Broken HTML with NUL and invalid UTF-8 bytes."""
    return Reply(200, (("Content-Type", HTML),), payloads.MALFORMED)


async def charset(req: Request, ctx: Context) -> Reply:
    """Pages in windows-1251, ISO-8859-1 and Shift_JIS (see ``payloads.charset_page``)."""
    name = req.path.removeprefix("/charset/")
    if name not in payloads.CHARSET_SAMPLES:
        return not_found()
    content_type, body = payloads.charset_page(name)
    return Reply(200, (("Content-Type", content_type),), body)


async def encoded(req: Request, ctx: Context) -> Reply:
    """The same page, compressed with gzip, deflate or br regardless of Accept-Encoding, or
    in one of the unusual forms of the module doc."""
    coding = req.path.removeprefix("/encoded/")
    page_bytes = payloads.encoded_page()
    if coding == "gzip-multi":
        body, coding = payloads.gzip_members(page_bytes, 3), "gzip"
    elif coding == "deflate-raw-lookalike":
        body, coding = payloads.raw_deflate_lookalike(page_bytes), "deflate"
    elif coding in ("gzip", "deflate", "br"):
        body = payloads.compress(page_bytes, coding)
    else:
        return not_found()
    return Reply(200, (("Content-Type", HTML), ("Content-Encoding", coding)), body)

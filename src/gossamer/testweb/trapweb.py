"""The trap web: a host of real pages beside the crawler traps real sites have.

``generate_traps(seed)`` builds one host (``traps0.test``) of ``pages`` normal pages (the
generator of :mod:`gossamer.testweb.site`, no special endpoints) and links a few of its plain
pages to the trap entries below. Every host serves them (``/trap/...``), so a web made by
``generate`` is unchanged: no page of it links here.

* ``/trap/cal/YYYY/MM/DD``: a day of an endless calendar linking the previous and next days.
* ``/trap/shop``: faceted navigation, :data:`FACETS` parameters of :data:`FACET_VALUES`
  values each; every page links each value of each parameter added to (or replacing) its own
  selection, so the combinations never end.
* ``/trap/account``: an account page whose links carry a new session id on every visit
  (``;jsessionid=``, ``?PHPSESSID=``, ``?sid=``, ``?session_id=`` and an ASP.NET
  ``/trap/(S(...))/account`` path).
* ``/trap/loop/``: a page linking ``a/b/`` relative to itself, so the path grows forever
  (``/trap/loop/a/b/a/b/``...).

:func:`trap_kind` names the kind of trap a URL belongs to (None for the real pages, the trap
entries and the single-filter pages of the shop, which a site owner would call pages).
"""

from __future__ import annotations

import datetime
import hashlib
import urllib.parse
from dataclasses import replace

from gossamer.testweb.model import Form, Link, Role
from gossamer.testweb.protocol import Reply, Request, page
from gossamer.testweb.site import generate
from gossamer.testweb.specials import Context, not_found
from gossamer.testweb.web import Web

FACETS = ("brand", "color", "size", "price", "material", "rating")
FACET_VALUES = tuple(f"v{chr(ord('a') + i)}" for i in range(10))
CALENDAR_ENTRY = "/trap/cal/2026/11/28"
ENTRIES = (CALENDAR_ENTRY, "/trap/shop", "/trap/account", "/trap/loop/")
"""Where the real pages enter the traps (pages themselves, not traps)."""


def generate_traps(seed: int = 7, pages: int = 300) -> Web:
    """One host, ``traps0.test``, of ``pages`` normal pages; four plain pages link a trap
    entry each (see the module docstring)."""
    web = generate(seed, hosts=1, pages_per_host=pages, specials=(), prefix="traps")
    host = web.host(0)
    plain = [p for p in host.pages.values() if p.role is Role.PLAIN and p.path != "/"]
    pages_by_path = dict(host.pages)
    for index, entry in enumerate(ENTRIES):
        chosen = plain[(index * 7 + 3) % len(plain)]
        link = Link(host.name, entry, form=Form.ROOT, special=True, text="trap")
        pages_by_path[chosen.path] = replace(chosen, links=(*chosen.links, link))
    return Web(seed=web.seed, hosts={host.name: replace(host, pages=pages_by_path)})


def trap_kind(path: str, query: str = "") -> str | None:
    """The trap a URL's path and query belong to: ``calendar``, ``facets``, ``session``,
    ``loop``; None for anything else (real pages, trap entries, single-filter shop pages)."""
    if not path.startswith("/trap/"):
        return None
    params = [p for p in query.split("&") if p]
    if path == "/trap/shop":
        return "facets" if len(params) > 1 else None
    if path in ENTRIES and not params:
        return None
    if path.startswith("/trap/cal/"):
        return "calendar"
    if path.startswith("/trap/loop/"):
        return "loop"
    return "session"


async def traps(req: Request, ctx: Context) -> Reply:
    """Serve ``/trap/...`` (see the module docstring)."""
    path = req.path
    if path.startswith("/trap/cal/"):
        return _calendar(path)
    if path == "/trap/shop":
        return _shop(req.target.partition("?")[2])
    if path.startswith("/trap/loop/"):
        segments = path.removeprefix("/trap/loop/").split("/")
        if segments[-1] or any(s not in ("a", "b") for s in segments[:-1]):
            return not_found()
        return page(200, f"Loop {len(segments)}", '<a href="a/b/">deeper</a>')
    if path.partition(";")[0] == "/trap/account" or _aspnet(path):
        return _account(ctx)
    return not_found()


def _calendar(path: str) -> Reply:
    parts = path.removeprefix("/trap/cal/").split("/")
    try:
        day = datetime.date(*(int(part) for part in parts))
    except (TypeError, ValueError):
        return not_found()
    one = datetime.timedelta(days=1)
    near = ((day - one, "previous"), (day + one, "next")) if 1 < day.year < 9999 else ()
    links = " ".join(
        f'<a href="/trap/cal/{d.year:04d}/{d.month:02d}/{d.day:02d}">{text}</a>' for d, text in near
    )
    return page(200, f"Calendar {day.isoformat()}", links)


def _shop(query: str) -> Reply:
    chosen = dict(urllib.parse.parse_qsl(query))
    if any(name not in FACETS or value not in FACET_VALUES for name, value in chosen.items()):
        return not_found()
    links = []
    for name in FACETS:
        for value in FACET_VALUES:
            selection = {**chosen, name: value}
            target = "&".join(f"{n}={selection[n]}" for n in FACETS if n in selection)
            links.append(f'<a href="/trap/shop?{target}">{name} {value}</a>')
    return page(200, f"Shop ({len(chosen)} filters)", " ".join(links))


def _account(ctx: Context) -> Reply:
    ctx.hits[ctx.host.name, "/trap/account"] += 1
    visit = ctx.hits[ctx.host.name, "/trap/account"]
    token = hashlib.sha256(f"{ctx.host.name}{visit}".encode()).hexdigest()[:24].upper()
    targets = (
        f"/trap/account;jsessionid={token}",
        f"/trap/account?PHPSESSID={token}",
        f"/trap/account?sid={token}",
        f"/trap/account?session_id={token}",
        f"/trap/(S({token.lower()}))/account",
    )
    links = " ".join(f'<a href="{t}">account</a>' for t in targets)
    return page(200, "Account", links)


def _aspnet(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 4 and parts[2].startswith("(S(") and parts[3] == "account"

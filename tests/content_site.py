"""A small site whose pages are made for the content fields of a record, served by a real
aiohttp server on loopback, and an in-process crawl of it.

``/`` is an article with every field in its markup and links to the rest: pages without
metadata, pages whose language only the text tells, plain text, a PDF, a 404 and a redirect.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp import web
from tests.local_app import Handler, serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.testweb import payloads

ARTICLE = """<!doctype html><html lang="en-GB"><head><title>Rivers</title>
<meta name="description" content="All about rivers.">
<meta name="author" content="Ada Lovelace">
<meta property="article:published_time" content="2024-05-01T10:00:00Z">
<link rel="canonical" href="/rivers">
</head><body>
<nav><a href="/">Home</a> <a href="/a">About</a> <a href="/c">Contact</a></nav>
<article><h1>Rivers of the world</h1>
<p>Rivers carry water from the mountains to the sea, shaping valleys and plains along the
way, and people have settled on their banks for as long as there have been people.</p>
<img src="/img/delta.jpg" alt="A delta">
<p>The longest rivers cross whole continents; their basins feed billions, and their floods
have been feared and welcomed in turn by every civilisation that grew beside them.</p>
<ul><li>The Nile</li><li>The Amazon</li></ul></article>
<footer>Copyright 2024 River Facts. All rights reserved.</footer>
<a href="/plain.txt">plain</a> <a href="/doc.pdf">pdf</a> <a href="/bare">bare</a>
<a href="/de">de</a> <a href="/klingon">klingon</a> <a href="/stated">stated</a>
<a href="/missing">missing</a> <a href="/moved">moved</a>
</body></html>"""

GERMAN = (
    "Der Rhein entspringt in den Alpen und fließt durch die Schweiz, Deutschland und die "
    "Niederlande, bevor er in die Nordsee mündet. Seit Jahrhunderten ist er eine der "
    "wichtigsten Wasserstraßen Europas, und an seinen Ufern liegen Städte wie Basel und Köln."
)
FRENCH = (
    "La Loire est le plus long fleuve de France. Elle prend sa source au mont Gerbier de Jonc "
    "et se jette dans l'océan Atlantique près de Saint-Nazaire, après avoir traversé des "
    "paysages de vignes et de châteaux que les visiteurs admirent depuis des siècles."
)
ENGLISH = (
    "The Thames flows through London on its way to the North Sea, and for centuries it "
    "carried the trade of a city that grew on both its banks."
)
PLAIN = "Первый абзац о реках\nстрока два: Волга впадает в Каспийское море\n\n\nВторой абзац"
PDF_TEXT = "The river carries the text of this document to the sea"


def _page(body: str, html: str = "<html>") -> bytes:
    return f"<!doctype html>{html}<head><title>t</title></head><body>{body}</body></html>".encode()


PAGES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html; charset=utf-8", ARTICLE.encode()),
    "/plain.txt": ("text/plain; charset=windows-1251", PLAIN.encode("cp1251")),
    "/doc.pdf": ("application/pdf", payloads.pdf(PDF_TEXT)),
    "/bare": ("text/html", b"<html><body><p>bare</p></body></html>"),
    "/de": ("text/html", _page(f"<article><p>{GERMAN}</p></article>")),
    "/klingon": ("text/html", _page(f"<p>{FRENCH}</p>", '<html lang="x-klingon">')),
    "/stated": ("text/html", _page(f"<p>{ENGLISH}</p>", '<html lang="de">')),
}
REDIRECTS = {"/moved": "/bare"}


async def handle(request: web.Request) -> web.Response:
    """Serve `PAGES` and `REDIRECTS`; anything else is a 404."""
    if request.path in REDIRECTS:
        raise web.HTTPMovedPermanently(REDIRECTS[request.path])
    found = PAGES.get(request.path)
    if found is None:
        return web.Response(status=404, text="not here")
    return web.Response(body=found[1], headers={"Content-Type": found[0]})


async def crawl(
    out: Path,
    handler: Handler = handle,
    paths: tuple[str, ...] = ("/",),
    limit: float = 30,
    **flags: Any,
) -> dict[str, dict[str, Any]]:
    """Crawl the site ``handler`` serves from ``paths`` (in process, robots.txt ignored);
    its records by path (with the query, if any)."""
    async with serve(handler) as port:
        base = {
            "seeds": [f"http://site.test:{port}{path}" for path in paths],
            "out": out,
            "resolve": ["site.test=127.0.0.1"],
            "robots": False,
            "quiet": True,
        }
        await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), limit)
    return records_by_path(out)


def records_by_path(out: Path) -> dict[str, dict[str, Any]]:
    """The records of ``out/pages.jsonl`` by path; the file must be strict UTF-8."""
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return {"/" + r["url"].split("/", 3)[3]: r for r in map(json.loads, lines)}

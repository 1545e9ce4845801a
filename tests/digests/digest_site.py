"""A small news site on loopback whose pages repeat each other's main text: the same article
behind session ids, a print version, an edited copy, and a distinct article on the same
template. Every page links to a page of its own (``/from/...``), so a test sees whose links
were followed."""

from __future__ import annotations

import random

from aiohttp import web


def article(seed: int, words: int = 400) -> list[str]:
    """Paragraphs of deterministic prose."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(3, 9)))
             for _ in range(800)]  # fmt: skip
    paragraphs = []
    for _ in range(max(words // 50, 1)):
        paragraphs.append(" ".join(rng.choice(vocab) for _ in range(50)).capitalize() + ".")
    return paragraphs


ARTICLE = article(1)
OTHER = article(2)
EDITED = [*ARTICLE, "A correction was added to this story."]


def page(paragraphs: list[str], links: list[str], extra: str = "") -> str:
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(5))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    more = "".join(f'<a href="{link}">more</a> ' for link in links)
    return (
        f"<html><head><title>News</title></head><body><nav><ul>{nav}</ul></nav>{extra}"
        f"<main><article><h1>Story</h1>{body}</article></main><aside>{more}</aside>"
        "<footer>About us. Contact. Privacy.</footer></body></html>"
    )


PAGES = {
    "/": page(["Welcome"], ["/a?ref=1"]),
    "/a?ref=1": page(ARTICLE, ["/from/first", "/a?ref=2", "/print/a", "/edit/a", "/b"]),
    "/a?ref=2": page(ARTICLE, ["/from/session"], extra="<p>Session 2</p>"),
    "/print/a": "<html><body><p>Printed from news.test</p><article>"
    + "".join(f"<p>{p}</p>" for p in ARTICLE)
    + '</article><a href="/from/print">x</a></body></html>',
    "/edit/a": page(EDITED, ["/from/edit"]),
    "/b": page(OTHER, ["/from/b"]),
    "/b?ref=9": page(OTHER, ["/from/b9"]),
}


async def handle(request: web.Request) -> web.Response:
    path = request.path_qs
    if path.startswith("/from/") or path.startswith("/section/"):
        small = f"<html><body><p>{path}</p></body></html>"
        return web.Response(text=small, content_type="text/html")
    if path not in PAGES:
        raise web.HTTPNotFound()
    return web.Response(text=PAGES[path], content_type="text/html")

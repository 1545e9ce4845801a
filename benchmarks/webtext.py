"""Text and HTML templates of the benchmark web: pages that look like a news or docs site.

A page has a head with metadata, a cookie notice, a header with navigation, an article of
headings and paragraphs with inline links and lists of related links, then the boilerplate a
main-text extractor has to leave out: a share bar, an author box, a newsletter sign-up, a
sidebar of teasers (title and snippet) and a footer with link columns and an about text. The
text is drawn from a pool of paragraphs made once per web, so writing 200,000 pages stays fast
while pages still differ. `LAYOUT` numbers this layout; it is part of the web's cache key.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

_VOCABULARY = (
    "the of and to in is was for on that with as by at from his her an which you were are "
    "this be or have had not but one all their there been has when who will more no if out "
    "so said what up its about into than them can only other new some could time these two "
    "may then do first any my now such like our over man me even most made after also did "
    "many before must through back years where much your way well down should because each "
    "just those people how too little state good very make world still own see men work long "
    "get here between both life being under never day same another know while last might us "
    "great old year off come since against go came right used take three network protocol "
    "server client request response header cache index crawler frontier queue host page link "
    "document archive library museum garden river mountain harbour station market council "
    "café naïve façade résumé Zürich São Paulo Łódź Málaga Ærø crème brûlée déjà vu"
)
_WORDS = _VOCABULARY.split()
LAYOUT = 2
"""Bumped whenever the pages change, so a web cached with an older layout is not reused."""
REFERENCE_LAYOUT = 1
"""The same for the pages of :func:`render_reference`."""
_PUNCT = (".", ".", ".", ".", "?", "!", ";", ":")
Link = tuple[str, str]
"""An ``(href, text)`` pair, the href as written in the page."""


class TextPool:
    """Sentences and paragraphs drawn from one seeded generator."""

    def __init__(self, rng: random.Random, paragraphs: int = 400) -> None:
        self._rng = rng
        self.paragraphs = [self._paragraph() for _ in range(paragraphs)]

    def words(self, low: int, high: int) -> str:
        """Between ``low`` and ``high`` words, the first capitalised."""
        chosen = self._rng.choices(_WORDS, k=self._rng.randint(low, high))
        return " ".join(chosen).capitalize()

    def _sentence(self) -> str:
        text = self.words(6, 22)
        if self._rng.random() < 0.1:
            text += " &amp; " + self.words(2, 6).lower()
        if self._rng.random() < 0.1:
            text = f"{text} <em>{self.words(1, 3).lower()}</em>"
        return text + self._rng.choice(_PUNCT)

    def _paragraph(self) -> str:
        return " ".join(self._sentence() for _ in range(self._rng.randint(2, 8)))

    def paragraph(self) -> str:
        """One paragraph of the pool."""
        return self._rng.choice(self.paragraphs)


def _anchor(link: Link) -> str:
    return f'<a href="{link[0]}">{link[1]}</a>'


def _items(links: Sequence[Link]) -> str:
    return "".join(f"<li>{_anchor(link)}</li>\n" for link in links)


def _inline(pool: TextPool, rng: random.Random, links: Sequence[Link]) -> str:
    """A paragraph with the links placed between its sentences."""
    parts = pool.paragraph().split(". ")
    for link in links:
        parts.insert(rng.randint(0, len(parts)), f"See {_anchor(link)}")
    return "<p>" + ". ".join(parts) + "</p>\n"


def _article(pool: TextPool, rng: random.Random, body: Sequence[Link], size: int) -> list[str]:
    """Headings, paragraphs with inline links and related lists, grown to about ``size``."""
    chunks: list[str] = []
    inline = int(len(body) * 0.35)
    rest = list(body[inline:])
    at = 0
    while at < inline or rest:
        chunks.append(f'<h2 id="part-{len(chunks)}">{pool.words(2, 7)}</h2>\n')
        for _ in range(rng.randint(1, 3)):
            take = rng.randint(1, 3)
            chunks.append(_inline(pool, rng, body[at : min(at + take, inline)]))
            at = min(at + take, inline)
        if rest:
            cut = rng.randint(8, 20)
            listed, rest = rest[:cut], rest[cut:]
            chunks.append(f'<ul class="related">\n{_items(listed)}</ul>\n')
    length = sum(map(len, chunks))
    while length < size:
        chunk = f"<p>{pool.paragraph()}</p>\n"
        if rng.random() < 0.15:
            chunk = f"<h3>{pool.words(2, 6)}</h3>\n" + chunk
        chunks.append(chunk)
        length += len(chunk)
    return chunks


def _boilerplate(site: str, nav: Sequence[Link], pool: TextPool, rng: random.Random) -> str:
    """Share bar, author box and newsletter sign-up after the article: text, not main text."""
    return (
        '<div class="share"><span>Share this article</span> <a href="#top">Facebook</a> '
        '<a href="#top">X</a> <a href="#top">LinkedIn</a> <a href="#top">Email</a></div>\n'
        f'<div class="author-box"><h4>About the author</h4><p>{pool.words(12, 24)}.</p></div>\n'
        f'<form class="newsletter"><h4>Get the {site} newsletter</h4>'
        f"<p>{pool.words(10, 18)}. Unsubscribe at any time.</p>"
        '<input type="email" placeholder="Your email"><button>Sign up</button></form>\n'
    )


def _teasers(links: Sequence[Link], pool: TextPool) -> str:
    return "".join(
        f'<li><a href="{href}">{text}</a><p class="teaser">{pool.words(8, 16)}.</p></li>\n'
        for href, text in links
    )


def _footer(site: str, nav: Sequence[Link], pool: TextPool) -> str:
    """Footer: the navigation again in two columns, an about text, legal links."""
    half = (len(nav) + 1) // 2
    columns = "".join(
        f'<ul class="col">\n{_items(part)}</ul>\n' for part in (nav[:half], nav[half:])
    )
    return (
        f'<footer>\n<div class="about"><h4>About {site}</h4><p>{pool.words(15, 30)}.</p></div>\n'
        f"{columns}"
        '<p class="legal">&copy; 2024 <a href="mailto:editor@example.org">Editor</a> '
        '&middot; <a href="javascript:void(0)">Cookie settings</a> '
        '&middot; <a href="#top">Back to top</a></p></footer>\n'
    )


def render_page(
    title: str,
    canonical: str,
    nav: Sequence[Link],
    body: Sequence[Link],
    size: int,
    pool: TextPool,
    rng: random.Random,
) -> str:
    """A whole HTML page of roughly ``size`` characters carrying every link given."""
    site = canonical.split("/")[2]
    side = rng.randint(0, min(12, len(body) // 4))
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="description" content="{pool.words(8, 16)}">\n'
        f'<link rel="canonical" href="{canonical}">\n'
        '<link rel="stylesheet" href="/static/site.css">\n'
        "<script>window.dataLayer = window.dataLayer || [];"
        "function gtag(){dataLayer.push(arguments);}</script>\n</head>\n"
        f'<body id="top">\n<div class="cookie-notice"><p>{pool.words(12, 20)}.</p>'
        "<button>Accept all</button> <button>Settings</button></div>\n"
        f'<header class="site-header"><div class="logo">'
        f'<a href="/">{site}</a></div>\n<nav class="main-nav"><ul>\n{_items(nav)}</ul></nav>'
        "</header>\n<main>\n<article>\n"
        f'<h1>{title}</h1>\n<p class="byline">By {pool.words(2, 3)} &middot; 5 min read</p>\n'
    )
    tail = (
        "</article>\n"
        + _boilerplate(site, nav, pool, rng)
        + f'<aside class="sidebar"><h3>Popular</h3>\n<ul>\n{_teasers(body[:side], pool)}</ul>'
        "</aside>\n</main>\n" + _footer(site, nav, pool) + "</body>\n</html>\n"
    )
    article = _article(pool, rng, body[side:], size - len(head) - len(tail))
    return head + "".join(article) + tail


def _symbol(name: str, refs: Sequence[Link], pool: TextPool, rng: random.Random) -> str:
    """One documented symbol: signature, permalink, a docstring citing ``refs``."""
    cited = "".join(f' <a class="reference" href="{h}"><code>{t}</code></a>,' for h, t in refs)
    params = ", ".join(rng.choices(_WORDS[:60], k=rng.randint(0, 4)))
    return (
        f'<dl class="api">\n<dt id="{name}"><code class="sig">{pool.words(1, 1).lower()}'
        f'({params})</code><a class="headerlink" href="#{name}" title="Permalink">&para;</a>'
        f"</dt>\n<dd><p>{pool.words(8, 24)}.</p>\n"
        + (f"<p>See also:{cited.rstrip(',')}.</p>\n" if refs else "")
        + "</dd>\n</dl>\n"
    )


def render_reference(
    title: str,
    canonical: str,
    nav: Sequence[Link],
    sidebar: Sequence[Link],
    symbols: Sequence[str],
    body: Sequence[Link],
    size: int,
    pool: TextPool,
    rng: random.Random,
) -> str:
    """An API reference page of roughly ``size`` characters: navigation, a sidebar index, a
    table of contents of the page's symbols, each symbol with a permalink and its
    cross-references (``body``), then prose; an index page lists ``body`` instead."""
    site = canonical.split("/")[2]
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title} &mdash; {site} API reference</title>\n"
        f'<link rel="canonical" href="{canonical}">\n'
        '<link rel="stylesheet" href="/_static/docs.css">\n'
        '<link rel="index" title="Index" href="/genindex.html">\n</head>\n'
        f'<body>\n<header><nav class="related"><ul>\n{_items(nav)}</ul></nav></header>\n'
        f'<div class="document">\n<nav class="sphinxsidebar"><h3>{pool.words(1, 2)}</h3>'
        f"<ul>\n{_items(sidebar)}</ul></nav>\n<main>\n"
        f'<h1>{title}<a class="headerlink" href="#" title="Permalink">&para;</a></h1>\n'
    )
    toc = "".join(f'<li><a href="#{s}"><code>{s}</code></a></li>\n' for s in symbols)
    chunks = [f'<nav class="toc"><h2>Contents</h2><ul>\n{toc}</ul></nav>\n'] if toc else []
    if symbols:
        share = -(-len(body) // len(symbols))
        chunks += [
            _symbol(name, body[i * share : (i + 1) * share], pool, rng)
            for i, name in enumerate(symbols)
        ]
    else:
        chunks.append(f'<ul class="index">\n{_items(body)}</ul>\n')
    tail = (
        "</main>\n</div>\n<footer><p>&copy; 2024 The authors. "
        '<a href="#">Back to top</a></p></footer>\n</body>\n</html>\n'
    )
    length = len(head) + sum(map(len, chunks)) + len(tail)
    while length < size:
        chunk = f"<p>{pool.paragraph()}</p>\n"
        chunks.append(chunk)
        length += len(chunk)
    return head + "".join(chunks) + tail

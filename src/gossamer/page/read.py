"""Reading a body: HTML parsed (links, title, the tree) and its content extracted, plain text
decoded, and what extraction found turned into the record's content fields.

The extractors (:mod:`gossamer.extract`) are imported on first use: a ``--no-text`` crawl
never loads them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from w3lib.encoding import to_unicode

from gossamer.page.state import Fetched, TextFields
from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import parse as guarded_parse
from gossamer.parse.links import ParsedPage, parse_html

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.extract import Content

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def is_html(result: Fetched) -> bool:
    """An HTML answer: by its Content-Type, or without one by how the body starts."""
    if result.content_type is not None:
        return result.content_type in _HTML_TYPES
    head = result.body[:256].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


_RESTRICTIVE = re.compile(rb"(?i)noindex|none|unavailable_after")
"""The words a robots meta tag withholds a page with: a body without any has none to read."""


def names_robots(body: bytes) -> bool:
    """Whether ``body`` may hold a robots meta tag that withholds it (a search in C)."""
    return _RESTRICTIVE.search(body) is not None


def tree_of(body: bytes, charset: str | None) -> LexborHTMLParser | None:
    """An HTML body's tree (the guarded parse), decoded as :func:`parse` decodes it."""
    detected = detect_encoding(body, charset)
    payload = body[detected.bom_length :]
    document: str | bytes = payload
    if detected.encoding != "utf-8":
        document = to_unicode(payload, detected.encoding)
    return guarded_parse(document).tree


def parse(
    url: str,
    body: bytes,
    charset: str | None,
    follow_nofollow: bool,
    extractor: str | None,
    content_language: str | None = None,
) -> tuple[ParsedPage, Content | None]:
    """Parse an HTML body; with an ``extractor`` (a crawl keeping text) extract its content
    (its language, when the markup states none, from the ``Content-Language`` header)."""
    page = parse_html(body, url, header_charset=charset, follow_nofollow=follow_nofollow)
    if extractor is None:
        return page, None
    from gossamer.extract import Content, extract

    if page.tree is None:
        return page, Content(text="")
    return page, extract(page.tree, url, extractor, content_language=content_language)


def plain_text(result: Fetched) -> Content:
    """The content of a ``text/plain`` body: its text, decoded, and its language (the
    ``Content-Language`` header's, else the one detected in the text)."""
    from gossamer.extract import Content
    from gossamer.extract.lang import detect_language
    from gossamer.extract.meta import language_code
    from gossamer.extract.text import plain_text as clean

    detected = detect_encoding(result.body, result.charset)
    body = result.body[detected.bom_length :]
    text = clean(body.decode(detected.encoding, "replace"))
    stated = language_code(result.headers.get("content-language"))
    return Content(text=text, lang=stated or detect_language(text))


def text_fields(content: Content, limit: int) -> tuple[TextFields, tuple[str, ...]]:
    """The record's content fields, and ``("text-cut",)`` if the text was over ``limit``."""
    text = content.text
    cut: tuple[str, ...] = ("text-cut",) if len(text) > limit else ()
    fields = TextFields(
        text=text[:limit],
        lang=content.lang,
        description=content.description,
        canonical=content.canonical,
        published=content.published,
        authors=tuple(content.authors),
        images=tuple({"src": i.src, "alt": i.alt} for i in content.images),
        text_chars=len(text),
    )
    return fields, cut

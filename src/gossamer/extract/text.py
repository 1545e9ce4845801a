"""`Content`, the record of what a page says, and `extract`, which fills it.

An extractor turns a parsed page into its main text and the ``<img>`` nodes of that text;
`EXTRACTORS` names them. ``tree`` (`gossamer.extract.tree`: prose scored onto the page's
block-level boxes) is the default: on ``benchmarks/bench_extract.py`` it is as accurate as the
best library and about ten times cheaper, as it reads the tree the crawler parsed anyway.
``density`` is the text-density model (`gossamer.extract.density`); ``trafilatura``,
``readability`` and ``resiliparse`` are imported only when chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser, LexborNode
from w3lib.encoding import to_unicode

from gossamer.extract import density, meta, tree
from gossamer.extract.lang import detect_language
from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import parse

if TYPE_CHECKING:
    from gossamer.parse.links import ParsedPage

__all__ = ["DEFAULT_EXTRACTOR", "EXTRACTORS", "Content", "extract"]

Extractor = Callable[[LexborHTMLParser, str | None], tuple[str, list[LexborNode]]]
"""From the tree and the markup if the caller had it as text: the main text (blocks separated
by blank lines) and the image nodes inside it."""


@dataclass(frozen=True, slots=True)
class Content:
    """The main text and metadata of one HTML page; absent values are ``None`` or empty."""

    text: str
    """Main text: paragraphs separated by blank lines, headings and list items kept,
    boilerplate left out."""
    lang: str | None = None
    """ISO 639-1 code, lower case, from the markup, else detected from the text."""
    description: str | None = None
    canonical: str | None = None
    """Absolute http(s) URL from ``<link rel=canonical>``."""
    published: str | None = None
    """ISO 8601 date or date-time the page states it was published."""
    authors: tuple[str, ...] = ()
    images: tuple[meta.Image, ...] = field(default=())
    """Images of the main content, absolute URLs, at most `meta.MAX_IMAGES`."""

    @property
    def text_chars(self) -> int:
        return len(self.text)

    def as_record(self) -> dict[str, object]:
        """The fields as a crawl record holds them (JSON types)."""
        return {
            "text": self.text,
            "lang": self.lang,
            "description": self.description,
            "canonical": self.canonical,
            "published": self.published,
            "authors": list(self.authors),
            "images": [{"src": i.src, "alt": i.alt} for i in self.images],
            "text_chars": self.text_chars,
        }


def _density(page: LexborHTMLParser, markup: str | None) -> tuple[str, list[LexborNode]]:
    return _join(density.main_blocks(page))


def _tree(page: LexborHTMLParser, markup: str | None) -> tuple[str, list[LexborNode]]:
    return _join(tree.main_blocks(page))


def _join(blocks: list[density.Block] | list[tree.Block]) -> tuple[str, list[LexborNode]]:
    """The blocks' text, a blank line between two but for two list items, and their images."""
    out: list[str] = []
    images: list[LexborNode] = []
    previous = ""
    for block in blocks:
        tag = block.tag
        if out:
            out.append("\n" if tag == previous == "li" else "\n\n")
        out.append(block.text)
        if block.images:
            images.extend(block.images)
        previous = tag
    return "".join(out), images


def _trafilatura(tree: LexborHTMLParser, markup: str | None) -> tuple[str, list[LexborNode]]:
    import trafilatura

    text = trafilatura.extract(
        markup or tree.html or "", include_comments=False, include_tables=True
    )
    return _paragraphs(text or ""), []


def _readability(tree: LexborHTMLParser, markup: str | None) -> tuple[str, list[LexborNode]]:
    from readability import Document

    summary = LexborHTMLParser(Document(markup or tree.html or "").summary(html_partial=True))
    return _block_text(summary), summary.css("img")


def _resiliparse(tree: LexborHTMLParser, markup: str | None) -> tuple[str, list[LexborNode]]:
    from resiliparse.extract.html2text import extract_plain_text

    text = extract_plain_text(markup or tree.html or "", main_content=True, alt_texts=False)
    return _paragraphs(text), []


def _block_text(tree: LexborHTMLParser) -> str:
    blocks = tree.css("p, h1, h2, h3, h4, h5, h6, li, pre, blockquote, td, dd, figcaption")
    return "\n\n".join(t for t in (" ".join(b.text(deep=True).split()) for b in blocks) if t)


def _paragraphs(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n\n".join(line for line in lines if line)


def plain_text(text: str) -> str:
    """A ``text/plain`` document as main text: paragraphs (runs of non-blank lines, spaces
    collapsed) separated by one blank line."""
    paragraphs: list[str] = []
    lines: list[str] = []
    for line in text.splitlines():
        cleaned = " ".join(line.split())
        if cleaned:
            lines.append(cleaned)
        elif lines:
            paragraphs.append("\n".join(lines))
            lines = []
    if lines:
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


EXTRACTORS: dict[str, Extractor] = {
    "tree": _tree,
    "density": _density,
    "trafilatura": _trafilatura,
    "readability": _readability,
    "resiliparse": _resiliparse,
}
DEFAULT_EXTRACTOR = "tree"


def extract(
    page: LexborHTMLParser | str | bytes,
    url: str,
    extractor: str = DEFAULT_EXTRACTOR,
    *,
    content_language: str | None = None,
    parsed: ParsedPage | None = None,
) -> Content:
    """Extract the main text and metadata of ``page`` fetched from ``url``.

    The language is the one the markup states, else the ``Content-Language`` header's
    (``content_language``), else the one detected in the text (`lang.detect_language`).

    ``page`` is best the tree the crawler already parsed (`gossamer.parse.parse_html`'s
    lexbor tree, guarded against hostile nesting), with that parse (``parsed``: the meta
    elements and the canonical link it found spare a part of the metadata's query, as
    `meta.gather` says); markup is guarded and parsed here. The tree is only read. Raises
    ``KeyError`` for an unknown extractor and ``ImportError`` if its library is missing;
    never raises on malformed or hostile markup.
    """
    run = EXTRACTORS[extractor]
    tree = page if isinstance(page, LexborHTMLParser) else _parse(page)
    if tree is None:
        return Content(text="")
    text, image_nodes = run(tree, page if isinstance(page, str) else None)
    marks = meta.gather(tree, parsed if parsed is not None and parsed.tree is tree else None)
    return Content(
        text=text,
        lang=meta.language(marks, content_language) or detect_language(text),
        description=meta.description(marks),
        canonical=meta.canonical(marks, url),
        published=meta.published(marks),
        authors=meta.authors(marks),
        images=meta.images(image_nodes, url),
    )


def _parse(markup: str | bytes) -> LexborHTMLParser | None:
    if isinstance(markup, bytes):
        detected = detect_encoding(markup, None)
        markup = to_unicode(markup[detected.bom_length :], detected.encoding)
    return parse(markup).tree

"""Page metadata: language, description, canonical URL, publication date, authors, images.

Values come from the markup in a fixed order of trust: ``<meta>`` and ``<link>`` tags, then
JSON-LD, then microdata and ``<time>``. `gather` finds all those elements in one query; each
field is then read from them. Given the page's parse (:class:`gossamer.parse.links.ParsedPage`,
whose walk for links found its ``<meta>`` elements and its canonical link already), the query
looks for the other kinds only (two of its six selectors fewer), with the same metadata: on a
whole-job crawl of python3-doc (``benchmarks/callgrind_crawl.py --real --only content --sites
python3-doc``, alternated runs) lexbor's searches then cost 750 M instructions instead of 967
M, and the crawl 17.91 G instead of 18.27 G (1.9% fewer). Half of what that query cost was
its microdata selector: lexbor looks the attribute name ``itemprop``, unknown to it, up on every
element (over the 2,707 real pages, none with microdata, the four selectors cost 1,193 M
instructions, the three others alone 592 M; callgrind, ``--toggle-collect=lxb_selectors_find``).
So `MARKS` (``extract/_marks.c``) finds the same elements in one walk of the tree that compares
an attribute's name only to the names an element has; the query stays as the reference, run
where it is not built: on the same crawl (with the main text's walk in C), 13.20 G
instructions instead of 13.84 G (4.6% fewer). Everything is bounded:
strings are cut to `MAX_VALUE_CHARS`, at most `MAX_MARKS` elements are read (the meta elements a
parse found apart from the rest's), at most `MAX_JSON_LD` scripts of at most
`MAX_JSON_LD_CHARS` each are parsed, JSON-LD is walked through at most `MAX_JSON_NODES` values,
and nothing raises on malformed markup or JSON.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser, LexborNode, create_tag

from gossamer.parse.native import bound, load
from gossamer.urls import Resolver

if TYPE_CHECKING:
    from gossamer.parse.links import ParsedPage, Tag

__all__ = [
    "MAX_IMAGES",
    "Image",
    "Marks",
    "authors",
    "canonical",
    "description",
    "gather",
    "images",
    "language",
    "language_code",
    "published",
]

MAX_IMAGES = 50
MAX_AUTHORS = 20
MAX_VALUE_CHARS = 2048
MAX_URL_CHARS = 4096
MAX_JSON_LD = 8
MAX_JSON_LD_CHARS = 256 * 1024
MAX_JSON_NODES = 5000

_PUBLISHED_META = (
    "article:published_time",
    "og:published_time",
    "datepublished",
    "date",
    "dc.date",
    "dc.date.issued",
    "dcterms.created",
    "pubdate",
    "publishdate",
    "sailthru.date",
    "parsely-pub-date",
)
_AUTHOR_META = ("author", "article:author", "dc.creator", "parsely-author", "sailthru.author")


@dataclass(frozen=True, slots=True)
class Image:
    src: str
    alt: str | None


def _clean(value: str | None, limit: int = MAX_VALUE_CHARS) -> str | None:
    if not value:
        return None
    value = " ".join(value[: limit * 2].split())[:limit]
    return value or None


_OTHER_MARKS = ", ".join(
    [
        'script[type="application/ld+json"]',
        # One selector for both microdata values: lexbor then checks the values only on the
        # elements that have an itemprop, and the whole query costs a quarter fewer
        # instructions than with "[itemprop=datePublished], [itemprop=author]".
        "[itemprop]:is([itemprop=datePublished], [itemprop=author])",
        "time[datetime]",
        "[rel~=author]",
    ]
)
"""The marks but the meta tags and the links: what a page's parse has not found already."""
_MARKS = f"meta[content], link[rel][href], {_OTHER_MARKS}"
MAX_MARKS = 2000
MARKS = bound(load("gossamer.extract._marks"), *(create_tag(n).tag_id for n in ("script", "time")))
"""The search for `_OTHER_MARKS` in C (``extract/_marks.c``): one walk of the tree that
compares an attribute's name only to the names an element has; None: lexbor's query."""
MAX_CANONICAL_LINKS = 200
"""``<link rel href>`` elements searched for the canonical one when the parse has not found it."""


@dataclass(frozen=True, slots=True)
class Marks:
    """The elements of a page that state its metadata, found in one query."""

    lang: str | None
    """``<html lang>``, else ``<html xml:lang>`` (XHTML's)."""
    metas: dict[str, str]
    """``name``/``property``/``itemprop``/``http-equiv`` (lower case) -> first ``content``."""
    canonical: LexborNode | None
    """The first ``<link href>`` with ``canonical`` among its rels."""
    json_ld: list[object]
    """The parsed JSON-LD documents."""
    dated: list[LexborNode]
    times: list[LexborNode]
    bylines: list[LexborNode]


def gather(tree: LexborHTMLParser, page: ParsedPage | None = None) -> Marks:
    """The metadata elements of ``tree`` (at most `MAX_MARKS`), sorted by kind. ``page``, the
    tree's parse when the caller has it, gives the ``<meta>`` elements and the canonical link
    its walk for links found (the same elements the query would), which the query then leaves
    out; when it found more than `MAX_MARKS` meta elements the query looks for them again."""
    found = None if page is None else page.metas
    metas: dict[str, str] = {}
    links: list[LexborNode] | None = None
    if found is not None and len(found) <= MAX_MARKS:
        _read_metas(found, metas)
        canonical = page.canonical_link if page is not None else None
        nodes = _other_marks(tree)
    else:
        links = []
        nodes = tree.css(_MARKS)[:MAX_MARKS]
    json_ld: list[object] = []
    dated: list[LexborNode] = []
    times: list[LexborNode] = []
    bylines: list[LexborNode] = []
    scripts = 0
    for node in nodes:
        tag = node.tag
        attrs = node.attributes
        if tag == "meta":
            if links is not None:  # the query's own, not the parse's
                _read_metas((node,), metas)
            continue
        if tag == "link" and "href" in attrs and links is not None:
            links.append(node)
        elif tag == "script":
            scripts += 1
            if scripts <= MAX_JSON_LD:
                raw = node.text(deep=True)
                if raw and len(raw) <= MAX_JSON_LD_CHARS:
                    with contextlib.suppress(ValueError, RecursionError):
                        json_ld.append(json.loads(raw))
            continue
        if tag == "time" and "datetime" in attrs:
            times.append(node)
        itemprop = (attrs.get("itemprop") or "").split()
        if "datePublished" in itemprop:
            dated.append(node)
        if "author" in itemprop or "author" in (attrs.get("rel") or "").lower().split():
            bylines.append(node)
    if links is not None:
        canonical = _canonical_link(links)
    return Marks(_html_lang(tree.root), metas, canonical, json_ld, dated, times, bylines)


def _other_marks(tree: LexborHTMLParser, native: bool = True) -> list[LexborNode]:
    """The first `MAX_MARKS` elements ``tree.css(_OTHER_MARKS)`` finds: by the C walk of the
    tree (:data:`MARKS`) where it is built, unless not ``native``, else by that query."""
    root = tree.root
    if MARKS is None or not native or root is None:
        return tree.css(_OTHER_MARKS)[:MAX_MARKS]
    found: list[LexborNode] = MARKS.read(root, MAX_MARKS)
    return found


def _read_metas(nodes: Sequence[LexborNode | Tag], metas: dict[str, str]) -> None:
    """Each name (``property``, ``name``, ``itemprop``, ``http-equiv``) of the meta elements
    with a ``content``, lower case, with the first ``content`` it was given."""
    for node in nodes:
        attrs = node.attributes
        content = attrs.get("content")
        if content:
            for key in ("property", "name", "itemprop", "http-equiv"):
                name = attrs.get(key)
                if name:
                    metas.setdefault(name.strip().lower()[:100], content)


def _canonical_link(links: list[LexborNode]) -> LexborNode | None:
    for node in links[:MAX_CANONICAL_LINKS]:
        if "canonical" in (node.attributes.get("rel") or "").lower().split():
            return node
    return None


def _html_lang(html: LexborNode | None) -> str | None:
    if html is None or html.tag != "html":
        return None
    attributes = html.attributes
    return attributes.get("lang") or attributes.get("xml:lang")


def language(marks: Marks, header: str | None = None) -> str | None:
    """ISO 639-1 code from ``<html lang>`` (or ``xml:lang``), ``content-language``,
    ``og:locale`` or ``<meta name=language>``, else from the ``Content-Language`` ``header``
    (HTML's order: the markup's own statement first, the server's last)."""
    metas = marks.metas
    candidates = [marks.lang]
    candidates += [metas.get(k) for k in ("content-language", "og:locale", "language", "lang")]
    candidates.append(header)
    for value in candidates:
        code = language_code(value)
        if code:
            return code
    return None


def language_code(value: str | None) -> str | None:
    """The ISO 639-1 code a language tag (``en-GB``, ``pt_BR``, ``de, en``: the first)
    starts with, or ``None``."""
    if not value:
        return None
    code = value.strip().split(",")[0].replace("_", "-").split("-")[0].lower()
    return code if len(code) == 2 and code.isascii() and code.isalpha() else None


def description(marks: Marks) -> str | None:
    metas = marks.metas
    for key in ("description", "og:description", "twitter:description", "dc.description"):
        value = _clean(metas.get(key))
        if value:
            return value
    return None


def canonical(marks: Marks, url: str) -> str | None:
    """The canonical link's ``href``, resolved against the page URL ``url``."""
    node = marks.canonical
    return None if node is None else absolute(node.attributes.get("href"), _resolver(url))


def absolute(href: str | None, base: str | Resolver | None) -> str | None:
    """``href`` resolved against ``base`` (a page URL, or its `Resolver`) as the page's links
    are (WHATWG rules, `gossamer.urls.Resolver`), if it makes an http(s) URL of sane length;
    None without a base."""
    if not href or len(href) > MAX_URL_CHARS or not href.strip() or base is None:
        return None
    resolver = _resolver(base) if isinstance(base, str) else base
    return None if resolver is None else resolver.resolve(href)


def _resolver(url: str) -> Resolver | None:
    """The resolver of references on the page at ``url``; None if it is no http(s) URL."""
    try:
        return Resolver(url)
    except ValueError:
        return None


def published(marks: Marks) -> str | None:
    """The stated publication date, ISO 8601, from meta tags, JSON-LD, microdata or
    ``<time datetime>``."""
    metas = marks.metas
    candidates: list[object] = [metas.get(key) for key in _PUBLISHED_META]
    candidates += _json_ld_values(marks, "datePublished")
    for node in marks.dated[:5]:
        attrs = node.attributes
        candidates.append(attrs.get("datetime") or attrs.get("content") or node.text())
    for node in marks.times[:5]:
        candidates.append(node.attributes.get("datetime"))
    for value in candidates:
        iso = iso8601(value)
        if iso:
            return iso
    return None


def iso8601(value: object) -> str | None:
    """``value`` as an ISO 8601 date or date-time, or ``None`` if it does not read as one."""
    if not isinstance(value, str):
        return None
    text = value.strip()[:64]
    if len(text) < 10:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        try:
            return date.fromisoformat(text[:10]).isoformat()
        except ValueError:
            return None
    if not 1990 <= parsed.year <= 2100:
        return None
    if len(text) == 10:
        return parsed.date().isoformat()
    return parsed.isoformat()


def authors(marks: Marks) -> tuple[str, ...]:
    """Author names from meta tags, JSON-LD ``author`` and ``rel=author`` / microdata."""
    metas = marks.metas
    names: list[str] = []
    for key in _AUTHOR_META:
        value = metas.get(key)
        if value and not value.startswith(("http://", "https://")):
            names.append(value)
    for author in _json_ld_values(marks, "author"):
        names.extend(_person_names(author))
    for node in marks.bylines:
        named = node.css_first("[itemprop=name]") if node.attributes.get("itemprop") else None
        names.append((named or node).text(deep=True))
        if len(names) > MAX_AUTHORS * 4:
            break
    seen: dict[str, None] = {}
    for name in names:
        clean = _clean(name, 200)
        if clean and clean.lower() not in {n.lower() for n in seen}:
            seen[clean] = None
    return tuple(seen)[:MAX_AUTHORS]


def _person_names(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        name = value.get("name")
        return [name] if isinstance(name, str) else []
    if isinstance(value, list):
        return [n for item in value[:MAX_AUTHORS] for n in _person_names(item)]
    return []


def _json_ld_values(marks: Marks, key: str) -> list[object]:
    """Values of ``key`` anywhere in the page's JSON-LD, in document order."""
    found: list[object] = []
    for data in marks.json_ld:
        _find_key(data, key, found)
    return found


def _find_key(data: object, key: str, found: list[object]) -> None:
    stack = [data]
    visited = 0
    while stack and visited < MAX_JSON_NODES:
        item = stack.pop()
        visited += 1
        if isinstance(item, dict):
            if key in item:
                found.append(item[key])
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def images(nodes: list[LexborNode], url: str) -> tuple[Image, ...]:
    """``{src, alt}`` of the image nodes, absolute, duplicates dropped, at most `MAX_IMAGES`."""
    out: dict[str, Image] = {}
    resolver = _resolver(url) if nodes else None
    for node in nodes:
        attrs = node.attributes
        src = absolute(attrs.get("src") or attrs.get("data-src"), resolver)
        if src and src not in out:
            out[src] = Image(src, _clean(attrs.get("alt"), 500))
            if len(out) >= MAX_IMAGES:
                break
    return tuple(out.values())

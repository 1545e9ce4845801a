"""Extract the title, robots directives and outlinks of an HTML page.

Links are resolved by :class:`gossamer.urls.Resolver` (the WHATWG URL Standard's rules, parsed
by ada), against the first ``<base href>`` or the page URL; they come out in WHATWG's
serialisation, which the frontier's admission takes as canonical at the cost of a regex match.

Documents are parsed by :func:`gossamer.parse.guard.parse`: those that could drive lexbor into
its quadratic cases (very deep nesting, huge numbers of attributes) are first flattened and
stripped of excess attributes, keeping their links, and ``ParsedPage.flags`` says what was
changed; the guard's module doc states the time bounds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode, create_tag
from w3lib.encoding import to_unicode

from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import MAX_DEPTH, Parsed, _lexbor, parse
from gossamer.parse.native import LINKWALK, TOKENS, load
from gossamer.parse.scan import scalar_values
from gossamer.urls import MAX_REFERENCE_CHARS, Resolver

__all__ = [
    "MAX_DEPTH",
    "MAX_HREF_CHARS",
    "MAX_TITLE_CHARS",
    "ParsedPage",
    "Tag",
    "Tokens",
    "parse_html",
    "parse_tokens",
]

MAX_PAGE_LINKS = 10_000
"""Links a page gives the crawl, at most (its first in document order; the record is flagged
``links-cut``): one page of 400,000 links (8.8 MB) would queue them all at once. Heritrix
keeps 6,000; real pages rarely pass a few thousand."""
MAX_TITLE_CHARS = 512
"""Titles are cut to this many characters after whitespace is collapsed."""

TOKENS_PIECE = 32 * 1024
"""The bytes `parse_tokens` gives lexbor's tokenizer at a time under a budget: past it, one
more piece of the worst markup costs a few milliseconds."""

BUDGET_MAX_REFERENCES = 16_384
"""Distinct references a page read under a budget may hold (`parse_tokens`); past them, None:
each is resolved, some 1.5 µs apiece for those that add no link (``mailto:``, ``N/../x``),
25 ms for these. Real index pages hold fewer (python3-doc's ``genindex-all.html``: 14,350,
read and resolved in 7.7 ms), most of them links to one page's fragments."""
BUDGET_MAX_METAS = 1024
"""Meta tags a page read under a budget may hold (`parse_tokens`); past them, None."""
BUDGET_MAX_CHARS = 64 * 1024
"""Characters its metas', base's and canonical link's attributes may hold in all."""

MAX_HREF_CHARS = MAX_REFERENCE_CHARS
"""Longer ``href`` values are dropped unread (huge ``data:`` URLs, traps)."""

_NODE_SELECTOR = "[href], meta:not([href])"
"""The elements the page is read from, in one walk of the tree: links, ``<base href>`` and
the meta tags (robots directives) come out of the search for links at no extra cost (lexbor
tries the selectors on each element it visits), where a search of their own walked the whole
tree again (some 60 µs each on a large page). The ``:not`` keeps an element that both
selectors match from coming out twice."""
_A, _AREA, _LINK, _META, _BASE = (
    create_tag(name).tag_id for name in ("a", "area", "link", "meta", "base")
)
"""lexbor's ids of the elements `_read_nodes` tells apart (a standard tag has the same id in
every document): comparing an element's ``tag_id`` spares the look-up of its name (``tag``),
some 400 instructions an element, 8% of the pass over a real page's links. The elements
``[href]`` finds with the first three are the ones ``a[href], area[href], link[href]`` would
find, in a third fewer instructions (one selector tried on each element, not three)."""
_TITLE_SELECTOR = "title:not(svg title)"
_HOLDERS = frozenset({"template", "noscript"})
"""Children of a head that may hold elements (a title among them, before a later one)."""
_FOLLOWED_LINK_RELS = frozenset({"next", "alternate"})
_RESOLVE = load("gossamer.parse._resolve")
"""`_resolve_links`' loop in C (``parse/_resolve.c``) for the references resolved before,
which are most (a site's pages repeat their navigation): a real page's 57 references cost
the loop 42 µs in Python; None: the Python loop."""


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the crawler needs from one HTML page."""

    title: str | None
    """First ``<title>``, stripped, whitespace collapsed, cut to ``MAX_TITLE_CHARS``; ``None``
    if absent or blank."""
    links: list[str]
    """Absolute http(s) outlinks in document order, in WHATWG's serialisation (host
    lower-cased, dot segments removed, unsafe characters percent-encoded), without fragments,
    duplicates and links to the page itself."""
    nofollow_links: int
    """Links skipped because of ``rel=nofollow`` or a robots ``nofollow`` meta tag."""
    meta_nofollow: bool
    meta_noindex: bool
    base_url: str
    """The URL relative links were resolved against (``<base href>`` or the page URL)."""
    text_encoding: str
    """Python codec name the body was decoded with."""
    tree: LexborHTMLParser | None = field(default=None, repr=False, compare=False)
    """The parsed document, for later stages (extraction, hooks) to read without parsing
    again; None when lexbor refused it."""
    flags: tuple[str, ...] = ()
    """What parsing had to give up, sorted: ``html-flattened`` (start tags past `MAX_DEPTH`
    dropped), ``html-cut-attributes`` (excess attributes dropped), ``html-cut-formatting``
    (formatting start tags past the guard's `MAX_ACTIVE_FORMATTING` active ones dropped),
    ``html-parse-error`` (lexbor refused the document: no links), ``links-cut`` (its links
    past `MAX_PAGE_LINKS` dropped)."""
    metas: tuple[LexborNode | Tag, ...] | None = field(default=None, repr=False, compare=False)
    """The document's ``<meta>`` elements, in document order, found with its links (the
    robots directives are read from them; a `Tag` each when read from the tokens); None when
    not looked for."""
    names_canonical: bool | None = None
    """Whether some ``<link href>`` of the document has ``canonical`` among its rels (found
    with its links, so a page that names none spares the search of its head for the
    canonical link); None when not looked for."""
    canonical_link: LexborNode | None = field(default=None, repr=False, compare=False)
    """The first ``<link href>`` with ``canonical`` among its rels, found with the links
    (:func:`gossamer.page.canonical.tag_canonical` starts from it); None when none is or
    when not looked for."""
    anchors: list[tuple[LexborNode, str]] | None = field(default=None, repr=False, compare=False)
    """Each ``<a href>`` element with its ``href`` as written, in document order, read in the
    pass over the links (``parse_html(anchors=True)``: a focused crawl reads their texts
    without reading each element's attributes again; a crawl without focus pays nothing for
    them); None when not asked for."""
    texts: tuple[dict[str, tuple[str, str, int]], list[tuple[str, int]]] | None = field(
        default=None, repr=False, compare=False
    )
    """What a parse worker read of the links' texts for a focus (the page's tree stays in the
    worker: :func:`gossamer.focus.anchors.read_whole`); None when not read there."""


@dataclass(frozen=True, slots=True)
class Tag:
    """An element as its start tag gave it, for a page read from its tokens
    (`parse_tokens`): its attributes as lexbor's tree would hold them (names lower-cased, the
    first of a name kept, None for one without a value)."""

    attributes: dict[str, str | None]


class Tokens(NamedTuple):
    """A page read from its tokens (`parse_tokens`)."""

    page: ParsedPage
    """Without a tree; its ``metas`` are `Tag`, its ``canonical_link`` None."""
    canonical: tuple[str | None, str, bool] | None
    """The first ``<link href>`` with ``canonical`` among its rels (as the tree's walk finds
    it): its ``href`` (None for an SVG ``xlink:href``), its ``rel`` and whether the tree would
    hold it in the head."""


def parse_tokens(
    body: bytes,
    url: str,
    *,
    header_charset: str | None = None,
    follow_nofollow: bool = False,
    budget: float = 0.0,
) -> Tokens | None:
    """What :func:`parse_html` reads of an HTML body, read from lexbor's tokens alone
    (:data:`gossamer.parse.native.TOKENS`: its tokenizer, as its tree builder runs it, without
    the tree, at about half the cost), for a crawl that needs no tree: the same links,
    counts, title, robots directives and base. None where the C part is not in use or the
    page is one it leaves to the tree (a ``<frameset>``, a CDATA section in SVG, an end tag
    in SVG it cannot place: ``parse/_tokens.c`` lists them).

    Its simplified tree builder (``parse/_tokens.c``) knows templates (their contents are not
    the page's), SVG and MathML (raw text elements are not raw there; HTML breaks out) and
    where the head ends. Where the tree builder would move or copy an element, the tokens
    keep it where it was written: links in a table written outside its cells come in the order
    written, not before the table, and an ``<a>`` the tree builder copies into the next
    paragraph (``<p><a href=x>one</p><p>two``) counts once in ``nofollow_links``, not twice.
    Call it only for a document that cannot be hostile to lexbor's tokenizer (small, or in a
    parse worker), as :func:`parse_html` guards the parse of one that could be, or with a
    ``budget``: the CPU seconds the tokenizer may take (checked every `TOKENS_PIECE` bytes),
    None past it (lexbor's tokenizer is linear but in the distinct tag and attribute names
    before a tag, whose hash tables never grow: 1 MB of ``<br aN=1>`` costs it 0.35 s). What
    the budget cannot bound answers None too, before it costs: a body not in UTF-8 (its
    decoding, 1 s for 4 MB of bytes GB18030 leaves undefined), more than
    `BUDGET_MAX_REFERENCES` distinct references (each one resolved), more than
    `BUDGET_MAX_METAS` meta tags or `BUDGET_MAX_CHARS` characters in the metas', base's and
    canonical link's attributes (a robots meta's directives are read word by word)."""
    if TOKENS is None:
        return None
    page = Resolver(url)
    detected = detect_encoding(body, header_charset)
    data = body[detected.bom_length :] if detected.bom_length else body
    if detected.encoding != "utf-8":
        if budget:
            return None
        data = str(scalar_values(to_unicode(data, detected.encoding))).encode("utf-8")
    found = TOKENS.read(data, not follow_nofollow, budget, TOKENS_PIECE)
    if found is None:
        return None
    hrefs, eligible, rel_nofollow, metas, base, canonical, title = found
    if budget and not _within_budget(hrefs, metas, base, canonical):
        return None
    tags: list[LexborNode | Tag] = [Tag(meta) for meta in metas]
    nodes = _Nodes(hrefs, eligible, rel_nofollow, tags, None if base is None else Tag(base))
    out = _outlinks(nodes, page, follow_nofollow)
    parsed = ParsedPage(
        title=None if title is None else _clean_title(title),
        links=out.links,
        nofollow_links=out.skipped,
        meta_nofollow=out.nofollow,
        meta_noindex=out.noindex,
        base_url=out.base.document,
        text_encoding=detected.encoding,
        flags=out.flags,
        metas=tuple(tags),
        names_canonical=canonical is not None,
    )
    return Tokens(parsed, canonical)


def _within_budget(
    hrefs: list[str],
    metas: list[dict[str, str | None]],
    base: dict[str, str | None] | None,
    canonical: tuple[str | None, str, bool] | None,
) -> bool:
    """Whether what the tokens gave costs the rest of `parse_tokens` little (see there)."""
    if len(hrefs) > BUDGET_MAX_REFERENCES or len(metas) > BUDGET_MAX_METAS:
        return False
    chars = len(canonical[0] or "") + len(canonical[1]) if canonical is not None else 0
    for attributes in metas if base is None else (base, *metas):
        chars += sum(len(name) + len(value or "") for name, value in attributes.items())
    return chars <= BUDGET_MAX_CHARS


def parse_html(
    body: bytes,
    url: str,
    *,
    header_charset: str | None = None,
    follow_nofollow: bool = False,
    guarded: bool = True,
    tags: int | None = None,
    anchors: bool = False,
    hostile: bool = False,
) -> ParsedPage:
    """Parse an HTML body fetched from ``url`` (an absolute http(s) URL).

    Links come from ``<a href>``, ``<area href>`` and ``<link rel="next"|"alternate" href>``.
    ``rel=nofollow`` links and, with ``<meta name=robots content=nofollow|none>``, all links
    are skipped unless ``follow_nofollow``. Never raises on malformed or hostile HTML; raises
    ``ValueError`` only if ``url`` itself is not an http(s) URL. Unless ``guarded``, the
    document is parsed as it is (in a process whose time and memory are bounded otherwise).
    ``tags``: the ``<`` of ``body``, if the caller counted them. ``anchors``: keep each ``<a
    href>`` with its ``href`` (:attr:`ParsedPage.anchors`). ``hostile``: the body has shown
    itself hostile (its sandbox worker died on it): always guarded (`gossamer.parse.guard`).
    """
    page = Resolver(url)
    detected = detect_encoding(body, header_charset)
    payload = body[detected.bom_length :] if detected.bom_length else body
    # Lexbor reads bytes as UTF-8 (invalid sequences become U+FFFD), so UTF-8 skips a decode.
    document: str | bytes = payload
    if detected.encoding != "utf-8":
        document = to_unicode(payload, detected.encoding)
    if not guarded:
        parsed = unguarded(document)
    else:
        parsed = parse(document, tags if isinstance(document, bytes) else None, hostile=hostile)
    tree = parsed.tree
    if tree is None:
        return ParsedPage(
            None, [], 0, False, False, page.document, detected.encoding, flags=parsed.flags
        )
    kept: list[tuple[LexborNode, str]] | None = [] if anchors else None
    nodes = read_nodes(tree, honour_nofollow=not follow_nofollow, anchors=kept)
    out = _outlinks(nodes, page, follow_nofollow)
    return ParsedPage(
        title=_title(tree),
        links=out.links,
        nofollow_links=out.skipped,
        meta_nofollow=out.nofollow,
        meta_noindex=out.noindex,
        base_url=out.base.document,
        text_encoding=detected.encoding,
        tree=tree,
        flags=parsed.flags + out.flags,
        metas=tuple(nodes.metas),
        names_canonical=nodes.canonical is not None,
        canonical_link=nodes.canonical,
        anchors=kept,
    )


def unguarded(document: str | bytes) -> Parsed:
    """lexbor's tree of ``document`` as it is, for a process whose time and memory are
    bounded otherwise (:mod:`gossamer.parse.sandbox`)."""
    return _lexbor(document, ())


class _Outlinks(NamedTuple):
    links: list[str]
    skipped: int
    noindex: bool
    nofollow: bool
    base: Resolver
    flags: tuple[str, ...]
    """``links-cut`` when the links reached `MAX_PAGE_LINKS`."""


def _outlinks(nodes: _Nodes, page: Resolver, follow_nofollow: bool) -> _Outlinks:
    """A page's links from what was read of its elements (the tree's or its tokens'), by its
    robots meta tags and its base; ``page`` resolves against the page's own URL."""
    noindex, nofollow = _meta_robots(nodes.metas)
    base = _base_resolver(nodes.base, page)
    links, skipped = _resolve_links(
        nodes, base, page.document, honour_nofollow=not follow_nofollow, meta_nofollow=nofollow
    )
    cut: tuple[str, ...] = ("links-cut",) if len(links) >= MAX_PAGE_LINKS else ()
    return _Outlinks(links, skipped, noindex, nofollow, base, cut)


def _title(tree: LexborHTMLParser) -> str | None:
    node = _head_title(tree)
    return None if node is None else _clean_title(node.text())


def _clean_title(text: str) -> str | None:
    text = text.lstrip()[: MAX_TITLE_CHARS * 4]
    return " ".join(text.split())[:MAX_TITLE_CHARS].rstrip() or None


def _head_title(tree: LexborHTMLParser) -> LexborNode | None:
    """The first ``<title>`` outside an ``<svg>``: a child of the head, the usual place, read
    before any element that could hold another (a ``<template>``, a ``<noscript>``); else
    found by lexbor's search (a CSS query's fixed cost is some 40,000 instructions)."""
    head = tree.head
    child = None if head is None else head.child
    while child is not None:
        tag = child.tag
        if tag == "title":
            return child
        if tag in _HOLDERS:
            break
        child = child.next
    return tree.css_first(_TITLE_SELECTOR)


def _meta_robots(metas: Sequence[LexborNode | Tag]) -> tuple[bool, bool]:
    """Return ``(noindex, nofollow)`` from the ``<meta name="robots">`` tags among ``metas``."""
    noindex = nofollow = False
    for meta in metas:
        attributes = meta.attributes
        if (attributes.get("name") or "").strip().lower() != "robots":
            continue
        for token in (attributes.get("content") or "").lower().split(","):
            token = token.strip()
            noindex = noindex or token in ("noindex", "none")
            nofollow = nofollow or token in ("nofollow", "none")
    return noindex, nofollow


def _base_resolver(node: LexborNode | Tag | None, page: Resolver) -> Resolver:
    """The resolver for the first ``<base href>`` if it is an http(s) URL, else the page's."""
    href = node.attributes.get("href") if node is not None else None
    if href is None:
        return page
    resolved = page.resolve(href)
    return page if resolved is None else Resolver(resolved)


@dataclass(slots=True)
class _Nodes:
    """What one pass over the elements `_NODE_SELECTOR` found keeps."""

    hrefs: list[str] = field(default_factory=list)
    """The ``href`` of each link element to follow (``rel=nofollow`` ones left out when
    honoured), in document order, each once."""
    eligible: int = 0
    """Link elements to follow or skipped for ``nofollow`` (``<link>`` of other rels and
    stylesheets are neither)."""
    rel_nofollow: int = 0
    """Of those, the ``rel=nofollow`` ones skipped."""
    metas: list[LexborNode | Tag] = field(default_factory=list)
    base: LexborNode | Tag | None = None
    """The first ``<base href>``."""
    canonical: LexborNode | None = None
    """The first ``<link>`` naming ``canonical`` among its rels (split as ``rel~=`` splits, or
    finer)."""


def read_nodes(
    tree: LexborHTMLParser,
    *,
    honour_nofollow: bool,
    anchors: list[tuple[LexborNode, str]] | None = None,
    native: bool = True,
) -> _Nodes:
    """What `_read_nodes` reads of the elements `_NODE_SELECTOR` finds in ``tree``: by the C
    walk of the tree (:data:`gossamer.parse.native.LINKWALK`) where it is built, unless not
    ``native``, else by the search and `_read_nodes`."""
    root = tree.root
    if root is None:
        return _Nodes()
    if LINKWALK is None or not native:
        return _read_nodes(
            tree.css(_NODE_SELECTOR), honour_nofollow=honour_nofollow, anchors=anchors
        )
    hrefs, eligible, rel_nofollow, metas, base, canonical = LINKWALK.read(
        root, honour_nofollow, anchors
    )
    return _Nodes(hrefs, eligible, rel_nofollow, metas, base, canonical)


def _read_nodes(
    nodes: list[LexborNode],
    *,
    honour_nofollow: bool,
    anchors: list[tuple[LexborNode, str]] | None = None,
) -> _Nodes:
    """Sort the elements of `_NODE_SELECTOR` into links, meta tags and the base, in one pass
    (reading an element's name and attributes is most of a link's cost). All attributes are
    read at once: ``attrs`` read by name raises inside for a missing ``rel`` and cost more,
    and a selector setting ``a[href]:not([rel])`` apart returns those elements twice (lexbor
    returns an element once per selector it matches), which costs more than it spares.
    ``anchors``, when given, gets each ``<a>`` with its ``href``."""
    found = _Nodes()
    hrefs: dict[str, None] = {}  # as written: a page repeats many (navigation, footer)
    eligible = rel_nofollow = 0
    for node in nodes:
        tag = node.tag_id
        if tag != _A and tag != _AREA and tag != _LINK:
            if tag == _META:
                found.metas.append(node)
            elif tag == _BASE and found.base is None:
                found.base = node
            continue
        attributes = node.attributes
        href = attributes.get("href") or ""
        if anchors is not None and tag == _A:
            anchors.append((node, href))
        rel = attributes.get("rel")
        if not rel and tag != _LINK:  # most links: followed, nothing more to read
            eligible += 1
            hrefs[href] = None
            continue
        tokens = rel.lower().split() if rel else ()
        if tag == _LINK:
            if "canonical" in tokens and found.canonical is None:
                found.canonical = node
            if "stylesheet" in tokens or _FOLLOWED_LINK_RELS.isdisjoint(tokens):
                continue
        eligible += 1
        if honour_nofollow and "nofollow" in tokens:
            rel_nofollow += 1
            continue
        hrefs[href] = None
    found.hrefs = list(hrefs)
    found.eligible, found.rel_nofollow = eligible, rel_nofollow
    return found


def _resolve_links(
    nodes: _Nodes, base: Resolver, own_url: str, *, honour_nofollow: bool, meta_nofollow: bool
) -> tuple[list[str], int]:
    """The links to follow, resolved, each once and not the page itself; and how many were
    skipped for ``nofollow`` (all of them with a robots ``nofollow`` meta tag)."""
    if honour_nofollow and meta_nofollow:
        return [], nodes.eligible
    seen = {own_url}
    if _RESOLVE is not None:
        absolute, by_root, by_directory = base.remembered()
        links = _RESOLVE.known(
            nodes.hrefs,
            base.document,
            absolute,
            by_root,
            by_directory,
            seen,
            MAX_PAGE_LINKS,
            MAX_REFERENCE_CHARS,
            base.resolve,
        )
        return links, nodes.rel_nofollow
    links = []
    for href in nodes.hrefs:
        resolved = base.resolve(href)
        if resolved is not None and resolved not in seen:
            seen.add(resolved)
            links.append(resolved)
            if len(links) >= MAX_PAGE_LINKS:  # the rest of a link farm is dropped
                break
    return links, nodes.rel_nofollow


def _extract_links(
    nodes: list[LexborNode],
    base: Resolver,
    own_url: str,
    *,
    honour_nofollow: bool,
    meta_nofollow: bool,
) -> tuple[list[str], int]:
    """The links of ``nodes`` (elements ``[href]`` found) resolved against ``base``, and how
    many were skipped for ``nofollow``."""
    found = _read_nodes(nodes, honour_nofollow=honour_nofollow)
    return _resolve_links(
        found, base, own_url, honour_nofollow=honour_nofollow, meta_nofollow=meta_nofollow
    )

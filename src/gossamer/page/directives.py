"""Robots directives of a page: ``X-Robots-Tag`` response headers and ``<meta>`` tags.

The syntax is Google's and Bing's: a header holds comma-separated directives, for every
crawler or, after a ``name:`` prefix, for the crawler of that user agent only
(``X-Robots-Tag: gossamer: noindex``); a prefix holds until the next one or the end of the
header, and a response may carry several headers. The crawler's name is its robots token
(``--robots-token``, ``gossamer`` by default), matched without regard to case; values for
other crawlers are passed over. In HTML, ``<meta name="robots">`` speaks to every crawler and
``<meta name="gossamer">`` (the token) to this one; ``<meta http-equiv="X-Robots-Tag">`` is
read as the header. A semicolon separates directives as a comma does.

Directives read: ``noindex``, ``nofollow``, ``none`` (both), ``noarchive`` (keep no
replayable copy: the page's payload is left out of the WARC), ``all``, ``index`` and
``follow`` (nothing to restrict), and ``unavailable_after: DATE``, honoured: a date in the
past when the page was fetched is ``noindex`` (an RFC 822/850 or ISO 8601 date, or a day such
as ``25 Jun 2010``; one that cannot be read, or out of range, is ignored). Every rule
addressed to the crawler counts and the most restrictive wins: a ``noindex`` anywhere is not
undone by an ``index`` elsewhere. Other directives (``nosnippet``, ``max-snippet: N``,
``noai`` ...) concern search results or are no standard, and are ignored.

Each header and each meta tag's content is read up to `MAX_HEADER_CHARS` characters and
`MAX_DIRECTIVES` directives, and what lies past those bounds is only searched for the words
``noindex``, ``nofollow`` and ``none`` (a regular expression, whatever agent they follow): a
hostile value costs bounded time and cannot hide a ``noindex`` behind padding (fail closed).

Robots meta tags are read wherever they are in the document: the parser reads HTML as a
browser with scripting off does, so a tracking pixel (``<noscript><img></noscript>``) early in
the ``<head>`` ends it and puts the tags after it in the body, where a search engine that
runs scripts still sees them in the head.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from selectolax.lexbor import LexborHTMLParser
    from selectolax.lexbor import LexborNode as Node

    from gossamer.parse.links import Tag

__all__ = [
    "MAX_DIRECTIVES",
    "MAX_HEADER_CHARS",
    "MAX_META_TAGS",
    "NONE",
    "Directives",
    "head_first",
    "header_directives",
    "listed_directives",
    "meta_directives",
]

MAX_HEADER_CHARS = 8192
MAX_DIRECTIVES = 100
MAX_META_TAGS = 1000
"""Robots meta tags read in full; past them only a ``noindex``/``nofollow``/``none`` is looked
for (by a CSS search)."""
_EQUIV = 'meta[http-equiv="x-robots-tag" i]'
_OVERLAP = 64
"""Characters before a cut searched again: a word the cut split is found whole."""
_RESTRICTIVE = re.compile(r"(?<![^\s,:;])(noindex|nofollow|none)(?![^\s,;])")
_AGENT = re.compile(r"\s*([a-z0-9_.-]+)\s*:\s*(.*)\Z", re.DOTALL)
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
"""Directives that take a value after a colon: their names are no user agents."""
_HEADER = "x-robots-tag"
_DAY_FORMS = ("%d %b %Y", "%d %B %Y", "%b %d %Y", "%B %d %Y")
"""Dates without a time Google's examples also show (``25 Jun 2010``)."""
_WEEKDAY = re.compile(r"(unavailable_after\s*:\s*)[a-z]+\s*,")
"""The weekday of an RFC 822 or 850 date (``Wed, 25 Jun 2010 ...``): its comma would split the
date, and the date is the same without it."""


class Directives(NamedTuple):
    """What a page's robots rules ask of the crawler."""

    noindex: bool = False
    """Store no content of the page (its record keeps status, links and flags)."""
    nofollow: bool = False
    """Follow none of the page's links."""
    noarchive: bool = False
    """Keep no replayable copy of the page (its WARC payload)."""

    def merge(self, other: Directives) -> Directives:
        """Both rules at once: the most restrictive of each."""
        return Directives(
            self.noindex or other.noindex,
            self.nofollow or other.nofollow,
            self.noarchive or other.noarchive,
        )

    @property
    def flags(self) -> tuple[str, ...]:
        """The record's flags: ``noindex``, ``nofollow``, ``noarchive``."""
        return (
            ("noindex",) * self.noindex
            + ("nofollow",) * self.nofollow
            + ("noarchive",) * self.noarchive
        )


NONE = Directives()
_NOARCHIVE = Directives(noarchive=True)


def header_directives(headers: Mapping[str, str], token: str, fetched_at: float) -> Directives:
    """The directives of the ``X-Robots-Tag`` headers addressed to every crawler or to
    ``token``; headers the fetcher joined are one per line."""
    value = headers.get(_HEADER)
    if not value:
        return NONE
    token = token.lower()
    found = NONE
    for line in value.lower().splitlines():
        parts, found_past = _bounded(line)
        found = found.merge(found_past).merge(_line_directives(parts, token, fetched_at))
    return found


def _bounded(value: str) -> tuple[list[str], Directives]:
    """The directives of a lowercased header or meta content within the bounds, and what the
    search of the rest for restrictive words found (for any agent: fail closed)."""
    parts = _WEEKDAY.sub(r"\1", value[:MAX_HEADER_CHARS]).replace(";", ",").split(",")
    rest = ",".join(parts[MAX_DIRECTIVES:])
    if len(value) > MAX_HEADER_CHARS:
        rest += "," + value[MAX_HEADER_CHARS - _OVERLAP :]
    return parts[:MAX_DIRECTIVES], _restrictive(rest) if rest else NONE


def _restrictive(text: str) -> Directives:
    """What the words ``noindex``, ``nofollow`` and ``none`` in ``text`` ask (a C-speed search,
    stopped once both are found)."""
    noindex = nofollow = False
    for match in _RESTRICTIVE.finditer(text):
        word = match[1]
        noindex = noindex or word != "nofollow"
        nofollow = nofollow or word != "noindex"
        if noindex and nofollow:
            break
    return Directives(noindex, nofollow)


def _line_directives(parts: list[str], token: str, fetched_at: float) -> Directives:
    """One header's directives for ``token``: a ``name:`` prefix addresses those after it."""
    agent: str | None = None  # None: every crawler
    found = NONE
    for part in parts:
        match = _AGENT.match(part)
        if match is not None and match[1] not in _VALUED:
            agent, part = match[1], match[2]
        if agent is None or agent == token:
            found = found.merge(_directive(part.strip(), fetched_at))
    return found


def _directive(word: str, fetched_at: float) -> Directives:
    """What one directive asks (nothing for those that do not restrict a crawler)."""
    if word in ("noindex", "nofollow", "none"):
        return Directives(word != "nofollow", word != "noindex")
    if word == "noarchive":
        return _NOARCHIVE
    name, _, value = word.partition(":")
    if name.strip() == "unavailable_after" and _is_past(value.strip(), fetched_at):
        return Directives(noindex=True)
    return NONE


def _is_past(value: str, now: float) -> bool:
    """Whether the date ``value`` is before ``now`` (unix seconds); False if unreadable."""
    moment: datetime | None
    moment = _date(value)
    if moment is None:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.timestamp() < now
    except (OverflowError, ValueError):  # a date at the edge of what datetime holds
        return False


def _date(value: str) -> datetime | None:
    """The moment ``value`` names (RFC 822/850, ISO 8601, or a day as ``25 Jun 2010``), or
    None."""
    from email.utils import parsedate_to_datetime  # a worker that meets no date never loads it

    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        pass
    try:
        return datetime.fromisoformat(value.upper())
    except ValueError:
        pass
    for form in _DAY_FORMS:
        try:
            return datetime.strptime(value, form)
        except ValueError:
            continue
    return None


def meta_directives(
    tree: LexborHTMLParser,
    token: str,
    fetched_at: float,
    metas: Sequence[Node | Tag] | None = None,
) -> Directives:
    """The directives of the ``<meta name="robots">`` and ``<meta name=TOKEN>`` tags of the
    document (anywhere in it: see the module docstring), and of ``<meta
    http-equiv="X-Robots-Tag">`` tags, read as the header.

    ``metas``, the document's ``<meta>`` elements when the caller has them already (the
    parse finds them with the links), spares a search of the whole tree; the tags read are
    the same."""
    if metas is not None and len(metas) <= MAX_META_TAGS:
        return listed_directives(metas, token, fetched_at)
    token = token.lower()
    names = ("robots", token)
    tags = tree.css(f"{_meta_selector(names)}, {_EQUIV}")  # one search in C
    found = _read_metas(tags, names, token, fetched_at)
    if len(tags) > MAX_META_TAGS:
        found = found.merge(_past_meta_tags(tree, names))
    return found


def listed_directives(metas: Sequence[Node | Tag], token: str, fetched_at: float) -> Directives:
    """What :func:`meta_directives` reads of a document whose ``<meta>`` elements are
    ``metas``, at most `MAX_META_TAGS` of them (a page read without a tree:
    :func:`gossamer.parse.links.parse_tokens`)."""
    if len(metas) > MAX_META_TAGS:
        raise ValueError(f"more than {MAX_META_TAGS} meta tags: read them from the tree")
    token = token.lower()
    names = ("robots", token)
    tags = [meta for meta in metas if _addressed(meta, names)]
    return _read_metas(tags, names, token, fetched_at)


def _read_metas(
    tags: Sequence[Node | Tag], names: tuple[str, ...], token: str, fetched_at: float
) -> Directives:
    found = NONE
    for meta in tags[:MAX_META_TAGS]:
        attributes = meta.attributes
        content = (attributes.get("content") or "").lower()
        if (attributes.get("http-equiv") or "").strip().lower() == _HEADER:
            parts, found_past = _bounded(content)
            found = found.merge(found_past).merge(_line_directives(parts, token, fetched_at))
        if (attributes.get("name") or "").strip().lower() not in names:
            continue
        parts, found_past = _bounded(content)
        found = found.merge(found_past)
        for word in parts:
            found = found.merge(_directive(word.strip(), fetched_at))
    return found


def _addressed(meta: Node | Tag, names: tuple[str, ...]) -> bool:
    """Whether the search of `meta_directives` finds ``meta``: a name holding one of
    ``names``, or an ``http-equiv`` of ``X-Robots-Tag``, without regard to case."""
    attributes = meta.attributes
    name = (attributes.get("name") or "").lower()
    if any(wanted in name for wanted in names):
        return True
    return (attributes.get("http-equiv") or "").lower() == _HEADER


def _meta_selector(names: tuple[str, ...], content: str | None = None) -> str:
    """A CSS selector of the meta tags whose name holds one of ``names`` (and whose content
    holds ``content``), without regard to case."""
    having = "" if content is None else f"[content*={_quoted(content)} i]"
    return ", ".join(f"meta[name*={_quoted(name)} i]{having}" for name in names)


def _quoted(text: str) -> str:
    """``text`` as a CSS string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _past_meta_tags(tree: LexborHTMLParser, names: tuple[str, ...]) -> Directives:
    """Whether any robots meta tag holds a restrictive word (tags past `MAX_META_TAGS`)."""
    found = NONE
    for word in ("noindex", "nofollow", "none"):
        if tree.css_first(_meta_selector(names, word)) is not None:
            found = found.merge(_restrictive(word))
    return found


_HEAD_TAGS = frozenset(
    {"base", "img", "link", "meta", "noscript", "script", "style", "template", "title"}
)
"""Elements a ``<head>`` holds (and the tracking pixel that ends it, for a parser with
scripting off): those that open the body before any other are the head's, source-wise."""
MAX_HEAD_NODES = 1000


def head_first(tree: LexborHTMLParser, selector: str) -> Node | None:
    """The first element ``selector`` finds in the document's head, or else among the
    head-only elements that open the body after an ``<img>``: a tracking pixel (in
    ``<noscript>`` or not) ends the head of a parser with scripting off, and the elements
    after it land in the body."""
    head = tree.head
    node = None if head is None else head.css_first(selector)
    body = tree.body
    if node is not None or body is None:
        return node
    pixel = False
    for index, child in enumerate(body.iter(include_text=True)):
        if index >= MAX_HEAD_NODES:
            break
        if child.tag == "-text":
            if (child.text_content or "").strip():
                break
            continue
        if not pixel and child.tag != "img":
            break  # the body opened with content of its own: no head's elements in it
        pixel = True
        if child.tag not in _HEAD_TAGS:
            break
        if child.css_matches(selector):
            return child
    return None

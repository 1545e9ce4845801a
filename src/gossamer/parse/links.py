"""Extract the title, robots directives and outlinks of an HTML page.

Links are resolved with a small resolver that handles the common shapes of ``href`` (absolute
``http(s)://``, ``/path``, ``path``, ``?query``, ``//host``, ``#fragment``, dot segments) with
string operations on the base URL, split once per page; only ``http:path`` is left to
:func:`urllib.parse.urljoin`, which alone costs two to three times the HTML parse.

The resolver follows the WHATWG URL Standard where it differs from RFC 3986 in ways pages rely
on: leading and trailing C0 controls and spaces are stripped, tabs and newlines inside are
removed, backslashes count as slashes, and ``%2e`` counts as a dot segment. Results are not
canonicalised beyond that (the crawler does it centrally), only checked to be ``http``/``https``
URLs with a plausible host and port.

Documents that could drive lexbor into its quadratic cases (very deep nesting, huge numbers of
attributes) are first flattened and stripped of excess attributes by
:func:`gossamer.parse.guard.guard`, which keeps their links and says what it changed in
``ParsedPage.flags``; its module doc states the time bounds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError
from w3lib.encoding import to_unicode

from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import MAX_DEPTH, guard

__all__ = ["MAX_DEPTH", "MAX_HREF_CHARS", "MAX_TITLE_CHARS", "ParsedPage", "parse_html"]

MAX_TITLE_CHARS = 512
"""Titles are cut to this many characters after whitespace is collapsed."""

MAX_HREF_CHARS = 16_384
"""Longer ``href`` values are dropped unread (huge ``data:`` URLs, traps)."""

_LINK_SELECTOR = "a[href], area[href], link[href]"
_TITLE_SELECTOR = "title:not(svg title)"
_FOLLOWED_LINK_RELS = frozenset({"next", "alternate"})

_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_NO_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# Scheme, optional userinfo, a host (bracketed IPv6 or a name without forbidden host code
# points) and an optional port, followed by the end of the authority.
_ABSOLUTE = re.compile(
    r"https?://(?:[^/?#]*@)?(?:\[[0-9A-Fa-f:.]+\]|[^\x00-\x20\x7f#/:<>?@\[\\\]^|]+)"
    r"(?::(\d*))?(?=[/?#]|\Z)",
    re.IGNORECASE,
)
_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|\Z)", re.IGNORECASE)
_SINGLE_DOTS = frozenset({".", "%2e"})
_DOUBLE_DOTS = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the crawler needs from one HTML page."""

    title: str | None
    """First ``<title>``, stripped, whitespace collapsed, cut to ``MAX_TITLE_CHARS``; ``None``
    if absent or blank."""
    links: list[str]
    """Absolute http(s) outlinks in document order, exact duplicates and links to the page
    itself removed, fragments removed, otherwise as written."""
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
    dropped), ``html-cut-attributes`` (excess attributes dropped), ``html-parse-error``
    (lexbor refused the document: no links)."""


def parse_html(
    body: bytes,
    url: str,
    *,
    header_charset: str | None = None,
    follow_nofollow: bool = False,
) -> ParsedPage:
    """Parse an HTML body fetched from ``url`` (an absolute http(s) URL).

    Links come from ``<a href>``, ``<area href>`` and ``<link rel="next"|"alternate" href>``.
    ``rel=nofollow`` links and, with ``<meta name=robots content=nofollow|none>``, all links
    are skipped unless ``follow_nofollow``. Never raises on malformed or hostile HTML; raises
    ``ValueError`` only if ``url`` itself is not an http(s) URL.
    """
    page = _Resolver(url)
    detected = detect_encoding(body, header_charset)
    payload = body[detected.bom_length :] if detected.bom_length else body
    # Lexbor reads bytes as UTF-8 (invalid sequences become U+FFFD), so UTF-8 skips a decode.
    document: str | bytes = payload
    if detected.encoding != "utf-8":
        document = to_unicode(payload, detected.encoding)
    guarded = guard(document)
    try:
        tree = LexborHTMLParser(guarded.document)
    except SelectolaxError:
        flags = (*guarded.flags, "html-parse-error")
        return ParsedPage(None, [], 0, False, False, page.document, detected.encoding, flags=flags)
    noindex, nofollow = _meta_robots(tree)
    base = _base_resolver(tree, page)
    links, skipped = _extract_links(
        tree.css(_LINK_SELECTOR),
        base,
        page.document,
        honour_nofollow=not follow_nofollow,
        meta_nofollow=nofollow,
    )
    return ParsedPage(
        title=_title(tree),
        links=links,
        nofollow_links=skipped,
        meta_nofollow=nofollow,
        meta_noindex=noindex,
        base_url=base.document,
        text_encoding=detected.encoding,
        tree=tree,
        flags=guarded.flags,
    )


def _title(tree: LexborHTMLParser) -> str | None:
    node = tree.css_first(_TITLE_SELECTOR)
    if node is None:
        return None
    text = node.text().lstrip()[: MAX_TITLE_CHARS * 4]
    return " ".join(text.split())[:MAX_TITLE_CHARS].rstrip() or None


def _meta_robots(tree: LexborHTMLParser) -> tuple[bool, bool]:
    """Return ``(noindex, nofollow)`` from ``<meta name="robots">`` tags."""
    noindex = nofollow = False
    for meta in tree.css("meta[name]"):
        attributes = meta.attributes
        if (attributes.get("name") or "").strip().lower() != "robots":
            continue
        for token in (attributes.get("content") or "").lower().split(","):
            token = token.strip()
            noindex = noindex or token in ("noindex", "none")
            nofollow = nofollow or token in ("nofollow", "none")
    return noindex, nofollow


def _base_resolver(tree: LexborHTMLParser, page: _Resolver) -> _Resolver:
    """The resolver for the first ``<base href>`` if it is an http(s) URL, else the page's."""
    node = tree.css_first("base[href]")
    href = node.attributes.get("href") if node is not None else None
    if href is None:
        return page
    resolved = page.resolve(href)
    return page if resolved is None else _Resolver(resolved)


def _extract_links(
    nodes: list[LexborNode],
    base: _Resolver,
    own_url: str,
    *,
    honour_nofollow: bool,
    meta_nofollow: bool,
) -> tuple[list[str], int]:
    links: list[str] = []
    seen = {own_url}
    skipped = 0
    for node in nodes:
        attributes = node.attributes
        rel = attributes.get("rel")
        tokens = rel.lower().split() if rel else ()
        if node.tag == "link" and (
            "stylesheet" in tokens or _FOLLOWED_LINK_RELS.isdisjoint(tokens)
        ):
            continue
        if honour_nofollow and (meta_nofollow or "nofollow" in tokens):
            skipped += 1
            continue
        resolved = base.resolve(attributes.get("href") or "")
        if resolved is not None and resolved not in seen:
            seen.add(resolved)
            links.append(resolved)
    return links, skipped


class _Resolver:
    """Resolves hrefs against one absolute http(s) URL, split once."""

    __slots__ = ("directory", "directory_path", "document", "origin", "path_url", "scheme")

    def __init__(self, url: str) -> None:
        url = _clean(url).partition("#")[0]
        if "\\" in url:
            url = _backslashes_to_slashes(url)
        match = _ABSOLUTE.match(url)
        if match is None or not _port_ok(match):
            raise ValueError(f"not an absolute http(s) URL: {url[:200]!r}")
        self.origin = url[: match.end()]
        self.scheme = url[:5].lower().rstrip(":")
        path, question, query = url[match.end() :].partition("?")
        path = _remove_dot_segments(path) if path else "/"
        self.path_url = self.origin + path
        self.document = self.path_url + question + query
        self.directory_path = path[: path.rfind("/") + 1]
        self.directory = self.origin + self.directory_path

    def resolve(self, href: str) -> str | None:
        """Return the absolute http(s) URL ``href`` points to, without fragment, or ``None``."""
        if len(href) > MAX_HREF_CHARS:
            return None
        href = href.strip(_C0_AND_SPACE)
        if "\t" in href or "\n" in href or "\r" in href:
            href = href.translate(_NO_TAB_NEWLINE)
        href = href.partition("#")[0]
        if not href:
            return self.document
        if "\\" in href:
            href = _backslashes_to_slashes(href)
        if href[0] == "/":
            if href.startswith("//"):
                return _absolute(self.scheme + ":" + href)
            return self._join(self.origin, "", href)
        if href[0] == "?":
            return self.path_url + href
        if href.startswith(("http://", "https://")):
            return _absolute(href)
        scheme = _SCHEME.match(href) if ":" in href else None
        if scheme is None:
            return self._join(self.directory, self.directory_path, href)
        return self._with_scheme(href, scheme[1].lower(), scheme.end())

    def _join(self, prefix: str, prefix_path: str, reference: str) -> str:
        """``prefix + reference``, removing dot segments if ``reference`` has any."""
        path, question, query = reference.partition("?")
        if not _may_have_dots(path) or _DOT_SEGMENT.search(path) is None:
            return prefix + reference
        return self.origin + _remove_dot_segments(prefix_path + path) + question + query

    def _with_scheme(self, href: str, scheme: str, rest_start: int) -> str | None:
        if scheme not in ("http", "https"):
            return None
        if href.startswith("//", rest_start) or scheme != self.scheme:
            # "HTTP://x", or "https:x" seen from an http page: WHATWG reads an authority.
            return _absolute(scheme + "://" + href[rest_start:].lstrip("/"))
        try:  # "http:x" from an http page is relative: rare, so leave it to urljoin.
            joined = urljoin(self.document, href)
        except ValueError:
            return None
        return _absolute(joined)


def _may_have_dots(path: str) -> bool:
    """Cheap pre-check for ``_DOT_SEGMENT``: a dot segment ends in "/" or ends the path."""
    return "./" in path or path.endswith(".") or "%" in path


def _clean(href: str) -> str:
    href = href.strip(_C0_AND_SPACE)
    return href.translate(_NO_TAB_NEWLINE)


def _backslashes_to_slashes(href: str) -> str:
    """WHATWG treats ``\\`` as ``/`` before the query in http(s) URLs."""
    path, question, query = href.partition("?")
    return path.replace("\\", "/") + question + query


def _absolute(url: str) -> str | None:
    match = _ABSOLUTE.match(url)
    if match is None or not _port_ok(match):
        return None
    return url


def _port_ok(match: re.Match[str]) -> bool:
    port = match[1]
    return port is None or len(port) < 5 or (len(port) == 5 and int(port) <= 65535)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 on an absolute path, with WHATWG's ``%2e`` spelling of dots."""
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        lowered = segment.lower()
        if lowered in _DOUBLE_DOTS:
            if output:
                output.pop()
        elif lowered not in _SINGLE_DOTS:
            output.append(segment)
    last = segments[-1].lower()
    if last in _SINGLE_DOTS or last in _DOUBLE_DOTS:
        output.append("")
    return "/" + "/".join(output)

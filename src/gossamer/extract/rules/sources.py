"""Where a rule field's values come from: CSS, XPath, a regex, JSON-LD or a meta tag.

Each source reads a :class:`PageView` (one page: the lexbor tree the crawler built, and what
only some sources need, made once when first asked for) within a scope: the whole page, or one
record container (a lexbor node for a CSS container, an lxml element for an XPath one; an
xpath field in a CSS container reads the container's HTML parsed by lxml, a css field in an
XPath container the container's HTML parsed by lexbor). A
source returns the values it found in document order; what cannot be read raises
:class:`SourceError`, which the evaluation records for the page.

Text (``attr = "text"``, the default) is the element's text nodes joined as they stand, its
whitespace runs collapsed to one space, as XPath's ``string()`` does. CSS is lexbor's: a
selector run inside a container matches the container itself too when it fits (like parsel's
``descendant-or-self``).

Bounds: lxml parses the first `MAX_XPATH_HTML` characters of a page, and only for a rule with
an XPath; a regex source reads the first `MAX_REGEX_HTML` characters of the page (or of its
container's HTML); JSON-LD is read from at most `MAX_JSON_LD_SCRIPTS` scripts of up to
`MAX_JSON_LD_CHARS` characters each, walking at most `MAX_JSON_NODES` values. A field takes at
most `MAX_VALUES` values, and values of at most
`gossamer.extract.rules.processors.MAX_FIELD_CHARS` characters together (a page note says
when more were left out).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.extract.rules.patterns import Pattern
from gossamer.extract.rules.processors import MAX_FIELD_CHARS, json_value, value_chars

__all__ = [
    "MAX_JSON_LD_CHARS",
    "MAX_JSON_LD_SCRIPTS",
    "MAX_JSON_NODES",
    "MAX_REGEX_HTML",
    "MAX_VALUES",
    "MAX_VALUE_CHARS",
    "MAX_XPATH_HTML",
    "CssSource",
    "JsonLdSource",
    "MetaSource",
    "PageView",
    "RegexSource",
    "Source",
    "SourceError",
    "XPathSource",
    "lxml_html_parser",
]

MAX_XPATH_HTML = 5 << 20
MAX_REGEX_HTML = 2 << 20
MAX_JSON_LD_SCRIPTS = 20
MAX_JSON_LD_CHARS = 1 << 20
MAX_JSON_NODES = 20_000
MAX_METAS = 2000
MAX_VALUES = 10_000
"""The most values one field takes from one page (or container)."""


class SourceError(ValueError):
    """A source could not read the page (an XPath that fails on it...): the short reason."""


def lxml_html_parser() -> Any:
    """The lxml HTML parser of XPath rules: forgiving, no network, no huge trees."""
    from lxml import etree

    return etree.HTMLParser(
        encoding="utf-8", recover=True, no_network=True, huge_tree=False, collect_ids=False
    )


class PageView:
    """One page as the sources read it. Not shared between threads; built per page."""

    def __init__(
        self, url: str, base_url: str, tree: LexborHTMLParser, body: bytes, encoding: str
    ) -> None:
        self.url = url
        self.base_url = base_url
        self.tree = tree
        self._body = body
        self._encoding = encoding
        self.notes: list[str] = []
        """Page-level problems met while reading (an XPath page cut, a JSON-LD script that
        is not JSON), each once."""

    def lxml_scope(self, node: LexborNode) -> Any:
        """The lxml element of a CSS record's container (its HTML parsed again, once), for
        the xpath fields read in it; None if it cannot be parsed."""
        return self._converted(node, lambda: _lxml_element(node.html or ""))

    def lexbor_scope(self, element: Any) -> LexborNode | None:
        """The lexbor node of an XPath record's container (its HTML parsed again, once), for
        the css fields read in it."""
        return cast(LexborNode | None, self._converted(element, lambda: _lexbor_node(element)))

    def _converted(self, scope: Any, convert: Any) -> Any:
        cache: dict[int, tuple[Any, Any]] = self.__dict__.setdefault("_scopes", {})
        key = id(scope)
        if key not in cache:
            cache[key] = (scope, convert())  # the scope kept: its id stays its own
        return cache[key][1]

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    @cached_property
    def html(self) -> str:
        """The page as text, decoded with the codec the parser chose."""
        text = self._body.decode(self._encoding, "replace")
        return text.removeprefix("\ufeff")

    @cached_property
    def lxml_root(self) -> Any:
        """The lxml tree of the page (its first `MAX_XPATH_HTML` characters), or None."""
        from lxml import etree

        html = self.html
        if len(html) > MAX_XPATH_HTML:
            self.note(f"xpath read the first {MAX_XPATH_HTML} characters of the page")
            html = html[:MAX_XPATH_HTML]
        try:
            return etree.fromstring(html.encode("utf-8", "replace"), lxml_html_parser())
        except (etree.LxmlError, ValueError):
            return None

    @cached_property
    def json_ld(self) -> list[Any]:
        """The parsed contents of the page's ``application/ld+json`` scripts."""
        found: list[Any] = []
        for node in self.tree.css("script[type]"):
            kind = (node.attributes.get("type") or "").split(";")[0].strip().lower()
            if kind != "application/ld+json":
                continue
            text = node.text(deep=True)
            if len(text) > MAX_JSON_LD_CHARS:
                self.note(f"jsonld: a script over {MAX_JSON_LD_CHARS} characters was skipped")
                continue
            try:
                found.append(json.loads(text))
            except (ValueError, RecursionError):
                self.note("jsonld: a script is not JSON")
            if len(found) >= MAX_JSON_LD_SCRIPTS:
                break
        return found

    @cached_property
    def metas(self) -> dict[str, list[str]]:
        """``<meta content>`` values by lower-cased ``name``, ``property`` or ``itemprop``."""
        found: dict[str, list[str]] = {}
        for node in self.tree.css("meta[content]")[:MAX_METAS]:
            attributes = node.attributes
            content = attributes.get("content")
            if content is None:
                continue
            for key in ("name", "property", "itemprop"):
                name = attributes.get(key)
                if name:
                    found.setdefault(name.strip().lower(), []).append(content.strip())
        return found

    def typed_objects(self, type_name: str) -> list[dict[str, Any]]:
        """JSON-LD objects whose ``@type`` is ``type_name`` (any depth, document order), or
        with ``*`` every top-level object and every member of a ``@graph``."""
        found: list[dict[str, Any]] = []
        stack: list[Any] = list(reversed(self.json_ld))
        visited = 0
        while stack and visited < MAX_JSON_NODES:
            item = stack.pop()
            visited += 1
            if isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                if type_name == "*":
                    found.append(item)
                    graph = item.get("@graph")
                    if isinstance(graph, list):
                        stack.extend(reversed(graph))
                    continue
                if type_name in _types(item):
                    found.append(item)
                stack.extend(reversed(list(item.values())))
        return found


_TABLE_PARTS = {
    "tr": "<table>",
    "td": "<table><tr>",
    "th": "<table><tr>",
    "tbody": "<table>",
    "thead": "<table>",
    "tfoot": "<table>",
    "caption": "<table>",
}
"""The context a container of these tags needs for lexbor to keep it when parsed alone."""


def _lxml_element(html: str) -> Any:
    from lxml import etree

    try:
        root = etree.fromstring(html.encode("utf-8", "replace"), lxml_html_parser())
    except (etree.LxmlError, ValueError):
        return None
    body = root.find("body") if root is not None else None
    if body is not None and len(body):
        return body[0]
    return root


def _lexbor_node(element: Any) -> LexborNode | None:
    from lxml import etree

    tag = element.tag if isinstance(element.tag, str) else ""
    html = etree.tostring(element, method="html", encoding="unicode", with_tail=False)
    tree = LexborHTMLParser(_TABLE_PARTS.get(tag.lower(), "") + html)
    if tag.lower() in ("html", "head", "body"):
        return tree.css_first(tag.lower())
    return tree.body.css_first(tag) if tree.body is not None and tag else None


def _types(item: dict[str, Any]) -> set[str]:
    """An object's ``@type`` names, without a vocabulary prefix (``schema:``, a URL)."""
    declared = item.get("@type")
    names = declared if isinstance(declared, list) else [declared]
    return {re.split(r"[/:#]", name)[-1] for name in names if isinstance(name, str)}


def _text(text: str) -> str:
    return " ".join(text.split())


MAX_VALUE_CHARS = 256 * 1024
"""Longer text values are cut (the evaluation reports the cut)."""


class _Values:
    """The values a source found, until `MAX_VALUES` of them or `MAX_FIELD_CHARS` characters
    (each text counted up to `MAX_VALUE_CHARS`, where the evaluation cuts it)."""

    def __init__(self, page: PageView, source: str) -> None:
        self.found: list[Any] = []
        self._chars = 0
        self._page = page
        self._source = source

    def add(self, value: Any, first: bool) -> bool:
        """Keep ``value`` unless it passes the bound; False when no more are wanted."""
        self._chars += min(value_chars(value, MAX_VALUE_CHARS), MAX_VALUE_CHARS)
        if self._chars > MAX_FIELD_CHARS:
            self._page.note(f"{self._source}: values over {MAX_FIELD_CHARS} characters left out")
            return False
        self.found.append(value)
        return not first and len(self.found) < MAX_VALUES


@dataclass(frozen=True, slots=True)
class CssSource:
    """Elements matched by a CSS selector: their text, HTML or an attribute."""

    selector: str
    attr: str = "text"
    kind = "css"

    def values(self, page: PageView, scope: Any, first: bool) -> list[Any]:
        if scope is not None and not isinstance(scope, LexborNode):
            scope = page.lexbor_scope(scope)
            if scope is None:
                raise SourceError("css: the record's container could not be read")
        root: LexborHTMLParser | LexborNode = page.tree if scope is None else scope
        if first and self.attr in ("text", "html"):
            node = root.css_first(self.selector)
            nodes = [] if node is None else [node]
        else:
            nodes = root.css(self.selector)
        found = _Values(page, f"css {self.selector[:60]!r}")
        for node in nodes:
            if self.attr == "text":
                value: str | None = _text(node.text(deep=True))
            elif self.attr == "html":
                value = node.html
            else:
                value = node.attributes.get(self.attr)
            if value is not None and not found.add(value, first):
                break
        return found.found


_NO_ATTRIBUTE = object()
"""What an attribute name reads from text, a number or a boolean an XPath selects."""


@dataclass(frozen=True, slots=True)
class XPathSource:
    """An XPath 1.0 expression: elements (their text, HTML or an attribute), or the text,
    attribute values, numbers and booleans it selects directly (with ``attr`` text or html;
    an attribute name reads nothing from those, which the page's errors say)."""

    expression: str
    attr: str = "text"
    kind = "xpath"

    def values(self, page: PageView, scope: Any, first: bool) -> list[Any]:
        from lxml import etree

        if isinstance(scope, LexborNode):
            scope = page.lxml_scope(scope)
            if scope is None:
                raise SourceError("xpath: the record's container could not be read")
        root = page.lxml_root if scope is None else scope
        if root is None:
            raise SourceError("xpath: the page could not be parsed")
        try:
            result = root.xpath(self.expression)
        except etree.XPathError as exc:
            raise SourceError(f"xpath: {exc}") from None
        found = _Values(page, f"xpath {self.expression[:60]!r}")
        for item in result if isinstance(result, list) else [result]:
            value = self._value(item, etree)
            if value is _NO_ATTRIBUTE:
                page.note(f"xpath {self.expression!r}: attr {self.attr!r} of a non-element")
                continue
            if value is not None and not found.add(value, first):
                break
        return found.found

    def _value(self, item: Any, etree: Any) -> Any:
        if isinstance(item, etree._Element):
            if self.attr == "text":
                return _text(str(item.xpath("string()")))
            if self.attr == "html":
                return str(etree.tostring(item, method="html", encoding="unicode", with_tail=False))
            value = item.get(self.attr)
            return None if value is None else str(value)
        if self.attr not in ("text", "html"):
            return _NO_ATTRIBUTE
        if isinstance(item, str):
            return str(item)  # lxml's string results hold their whole tree
        if isinstance(item, bool):
            return item
        if isinstance(item, float):
            if not math.isfinite(item):
                return None
            return int(item) if item.is_integer() and abs(item) < 2**53 else item
        return None


@dataclass(frozen=True, slots=True)
class RegexSource:
    """A regex run on the page's HTML (or its container's): the first group of each match,
    or the whole match for a pattern without groups."""

    pattern: Pattern
    kind = "regex"

    def values(self, page: PageView, scope: Any, first: bool) -> list[Any]:
        if scope is None:
            text = page.html
        elif isinstance(scope, LexborNode):
            text = scope.html or ""
        else:
            from lxml import etree

            text = etree.tostring(scope, method="html", encoding="unicode", with_tail=False)
        group = 1 if self.pattern.groups else 0
        found = _Values(page, f"regex {self.pattern.pattern[:60]!r}")
        for match in self.pattern.finditer(text[:MAX_REGEX_HTML]):
            value = match.group(group)
            if value is not None and not found.add(value, first):
                break
        return found.found


@dataclass(frozen=True, slots=True)
class JsonLdSource:
    """A dotted path into the page's JSON-LD: ``Type.key.key`` (``*`` for any top-level
    object); lists on the way are walked through, a list at the end gives its items."""

    type_name: str
    keys: tuple[str, ...]
    kind = "jsonld"

    def values(self, page: PageView, scope: Any, first: bool) -> list[Any]:
        values: list[Any] = list(page.typed_objects(self.type_name))
        for key in self.keys:
            step: list[Any] = []
            for value in values:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, dict) and key in item:
                        step.append(item[key])
            values = step
        found = _Values(page, f"jsonld {self.type_name!r}")
        for value in values:
            for item in value if isinstance(value, list) else [value]:
                try:
                    readable = json_value(item)
                except ValueError:
                    continue
                if not found.add(readable, first):
                    return found.found
        return found.found


@dataclass(frozen=True, slots=True)
class MetaSource:
    """The ``content`` of ``<meta>`` tags by ``name`` or ``property`` (case-insensitive)."""

    name: str
    kind = "meta"

    def values(self, page: PageView, scope: Any, first: bool) -> list[Any]:
        found = page.metas.get(self.name, [])
        return found[:1] if first else found[:MAX_VALUES]


Source = CssSource | XPathSource | RegexSource | JsonLdSource | MetaSource

"""A fetched page made safe to show inside the editor: an allow-list of tags and attributes.

The page is parsed as the crawl parses it (lexbor), so the elements the editor shows are the
ones the rule's selectors will meet. Then:

* elements that run or embed anything (``script``, ``iframe``, ``object``, ``embed``, ``svg``,
  ``math``, ``template``, ``noscript``, ``base``, ``link``, ``meta`` with its refresh, ...)
  are removed with their content;
* other tags not on the allow-list are unwrapped (their content kept); custom elements
  (``x-card``) stay, inert without scripts;
* attributes not on the allow-list go (every ``on*`` handler among them); URL attributes
  (``href``, ``src``, ``action``, ...) are kept only as inert ``data-g-href`` etc., so links,
  images and forms fetch nothing and go nowhere (``data-g-`` attributes of the page itself
  are dropped: they are the editor's);
* ``style`` attributes and elements that load or run anything (``url(``, ``@import``,
  ``expression``, ``javascript:``, ``behavior``, ``-moz-binding``) are removed.

The route serving the result adds ``Content-Security-Policy: default-src 'none'`` and the
editor frames it with ``sandbox="allow-same-origin"`` (no scripts): three locks, one key.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

__all__ = ["MAX_NODES", "SanitizeError", "sanitize"]

MAX_NODES = 200_000
"""Pages with more elements are refused (the editor is for sample pages)."""

_DROP = (
    "script",
    "style[data-g-drop]",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "svg",
    "math",
    "template",
    "noscript",
    "noembed",
    "noframes",
    "base",
    "link",
    "meta",
    "portal",
    "fencedframe",
    "param",
    "source",
    "track",
    "audio",
    "video",
    "canvas",
    "dialog",
    "title",
    "xmp",
    "plaintext",
)
_DROP_SELECTOR = ", ".join(_DROP)
_TAGS = frozenset(
    {
        "html",
        "head",
        "body",
        "style",
        "div",
        "span",
        "p",
        "a",
        "abbr",
        "b",
        "i",
        "u",
        "s",
        "em",
        "strong",
        "small",
        "big",
        "sub",
        "sup",
        "mark",
        "q",
        "cite",
        "code",
        "kbd",
        "samp",
        "var",
        "pre",
        "blockquote",
        "address",
        "br",
        "hr",
        "wbr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "table",
        "caption",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "th",
        "td",
        "col",
        "colgroup",
        "section",
        "article",
        "aside",
        "nav",
        "header",
        "footer",
        "main",
        "figure",
        "figcaption",
        "details",
        "summary",
        "time",
        "data",
        "img",
        "picture",
        "map",
        "area",
        "label",
        "form",
        "fieldset",
        "legend",
        "input",
        "button",
        "select",
        "option",
        "optgroup",
        "textarea",
        "output",
        "progress",
        "meter",
        "ruby",
        "rt",
        "rp",
        "bdi",
        "bdo",
        "del",
        "ins",
        "dfn",
        "center",
        "font",
        "tt",
        "strike",
        "nobr",
    }
)
_ATTRIBUTES = frozenset(
    {
        "id",
        "class",
        "title",
        "lang",
        "dir",
        "alt",
        "name",
        "rel",
        "role",
        "colspan",
        "rowspan",
        "scope",
        "headers",
        "datetime",
        "width",
        "height",
        "align",
        "valign",
        "type",
        "value",
        "placeholder",
        "for",
        "label",
        "itemprop",
        "itemscope",
        "itemtype",
        "itemid",
        "abbr",
        "summary",
        "start",
        "reversed",
        "span",
        "open",
        "hidden",
        "checked",
        "selected",
        "disabled",
        "readonly",
        "multiple",
        "size",
        "maxlength",
        "min",
        "max",
        "step",
        "color",
        "border",
        "cellpadding",
        "cellspacing",
        "nowrap",
        "translate",
        "tabindex",
        "content",
        "property",
    }
)
_URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "srcset",
        "action",
        "formaction",
        "poster",
        "background",
        "cite",
        "longdesc",
        "usemap",
        "data",
        "manifest",
        "ping",
        "xlink:href",
    }
)
_INERT = "data-g-"
_CUSTOM = re.compile(r"[a-z][a-z0-9]*-[a-z0-9-]*")
_DATA = re.compile(r"data-[a-z0-9][a-z0-9_.:-]*")
_BLANKS = re.compile(r"[\x00-\x20]+")
_ACTIVE_SCHEMES = ("javascript:", "vbscript:", "data:")
_UNSAFE_STYLE = re.compile(
    r"url\s*\(|@import|expression|javascript|vbscript|behaviou?r\s*:|-moz-binding|\\", re.I
)


class SanitizeError(ValueError):
    """A page too large to show."""


def sanitize(text: str) -> str:
    """``text`` (the page's decoded HTML) as a document without anything active."""
    tree = LexborHTMLParser(text)
    if tree.root is None:
        return "<!DOCTYPE html><html><head></head><body></body></html>"
    elements = list(tree.root.traverse())
    if len(elements) > MAX_NODES:
        raise SanitizeError(f"the page has more than {MAX_NODES} elements")
    for style in tree.css("style"):
        if _UNSAFE_STYLE.search(style.text(deep=True)):
            style.attrs["data-g-drop"] = ""
    for _ in range(len(elements)):
        node = tree.css_first(_DROP_SELECTOR)
        if node is None:
            break
        node.decompose()
    for node in list(tree.root.traverse()):
        tag = (node.tag or "").lower()
        if tag not in _TAGS and not _CUSTOM.fullmatch(tag):
            node.unwrap()
            continue
        _clean_attributes(node)
    for field in tree.css("input, button, select, textarea"):
        field.attrs["disabled"] = ""
    html = tree.html or ""
    return html if html.lstrip()[:9].upper() == "<!DOCTYPE" else "<!DOCTYPE html>\n" + html


def _clean_attributes(node: object) -> None:
    attrs = node.attrs  # type: ignore[attr-defined]
    for name, value in list(attrs.items()):
        low = name.lower()
        keep = low in _ATTRIBUTES or (
            _DATA.fullmatch(low) is not None and not low.startswith(_INERT)
        )
        if low == "style":
            keep = value is not None and not _UNSAFE_STYLE.search(value)
        del attrs[name]
        if keep:
            attrs[low] = value or ""
        elif low in _URL_ATTRIBUTES and value and not _active(value):
            attrs[_INERT + low.replace(":", "-")] = value[:2000]


def _active(url: str) -> bool:
    """Whether ``url`` runs or holds a document (``javascript:``, ``vbscript:``, ``data:``),
    however spaced or cased."""
    return _BLANKS.sub("", url[:100]).lower().startswith(_ACTIVE_SCHEMES)

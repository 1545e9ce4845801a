"""gossamer's C parts (``setup.py``), loaded where they were built.

Each speeds up a Python function that stays beside it as the reference: the Python code runs
where the C part was not built (no C compiler at install time: the build skips it and says
so), does not bind (:data:`LINKWALK`: selectolax's module must export lexbor's functions and
lay its nodes out as its ``lexbor.pxd`` says), or is turned off with ``GOSSAMER_NATIVE=0``
(the tests run both and compare them). `in_use` names the parts that run; ``make`` prints it
after each install. The parts of other packages are loaded by the module each speeds up
(`load`), as that module is imported.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

__all__ = ["FORMATSCAN", "LINKWALK", "TOKENS", "bound", "in_use", "load"]


def _enabled() -> bool:
    return os.environ.get("GOSSAMER_NATIVE", "1").strip() != "0"


@functools.cache
def load(name: str) -> ModuleType | None:
    """The C module ``name`` where it was built and is not turned off, or None. Called by
    the module it speeds up as that one is imported (its package is imported then): loading
    them here, as this module is imported, would import their packages from inside this
    import, and a package that comes back to this module would find it half made."""
    if not _enabled():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def bound(module: ModuleType | None, *told: object) -> ModuleType | None:
    """``module``, a C part that reads lexbor's tree (``src/gossamer/_lexbor.h``), bound to
    the lexbor of selectolax's loaded module and told ``told``; None when it is None or
    does not bind. Its layout check reads a node selectolax made."""
    if module is None:
        return None
    import selectolax.lexbor as lexbor

    tree = lexbor.LexborHTMLParser("<p>")
    sample = tree.root
    if sample is None:
        return None
    try:
        module.bind(lexbor.__file__, lexbor.LexborNode, sample, tree, sample.mem_id, *told)
    except ImportError:
        return None
    return module


def _linkwalk() -> ModuleType | None:
    """`gossamer.parse._linkwalk` told the tag ids of the elements it reads, or None."""
    module = load("gossamer.parse._linkwalk")
    if module is None:
        return None
    from selectolax.lexbor import create_tag

    ids = [create_tag(name).tag_id for name in ("a", "area", "link", "meta", "base")]
    return bound(module, *ids)


LINKWALK: ModuleType | None = _linkwalk()
"""The search for a page's links in C (``parse/_linkwalk.c``): `gossamer.parse.links`' own
pass over lexbor's tree, made without a Python object per element; None: the Python pass."""

_KINDS = {
    "a": ("a",),
    "area": ("area",),
    "link": ("link",),
    "meta": ("meta",),
    "base": ("base",),
    "title": ("title",),
    "template": ("template",),
    "foreign": ("svg", "math"),
    "raw": (
        *("title", "textarea", "style", "xmp", "iframe", "noembed", "noframes", "script"),
        "plaintext",
    ),
    "head_ok": (
        *("head", "base", "basefont", "bgsound", "link", "meta", "noframes", "script"),
        *("style", "template", "title"),
    ),
    "breakout": (
        *("b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt"),
        *("em", "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li"),
        *("listing", "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span"),
        *("strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var"),
    ),
    "island": ("foreignobject", "desc", "title"),
    "math": ("math",),
    "math_island": ("mi", "mo", "mn", "ms", "mtext"),
    "br": ("br",),
    "void": (
        *("area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img"),
        *("input", "keygen", "link", "meta", "param", "source", "track", "wbr"),
    ),
    "table_part": ("caption", "col", "colgroup", "tbody", "thead", "tfoot", "tr", "td", "th"),
    "copied": ("selectedcontent",),
    "math_text": ("annotation-xml", "title"),
    "noscript": ("noscript",),
    "head_noscript_ok": ("basefont", "bgsound", "link", "meta", "noframes", "style"),
    "frameset": ("frameset",),
    "head_end": ("head",),
    "body_end": ("body", "html", "br"),
    "font": ("font",),
    "html": ("html",),
}
"""The kinds of element `gossamer.parse._tokens` tells apart, by tag name (see that file)."""
_HTML_NAMESPACE = 2
"""lexbor's id of the HTML namespace (``LXB_NS_HTML``), checked with the rest on `_SAMPLE`."""


def _tokens() -> ModuleType | None:
    """`gossamer.parse._tokens` bound to selectolax's lexbor and told the tag ids of the
    elements it tells apart, or None."""
    module = load("gossamer.parse._tokens")
    if module is None:
        return None
    import selectolax.lexbor as lexbor

    kinds = {
        kind: tuple(lexbor.create_tag(name).tag_id for name in names)
        for kind, names in _KINDS.items()
    }
    try:
        module.bind(lexbor.__file__, _HTML_NAMESPACE, kinds)
    except ImportError:
        return None
    return module if module.read(_SAMPLE, True) == _SAMPLE_READ else None


_SAMPLE = (
    b"<title>a &amp; b</title><meta name=robots content=x><link rel=canonical href=/c>"
    b"<script><a href=s></script><a href='h&amp;' rel=nofollow>x</a><a href=i>i</a>"
)
_SAMPLE_READ = (
    ["i"],
    2,
    1,
    [{"name": "robots", "content": "x"}],
    None,
    ("/c", "canonical", True),
    "a & b",
)
"""A document and what `gossamer.parse._tokens` must read of it: the check of the layout of
lexbor's tokens it reads (a lexbor that lays them out otherwise is not read)."""


TOKENS: ModuleType | None = _tokens()
"""The reading of a page from lexbor's tokens alone, in C (``parse/_tokens.c``), bound and
checked on a sample (`_SAMPLE`); None: the tree is read."""

FORMATSCAN: ModuleType | None = load("gossamer.parse._formatscan")
"""The formatting scan in C (``parse/_formatscan.c``): what
`gossamer.parse.formatting.rebuilt_bytes`' regex reads, read without it; None: the regex."""


def in_use() -> dict[str, bool]:
    """Each C part and whether it runs."""
    return {
        "linkwalk": LINKWALK is not None,
        "tokens": TOKENS is not None,
        "formatscan": FORMATSCAN is not None,
        **{name: load(f"gossamer.{module}") is not None for name, module in _PARTS.items()},
    }


_PARTS = {
    "resolve": "parse._resolve",  # `gossamer.parse.links`
    "squash": "extract._squash",  # `gossamer.extract.spaces`
    "whole": "extract._whole",  # `gossamer.extract.kinds`, which binds it
    "walk": "extract._walk",  # `gossamer.extract.walk`, which binds it
    "simhash": "digests._simhash",  # `gossamer.digests.simhash`
    "marks": "extract._marks",  # `gossamer.extract.meta`, which binds it
}
"""The C parts loaded by the module they speed up (`load`), by name."""

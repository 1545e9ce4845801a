"""Make a hostile HTML document safe for lexbor, in one linear pass, keeping its links.

Lexbor's tree builder is quadratic in a few shapes of input: elements nested thousands deep
(most tokens scan the stack of open elements), tags with thousands of attributes (each
attribute is checked against the tag's others) and documents with tens of thousands of
distinct attribute names. 5 MB of ``<div>`` would take it hours. `guard` rewrites a document
that could hold such shapes so that lexbor never sees:

- nesting deeper than `MAX_DEPTH` (estimated with a simplified tree builder, below): a start
  tag that would nest deeper is dropped, so what follows becomes the content of the element at
  the limit, as Chromium flattens its tree at 512 (an ``<a>`` is kept, closed at once, for
  its link); flagged ``html-flattened``;
- a tag with more than `MAX_TAG_ATTRIBUTES` attributes, or more than `MAX_ATTRIBUTE_NAMES`
  distinct attribute names in the document: the excess attributes are dropped (``href``,
  ``rel`` and the few others links and robots directives need are always kept); flagged
  ``html-cut-attributes``;
- more than `MAX_ACTIVE_FORMATTING` elements in the list of active formatting elements
  since its last marker, or elements whose copies cost lexbor more than
  `MAX_FORMATTING_BYTES`: a formatting start tag (``<b>``, ``<font>``, ``<i>`` ..., any but
  ``<a>``) that would add one more is dropped, keeping its text (an ``<a>`` is closed at once);
  flagged ``html-cut-formatting``. Lexbor rebuilds every element of that list that a block
  closed at the next text, as the Standard says ("reconstruct the active formatting
  elements"), so ``<p><b c=1>x</p>`` repeated, a different attribute on each ``<b>`` so that
  the Noah's Ark clause never collapses them, is quadratic (150 KB: 42 s; 500 KB: past 23 GB),
  and even a short list is built again for every paragraph (64 elements and 500 KB of
  ``<p>x``: 6 s; 16 ``<b>`` of 250 attributes and 50 KB of ``<p>x</p>``: 1.6 s, 2.4 GB);
- more than `MAX_TAG_NAMES` distinct tag names the Standard does not define: tags with a new
  name past that are dropped, keeping their content (lexbor's table of names never grows, so
  each new name makes every later lookup slower: 160,000 ``<xN></xN>`` cost it 7.5 s); flagged
  ``html-cut-names``;
- end tags that close nothing, once elements nest deeper than `_DEEP`: lexbor would ignore
  them, after scanning the whole stack for each.

Nothing is cut: every link the document holds outside the dropped tags is still parsed.

The simplified tree builder follows the HTML Standard where flat markup would otherwise look
nested: an ``<a>`` or ``<nobr>`` start tag closes an open one (the adoption agency), ``<p>``
and the block start tags close an open ``<p>`` in button scope, ``<li>``, ``<dd>``/``<dt>``,
``<button>``, ``<option>``, table rows and cells close their open sibling, a heading closes
a heading that is the current node, html/head/body and nested ``<form>`` tags open nothing.
Its list of active formatting elements follows the Standard too: a formatting start tag adds
one (unless three identical ones are in the list since the last marker: same name and the
same attributes, written alike), an ``<a>`` start tag first removes the list's ``<a>``, a
formatting end tag removes the last one of its name, ``<td>``, ``<th>``, ``<caption>``,
``<applet>``, ``<object>``, ``<marquee>`` and ``<template>`` add a marker, removed with all
that follows it when the element closes; block end tags leave the list alone.
It tokenizes like the Standard too (comments including ``<!-->``, bogus comments, quoted
attribute values holding ``>``, raw text elements outside SVG/MathML, a script's text that
``<!--<script>`` escapes twice, tags cut by the end of the document), so lexbor never sees a
tag the guard did not, nor the guard an end tag lexbor reads as text. Its errors lean towards more
depth: 5,001 unclosed ``<a href>`` siblings stay flat and whole.

A crawl parses a page of more than 4,096 ``<`` as it is by default, in a worker process of the
parse sandbox (:mod:`gossamer.parse.sandbox`), whose CPU budget and memory limit bound the same
shapes at a tenth of the cost of the checks below: only a page whose worker died there comes back
here, guarded whatever its route (``parse(..., hostile=True)``), and every page with
``--parse-sandbox off`` or a hook.

Most pages need none of this, and the pass costs several times lexbor's own parse, so :func:`parse`
runs it only on documents that could be hostile (:func:`gossamer.parse.scan.route`). A document is
parsed as it is when it is small (under 16 KiB; or at most 4,096 ``<`` and under 64 KiB or without
an *odd tag*, below) and its formatting elements' copies could not cost lexbor more than
`gossamer.parse.formatting.AS_IS_MAX_REBUILT` (:mod:`gossamer.parse.formatting`), or *ordinary*
(:func:`gossamer.parse.scan.ordinary`): at most 16,384 ``<``, not many more start tags than closing
ones (``<`` minus twice the ``</`` and the ``/>`` of names no formatting element's start like, SVG's
``<path/>``, at most a quarter of the ``<``), no odd tag, and few formatting start tags that could
stay open (below). An odd tag holds more than `MAX_TAG_ATTRIBUTES` attributes as the guard's
tokenizer reads them, where a tag could be that long (after a ``<`` with no ``>`` in the 512 bytes
after it; where a quoted value could hold ``>``, behind the regex `gossamer.parse.scan.ODD_TAG`: a
script's ``i < n`` is no odd tag), or the tags together could hold more than `MAX_ATTRIBUTE_NAMES`
distinct attribute names (counted by `gossamer.parse.scan.odd_tag`; unguarded, 8,192 ``<br`` of 60
new names each, closed by ``</x>``, cost lexbor past 300 s, and 2,048 of them 6 s). The scans and
the depth check below cost three fifths of lexbor's parse on a real page, the count of formatting
tags a third more. An ordinary document's tree is then checked, by one CSS match in lexbor walking
down from ``<html>``, for an element nested deeper than `MAX_DEPTH` below ``<body>``; if there is
one (``<span></i>``), the document is guarded and parsed again. A document past 4,096 ``<`` and not
ordinary whose markup is *plain* is parsed as it is (:mod:`gossamer.parse.skeleton`: tags it can
read exactly from the positions of ``<``, ``>``, quotes and ``=``, nesting perfectly but for ``<p>``
and ``<li>`` left open in a block, few attributes and names; read with numpy at about 1.2 times
lexbor's parse past 16,384 ``<``, 3 times below). One that is neither but has not many more start
tags than end and self-closing tags, and whose tags nest perfectly, implied end tags lexbor closes
at once allowed, is parsed as it is too (:mod:`gossamer.parse.nesting`, whose doc argues why lexbor
is then linear; the check costs about 2 to 3 times lexbor's parse, the pass 6). An ordinary document
that is hostile all the same costs lexbor at most about 0.2 s in its stack's quadratic cases, which
need a deep stack and a token scanning it: the document has at most 16,384 tags, half of them ends.

The list of active formatting elements is bounded by what could enter it, trusting no end tag that
could close nothing (``</i>`` after ``</p>``, ``</b>`` in a comment or after one): every ``<`` and
a formatting element's name but ``a`` counts, but a start tag its end tag follows at once
(`gossamer.parse.scan._Marks.open_formatting`); plus one (an ``<a>``), times the ``<``, that is at
most `gossamer.parse.scan.ORDINARY_MAX_REBUILT` in an ordinary document, bounding the elements
lexbor builds again (44 ``<b c=N>`` left open, then 8,000 ``<p>x</p>``: 0.13 s, 164 MB; without it
89 KB of ``<p><b c=N>x</p></i>`` cost lexbor 2.4 s and 3 GB, now 0.05 s); what their copies cost is
bounded too (:mod:`gossamer.parse.formatting`: 20 ``<b>`` of 100 attributes, then 8,000 ``<p>x</p>``
cost lexbor 1.7 s and 2.4 GB). A document left alone for its size costs at most 0.03 s and 55 MB
at its peak (a ``<b>`` of a 40 KB value, then 800 ``<p>x``; unbounded, 4,096 ``<`` of
``<p><b c=N>x`` cost 0.55 s and 770 MB, 12 KB 0.3 s and 460 MB).

Bounds of the guard (2 shared cores): every step is linear in the document. The pass costs
at most about 0.5 s per MB (a token scans at most `_REACH` stack entries); lexbor then about
0.05 s per MB on ordinary pages, 0.7 s per MB on the worst shapes left (a flat run of
sibling-closing tags at depth `MAX_DEPTH`); the links under 0.02 s at 1 MB, the main text
about 1.4 s per MB of flat ``<p>x``, ``<li>x`` or ``<h1>x`` (its Python work per block).

Where the danger is: lexbor alone (CPU s, no guard; ``>40`` ran past 40 s) at 256 KB and 1 MB
of each shape; 4 times the input costing 4 times the time is linear. Superlinear: a token
that scans a deep stack, a hash table of names that never grows, and the list of active
formatting elements rebuilt at each paragraph. Deep nesting alone is not: inline elements,
tables, templates, SVG and MathML nest 100,000 deep in linear time.

  ==========================================  ======  ======
  shape                                       256 KB  1 MB
  ==========================================  ======  ======
  ``<div>`` nested (p-in-button-scope scan)   6.0     >40
  ``<ul><li>`` nested (li scan)               >40     >40
  ``<a><div>`` (adoption agency)              3.2     >40
  ``<span></i>``, ``<div></p>`` (stray ends)  1.2-3.3 >40
  ``<p><b c=N>x</p>`` (reconstruction)        >40     >40
  one tag, many attributes                    1.8     >40
  distinct attribute names ``<br aN=1>``      0.037   2.4
  distinct tag names ``<xN></xN>``            0.032   1.3
  ``<span>``/``<b>``/``<svg>``/``<template>``  0.014   0.04-0.08
  nested, ``<table><tr><td>`` nested
  ``<b c=N>`` x 10,000 then ``<p>x``          0.042   0.30
  foster parenting, ``<select>``, comments,   <0.03   <0.12
  entities, an 8 MB attribute value
  ==========================================  ======  ======
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from gossamer.parse import names, tokens
from gossamer.parse.formatting import MAX_FORMATTING_BYTES, entry_bytes, too_heavy
from gossamer.parse.lazy import LazyPattern
from gossamer.parse.nesting import well_formed
from gossamer.parse.scan import (
    LONG_TAG_CHARS,
    MAX_ATTRIBUTE_NAMES,
    MAX_TAG_ATTRIBUTES,
    as_bytes,
    needs_guard,
    route,
    scalar_values,
    tag_count,
    too_deep_selector,
)

__all__ = [
    "CUT_ATTRIBUTES",
    "CUT_FORMATTING",
    "CUT_NAMES",
    "FLATTENED",
    "MAX_ACTIVE_FORMATTING",
    "MAX_ATTRIBUTE_NAMES",
    "MAX_DEPTH",
    "MAX_FORMATTING_BYTES",
    "MAX_TAG_ATTRIBUTES",
    "MAX_TAG_NAMES",
    "PARSE_ERROR",
    "Guarded",
    "Parsed",
    "guard",
    "parse",
]

MAX_DEPTH = 512
"""Start tags that would nest elements deeper than this are dropped (see the module doc)."""
MAX_TAG_NAMES = 1024
"""Tags (start and end) with a name the HTML Standard does not define, once the document has
this many such names, are dropped, keeping their content. Lexbor keeps the names it meets in a
hash table that never grows, so its cost per tag grows with the distinct names before it: 80,000
distinct names cost it 1.1 s, 160,000 7.5 s. 4 MB cycling through 1,024 names cost it 0.105 s,
through 64 names 0.092 s, through 16,384 0.38 s."""
MAX_ACTIVE_FORMATTING = 16
"""Formatting start tags that would make the list of active formatting elements (since its
last marker) longer than this are dropped: lexbor rebuilds the list's closed elements at every
paragraph (500 KB of ``<p>x`` after 16 of them cost it 0.4 s, after 64, 6 s)."""

FLATTENED = "html-flattened"
CUT_ATTRIBUTES = "html-cut-attributes"
CUT_FORMATTING = "html-cut-formatting"
CUT_NAMES = "html-cut-names"
PARSE_ERROR = "html-parse-error"

_LONG_TAG_CHARS = LONG_TAG_CHARS
# Nearest-element searches look this far down the stack at most; past it, an element is
# taken to stay open (more depth, never less).
_REACH = 32
_DEEP = 64

_SPACE = tokens.SPACE
_SPACE_CHARS = "\t\n\f\r /"
_TOO_DEEP = too_deep_selector(MAX_DEPTH + 3)  # deeper than MAX_DEPTH below <html><body>
_TOKEN = tokens.TOKEN
_ATTRIBUTE = tokens.ATTRIBUTE
_BUTTON_SCOPE = names.BUTTON_SCOPE
_CLOSES_P = names.CLOSES_P
_CLOSES_SIBLING = names.CLOSES_SIBLING
_CLOSING_START = names.CLOSING_START
_DEFAULT_SCOPE = names.DEFAULT_SCOPE
_FORMATTING = names.FORMATTING
_HEADINGS = names.HEADINGS
_KNOWN_NAMES = names.KNOWN_NAMES
_LISTED = names.LISTED
_MARKERS = names.MARKERS
_NO_PUSH = names.NO_PUSH
_RAW_TEXT = names.RAW_TEXT
_SPECIAL = names.SPECIAL
_SPECIAL_START = names.SPECIAL_START
_RAW_TEXT_END = {name: LazyPattern(rf"</{name}[{_SPACE}/>]", re.IGNORECASE) for name in _RAW_TEXT}
_KEPT_ATTRIBUTES = frozenset({"href", "rel", "name", "content", "http-equiv", "charset"})


@dataclass(frozen=True, slots=True)
class Guarded:
    """A document made safe for lexbor, and what had to be dropped to make it so."""

    document: str | bytes
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Parsed:
    """A document parsed by lexbor, and what had to be dropped to parse it safely."""

    tree: LexborHTMLParser | None
    """None when lexbor refused the document (flagged ``html-parse-error``)."""
    flags: tuple[str, ...] = ()


def parse(document: str | bytes, tags: int | None = None, *, hostile: bool = False) -> Parsed:
    """lexbor's tree of ``document``, guarded only if it could be hostile (see the module
    doc); bytes are read as UTF-8. ``tags``: its ``<``, if the caller counted them. A
    ``hostile`` one (its sandbox worker died on it) is guarded whatever its route, never
    given to lexbor as it is (770 MB at most)."""
    way = "guard" if hostile else route(document, tag_count(document) if tags is None else tags)
    if way in ("as-is", "plain"):
        return _lexbor(document, ())
    if way == "nested" and well_formed(as_bytes(document)):
        return _lexbor(document, ())
    if way == "check":
        parsed = _lexbor(document, ())
        if parsed.tree is None or parsed.tree.css_first(_TOO_DEEP) is None:
            return parsed
    guarded = _guard(document)
    return _lexbor(guarded.document, guarded.flags)


def guard(document: str | bytes) -> Guarded:
    """``document`` rewritten as the module doc says, or unchanged if it cannot be hostile
    (bytes are read as UTF-8, invalid sequences replaced)."""
    if not needs_guard(document, tag_count(document)):
        return Guarded(document)
    return _guard(document)


def _guard(document: str | bytes) -> Guarded:
    text = document if isinstance(document, str) else document.decode("utf-8", "replace")
    return _Guard(text).run()


def _lexbor(document: str | bytes, flags: tuple[str, ...]) -> Parsed:
    try:
        return Parsed(LexborHTMLParser(scalar_values(document)), flags)
    except SelectolaxError:
        return Parsed(None, (*flags, PARSE_ERROR))


class _Guard:
    """One pass over one document: the estimated stack of open elements and the rewrite."""

    def __init__(self, text: str, *, names_as_they_come: bool = False) -> None:
        self.text = text
        self.stack: list[str] = []
        self.open_count: dict[str, int] = {}
        self.names: set[str] = set(_KEPT_ATTRIBUTES)
        self.names_as_they_come = names_as_they_come
        """Count attribute names tag by tag; else short tags' names are counted at the end,
        at once, and the pass is run again this way if they are too many (they never are on
        ordinary pages)."""
        self.tag_names: set[str] = set()
        """Names of the tags met that the Standard does not define (see `MAX_TAG_NAMES`)."""
        self.unread: list[str] = []
        self.formatting: list[tuple[str, str, int]] = []
        """The list of active formatting elements: names, attributes and what a copy costs
        lexbor (`entry_bytes`), markers apart."""
        self.markers: list[int] = []
        """Where each marker stands in `formatting`."""
        self.pieces: list[str] = []
        self.copied = 0
        self.changed = False
        self.flags: set[str] = set()

    def run(self) -> Guarded:
        text = self.text
        search = _TOKEN.compiled.search
        stack = self.stack
        open_count = self.open_count
        position = 0
        while (token := search(text, position)) is not None:
            position = token.end()
            closing, raw_name, attributes, closed = token.groups()
            if not raw_name or not closed:  # comment, doctype, or cut by the end: no tag
                continue
            name = raw_name.lower()
            if name not in _KNOWN_NAMES and not self._new_name(name):
                self._replace(token, "")
                continue
            if closing:
                if name in _FORMATTING:
                    self._unlist(name)
                if stack and stack[-1] == name:  # the common case, inline
                    stack.pop()
                    open_count[name] -= 1
                    if name in _MARKERS:
                        self._clear_to_marker()
                elif not self._end_tag(name):
                    self._replace(token, "")
                continue
            tag = self._read(raw_name, attributes) if len(attributes) > 1 else None
            if tag is not None or name in _SPECIAL_START or attributes.endswith("/"):
                position = self._start_tag(name, token, tag, attributes)
                continue
            # the common case, inline: an ordinary element, unchanged unless too deep
            if name in _CLOSING_START:
                self._close_for(name)
            if len(stack) >= MAX_DEPTH:
                self._flatten(token, name)
            elif name not in _LISTED or self._list(name, attributes):
                stack.append(name)
                open_count[name] = open_count.get(name, 0) + 1
            else:
                self._drop(token, name)
        return self._finish()

    def _finish(self) -> Guarded:
        """The document as guarded; read again, names tag by tag, if the short tags' names
        were too many."""
        text = self.text
        if self.unread and self._too_many_names():
            return _Guard(text, names_as_they_come=True).run()
        if not self.changed:
            return Guarded(text, tuple(sorted(self.flags)))
        self.pieces.append(text[self.copied :])
        return Guarded("".join(self.pieces), tuple(sorted(self.flags)))

    def _read(self, raw_name: str, attributes: str) -> str | None:
        """A start tag's attributes: a short tag's are read at the end, all at once (too short
        to hold `MAX_TAG_ATTRIBUTES`); a long one's now, returning its rewrite if any."""
        if len(attributes) < _LONG_TAG_CHARS and not self.names_as_they_come:
            self.unread.append(attributes)
            return None
        return self._attributes(raw_name, attributes)

    def _flatten(self, token: re.Match[str], name: str) -> None:
        """Drop a start tag that would nest past `MAX_DEPTH`."""
        self.flags.add(FLATTENED)
        self._drop(token, name)

    def _drop(self, token: re.Match[str], name: str, tag: str | None = None) -> None:
        """Drop a start tag (``tag``: its rewrite, if any); an ``<a>`` is kept, closed at
        once, for its link."""
        self._replace(token, (token[0] if tag is None else tag) + "</a>" if name == "a" else "")

    def _new_name(self, name: str) -> bool:
        """Count a tag name the Standard does not define; False if it is one too many."""
        tag_names = self.tag_names
        if name in tag_names:
            return True
        if len(tag_names) >= MAX_TAG_NAMES:
            self.flags.add(CUT_NAMES)
            return False
        tag_names.add(name)
        return True

    def _too_many_names(self) -> bool:
        """Whether the unread attributes bring the document past `MAX_ATTRIBUTE_NAMES`
        distinct names (every name takes two characters at least)."""
        room = MAX_ATTRIBUTE_NAMES - len(self.names)
        if sum(map(len, self.unread)) < 2 * room:
            return False
        names = _ATTRIBUTE.findall(" ".join(self.unread))
        return len(self.names.union(names)) > MAX_ATTRIBUTE_NAMES

    def _replace(self, token: re.Match[str], replacement: str) -> None:
        start, end = token.span()
        if start > self.copied:
            self.pieces.append(self.text[self.copied : start])
        if replacement:
            self.pieces.append(replacement)
        self.copied = end
        self.changed = True

    def _start_tag(self, name: str, token: re.Match[str], tag: str | None, attributes: str) -> int:
        """Track one start tag (``tag`` is its rewrite, if any); returns where the next token
        may start."""
        end = token.end()
        if name in _SPECIAL_START:
            if name == "script" and not self._foreign():
                end = tokens.script_end(self.text, end)
            elif name in _RAW_TEXT and not self._foreign():
                raw_end = _RAW_TEXT_END[name].search(self.text, end)
                end = len(self.text) if raw_end is None else raw_end.start()
            elif name == "plaintext":
                end = len(self.text)
            elif not (name in _NO_PUSH or (name == "form" and self.open_count.get(name))):
                return self._push(name, token, tag, attributes)
        else:
            return self._push(name, token, tag, attributes)
        if tag is not None:
            self._replace(token, tag)
        return end

    def _push(self, name: str, token: re.Match[str], tag: str | None, attributes: str) -> int:
        if attributes.endswith("/") and self._foreign() and _self_closing(attributes):
            if tag is not None:
                self._replace(token, tag)
            return token.end()
        if name in _CLOSING_START:
            self._close_for(name)
        stack = self.stack
        if len(stack) >= MAX_DEPTH:
            self.flags.add(FLATTENED)
            self._drop(token, name, tag)
            return token.end()
        if name in _LISTED and not self._list(name, attributes):
            self._drop(token, name, tag)
            return token.end()
        stack.append(name)
        open_count = self.open_count
        open_count[name] = open_count.get(name, 0) + 1
        if tag is not None:
            self._replace(token, tag)
        return token.end()

    def _list(self, name: str, attributes: str) -> bool:
        """Add the element about to open to the list of active formatting elements, or a
        marker; False if the list is full (`MAX_ACTIVE_FORMATTING`, an ``<a>`` apart) or would
        cost lexbor too much to rebuild (`MAX_FORMATTING_BYTES`): its start tag is dropped."""
        formatting = self.formatting
        if name in _MARKERS:
            self.markers.append(len(formatting))
            return True
        if name == "a":  # the Standard keeps one <a> at most after a marker
            self._unlist("a")
        text = attributes.strip(_SPACE_CHARS)
        entry = (name, text, entry_bytes(name, text))
        start = self.markers[-1] if self.markers else 0
        section = formatting[start:]
        if section.count(entry) >= 3:  # the Noah's Ark clause
            del formatting[start + section.index(entry)]
        elif (len(section) >= MAX_ACTIVE_FORMATTING and name != "a") or too_heavy(section, entry):
            self.flags.add(CUT_FORMATTING)
            return False
        formatting.append(entry)
        return True

    def _unlist(self, name: str) -> None:
        """Remove the last element named ``name`` from the list, as far back as its last
        marker."""
        formatting = self.formatting
        start = self.markers[-1] if self.markers else 0
        for index in range(len(formatting) - 1, start - 1, -1):
            if formatting[index][0] == name:
                del formatting[index]
                return

    def _clear_to_marker(self) -> None:
        if self.markers:
            del self.formatting[self.markers.pop() :]

    def _foreign(self) -> bool:
        return bool(self.open_count.get("svg") or self.open_count.get("math"))

    def _close_for(self, name: str) -> None:
        """Close what the start tag ``name`` closes."""
        open_count = self.open_count
        stack = self.stack
        if name in _CLOSES_P and open_count.get("p"):
            self._close(("p",), _BUTTON_SCOPE)
        if name in _HEADINGS:
            if stack and stack[-1] in _HEADINGS:
                self._pop_to(len(stack) - 1)
        elif name in _CLOSES_SIBLING:
            self._close(*_CLOSES_SIBLING[name])
        elif (name == "a" or name == "nobr") and open_count.get(name):
            index = self._nearest((name,), _MARKERS)
            if index >= 0:
                self._adopt(index, reconstruct=True)

    def _end_tag(self, name: str) -> bool:
        """Track one end tag; False if it closes nothing and may be dropped."""
        stack = self.stack
        if stack and stack[-1] == name:
            self._pop_to(len(stack) - 1)
            return True
        if self.open_count.get(name):
            if name in _FORMATTING:
                index = self._nearest((name,), _MARKERS)
                if index >= 0:
                    self._adopt(index, reconstruct=False)
                    return True
            else:
                index = self._nearest((name,), _DEFAULT_SCOPE if name in _SPECIAL else _SPECIAL)
                if index >= 0:
                    self._pop_to(index)
                    return True
        return len(stack) < _DEEP

    def _close(self, names: tuple[str, ...], stop: frozenset[str]) -> None:
        index = self._nearest(names, stop)
        if index >= 0:
            self._pop_to(index)

    def _nearest(self, names: tuple[str, ...], stop: frozenset[str]) -> int:
        """Index of the nearest open element named in ``names``, within `_REACH` of the top
        and with no element of ``stop`` above it; -1 if there is none."""
        stack = self.stack
        if stack and stack[-1] in names:
            return len(stack) - 1
        if len(stack) > 1 and stack[-2] in names and stack[-1] not in stop:
            return len(stack) - 2
        window = stack[-_REACH:][::-1]
        found = len(window)
        for name in names:
            if self.open_count.get(name) and name in window:
                found = min(found, window.index(name))
        if found == len(window) or not stop.isdisjoint(window[:found]):
            return -1
        return len(stack) - 1 - found

    def _adopt(self, index: int, *, reconstruct: bool) -> None:
        """The adoption agency, simplified: a formatting element with a block element above
        it leaves the stack alone; otherwise it closes with everything above it, and a start
        tag then reopens the formatting elements among them."""
        stack = self.stack
        above = stack[index + 1 :]
        if not _SPECIAL.isdisjoint(above):
            self.open_count[stack[index]] -= 1
            del stack[index]
            return
        self._pop_to(index)
        if reconstruct:
            for name in above:
                if name in _FORMATTING:
                    stack.append(name)
                    self.open_count[name] += 1

    def _pop_to(self, index: int) -> None:
        open_count = self.open_count
        for name in self.stack[index:]:
            open_count[name] -= 1
            if name in _MARKERS:
                self._clear_to_marker()
        del self.stack[index:]

    def _attributes(self, raw_name: str, attributes: str) -> str | None:
        """The tag rewritten without its excess attributes, or None if it has none."""
        pairs = tokens.ATTRIBUTE_PAIR.findall(attributes)
        names = [name for _, name in pairs]
        known = self.names
        if len(names) <= MAX_TAG_ATTRIBUTES and (
            len(known) + len(names) <= MAX_ATTRIBUTE_NAMES or known.issuperset(names)
        ):
            known.update(names)
            return None
        kept: list[str] = []
        wanted = set(_KEPT_ATTRIBUTES)
        for attribute, name in pairs[:MAX_TAG_ATTRIBUTES]:
            lowered = name.lower()
            if name not in known:
                if len(known) >= MAX_ATTRIBUTE_NAMES and lowered not in _KEPT_ATTRIBUTES:
                    continue
                known.add(name)
            wanted.discard(lowered)
            kept.append(attribute)
        # past the limit, only the first of each attribute links need
        for index, raw in enumerate(names[MAX_TAG_ATTRIBUTES:]):
            name = raw.lower()
            if name in wanted:
                wanted.discard(name)
                kept.append(pairs[MAX_TAG_ATTRIBUTES + index][0])
        if len(kept) == len(names):
            return None
        self.flags.add(CUT_ATTRIBUTES)
        ending = " /" if attributes.endswith("/") and _self_closing(attributes) else ""
        return f"<{raw_name} {' '.join(kept)}{ending}>"


def _self_closing(attributes: str) -> bool:
    """Does a tag whose attributes end in "/" close itself (the slash not in a value)?"""
    end = 0
    for attribute in _ATTRIBUTE.finditer(attributes):
        end = attribute.end()
    return end < len(attributes)

"""Whether a big page nests its tags perfectly, so that lexbor may parse it as it is.

The guard's pass (:mod:`gossamer.parse.guard`) costs about six times lexbor's parse, and ran on
every page of more than 16,384 ``<``. Most such pages are generated (API references, indexes,
long listings) and close every element they open, in order. `well_formed` reads the document
once with one regex at C speed (comments, bogus comments, raw text elements' contents up to
their first end tag, tags with quoted values holding ``>``, as the guard's tokenizer reads
them), then checks, tag by tag in one tight loop, that every end tag closes the element opened
last and not yet closed (void elements apart), no more than `MAX_LEVEL` deep and with at most
`MAX_OPEN_FORMATTING` formatting elements open at once; and, as the guard does, no tag of
more than `MAX_TAG_ATTRIBUTES` attributes, at most `MAX_ATTRIBUTE_NAMES` distinct attribute
names and `MAX_TAG_NAMES` names the Standard does not define. Four end tags lexbor implies at
once are read too (sqlite's pages and much hand-written HTML leave them out): a ``<p>``,
``<li>``, ``<dd>`` or ``<dt>`` on top of the stack is closed by the start tag of a ``<p>`` or of
its sibling, and by the end tag of a block or list item below it; a ``</p>`` with no ``<p>``
open closes nothing, and with one open pops to it unless a formatting element, a scope
boundary or SVG/MathML stands above it; a formatting end tag whose element sits just below
another formatting element (``<small><i>x</small></i>``) closes its element and leaves the
other open. Anything else (a mismatched or stray end tag, an unclosed ``<p>`` holding
formatting, a self-closing tag, SVG's breakouts, templates, frames, ``<plaintext>``) sends the
page to the guard's pass.

Why lexbor is then linear (its quadratic cases all need a deep stack of open elements, a long
list of active formatting elements or many names). Take lexbor's stack at any moment. By
induction on the end tags: when an end tag is processed, every element pushed by a start tag
between it and its matching start tag has been popped (each by its own end tag, or earlier by
an implied end: ``<div>`` closing a ``<p>``, ``</form>``), so the element its start tag pushed
is the current node, or sits below only elements pushed without a start tag, or is already
gone; those are ``tbody``, ``tr``, ``colgroup`` implied inside a table (popped by the
table's end tag, which pops all above it), and formatting elements rebuilt by the
reconstruction or the adoption agency (never special, so every end tag that pops the element
below them pops them too: "any other end tag" walks past non-special elements, a block's end
tag pops all above it). So the element is popped by its end tag at the latest: the elements
on the stack are those whose start tag is open (at most `MAX_LEVEL`), at most one implied
``tbody`` and ``tr`` per open table, the rebuilt formatting elements, and ``html``, ``head``,
``body``. Start tags lexbor ignores (a nested ``<form>``, tags in ``<select>``, ``<html>``
again) only make the stack shorter. The implied ends keep this: each closes here only what
lexbor closes then (a ``<p>`` or list item on top is in every scope lexbor searches; a block's
end tag finds its block in scope behind them, generates their implied ends and pops it; a
``</p>`` pops to the nearest ``<p>`` in button scope, and nothing it pops is rebuilt), or
closes nothing where lexbor may close more; the misnested formatting end tag runs lexbor's
adoption agency without a furthest block, which pops both and keeps the other in the list, to
be rebuilt in the place this keeps it. The list of active formatting elements holds, after its
last marker, only elements whose start tag is open: a formatting element's end tag removes the
last entry of its name, which is its own (entries of inner ones are gone by then; rebuilt ones
take their original's place), and a marker's end (``</td>``) clears what follows it. So the
list and the rebuilt elements number at most `MAX_OPEN_FORMATTING`, and the stack at most
`MAX_LEVEL` + 2 x `MAX_LEVEL` / 3 (a table needs a row and a cell open to hold anything) +
`MAX_OPEN_FORMATTING` + 3, under the guard's `MAX_DEPTH` of 512: each token scans at most that
far. Foreign content (SVG, MathML) is refused because self-closing and breakout tags there pop
what the tags do not say; ``<template>`` and framesets because they switch the tree builder's
modes in ways not argued here. Raw text ends at its first end tag, as in lexbor; a raw text
element whose text holds ``<!--`` is refused, since lexbor may read a script's text past its
first end tag then (``<script><!--<script></script></div><!--</script>-->``: lexbor reads the
``</div>`` as text, and the ``<div>`` before it stays open).

Cost: about 1.3 to 1.8 times lexbor's parse on python3-doc's pages of more than 16,384 ``<``
(the regex alone about 1.0 to 1.4), against about 6 for the guard's pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gossamer.parse import names, tokens
from gossamer.parse.lazy import LazyPattern
from gossamer.parse.tokens import MAX_ATTRIBUTE_NAMES, MAX_TAG_ATTRIBUTES

__all__ = ["MAX_LEVEL", "MAX_OPEN_FORMATTING", "MAX_TAG_NAMES", "well_formed"]

MAX_LEVEL = 128
"""Elements open at once (by their tags) past this send the page to the guard's pass."""
MAX_OPEN_FORMATTING = 16
"""Formatting elements open at once past this send the page to the guard's pass."""
MAX_TAG_NAMES = 1024
"""Names the Standard does not define past this send the page to the guard's pass."""

_LONG = 2 * MAX_TAG_ATTRIBUTES
_S = tokens.SPACE
# the raw text elements' names in either case, without the regex's IGNORECASE (which slows
# every character class of the pattern down)
_RAW = "|".join("".join(f"[{c.upper()}{c}]" for c in name) for name in sorted(names.RAW_TEXT))
_ATTRIBUTES = (
    rf"(?:[{_S}/]++|[^{_S}/>][^{_S}/>=]*+"
    rf"(?:[{_S}]*=[{_S}]*+(?:\"[^\"]*+\"?|'[^']*+'?|[^{_S}>]*+))?)*+"
)
# The guard's tokenizer, with one more alternative before the tags: a raw text element's start
# tag and its text, up to its first end tag (read next as an end tag) or its first "<!--" (in
# a script, it may hide the end tag from lexbor). Groups: raw text element's name, its
# attributes, "<!--" if its text holds one; end-tag slash, tag name, attributes, closing ">".
_TOKEN = LazyPattern(
    (
        r"<(?:!--(?:-?>|.*?(?:--!?>|\Z))"
        r"|[!?][^>]*>?"
        r"|/(?![A-Za-z>])[^>]*>?"
        rf"|({_RAW})(?=[{_S}/>])({_ATTRIBUTES})>(?:[^<]++|<(?!/(?:{_RAW})[{_S}/>]|!--))*+"
        r"(<!--)?"
        rf"|(/?)([A-Za-z][^{_S}/>]*+)({_ATTRIBUTES})(>?))"
    ).encode(),
    re.DOTALL,
)
_VOID = frozenset(name.encode() for name in names.VOID)
_FORMATTING = frozenset(name.encode() for name in names.FORMATTING)
_KNOWN = frozenset(name.encode() for name in names.KNOWN_NAMES)
_REFUSED = frozenset({b"template", b"frameset", b"frame", b"plaintext"})
_FOREIGN = frozenset({b"svg", b"math"})
# In SVG or MathML: the HTML Standard's breakout tags (they pop the foreign elements), its
# integration points (their content is HTML again), and names that are raw text in HTML only.
_NOT_FOREIGN = frozenset(
    name.encode()
    for name in re.split(
        " ",
        "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i "
        "img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table "
        "tt u ul var font foreignobject desc title annotation-xml mi mo mn ms mtext",
    )
) | frozenset(name.encode() for name in names.RAW_TEXT)


# Flags of a name, one dict lookup a tag: formatting is 1 and foreign 2 so that shifts count
# them.
_FORMATTING_FLAG, _FOREIGN_FLAG, _VOID_FLAG, _REFUSED_FLAG, _NOT_FOREIGN_FLAG = 1, 2, 4, 8, 16
_CLOSES_P_FLAG, _ENDS_IMPLIED_FLAG = 32, 64
# Elements whose end tag is implied: closed, when they are the current node, by the start tags
# that close them (a block's, their sibling's) and by the end tags that "generate implied end
# tags" and pop to their element (a block's, a list item's), as lexbor does then.
_IMPLIED = frozenset({b"p", b"li", b"dd", b"dt"})
_SIBLINGS = {b"li": (b"li",), b"dd": (b"dd", b"dt"), b"dt": (b"dd", b"dt")}
_ENDS_IMPLIED = _IMPLIED - {b"p"} | frozenset(
    re.split(
        rb"\s+",
        b"address article aside blockquote button center details dialog dir div dl fieldset "
        b"figcaption figure footer header hgroup listing main menu nav ol pre search section "
        b"summary ul",
    )
)
# What a </p> does not pop through here.
_KEPT_OPEN = _FORMATTING | _FOREIGN | frozenset(name.encode() for name in names.BUTTON_SCOPE)
_FLAGS: dict[bytes, int] = {}
for _names, _flag in (
    (_FORMATTING, _FORMATTING_FLAG),
    (_FOREIGN, _FOREIGN_FLAG),
    (_VOID, _VOID_FLAG),
    (_REFUSED, _REFUSED_FLAG),
    (_NOT_FOREIGN, _NOT_FOREIGN_FLAG),
    (frozenset(name.encode() for name in names.CLOSES_P), _CLOSES_P_FLAG),
    (_ENDS_IMPLIED, _ENDS_IMPLIED_FLAG),
):
    for _name in _names:
        _FLAGS[_name] = _FLAGS.get(_name, 0) | _flag


def well_formed(data: bytes) -> bool:
    """Whether ``data`` nests its tags perfectly within the limits of the module doc."""
    texts: list[bytes] = []
    # findall, not finditer: a tenth faster on the pages that pass, most of those read here
    if not _nested(_TOKEN.findall(data), texts):
        return False
    # the names of tags written alike are the same: read each attribute text once
    distinct = set(texts)
    if any(len(text) >= _LONG and _crowded(text) for text in distinct):
        return False
    if sum(map(len, distinct)) <= 2 * MAX_ATTRIBUTE_NAMES:  # two bytes a name at least
        return True
    found = tokens.ATTRIBUTE_BYTES.findall(b" ".join(distinct))
    return len(set(found)) <= MAX_ATTRIBUTE_NAMES


def _nested(read: Iterable[tuple[Any, ...]], texts: list[bytes]) -> bool:
    """The tag-by-tag check; collects the tags' attribute texts in ``texts``."""
    stack: list[bytes] = []
    formatting = foreign = 0
    kinds: dict[bytes, tuple[bytes, int]] = {}
    unknown: set[bytes] = set()
    for raw, raw_attributes, escaped, closing, tag, attributes, closed in read:
        if not closed:
            if not raw or escaped:  # a comment, a tag cut by the end, or an escaped script
                if escaped:
                    return False
                continue
            tag, attributes = raw, raw_attributes
        size = len(attributes)
        if size > 1:
            texts.append(attributes)
        kind = kinds.get(tag) or _kind(tag, kinds, unknown)
        if kind is None:
            return False
        name, flags = kind
        if closing:
            if stack and stack[-1] == name:
                stack.pop()
            elif (flags := _end_tag(stack, name, flags)) < 0:
                return False
            formatting -= flags & _FORMATTING_FLAG
            foreign -= (flags & _FOREIGN_FLAG) >> 1
        elif foreign and (flags & _NOT_FOREIGN_FLAG or raw):
            return False
        elif flags & _VOID_FLAG or (foreign and _self_closing(attributes)):
            continue
        elif flags & _REFUSED_FLAG or attributes.endswith(b"/") or len(stack) >= MAX_LEVEL:
            return False
        else:
            if stack and flags & _CLOSES_P_FLAG and stack[-1] in _IMPLIED:
                _close_by_start(stack, name)
            stack.append(name)
            formatting += flags & _FORMATTING_FLAG
            foreign += (flags & _FOREIGN_FLAG) >> 1
            if formatting > MAX_OPEN_FORMATTING:
                return False
    return True


def _end_tag(stack: list[bytes], name: bytes, flags: int) -> int:
    """An end tag of ``name`` (``flags``) that does not close the current node: the flags
    of the element it closes (0 if none), or -1 if the page is refused."""
    if flags & _FORMATTING_FLAG and _misnested(stack, name):
        return _FORMATTING_FLAG
    if name == b"p":
        return 0 if _close_p(stack) else -1
    if flags & _ENDS_IMPLIED_FLAG:
        _close_implied(stack, name)
    if not stack or stack[-1] != name:
        return -1
    stack.pop()
    return flags


def _close_implied(stack: list[bytes], name: bytes) -> None:
    """An end tag of ``name`` that generates implied end tags: the implied elements on top of
    the stack close (lexbor finds ``name`` in scope behind them, pops them and it)."""
    while stack and stack[-1] in _IMPLIED and stack[-1] != name:
        stack.pop()


def _close_by_start(stack: list[bytes], name: bytes) -> None:
    """A ``<p>``, list item or definition start tag when an implied element is the current
    node: a ``<p>`` on top closes (in button scope), then a list item or definition on top if
    ``name`` is its sibling (lexbor's scan for it stops at once). A block's start tag closes
    the ``<p>`` in lexbor too, but is left open here: its ``</p>`` then closes it (in lexbor,
    an empty one), as before implied end tags were read."""
    siblings = _SIBLINGS.get(name)
    if siblings is None and name != b"p":
        return
    if stack[-1] == b"p":
        stack.pop()
    if stack and siblings and stack[-1] in siblings:
        stack.pop()


def _misnested(stack: list[bytes], name: bytes) -> bool:
    """A formatting element's end tag when the current node is another formatting element
    and its own element is just below (``<small><i>x</small></i>``): lexbor's adoption agency
    pops both and keeps the other in its list, to rebuild it at the next text, so it is kept
    open here, in its place."""
    if len(stack) > 1 and stack[-2] == name and stack[-1] in _FORMATTING:
        del stack[-2]
        return True
    return False


def _close_p(stack: list[bytes]) -> bool:
    """A ``</p>`` when the current node is no ``<p>``: with no ``<p>`` open it closes nothing
    (lexbor opens and closes an empty one); else lexbor pops the stack to the ``<p>`` (in
    button scope), and so does this if nothing above it is a formatting element (lexbor would
    rebuild it), a scope boundary or foreign; False then."""
    if b"p" not in stack:
        return True
    index = len(stack) - 1 - stack[::-1].index(b"p")
    if not _KEPT_OPEN.isdisjoint(stack[index + 1 :]):
        return False
    del stack[index:]
    return True


def _crowded(attributes: bytes) -> bool:
    """Whether a tag's attribute text holds more than `MAX_TAG_ATTRIBUTES` attributes."""
    return tokens.more_attributes(attributes, MAX_TAG_ATTRIBUTES)


def _kind(
    tag: bytes, kinds: dict[bytes, tuple[bytes, int]], unknown: set[bytes]
) -> tuple[bytes, int] | None:
    """A tag's lower-case name and flags, remembered in ``kinds``; None if its name is one
    name the Standard does not define too many (counted in ``unknown``)."""
    name = tag.lower()
    if name not in _KNOWN and name not in unknown:
        if len(unknown) >= MAX_TAG_NAMES:
            return None
        unknown.add(name)
    kind = (name, _FLAGS.get(name, 0))
    kinds[tag] = kind
    return kind


def _self_closing(attributes: bytes) -> bool:
    """Whether a tag whose attribute text is ``attributes`` closes itself: it ends with a
    "/" that is no part of an unquoted value (past the end of its last attribute, read as
    `tokens.ATTRIBUTE` reads them one after another)."""
    if not attributes.endswith(b"/"):
        return False
    read = _ATTRIBUTES_READ.match(attributes)
    return read is None or read.end() < len(attributes)


# The attributes of a tag one after another, as `tokens.ATTRIBUTE_BYTES.finditer` finds them
# (skipping only spaces, "/" and ">" between them), in one call instead of a loop in Python:
# a quarter less on the SVG of sqlite's syntax diagrams.
_ATTRIBUTES_READ = LazyPattern(
    rb"(?:[%b/>]*+(?>%b))*+" % (_S.encode(), tokens.ATTRIBUTE_BYTES.pattern)
)

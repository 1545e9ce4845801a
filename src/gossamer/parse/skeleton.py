"""Whether a big page's markup is plain enough for lexbor to parse it as it is, read with numpy.

The nesting check (:mod:`gossamer.parse.nesting`) reads a page of more than 16,384 ``<`` with
a regex and a loop over its tags in Python: two to four times lexbor's own parse on
python3-doc's biggest pages. `plain` reads the same page with numpy over its *marks* (the
positions of ``<``, ``>``, quotes and ``=``, a few bytes in a hundred), and Python only for
comments, raw text elements and tags of 512 bytes or more: 1.2 times lexbor's parse over
python3-doc's 11 pages of more than 16,384 ``<`` (0.7 to 2 times from page to page; the
nesting check 2 to 3.3 times: ``library/os.html``, CPU ms, 8.4 against 35, lexbor 12 to 16).
It accepts only what it reads exactly; the other checks take the rest.
Its fixed cost (a hundred numpy calls) makes it dearer from 4,096 to 16,384 ``<``: 3 times
lexbor's parse over the 154 such pages it accepts of python3-doc, postgresql, sqlite and git.

What it accepts, and why lexbor is then linear (its quadratic cases need a deep stack of open
elements, a long list of active formatting elements, a tag of many attributes or many distinct
names; see :mod:`gossamer.parse.guard`):

- *Tags it reads as lexbor's tokenizer does.* A tag starts at the first ``<`` that starts
  something (a letter, ``/``, ``!``, ``?`` after it) after a ``>``; it ends at the next ``>``
  because every quoted value in it is quoted right after the ``=`` ending a name (that
  ``=`` after the tag's name, after a letter of the name, not a space), each value's closing
  quote (double quotes paired in page order, else both kinds as the tokenizer pairs them:
  :mod:`gossamer.parse.pairs`) is followed by a space, ``/`` or ``>``, and an unquoted
  value ends (at a space or that ``>``) before any quote or ``=``: then no
  ``>`` hides in a value, and a ``<`` before it is inside the tag. Comments end where the
  Standard ends them (``<!-->``, ``-->``, ``--!>``); a raw text element's text (``<script>``,
  ``<style>``, ``<title>``, ``<textarea>`` ...) at its first end tag, found by a regex (a
  script holding ``<!--`` is refused: lexbor may read on past that end tag; after a
  ``<select>`` only scripts and text areas are taken as raw text, lexbor ignoring the
  others there). Tag names of 16 bytes or more, MathML, templates, framesets and
  ``<plaintext>`` are refused; in SVG (none of the tags that end it or hold HTML again, and
  no CDATA section, whose text may hold ``>``, in a page holding SVG) a tag written
  self-closing closes itself.
- *Tags that nest perfectly*, as in :mod:`gossamer.parse.nesting`: every end tag closes the
  element opened last and not yet closed (checked level by level after a stable sort of the tags
  by their depth; two formatting end tags may cross, ``<small><i>x</small></i>``: lexbor's stack
  and list are then as if they did not), no more than `MAX_LEVEL` deep, with at most
  `MAX_OPEN_FORMATTING` formatting elements open at once and no HTML tag written self-closing.
  Void elements and their end tags count for nothing, and so do ``<p>`` and ``<li>`` and their
  end tags: such an element may be left open, but only inside an element whose end tag pops it
  in lexbor (a block, a list, a definition, a table part, a cell, a form, ``<body>``,
  ``<html>``) or at the top. The argument of :mod:`gossamer.parse.nesting` then holds: when an
  end tag is read, lexbor's stack holds above its element only ``<p>`` and ``<li>`` (which it
  pops too), formatting elements rebuilt by the reconstruction (never a scope boundary) and
  implied table parts, so the end tag pops it. lexbor's stack holds at most the open elements of
  this reading, two ``<p>``/``<li>`` or two implied table parts above each (a ``<li>`` closes an
  open ``<li>`` above the nearest element that is neither a ``<p>`` nor a formatting element, a
  ``<p>`` an open ``<p>``), the rebuilt formatting elements and ``html``, ``head``, ``body``: 3
  x (`MAX_LEVEL` + 1) + `MAX_OPEN_FORMATTING` + 3, under the guard's ``MAX_DEPTH``. A ``</p>``
  or ``</li>`` lexbor reads only pops more; the formatting elements it pops stay in the list,
  each rebuilt once at most, until their own end tag removes them (in scope: only such elements
  stand above them).
- *Attributes*: no tag of more than `MAX_TAG_ATTRIBUTES` attributes (read by the guard's
  tokenizer in the tags of 512 bytes or more, at most 1,024 of them), and at most
  `MAX_ATTRIBUTE_NAMES` distinct names: those before an ``=`` read exactly up to 7 bytes
  (each longer one counts as new), and the attributes without a value bounded by the bytes of
  the tags that are no quoted value, no name before ``=`` with its ``=`` and the separator
  before it, and no tag name.
- At most `MAX_TAG_NAMES` names the Standard does not define, and at most 4,096 comments and
  raw text elements.

Every step is linear in the page (numpy's sorts are of small integers, or of the names)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from gossamer.parse import names, tokens
from gossamer.parse.nesting import MAX_LEVEL, MAX_OPEN_FORMATTING, MAX_TAG_NAMES
from gossamer.parse.pairs import crossed, quoted_values
from gossamer.parse.tokens import LONG_TAG_CHARS, MAX_ATTRIBUTE_NAMES, MAX_TAG_ATTRIBUTES

if TYPE_CHECKING:
    import numpy.typing as npt

    Ints = npt.NDArray[np.intp]
    Bools = npt.NDArray[np.bool_]

__all__ = ["plain"]

_LT, _GT, _DQ, _SQ, _EQ, _SLASH, _BANG, _QUESTION, _DASH = b"<>\"'=/!?-"
_MAX_SPECIALS = 4096
"""Comments and raw text elements read one by one, at most."""
_MAX_ONE_BY_ONE = 1024
"""Tags of `LONG_TAG_CHARS` or more, or names of 9 to 15 bytes, read one by one, at most."""
_SPACES = b"\t\n\f\r "


def _words(text: str) -> frozenset[str]:
    """Element names written as words, a few to a line."""
    return frozenset(text.split())


def _table(members: bytes) -> bytes:
    table = bytearray(256)
    for byte in members:
        table[byte] = 1
    return bytes(table)


_LETTERS = _table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NAME_END = _table(_SPACES + b"/>")
"""What ends a tag name, and may follow a closing quote."""
_NOT_BEFORE_EQUALS = _table(_SPACES + b"/=\"'<>")
_SEPARATORS = _table(_SPACES + b"/")
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")

_PARENTS = _words(
    """address article aside blockquote button center details dialog dir div dl fieldset
    figcaption figure footer header hgroup listing main menu nav ol pre search section summary
    ul form h1 h2 h3 h4 h5 h6 dd dt td th tr tbody thead tfoot table caption body html select
    object applet marquee"""
)
"""Elements whose end tag pops an open ``<p>`` or ``<li>`` above them in lexbor."""
_NOT_IN_SVG = names.RAW_TEXT | _words(
    """b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i
    img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u
    ul var font foreignobject desc title math"""
)
"""Tags that end SVG content in lexbor, or hold HTML again (refused there)."""
# Kinds of tag names, one bit each.
_VOID, _IMPLIED, _PARENT, _FORMATTING, _KNOWN, _REFUSED, _RAW, _SELECT, _SVG, _NOT_SVG = (
    1 << bit for bit in range(10)
)
_KINDS: dict[int, frozenset[str]] = {
    _VOID: names.VOID,
    _IMPLIED: frozenset({"p", "li"}),
    _PARENT: _PARENTS,
    _FORMATTING: names.FORMATTING,
    _KNOWN: names.KNOWN_NAMES,
    _REFUSED: frozenset({"math", "template", "frameset", "frame", "plaintext"}),
    _RAW: names.RAW_TEXT,
    _SELECT: frozenset({"select"}),
    _SVG: frozenset({"svg"}),
    _NOT_SVG: _NOT_IN_SVG,
}
_BITS: dict[str, int] = {}
for _bit, _members in _KINDS.items():
    for _name in _members:
        _BITS[_name] = _BITS.get(_name, 0) | _bit
_WORDS: dict[int, str] = {
    int.from_bytes(name.encode().ljust(8, b"\0"), "little"): name
    for name in _BITS
    if len(name) <= 8
}
_RAW_AFTER_SELECT = frozenset({"script", "textarea"})
_RAW_END = {
    name: re.compile(rb"</(?i:" + name.encode() + rb")[\t\n\f\r />]") for name in names.RAW_TEXT
}


def plain(data: bytes) -> bool:
    """Whether lexbor may parse ``data`` as it is (see the module doc)."""
    if len(data) < 4:
        return True
    return _Page(data).read()


class _Page:
    """One reading of one page, over its marks (the positions of ``<``, ``>``, quotes and
    ``=``, in page order); each step says whether the page is still accepted."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        array = self.array = np.frombuffer(data, np.uint8)
        self.marks: Ints = np.flatnonzero(
            (array == _LT) | (array == _GT) | (array == _DQ) | (array == _SQ) | (array == _EQ)
        )
        self.kinds = array[self.marks]
        is_close = self.kinds == _GT
        # how many ">" stand at or before each mark: a "<" and the marks up to its ">" share it
        self.closed = np.cumsum(is_close, dtype=np.int32)
        self.close_marks: Ints = np.flatnonzero(is_close)
        padded = b" " * 8 + data + b" " * 16
        self.words = np.ndarray((len(padded) - 7,), np.dtype("<u8"), padded, 0, (1,))
        self.long_names: dict[bytes, int] = {}

    def read(self) -> bool:
        found = self._tokens()
        if found is None:
            return False
        at, is_end = found  # mark indices of the tags, and which are end tags
        named = self._names(at, is_end)
        if named is None:
            return False
        key, extra, length, bits = named
        tags = self._kept(at, is_end, key, extra, length, bits)
        if tags is None:
            return False
        at, is_end, key, extra, length, bits = tags
        if (length > 15).any() or (bits & _REFUSED).any():
            return False
        index = self.closed[at]  # the ">" ending each tag (a tag the end cuts is dropped)
        whole = index < len(self.close_marks)
        if not whole.all():
            at, is_end, key, extra = at[whole], is_end[whole], key[whole], extra[whole]
            length, bits, index = length[whole], bits[whole], index[whole]
        ends = self.close_marks[index]
        # the nesting first: hostile pages fail it soonest (whether the tags end where this
        # reading ends them is checked before the page is accepted)
        self_closing = self._self_closing(at, ends, is_end, length)
        if not self._nested(is_end, key, extra, bits, self_closing):
            return False
        equals = self._quotes(at, ends, is_end, length)
        if equals is None:
            return False
        return self._attributes(at, self.marks[ends] - self.marks[at], is_end, length, equals)

    # -- tokens ---------------------------------------------------------------------------

    def _tokens(self) -> tuple[Ints, Bools] | None:
        """The mark indices of the ``<`` that start tags, comments and the like: the first
        ``<`` starting one after each ``>`` (the others up to the next ``>`` are inside it,
        its tag ending there: the quotes are checked later); and which are end tags."""
        array, marks = self.array, self.marks
        size = len(array)
        opens = np.flatnonzero(self.kinds == _LT)
        opens = opens[marks[opens] + 2 < size]
        where = marks[opens]
        after, second = array[where + 1], array[where + 2]
        letters = _IS_LETTER
        end = (after == _SLASH) & letters[second]
        something = letters[after] | (after == _SLASH) | (after == _BANG) | (after == _QUESTION)
        opens, end, after = opens[something], end[something], after[something]
        group = self.closed[opens]
        first = np.ones(len(opens), bool)
        first[1:] = group[1:] != group[:-1]
        opens, end, after = opens[first], end[first], after[first]
        tag = letters[after] | end
        where = marks[opens]
        self.comments = where[
            (after == _BANG)
            & (array[np.minimum(where + 2, size - 1)] == _DASH)
            & (array[np.minimum(where + 3, size - 1)] == _DASH)
        ]
        return opens[tag], end[tag]

    def _names(self, at: Ints, is_end: Bools) -> tuple[Ints, Ints, Ints, Ints] | None:
        """Each tag's lower-case name: a word (its first 8 bytes), a number for the bytes
        after them (0 for none), its length (16 for 16 bytes or more), and its kinds' bits."""
        start = self.marks[at] + 1 + is_end + 8
        key, length = self._word(self.words[start])
        extra = np.zeros(len(key), np.intp)
        longer = np.flatnonzero(length == 8)
        if len(longer):
            rest, more = self._word(self.words[start[longer] + 8])
            wide = np.flatnonzero(rest)
            if len(wide) > _MAX_ONE_BY_ONE:
                return None
            length[longer] += more
            numbers = self.long_names
            for index, word in zip(longer[wide].tolist(), rest[wide].tolist(), strict=True):
                extra[index] = numbers.setdefault(word.to_bytes(8, "little"), len(numbers) + 1)
        bits = self._bits(key, extra)
        return key, extra, length, bits

    def _word(self, words: Ints) -> tuple[Ints, Ints]:
        """Lower-case names cut at their end (as words, and their lengths up to 8) of the
        8 bytes in each of ``words``."""
        block = words.view(np.uint8).reshape(-1, 8)
        stop = (block == 0x20) | (block == _GT) | (block == _SLASH)
        stop |= ((block - 9) < 5) & (block != 11)  # tab, line feed, form feed, return
        cut = np.where(stop.any(1), stop.argmax(1), 8)
        upper = ((block - 65) < 26).view(np.uint8) << 5
        lowered = (block | upper).view(np.dtype("<u8")).ravel()
        # a NUL in a name (lexbor reads U+FFFD) would read as the name without it: refused
        nul = ((block == 0) & (cut[:, None] > _COLUMNS)).any(1)
        return lowered & _KEEP[cut], np.where(nul, 16, cut)

    def _bits(self, key: Ints, extra: Ints) -> Ints:
        table = _TABLE
        index = np.minimum(np.searchsorted(table[0], key), len(table[0]) - 1)
        bits = np.where((table[0][index] == key) & (extra == 0), table[1][index], 0)
        if self.long_names:
            texts = {
                number: text.rstrip(b"\0").decode("latin-1")
                for text, number in self.long_names.items()
            }
            for index in np.flatnonzero(extra).tolist():
                word = int(key[index]).to_bytes(8, "little").decode("latin-1")
                bits[index] = _BITS.get(word + texts[int(extra[index])], 0)
        return bits

    def _kept(
        self, at: Ints, is_end: Bools, key: Ints, extra: Ints, length: Ints, bits: Ints
    ) -> tuple[Ints, Bools, Ints, Ints, Ints, Ints] | None:
        """The tags outside comments and raw text, with the end tags closing raw text
        (hidden from the grouping by ``>`` when the text holds a ``<``)."""
        marks = self.marks
        raw = (bits & _RAW).astype(bool) & ~is_end
        selects = marks[at[(bits & _SELECT).astype(bool)]]
        special = sorted(self.comments.tolist() + marks[at[raw]].tolist())
        names_at = {
            int(marks[i]): _WORDS.get(int(k), "") for i, k in zip(at[raw], key[raw], strict=True)
        }
        read = self._special(special, names_at, int(selects[0]) if len(selects) else -1)
        if read is None:
            return None
        bounds, forced = read
        if not bounds:
            return at, is_end, key, extra, length, bits
        # marks inside a range: after an odd number of its bounds (ranges never overlap)
        edges = np.searchsorted(marks, np.array(bounds, np.intp))
        inside = np.zeros(len(marks) + 1, np.int8)
        np.add.at(inside, edges, np.tile(np.array([1, -1], np.int8), len(edges) // 2))
        hidden = np.cumsum(inside[:-1], dtype=np.int8).view(bool)
        keep = ~hidden[at]
        at, is_end, key, extra, length, bits = (
            a[keep] for a in (at, is_end, key, extra, length, bits)
        )
        if forced:
            more_at = np.searchsorted(marks, np.array(forced, np.intp))
            place = np.searchsorted(at, more_at)
            new = (place >= len(at)) | (at[np.minimum(place, len(at) - 1)] != more_at)
            more_at, place = more_at[new], place[new]  # those the grouping did not find
            named = self._names(more_at, np.ones(len(more_at), bool))
            if named is None:
                return None
            at, is_end, key, extra, length, bits = (
                np.insert(a, place, b)
                for a, b in zip(
                    (at, is_end, key, extra, length, bits),
                    (more_at, np.ones(len(more_at), bool), *named),
                    strict=True,
                )
            )
        return at, is_end, key, extra, length, bits

    def _special(
        self, special: list[int], names_at: dict[int, str], select: int
    ) -> tuple[list[int], list[int]] | None:
        """Comments and raw text elements in page order: the ranges lexbor reads as text (as
        flat bounds), and where the end tags closing raw text start; None if refused."""
        if len(special) > _MAX_SPECIALS:
            return None
        data = self.data
        closes = self.marks[self.close_marks]
        bounds: list[int] = []
        forced: list[int] = []
        until = 0
        for at in special:
            if at < until:
                continue
            name = names_at.get(at)
            if name is None:  # a comment
                until = _comment_end(data, at)
                bounds += (at, until)
                continue
            if 0 <= select < at and name not in _RAW_AFTER_SELECT:
                return None
            index = int(np.searchsorted(closes, at))
            if index >= len(closes):
                break
            tag_end = int(closes[index])
            end = _RAW_END[name].search(data, tag_end + 1)
            stop = len(data) if end is None else end.start()
            if name == "script" and data.find(b"<!--", tag_end + 1, stop) >= 0:
                return None
            bounds += (tag_end + 1, stop)
            if end is None:
                break
            forced.append(stop)
            index = int(np.searchsorted(closes, stop))
            until = int(closes[index]) + 1 if index < len(closes) else len(data)
        return bounds, forced

    # -- quotes ---------------------------------------------------------------------------

    def _quotes(self, at: Ints, ends: Ints, is_end: Bools, length: Ints) -> Ints | None:
        """Whether every tag ends at the first ``>`` after its ``<`` (see the module doc):
        the positions of the ``=`` ending attribute names, or None if the page is refused.
        Read with double quotes only, then, if that refuses the page, with single ones too
        (sqlite's pages: ``href='...'``)."""
        found = self._quoted(at, ends, is_end, length, single=False)
        if found is None and (self.kinds == _SQ).any():
            found = self._quoted(at, ends, is_end, length, single=True)
        return found

    def _quoted(
        self, at: Ints, ends: Ints, is_end: Bools, length: Ints, *, single: bool
    ) -> Ints | None:
        """`_quotes` with double quotes only (a single quote outside a value refuses the
        page), or with both kinds (``single``). With double quotes only, tags never overlap,
        so when each holds an even number of them, they pair up in page order, and a mark
        lies in a value when an odd number come before it. With both, `quoted_values` pairs them
        as the tokenizer does."""
        marks, kinds, array = self.marks, self.kinds, self.array
        count = len(marks)
        step = np.zeros(count + 1, np.int8)
        step[at + 1] = 1
        step[ends] -= 1  # a tag's ">" is never the mark after another tag's "<"
        in_tag = np.cumsum(step[:-1], dtype=np.int8).view(bool)
        if single:
            values = quoted_values(kinds, in_tag, at, ends)
            if values is None:
                return None
            openers, closers = marks[values[0]], marks[values[1]]
            step = np.zeros(count + 1, np.int8)
            step[values[0]], step[values[1]] = 1, -1
            bare = in_tag & (np.cumsum(step[:-1], dtype=np.int8) == 0)
        else:
            double = (kinds == _DQ) & in_tag
            seen = np.cumsum(double, dtype=np.int32)
            if ((seen[ends] - seen[at]) & 1).any():
                return None
            quotes = marks[double]
            openers, closers = quotes[0::2], quotes[1::2]
            bare = in_tag & ((seen & 1) == 0)
            if ((kinds == _SQ) & bare).any():
                return None
        if not (array[openers - 1] == _EQ).all():
            return None
        if not _IS_NAME_END[array[closers + 1]].all():
            return None
        bare &= kinds == _EQ
        equals = marks[bare]
        if not self._unquoted(np.flatnonzero(bare), single=single):
            return None
        if _IS_NOT_BEFORE_EQUALS[array[equals - 1]].any():
            return None
        # no "=" in a tag's name: after the name's end, as the tags' marks are in order
        number = np.cumsum(self._starts(at, count), dtype=np.int32)[bare] - 1
        name_end = marks[at[number]] + 1 + is_end[number] + length[number]
        if not (equals > name_end).all():
            return None
        self.quoted = int((closers - openers + 1).sum())
        found: Ints = equals
        return found

    def _self_closing(self, at: Ints, ends: Ints, is_end: Bools, length: Ints) -> Bools:
        """Which tags are written self-closing: a ``/`` before the ``>``, after the tag's name,
        a closing quote or a space (after a letter it may end an unquoted value)."""
        array = self.array
        close = self.marks[ends]
        before = array[np.maximum(close - 2, 0)]
        after_name = self.marks[at] + 1 + is_end + length == close - 1
        ending = (before == _DQ) | _IS_SEPARATOR[before] | after_name
        flags: Bools = (array[close - 1] == _SLASH) & ending
        return flags

    def _unquoted(self, equals: Ints, *, single: bool) -> bool:
        """Whether the values after the ``=`` at these mark indices are double-quoted (or
        single-quoted, with ``single``), or unquoted and ending (at a space or the tag's
        ``>``) before the next mark: no quote then stands in an unquoted value, where lexbor
        reads it as a letter."""
        marks, array = self.marks, self.array
        where = marks[equals]
        after = array[where + 1]
        unquoted = (after != _DQ) & (after != _SQ) if single else after != _DQ
        if not unquoted.any():
            return True
        if not single and (after == _SQ).any():
            return False
        at = equals[unquoted]
        following = self.kinds[at + 1]  # a "=" in a tag is never the last mark
        block = self.words[where[unquoted] + 9].view(np.uint8).reshape(-1, 8)
        space = _IS_SEPARATOR[block] & (block != _SLASH)
        first = np.where(space.any(1), space.argmax(1), 8)
        ends_before = where[unquoted] + 1 + first < marks[at + 1]
        return bool(((following == _GT) | ends_before).all())

    def _starts(self, at: Ints, count: int) -> Bools:
        """Which of ``count`` marks start a tag (``at``)."""
        mask = np.zeros(count, bool)
        mask[at] = True
        return mask

    # -- nesting --------------------------------------------------------------------------

    def _nested(
        self, is_end: Bools, key: Ints, extra: Ints, bits: Ints, self_closing: Bools
    ) -> bool:
        """The perfect nesting of the module doc, level by level."""
        counted = (bits & (_VOID | _IMPLIED)) == 0
        svg = self._in_svg(is_end, bits, self_closing)
        if svg is not None:
            if self.data.find(b"<![CDATA[") >= 0:  # in SVG, text up to "]]>", ">" and all
                return False
            # in SVG a self-closing tag closes itself, and every other tag counts
            if ((bits & _NOT_SVG) != 0)[svg].any():
                return False
            counted = np.where(svg, ~(self_closing & ~is_end), counted)
        if (self_closing & counted & ~is_end).any():
            return False
        weight = np.where(counted, np.where(is_end, -1, 1), 0)
        level = np.cumsum(weight)
        if not len(level):
            return True
        if level.min() < 0 or level.max() > MAX_LEVEL:
            return False
        # a start tag's level is the one after it, an end tag's the one before it, a <p> or
        # <li> start tag's the current one (its parent's)
        own = (level - np.minimum(weight, 0)).astype(np.int16)
        order = np.argsort(own, kind="stable")
        own = own[order]
        position = np.arange(len(order))
        change = np.ones(len(own), bool)
        change[1:] = own[1:] != own[:-1]
        group = np.maximum.accumulate(np.where(change, position, 0))  # where its level begins
        opening = (counted & ~is_end)[order]
        closing = np.flatnonzero((counted & is_end)[order])
        match = _last_before(np.where(counted[order], position, -1))[closing]
        if (match < group[closing]).any() or not opening[match].all():
            return False
        opened, closed = order[match], order[closing]
        wrong = (key[opened] != key[closed]) | (extra[opened] != extra[closed])
        formatting = (bits & _FORMATTING) != 0
        if wrong.any() and not crossed(opened, closed, wrong, key, extra, formatting):
            return False
        implied = np.flatnonzero(((bits & _IMPLIED) != 0)[order] & ~is_end[order])
        parent = _last_before(np.where(opening, position, -1))[implied]
        inside = parent >= group[implied]
        if not (bits[order[parent[inside]]] & _PARENT).all():
            return False
        formatting = np.cumsum(np.where((bits & _FORMATTING) != 0, weight, 0))
        if formatting.max() > MAX_OPEN_FORMATTING:
            return False
        unknown = (bits & _KNOWN) == 0
        short = np.unique(key[unknown & (extra == 0)])
        wide = np.unique(extra[unknown & (extra != 0)])
        return len(short) + len(wide) <= MAX_TAG_NAMES

    def _in_svg(self, is_end: Bools, bits: Ints, self_closing: Bools) -> Bools | None:
        """Which tags stand inside an ``<svg>`` (None if none does)."""
        opening = ((bits & _SVG) != 0) & ~self_closing
        if not opening.any():
            return None
        weight = np.where(opening, np.where(is_end, -1, 1), 0)
        inside: Bools = (np.cumsum(weight) - np.maximum(weight, 0)) > 0
        return inside

    # -- attributes -----------------------------------------------------------------------

    def _attributes(self, at: Ints, spans: Ints, is_end: Bools, length: Ints, equals: Ints) -> bool:
        """No crowded tag, and few distinct attribute names (see the module doc)."""
        data = self.data
        long_tags = np.flatnonzero(spans >= LONG_TAG_CHARS)
        if len(long_tags) > _MAX_ONE_BY_ONE:
            return False
        starts = self.marks[at]
        for index in long_tags.tolist():
            start = int(starts[index] + 1 + is_end[index] + length[index])
            stop = int(starts[index] + spans[index])
            if tokens.more_attributes(data[start:stop], MAX_TAG_ATTRIBUTES):
                return False
        block = self.words[equals].view(np.uint8).reshape(-1, 8)  # the 8 bytes before "="
        separator = _IS_SEPARATOR[block]
        exact = separator.any(1)
        name_length = np.where(exact, separator[:, ::-1].argmax(1), 0)
        nul = ((block == 0) & (8 - name_length[:, None] <= _COLUMNS)).any(1)
        exact &= (name_length > 0) & ~nul
        drop = np.array([(1 << 64) - (1 << (64 - 8 * n)) for n in range(1, 9)] + [0], np.uint64)
        names_found = _LOWERED[block].view(np.dtype("<u8")).ravel()
        names_found &= drop[np.maximum(name_length - 1, 0)]
        distinct = len(np.unique(names_found[exact])) + int(np.count_nonzero(~exact))
        # attributes without a value: at most the bytes of the tags that are no quoted value,
        # no name before "=" with its "=" and the separator before it, and no tag name
        named = int((length + 1 + is_end).sum())
        valued = int((name_length + 1 + exact).sum())
        spare = int(spans.sum()) - self.quoted - named - valued
        return distinct + max(0, spare) <= MAX_ATTRIBUTE_NAMES


def _word_table() -> tuple[npt.NDArray[np.uint64], Ints]:
    """The words of the names of `_KINDS` of up to 8 bytes, sorted, and their bits."""
    words = sorted(_WORDS)
    return np.array(words, np.uint64), np.array([_BITS[_WORDS[word]] for word in words], np.intp)


def _last_before(marks: Ints) -> Ints:
    """For each index, the greatest of ``marks`` (-1 for none) at an index before it."""
    running = np.maximum.accumulate(marks)
    before = np.empty(len(marks), np.intp)
    before[:1] = -1
    before[1:] = running[:-1]
    return before


def _comment_end(data: bytes, at: int) -> int:
    """Where the comment starting at ``at`` ends, as the Standard's tokenizer ends it."""
    if data.startswith(b"<!-->", at):
        return at + 5
    if data.startswith(b"<!--->", at):
        return at + 6
    found = [end + len(mark) for mark in (b"-->", b"--!>") if (end := data.find(mark, at + 4)) >= 0]
    return min(found) if found else len(data)


_TABLE = _word_table()
_IS_LETTER = np.frombuffer(_LETTERS, np.uint8).astype(bool)
_IS_NAME_END = np.frombuffer(_NAME_END, np.uint8).astype(bool)
_IS_NOT_BEFORE_EQUALS = np.frombuffer(_NOT_BEFORE_EQUALS, np.uint8).astype(bool)
_IS_SEPARATOR = np.frombuffer(_SEPARATORS, np.uint8).astype(bool)
_LOWERED = np.frombuffer(_LOWER, np.uint8)
_COLUMNS = np.arange(8)
_KEEP = np.array([(1 << (8 * n)) - 1 for n in range(9)], np.uint64)
"""The bytes of a name of each length (0 to 8) in a little-endian word."""

"""The cheap scans that decide whether a document needs the guard's pass (see
:mod:`gossamer.parse.guard`, whose module doc says why each is enough). `left_alone`
(:func:`gossamer.parse.formatting.rebuilt_bytes`: one scan, in C where it is built) reads every
page of more than 3 KiB the guard may leave as it is (an eighth of lexbor's parse; the regex it
mirrors, four fifths). Every other scan here runs on every page
of more than 16 KiB and 4,096 to 16,384 ``<`` parsed in-process (and `odd_tag` on those of more than
64 KiB and fewer ``<``), so each must cost well under lexbor's own parse: byte counts, and over the
positions of ``<``, ``>`` and quotes, found once (`_Marks`), a few numpy operations (a third of
lexbor's CPU on a real page of 13,000 tags, three fifths with the depth check; each full-page numpy
operation costs about a hundredth, each search for positions a twentieth; the count of formatting
tags that could stay open, `_Marks.open_formatting`, a third). The one regex that reads the document
through (`ODD_TAG`: a tag that could hold `MAX_TAG_ATTRIBUTES` attributes behind quoted values
holding ``>``; it costs as much as lexbor's parse) runs only where a quoted value inside a tag could
hold ``>``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal

from gossamer.parse.formatting import AS_IS_MAX_REBUILT, SMALL_CHARS, rebuilt_bytes
from gossamer.parse.lazy import LazyPattern
from gossamer.parse.native import FORMATSCAN
from gossamer.parse.tokens import (
    ATTRIBUTE_BYTES,
    LONG_TAG_CHARS,
    MAX_ATTRIBUTE_NAMES,
    MAX_TAG_ATTRIBUTES,
    TAG_ATTRIBUTES_BYTES,
    TOKEN_BYTES,
    more_attributes,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "GUARD_MIN_CHARS",
    "LONG_TAG_CHARS",
    "MAX_ATTRIBUTE_NAMES",
    "MAX_TAG_ATTRIBUTES",
    "ODD_TAG",
    "ORDINARY_MAX_REBUILT",
    "ORDINARY_MAX_TAGS",
    "Route",
    "as_bytes",
    "left_alone",
    "long_tag",
    "needs_guard",
    "odd_tag",
    "ordinary",
    "route",
    "scalar_values",
    "tag_count",
    "too_deep_selector",
]

Route = Literal["as-is", "plain", "check", "nested", "guard"]
"""How a document is parsed: as it is, as it is because its markup is plain
(:func:`gossamer.parse.skeleton.plain`), as it is and its tree checked, as it is if its tags
nest perfectly, or guarded."""
GUARD_MIN_CHARS = 16 * 1024
"""Documents this small are parsed as they are if `left_alone` (unbounded, the worst cost lexbor
0.3 s and 460 MB: ten ``<b>`` of 200 attributes, then 12 KB of ``<p>x``)."""
_GUARD_MIN_TAGS = 4096
_LONG_TAG_MIN_CHARS = 64 * 1024
ORDINARY_MAX_TAGS = 16_384
_ORDINARY_MIN_UNCLOSED = 512
ORDINARY_MAX_REBUILT = 750_000
"""An ordinary document's formatting start tags lexbor could keep in its list of active
formatting elements, plus one, times its ``<`` are at most this: a bound on the elements
lexbor builds again for the list (see `_Marks.open_formatting`)."""

_SPACE = r"\t\n\f\r "
# A tag of LONG_TAG_CHARS characters, also when quoted values holding ">" hide its length: after
# one of them, LONG_TAG_CHARS characters in which ">" appears only inside quotes (where the
# regex's quotes are off the tokenizer's, it sees quoted text that is not, and finds tags longer
# than they are).
ODD_TAG = LazyPattern(
    f"<[^>]{{{LONG_TAG_CHARS}}}"
    f"|=[{_SPACE}]*(?:\"[^\"]*>[^\"]*\"|'[^']*>[^']*')"
    f"(?:[^>\"']|\"[^\"]*\"|'[^']*'){{{LONG_TAG_CHARS}}}"
)
_ODD_TAG_BYTES = LazyPattern(ODD_TAG.pattern.encode())

_LT, _GT, _DOUBLE, _SINGLE, _EQUALS, _SLASH = b"<>\"'=/"
_CLOSES_ITSELF = bytes(
    chr(byte).isascii() and chr(byte).isalpha() and chr(byte).lower() not in "abcefinstu"
    for byte in range(256)
)
"""1 for the first letters of names a ``/>`` counts as closing: any but the first letters of
the formatting elements' names (a b big code em font i nobr s small strike strong tt u)."""
_FOLD = bytes(
    byte + 32 if 65 <= byte <= 90 else 62 if byte in b"\t\n\f\r " else byte for byte in range(256)
)
"""`_Marks.open_formatting`'s table: ASCII letters to lower case and the spaces that end a
tag's name to ``>``."""
_FORMATTING_KEYS = sorted(
    int.from_bytes(name, "little")
    for name in b"b big code em font i nobr s small strike strong tt u".split()
)
"""The formatting elements' names but ``a`` (the list holds one ``<a>`` at most since its last
marker: an ``<a>`` start tag removes the one there), as little-endian numbers."""
_SPAN = int.from_bytes(b"span", "little")
_IS_BEFORE_VALUE = bytes(byte in b"=\t\n\f\r " for byte in range(256))
"""1 for the bytes a quote opening an attribute value follows: ``=`` or the spaces after it."""
_FEW_NAMES = 2 * MAX_ATTRIBUTE_NAMES
"""Attribute names lexbor takes in about 0.1 s even if every one is new (30,720: 0.08 s)."""
_FEW_NAMES_BYTES = 2 * 256 + 3 * (_FEW_NAMES - 256)
"""Fewer bytes cannot write `_FEW_NAMES` distinct names (each new one a separator and a byte
more than the 256 of one byte): lexbor takes them in about 0.1 s."""
# Byte classes for `_many_names`, by `bytes.translate` (a table lookup at C speed): a name
# starts after a quote or a separator and ends at a separator, ">" or "=" (after its first
# byte). Anything else (class 0) is a name byte.
_QUOTE, _SEPARATOR, _CLOSE, _EQUALS_CLASS = 1, 2, 3, 4


_WORD = 8
_KEEP = [(1 << (8 * size)) - 1 for size in range(_WORD + 1)]
"""The masks that keep the first 0 to 8 bytes of a little-endian 64-bit word."""


def _byte_classes() -> bytes:
    classes = bytearray(256)
    for members, kind in ((b"\"'", _QUOTE), (b"\t\n\f\r /", _SEPARATOR), (b">", _CLOSE)):
        for byte in members:
            classes[byte] = kind
    classes[_EQUALS] = _EQUALS_CLASS
    return bytes(classes)


_CLASSES = _byte_classes()
_STARTS = bytes(
    (byte in b"\t\n\f\r /\"'") | (byte not in b"\t\n\f\r />") << 1 for byte in range(256)
)
"""`bytes.translate` table for `_name_starts`: bit 1 for the bytes a name may start after (a
space, ``/``, a quote), bit 2 for those it may start with (any but a space, ``/``, ``>``)."""


_ALL = sys.maxsize
"""`tag_count`'s bound for the C count: none (every ``<`` counted)."""


def tag_count(document: str | bytes) -> int:
    """How many ``<`` the document holds: a bound on its tags."""
    if isinstance(document, bytes):
        return document.count(b"<") if FORMATSCAN is None else int(FORMATSCAN.count(document, _ALL))
    return document.count("<")


def route(document: str | bytes, tags: int) -> Route:
    """How :func:`gossamer.parse.guard.parse` takes ``document`` (holding ``tags`` ``<``):
    ``as-is`` if it is too small to be hostile but for its formatting elements and those are
    `left_alone` (else ``guard``), ``check`` if it is `ordinary` and `left_alone`, else
    ``plain`` if :func:`gossamer.parse.skeleton.plain` says so, else ``nested`` if not many
    more start tags than end and self-closing tags (then
    :func:`gossamer.parse.nesting.well_formed` decides), else ``guard``."""
    size = len(document)
    if size <= GUARD_MIN_CHARS or (
        tags <= _GUARD_MIN_TAGS
        and (size <= _LONG_TAG_MIN_CHARS or not odd_tag(as_bytes(document), names=True))
    ):
        return "as-is" if left_alone(document, tags) else "guard"
    if tags <= _GUARD_MIN_TAGS:
        return "guard"
    if tags <= ORDINARY_MAX_TAGS and ordinary(document, tags) and left_alone(document, tags):
        return "check"
    data = as_bytes(document)
    from gossamer.parse.skeleton import plain  # numpy: imported when a page needs it

    if plain(data):
        return "plain"
    # A self-closing tag (SVG's <path/>) counts as closed here: the nesting check decides.
    unclosed = tags - 2 * data.count(b"</") - data.count(b"/>")
    return "nested" if unclosed <= tags // 2 else "guard"


def left_alone(document: str | bytes, tags: int) -> bool:
    """Whether lexbor may parse ``document`` (holding ``tags`` ``<``; 0 if it was too short
    to count them, `GUARD_MIN_CHARS`) as it is, its formatting elements' copies costing at
    most `gossamer.parse.formatting.AS_IS_MAX_REBUILT` bytes
    (:func:`gossamer.parse.formatting.rebuilt_bytes`; a document of at most
    `gossamer.parse.formatting.SMALL_CHARS` is not read)."""
    size = len(document)
    if size <= SMALL_CHARS:
        return True
    counted = tags if size > GUARD_MIN_CHARS else None
    return rebuilt_bytes(document, counted) <= AS_IS_MAX_REBUILT


def needs_guard(document: str | bytes, tags: int) -> bool:
    """Whether ``document`` (holding ``tags`` ``<``) could be hostile at all: it is larger
    than `GUARD_MIN_CHARS`, and has more than 4,096 ``<``, or (past 64 KiB) a tag that could
    hold `MAX_TAG_ATTRIBUTES` attributes or tags that could hold `MAX_ATTRIBUTE_NAMES`
    distinct attribute names (see `odd_tag`)."""
    size = len(document)
    if size <= GUARD_MIN_CHARS:
        return False
    if tags > _GUARD_MIN_TAGS:
        return True
    return size > _LONG_TAG_MIN_CHARS and odd_tag(as_bytes(document), names=True)


def ordinary(document: str | bytes, tags: int) -> bool:
    """Whether lexbor may parse ``document`` before it is checked: at most
    `ORDINARY_MAX_TAGS` ``<``, not many more start tags than end tags, no tag that could
    hold `MAX_TAG_ATTRIBUTES` attributes, tags that could not hold more than
    `MAX_ATTRIBUTE_NAMES` distinct attribute names, and few formatting start tags that could
    stay in lexbor's list of active formatting elements (`ORDINARY_MAX_REBUILT`)."""
    if tags > ORDINARY_MAX_TAGS:
        return False
    most_unclosed = max(_ORDINARY_MIN_UNCLOSED, tags // 4)
    marks = _Marks(as_bytes(document))
    if tags - 2 * marks.closed_tags() > most_unclosed:
        return False
    if (marks.open_formatting() + 1) * tags > ORDINARY_MAX_REBUILT:
        return False
    return not marks.odd(names=True)


def odd_tag(data: bytes, *, names: bool = False) -> bool:
    """Whether a tag of ``data`` could hold `MAX_TAG_ATTRIBUTES` attributes, or (with
    ``names``) its tags together more than `MAX_ATTRIBUTE_NAMES` distinct attribute names. If
    a quoted value in a tag could hold ``>``, regexes decide (`ODD_TAG`, then the guard's
    tokenizer); else every tag ends at the first ``>`` after its ``<``, a tag that long has
    `LONG_TAG_CHARS` bytes without one, and `_many_names` counts the names."""
    return _Marks(data).odd(names=names)


class _Marks:
    """Where the ``<``, ``>`` and quotes of a page are, found once for every scan (a numpy
    array operation each: a comparison costs lexbor's parse a few thousandths, the positions
    found a few hundredths; `bytes.count` of ``</`` cost a fifth)."""

    def __init__(self, data: bytes) -> None:
        import numpy as np  # a crawl of small pages never loads it

        self.data = data
        array = self.array = np.frombuffer(data, np.uint8)
        marks = self.marks = np.flatnonzero(
            (array == _LT) | (array == _GT) | (array == _DOUBLE) | (array == _SINGLE)
        )
        kinds = self.kinds = array[marks]
        self.opens = marks[kinds == _LT]
        self.closes = marks[kinds == _GT]
        self._quoted: bool | None = None

    def quoted(self) -> bool:
        """`_quoted_close` of the page: whether a ``>`` could stand in a quoted value."""
        if self._quoted is None:
            self._quoted = _quoted_close(self.array, self.marks, self.kinds)
        return self._quoted

    def closed_tags(self) -> int:
        """How many tags close an element or open none, at least: the end tags (``</``),
        and the self-closing tags (``/>``) whose name starts with no formatting element's
        first letter (SVG's ``<path/>``, ``<polygon/>``: sqlite's syntax diagrams). In HTML
        the slash closes nothing, but of the elements it leaves open only formatting ones
        make a list lexbor rebuilds at each paragraph; the others nest, which the check of
        the tree then finds."""
        import numpy as np

        array, opens, closes = self.array, self.opens, self.closes
        after = opens + 1
        if len(after) and after[-1] == len(self.data):
            after = after[:-1]
        ends = int(np.count_nonzero(array[after] == _SLASH))
        closes = closes[closes > 0]
        closes = closes[array[closes - 1] == _SLASH]
        tags = opens[np.searchsorted(opens, closes) - 1]
        tags = tags[(tags < closes) & (tags + 1 < len(array))]
        named = np.frombuffer(_CLOSES_ITSELF, np.bool_)[array[tags + 1]]
        return ends + int(np.count_nonzero(named))

    def open_formatting(self) -> int:
        """How many formatting start tags but ``<a>`` the page could hold that lexbor could
        keep in its list of active formatting elements past their own end tag: every ``<``
        followed by such a name (any case) ending as a tag's name does, wherever it is (in a
        comment, a script, a value: only more), but those closed at once. No other end tag is
        trusted: a comment, a script or a value can hold one that closes nothing, and so can
        another name (``</i>`` for ``<b>``). A start tag is closed at once when, every tag
        ending at its first ``>`` (no ``>`` can stand in a quoted value), the next tags are
        its end tag (``</b>``), or ``<span ...>``, ``</span>`` and its end tag, with a ``>``
        between each ``<`` and the next: only text stands between them, so that the element
        is the list's last entry and the current node (no text rebuilds anything) until its
        end tag removes it. Every element of the list was added by one of the others (the
        ``<a>`` apart, one since the last marker), so lexbor rebuilds at most these and an
        ``<a>`` at a token."""
        import numpy as np

        opens = self.opens
        rows = np.arange(len(opens))
        padded = self.data + bytes(_WORD + 1)
        # the 8 bytes after each "<" as one number, folded (a table lookup at C speed)
        raw = np.ndarray((len(self.data),), np.dtype("<u8"), padded, 1, (1,))[opens]
        folded_bytes = raw.tobytes().translate(_FOLD)
        words = np.frombuffer(folded_bytes, np.dtype("<u8"))
        folded = np.frombuffer(folded_bytes, np.uint8).reshape(len(opens), _WORD)
        keep = np.array(_KEEP, np.uint64)
        # a start tag's name ends at the first ">" or "/" (spaces are ">" here)
        ends = (folded == _GT) | (folded == _SLASH)
        length = ends.argmax(axis=1)
        starts = ends.ravel()[rows * _WORD + length] & (length > 0)
        names = words & keep[length]
        table = np.array(_FORMATTING_KEYS, np.uint64)
        found = table[np.minimum(np.searchsorted(table, names), len(table) - 1)] == names
        formatting = starts & found
        count = int(np.count_nonzero(formatting))
        if not count or self.quoted():
            return count
        # an end tag: "/", its name, ">" or a space
        slashed = np.flatnonzero(folded[:, 0] == _SLASH)
        closes = folded[slashed] == _GT
        closes[:, 0] = False
        end = closes.argmax(axis=1)
        kept = closes[np.arange(len(slashed)), end] & (end > 1)
        slashed, end = slashed[kept], end[kept]
        end_names = np.zeros(len(opens), np.uint64)
        end_names[slashed] = (words[slashed] >> np.uint64(8)) & keep[end - 1]
        # a ">" between each "<" and the next: each is a tag's start, only text between tags
        tags = self.kinds[(self.kinds == _LT) | (self.kinds == _GT)]
        after = np.append(tags[1:], _LT)[tags == _LT] == _GT
        spans = starts & (names == _SPAN) & after
        span_ends = end_names == _SPAN
        last = len(opens)
        direct = formatting[: last - 1] & after[: last - 1] & (end_names[1:] == names[: last - 1])
        closed = int(np.count_nonzero(direct))
        if last > 3:
            wrapped = (
                formatting[: last - 3]
                & after[: last - 3]
                & spans[1 : last - 2]
                & span_ends[2 : last - 1]
                & after[2 : last - 1]
                & (end_names[3:] == names[: last - 3])
            )
            closed += int(np.count_nonzero(wrapped))
        return count - closed

    def odd(self, *, names: bool) -> bool:
        """`odd_tag` of the page."""
        data, closes = self.data, self.closes
        if _long_tag(data, closes):
            return True
        names = names and len(data) >= _FEW_NAMES_BYTES
        if self.quoted():
            starts = _name_starts(data) if names else None
            names = starts is not None and len(starts) > _FEW_NAMES
            long = _ODD_TAG_BYTES.search(data) is not None
            if names and not long and starts is not None:  # else the tokenizer reads them
                names = _many_words(data, starts)
            return (long or names) and _odd_read(data, attributes=long, names=names)
        # every tag ends at its first ">": the names are inside the tags, and most pages
        # hold too few bytes there to write that many (text-heavy pages of 100 KB and more)
        if not names or _tag_bytes(self.opens, closes, len(data)) < _FEW_NAMES_BYTES:
            return False
        starts = _name_starts(data)
        return len(starts) > _FEW_NAMES and _many_names(data, self.opens, closes, starts)


def _tag_bytes(opens: npt.NDArray[np.intp], closes: npt.NDArray[np.intp], size: int) -> int:
    """How many bytes of the document stand inside its tags, every tag ending at the first
    ``>`` after its ``<`` (``opens``, ``closes``: where the ``<`` and ``>`` are): from the
    first ``<`` after a ``>`` to the next ``>``, as `_many_names` reads them. A few array
    operations on the tags' positions, where finding the places a name could start reads
    every byte of the page."""
    import numpy as np

    ends = np.append(closes, size)[np.searchsorted(closes, opens)]
    first = np.diff(ends, prepend=-1) != 0
    return int((ends[first] - opens[first]).sum())


def _many_names(
    data: bytes,
    opens: npt.NDArray[np.intp],
    closes: npt.NDArray[np.intp],
    starts: npt.NDArray[np.intp],
) -> bool:
    """Whether the tags of ``data`` could hold more than `MAX_ATTRIBUTE_NAMES` distinct
    attribute names, every tag ending at the first ``>`` after its ``<`` (``opens``,
    ``closes``: where the ``<`` and ``>`` are; ``starts``: where a name could start, see
    `_name_starts`). Lexbor pays little for `_FEW_NAMES` names even if all are distinct, so
    few places inside the tags are enough; else the names there are read (up to a space,
    ``/``, ``>`` or ``=`` after their first byte, as the tokenizer reads them): the set of
    these holds every name of the document, and pieces of some (a value after a quote or
    ``= ``), which only count more."""
    import numpy as np

    size = len(data)
    ends = np.append(closes, size)[np.searchsorted(closes, opens)]
    # inside a tag: from the first "<" after a ">" to the next ">" (tags never overlap)
    first = np.diff(ends, prepend=-1) != 0
    opens, ends = opens[first], ends[first]
    inside = np.searchsorted(starts, ends) - np.searchsorted(starts, opens, "right")
    if int(inside.sum()) <= _FEW_NAMES:
        return False
    bounds = np.empty(2 * len(opens), np.intp)
    bounds[0::2], bounds[1::2] = opens, ends
    starts = starts[np.searchsorted(bounds, starts, "right") % 2 == 1]
    classes = np.frombuffer(data.translate(_CLASSES), np.uint8)
    stops = np.append(np.flatnonzero((classes - _SEPARATOR) < 3), size)
    return _distinct_names(data, starts, stops[np.searchsorted(stops, starts + 1)])


def _many_words(data: bytes, starts: npt.NDArray[np.intp]) -> bool:
    """Whether the names that could start at ``starts``, wherever they are (text's words
    too), are more than `MAX_ATTRIBUTE_NAMES` distinct ones. Where a quoted value could hold
    ``>``, no tag is known to end at its first ``>``, so the names inside tags cannot be told
    from the rest; but every one of them is among these, and a real page holds few distinct
    words: only a page past the limit has its tags read by the guard's tokenizer
    (`_odd_read`, ten times the cost)."""
    import numpy as np

    classes = np.frombuffer(data.translate(_CLASSES), np.uint8)
    stops = np.append(np.flatnonzero((classes - _SEPARATOR) < 3), len(data))
    return _distinct_names(data, starts, stops[np.searchsorted(stops, starts + 1)])


def _distinct_names(data: bytes, starts: npt.NDArray[np.intp], ends: npt.NDArray[np.intp]) -> bool:
    """Whether the names ``data[start:end]`` are more than `MAX_ATTRIBUTE_NAMES` distinct ones.
    Names of 8 bytes or less are told apart by numpy as the 64-bit numbers of their bytes (a
    set of so many slices cost 2.5 times lexbor's parse on a page of SVG, its paths' numbers
    read as names); the longer ones, fewer, by a set, unless they are too few to matter."""
    import numpy as np

    lengths = ends - starts
    short = lengths <= _WORD
    padded = data + bytes(_WORD)
    words = np.ndarray((len(data),), np.dtype("<u8"), padded, 0, (1,))
    keys = words[starts[short]] & np.array(_KEEP, np.uint64)[lengths[short]]
    distinct = len(np.unique(keys))
    long = np.flatnonzero(~short)
    if distinct + len(long) <= MAX_ATTRIBUTE_NAMES:
        return False
    begins, stops = starts[long].tolist(), ends[long].tolist()
    found = {data[begin:stop] for begin, stop in zip(begins, stops, strict=True)}
    return distinct + len(found) > MAX_ATTRIBUTE_NAMES


def _name_starts(data: bytes) -> npt.NDArray[np.intp]:
    """Where in ``data`` an attribute name could start, wherever its tags are: the tokenizer
    starts a name only after a space, ``/`` or quote (after the tag's name, a name, a value
    or a quoted value), at a byte other than a space, ``/`` or ``>`` (text's words count
    too: only more). A table lookup and a few array operations, about a tenth of lexbor's
    parse, where reading the names cost more than it; most pages under 200 KB hold fewer
    than `_FEW_NAMES` words."""
    import numpy as np

    classes = np.frombuffer(data.translate(_STARTS), np.uint8)
    # 0 or 1: numpy finds the true ones in a boolean array several times faster
    return np.flatnonzero((classes[:-1] & (classes[1:] >> 1)).view(np.bool_)) + 1


def _odd_read(data: bytes, *, attributes: bool, names: bool) -> bool:
    """`odd_tag` where a quoted value could hold ``>``: the tags as the guard's tokenizer
    reads them from the start (it reads a script's ``<`` as tags too: only more tags) decide,
    their attributes counted if `ODD_TAG` found a tag that could be long (``attributes``), and
    their distinct attribute names (``names``). The regex alone sent every page with a long
    script holding ``i < n`` and a quoted ``">"`` to the guard's pass."""
    texts = [text for text in TAG_ATTRIBUTES_BYTES.findall(data) if text]
    if attributes and any(
        len(text) >= LONG_TAG_CHARS and more_attributes(text, MAX_TAG_ATTRIBUTES) for text in texts
    ):
        return True
    return names and len(set(ATTRIBUTE_BYTES.findall(b" ".join(texts)))) > MAX_ATTRIBUTE_NAMES


def long_tag(data: bytes) -> bool:
    """Whether a tag of ``data`` could hold more than `MAX_TAG_ATTRIBUTES` attributes, every
    tag ending at the first ``>`` after its ``<`` (see `_long_tag`)."""
    import numpy as np

    return _long_tag(data, np.flatnonzero(np.frombuffer(data, np.uint8) == _GT))


def _long_tag(data: bytes, closes: npt.NDArray[np.intp]) -> bool:
    """`long_tag`, given the positions of ``>``: only a run of more than `LONG_TAG_CHARS`
    bytes between two ``>`` (or an end) can hold such a tag; real pages have few (mostly
    scripts: ``i < n; i++``). In each, from its first ``<``, the guard's tokenizer reads the
    tags and counts their attributes: a ``<`` that starts no tag for lexbor (in a script, in
    text) only adds a tag, and a tag read from an earlier ``<`` holds the attributes of any
    tag it overlaps, so no tag is read with fewer attributes than lexbor reads."""
    import numpy as np

    bounds = np.concatenate(([-1], closes, [len(data)]))
    for run in np.flatnonzero(np.diff(bounds) > LONG_TAG_CHARS + 1).tolist():
        start, end = int(bounds[run]) + 1, int(bounds[run + 1])
        opening = data.find(b"<", start, end)
        if opening >= 0 and end - opening > LONG_TAG_CHARS and _crowded(data, opening, end):
            return True
    return False


def _crowded(data: bytes, start: int, end: int) -> bool:
    """Whether a tag the guard's tokenizer reads in ``data[start:end + 1]`` (``end`` is a
    ``>`` or the end) holds more than `MAX_TAG_ATTRIBUTES` attributes."""
    for token in TOKEN_BYTES.finditer(data, start, end + 1):
        attributes = token[3]
        if (
            attributes is not None
            and len(attributes) >= LONG_TAG_CHARS
            and more_attributes(attributes, MAX_TAG_ATTRIBUTES)
        ):
            return True
    return False


def _quoted_close(
    array: npt.NDArray[np.uint8],
    marks: npt.NDArray[np.intp],
    kinds: npt.NDArray[np.uint8],
) -> bool:
    """Whether a ``>`` could stand in a quoted attribute value: after a quote that follows
    ``=`` or a space inside a tag, before the next quote of its kind (or the end). The first
    value of a tag that holds ``>`` is one of these (no ``>`` stands between it and the tag's
    ``<``). ``marks`` are the positions of ``<``, ``>`` and quotes, ``kinds`` their bytes.
    Array operations only: a loop over the quotes found cost a third of lexbor's parse on
    pages whose scripts hold many quoted strings."""
    import numpy as np

    is_close, is_open = kinds == _GT, kinds == _LT
    closes, opens = marks[is_close], marks[is_open]
    for kind in (_DOUBLE, _SINGLE):
        # among the ">" and the quotes of this kind: a ">" between a quote and the next one
        sequence = np.flatnonzero((kinds == kind) | is_close)
        quotes = np.flatnonzero(kinds[sequence] == kind)
        if not len(quotes):
            continue
        holding = np.diff(quotes, append=len(sequence)) > 1
        at = marks[sequence[quotes[holding]]]
        # a quote at 0 reads the last byte
        at = at[np.frombuffer(_IS_BEFORE_VALUE, np.bool_)[array[at - 1]]]
        after = np.searchsorted(closes, at) - 1  # the last ">" before each, if any
        # inside a tag: a "<" (text "<" counts) since that ">"
        starts = np.where(after < 0, 0, closes[after])
        if (np.searchsorted(opens, at) > np.searchsorted(opens, starts)).any():
            return True
    return False


def too_deep_selector(depth: int) -> str:
    """A CSS selector matching a tree that holds an element ``depth`` deep (``html`` is 1
    deep). Anchored at ``html``, lexbor walks down the tree once instead of up from every
    element: a third of the cost on real pages, a three-hundredth on 500 ``<div>`` holding
    8,000 paragraphs."""
    return "html:has(" + " > *" * (depth - 1) + ")"


def as_bytes(document: str | bytes) -> bytes:
    """The document as UTF-8 bytes (bytes are taken as they are)."""
    # positions in UTF-8 are at least those in the text: the scans only ever find more
    return document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")


_LONE_SURROGATE = LazyPattern("[\ud800-\udfff]")


def scalar_values(document: str | bytes) -> str | bytes:
    """``document``, a str's lone surrogates as U+FFFD, for lexbor: selectolax drops them
    (it encodes a str with ``errors="ignore"``) where the guard and its scans read them, so a
    ``<\\ud800div>`` was a ``<div>`` to lexbor and text to the guard (40,000 of them, a str of
    240 K characters: 2.2 s, unguarded). As U+FFFD they are text to both."""
    if isinstance(document, bytes) or document.isascii():
        return document
    return _LONE_SURROGATE.sub("\ufffd", document)

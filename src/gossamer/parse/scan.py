"""The cheap scans that decide whether a document needs the guard's pass (see
:mod:`gossamer.parse.guard`, whose module doc says why each is enough).

Every scan here runs on every page of more than 16 KiB and 4,096 ``<``, so each must cost well
under lexbor's own parse: byte counts, and over the positions of ``>`` and quotes, a few numpy
operations (half of lexbor's instructions on a real page of 13,000 tags). The one regex that
reads the document through (`ODD_TAG`: a tag that could hold `MAX_TAG_ATTRIBUTES` attributes
behind quoted values holding ``>``; it costs as much as lexbor's parse) runs only where a quoted
value inside a tag could hold ``>``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "GUARD_MIN_CHARS",
    "LONG_TAG_CHARS",
    "MAX_TAG_ATTRIBUTES",
    "ODD_TAG",
    "ORDINARY_MAX_TAGS",
    "long_tag",
    "needs_guard",
    "odd_tag",
    "ordinary",
    "tag_count",
    "too_deep_selector",
]

MAX_TAG_ATTRIBUTES = 256
"""Attributes of one tag past this many are dropped by the guard."""
GUARD_MIN_CHARS = 16 * 1024
"""Documents this small are parsed as they are (the worst case costs lexbor about 0.4 s)."""
_GUARD_MIN_TAGS = 4096
LONG_TAG_CHARS = 2 * MAX_TAG_ATTRIBUTES
"""A tag shorter than this cannot hold `MAX_TAG_ATTRIBUTES` attributes (two characters
each at least: a name and a separator, or a value's two quotes)."""
_LONG_TAG_MIN_CHARS = 64 * 1024
ORDINARY_MAX_TAGS = 16_384
_ORDINARY_MIN_UNCLOSED = 512

_SPACE = r"\t\n\f\r "
# A tag of LONG_TAG_CHARS characters, also when quoted values holding ">" hide its length: after
# one of them, LONG_TAG_CHARS characters in which ">" appears only inside quotes (where the
# regex's quotes are off the tokenizer's, it sees quoted text that is not, and finds tags longer
# than they are).
ODD_TAG = re.compile(
    f"<[^>]{{{LONG_TAG_CHARS}}}"
    f"|=[{_SPACE}]*(?:\"[^\"]*>[^\"]*\"|'[^']*>[^']*')"
    f"(?:[^>\"']|\"[^\"]*\"|'[^']*'){{{LONG_TAG_CHARS}}}"
)
_ODD_TAG_BYTES = re.compile(ODD_TAG.pattern.encode())

_LT, _GT, _DOUBLE, _SINGLE = b"<>\"'"
_BEFORE_VALUE = list(b"=\t\n\f\r ")
"""The bytes a quote opening an attribute value follows: ``=`` or the spaces after it."""


def tag_count(document: str | bytes) -> int:
    """How many ``<`` the document holds: a bound on its tags."""
    if isinstance(document, bytes):
        return document.count(b"<")
    return document.count("<")


def needs_guard(document: str | bytes, tags: int) -> bool:
    """Whether ``document`` (holding ``tags`` ``<``) could be hostile at all: it is larger
    than `GUARD_MIN_CHARS`, and has more than 4,096 ``<`` or a tag of `LONG_TAG_CHARS`."""
    size = len(document)
    if size <= GUARD_MIN_CHARS:
        return False
    if tags > _GUARD_MIN_TAGS:
        return True
    if size <= _LONG_TAG_MIN_CHARS:
        return False
    return long_tag(_as_bytes(document))


def ordinary(document: str | bytes, tags: int) -> bool:
    """Whether lexbor may parse ``document`` before it is checked: at most
    `ORDINARY_MAX_TAGS` ``<``, not many more start tags than end tags, and no tag that could
    hold `MAX_TAG_ATTRIBUTES` attributes."""
    if tags > ORDINARY_MAX_TAGS:
        return False
    most_unclosed = max(_ORDINARY_MIN_UNCLOSED, tags // 4)
    data = _as_bytes(document)
    if tags - 2 * data.count(b"</") > most_unclosed:
        return False
    return not odd_tag(data)


def odd_tag(data: bytes) -> bool:
    """Whether a tag of ``data`` could hold `MAX_TAG_ATTRIBUTES` attributes. If a quoted
    value in a tag could hold ``>``, `ODD_TAG` decides; else every tag ends at the first
    ``>`` after its ``<``, and a tag that long has `LONG_TAG_CHARS` bytes without one."""
    import numpy as np  # a crawl of small pages never loads it

    array = np.frombuffer(data, np.uint8)
    marks = np.flatnonzero((array == _GT) | (array == _DOUBLE) | (array == _SINGLE))
    kinds = array[marks]
    if _long_tag(data, marks[kinds == _GT]):
        return True
    if _quoted_close(data, array, marks, kinds):
        return _ODD_TAG_BYTES.search(data) is not None
    return False


def long_tag(data: bytes) -> bool:
    """Whether a ``<`` in ``data`` has no ``>`` in the `LONG_TAG_CHARS` bytes after it (what
    the regex ``<[^>]{512}`` finds)."""
    import numpy as np

    return _long_tag(data, np.flatnonzero(np.frombuffer(data, np.uint8) == _GT))


def _long_tag(data: bytes, closes: npt.NDArray[np.intp]) -> bool:
    """`long_tag`, given the positions of ``>``: only a run of more than `LONG_TAG_CHARS`
    bytes between two ``>`` (or an end) can hold such a ``<``; real pages have few."""
    import numpy as np

    bounds = np.concatenate(([-1], closes, [len(data)]))
    for run in np.flatnonzero(np.diff(bounds) > LONG_TAG_CHARS + 1).tolist():
        start, end = int(bounds[run]) + 1, int(bounds[run + 1])
        opening = data.find(b"<", start, end)
        if opening >= 0 and end - opening > LONG_TAG_CHARS:
            return True
    return False


def _quoted_close(
    data: bytes,
    array: npt.NDArray[np.uint8],
    marks: npt.NDArray[np.intp],
    kinds: npt.NDArray[np.uint8],
) -> bool:
    """Whether a ``>`` could stand in a quoted attribute value: after a quote that follows
    ``=`` or a space inside a tag, before the next quote of its kind (or the end). The first
    value of a tag that holds ``>`` is one of these (no ``>`` stands between it and the tag's
    ``<``). ``marks`` are the positions of ``>`` and quotes, ``kinds`` their bytes."""
    import numpy as np

    closes = marks[kinds == _GT]
    for kind in (_DOUBLE, _SINGLE):
        # among the ">" and the quotes of this kind: a ">" between a quote and the next one
        sequence = np.flatnonzero((kinds == kind) | (kinds == _GT))
        quotes = np.flatnonzero(kinds[sequence] == kind)
        if not len(quotes):
            continue
        holding = np.diff(quotes, append=len(sequence)) > 1
        at = marks[sequence[quotes[holding]]]
        at = at[np.isin(array[at - 1], _BEFORE_VALUE)]  # a quote at 0 reads the last byte
        after = np.searchsorted(closes, at) - 1  # the last ">" before each, if any
        # inside a tag: a "<" (text "<" counts) since that ">"; a ">" stands between two
        # quotes found, so the stretches searched never overlap
        starts = np.where(after < 0, 0, closes[after]).tolist()
        for start, end in zip(starts, at.tolist(), strict=True):
            if data.find(b"<", start, end) >= 0:
                return True
    return False


def too_deep_selector(depth: int) -> str:
    """A CSS selector matching a tree that holds an element ``depth`` deep (``html`` is 1
    deep). Anchored at ``html``, lexbor walks down the tree once instead of up from every
    element: a third of the cost on real pages, a three-hundredth on 500 ``<div>`` holding
    8,000 paragraphs."""
    return "html:has(" + " > *" * (depth - 1) + ")"


def _as_bytes(document: str | bytes) -> bytes:
    # positions in UTF-8 are at least those in the text: the scans only ever find more
    return document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")

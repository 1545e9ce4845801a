"""The cheap scans that decide whether a document needs the guard's pass (see
:mod:`gossamer.parse.guard`, whose module doc says why each is enough).

Every scan here runs on every page of more than 16 KiB and 4,096 ``<``, so each costs a
small fraction of lexbor's own parse: byte counts, and over the positions of ``<``, ``>``
and quotes, a few numpy operations. The one regex that reads the document through
(`ODD_TAG`, a tag that could hold `MAX_TAG_ATTRIBUTES` attributes behind quoted values
holding ``>``) runs only on documents where a quoted value could hold ``>``.
"""

from __future__ import annotations

import functools
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
_BEFORE_VALUE = frozenset(b"=\t\n\f\r ")
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
    """Whether `ODD_TAG` finds a tag in ``data``: read through only if a quoted value could
    hold ``>``, else the same answer from the positions of ``<`` and ``>``."""
    import numpy as np  # a crawl of small pages never loads it

    array = np.frombuffer(data, np.uint8)
    closes = np.flatnonzero(array == _GT)
    if _long_tag(np.flatnonzero(array == _LT), closes, len(data)):
        return True
    for quote in (_DOUBLE, _SINGLE):
        if _quoted_close(array, np.flatnonzero(array == quote), closes):
            return _ODD_TAG_BYTES.search(data) is not None
    return False


def long_tag(data: bytes) -> bool:
    """Whether a ``<`` in ``data`` has no ``>`` in the `LONG_TAG_CHARS` bytes after it (what
    the regex ``<[^>]{512}`` finds)."""
    import numpy as np

    array = np.frombuffer(data, np.uint8)
    return _long_tag(np.flatnonzero(array == _LT), np.flatnonzero(array == _GT), len(data))


def _long_tag(opens: npt.NDArray[np.intp], closes: npt.NDArray[np.intp], size: int) -> bool:
    import numpy as np

    if not len(opens):
        return False
    ends = np.append(closes, size)[np.searchsorted(closes, opens)]
    return bool((ends - opens > LONG_TAG_CHARS).any())


def _quoted_close(
    array: npt.NDArray[np.uint8], quotes: npt.NDArray[np.intp], closes: npt.NDArray[np.intp]
) -> bool:
    """Whether a ``>`` stands between a quote that could open an attribute value (it follows
    ``=`` or a space) and the next quote of the same kind: every value `ODD_TAG`'s second
    branch matches is one of these."""
    import numpy as np

    if len(quotes) < 2 or not len(closes):
        return False
    before = array[quotes[:-1] - 1]  # the first quote at 0 reads the last byte: harmless
    opening = _opens_value()[before]
    starts = quotes[:-1][opening]
    ends = quotes[1:][opening]  # the next quote of the kind closes the value
    return bool((np.searchsorted(closes, ends) > np.searchsorted(closes, starts)).any())


def too_deep_selector(depth: int) -> str:
    """A CSS selector matching a tree that holds an element ``depth`` deep (``html`` is 1
    deep). Anchored at ``html``, lexbor walks down the tree once instead of up from every
    element: a third of the cost on real pages, a three-hundredth on 500 ``<div>`` holding
    8,000 paragraphs."""
    return "html:has(" + " > *" * (depth - 1) + ")"


def _as_bytes(document: str | bytes) -> bytes:
    # positions in UTF-8 are at least those in the text: the scans only ever find more
    return document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")


@functools.cache
def _opens_value() -> npt.NDArray[np.bool_]:
    """For each byte, whether a quote after it could open an attribute value."""
    import numpy as np

    table = np.zeros(256, np.bool_)
    table[list(_BEFORE_VALUE)] = True
    return table

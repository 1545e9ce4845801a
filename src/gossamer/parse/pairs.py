"""Two pairings the skeleton reading (:mod:`gossamer.parse.skeleton`) makes with numpy: the
quotes of quoted values when a page writes values in both kinds of quotes, and formatting end
tags written crossed (``<small><i>x</small></i>``). Both are what sqlite's pages (and much
hand-written HTML) hold, which sent them to the nesting check's loop over their tags."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Ints = npt.NDArray[np.intp]
    Bools = npt.NDArray[np.bool_]

__all__ = ["MAX_VALUES", "crossed", "quoted_values"]

MAX_VALUES = 256
"""Quoted values of one tag read by `quoted_values`, at most."""
_DOUBLE, _SINGLE = b"\"'"


def quoted_values(
    kinds: npt.NDArray[np.uint8], in_tag: Bools, at: Ints, ends: Ints
) -> tuple[Ints, Ints] | None:
    """The quotes opening and closing the quoted values of the tags, as the tokenizer pairs
    them (indices of the marks, whose bytes are ``kinds``; ``in_tag``: which marks stand in a
    tag, ``at`` and ``ends``: each tag's ``<`` and ``>``): a tag's first quote opens a value
    that the next quote of its kind closes (one of the other kind is a letter in it), and the
    first quote after that opens the next, one value of every tag a round. None if a value
    runs past its tag's ``>`` (a ``>`` in a value) or a tag holds more than `MAX_VALUES`."""
    quotes = np.flatnonzero(in_tag & ((kinds == _DOUBLE) | (kinds == _SINGLE)))
    by_kind = [(kind, quotes[kinds[quotes] == kind]) for kind in (_DOUBLE, _SINGLE)]
    pointer, limit = np.searchsorted(quotes, at), ends
    openers: list[Ints] = [quotes[:0]]
    closers: list[Ints] = [quotes[:0]]
    for _ in range(MAX_VALUES + 1):
        active = pointer < len(quotes)
        active[active] = quotes[pointer[active]] < limit[active]
        if not active.any():
            return np.concatenate(openers), np.concatenate(closers)
        pointer, limit = pointer[active], limit[active]
        opener = quotes[pointer]
        closer = np.full(len(opener), np.iinfo(np.intp).max)
        for kind, same in by_kind:
            mine = np.flatnonzero(kinds[opener] == kind)
            following = np.searchsorted(same, opener[mine], "right")
            found = following < len(same)
            closer[mine[found]] = same[following[found]]
        if (closer > limit).any():
            return None
        openers.append(opener)
        closers.append(closer)
        pointer = np.searchsorted(quotes, closer, "right")
    return None


def crossed(
    opened: Ints, closed: Ints, wrong: Bools, key: Ints, extra: Ints, formatting: Bools
) -> bool:
    """Whether every end tag that names another element than the one it closes (``wrong``,
    of the end tags ``closed`` and the start tags ``opened`` they close; names as ``key`` and
    ``extra``) is one of two ``formatting`` end tags next to each other that name each
    other's element, as sqlite's footer ends ``<small><i>x</small></i>``. Lexbor's adoption
    agency for the first (its element is in scope, and a formatting element above it is no
    furthest block) pops both elements and keeps the inner one in its list; the second
    removes it from there (or pops its clone, rebuilt at text between the two): lexbor's
    stack and list are then those of the two end tags written the other way round, as the
    nesting reads them."""
    tags = np.sort(closed[wrong])
    first, second = tags[0::2], tags[1::2]
    if len(tags) % 2 or (second != first + 1).any():
        return False
    opener = np.zeros(len(key), np.intp)
    opener[closed] = opened
    inner, outer = opener[first], opener[second]
    return bool(
        (formatting[first] & formatting[second]).all()
        and (key[first] == key[outer]).all()
        and (extra[first] == extra[outer]).all()
        and (key[second] == key[inner]).all()
        and (extra[second] == extra[inner]).all()
    )

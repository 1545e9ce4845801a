"""A text's words, one space between them: ``" ".join("".join(parts).split())``.

The walk of the tree model (`gossamer.extract.walk`) closes each block of a page this way and
measures each box it skims by the length of the same; the language detector makes its
sample one line. In Python the expression makes a string for every word and joins them
again: the walk's line that does it held 3.4% of the samples of a whole-job crawl of the
real pages (py-spy). The C part (``extract/_squash.c``: one pass over ASCII text, two over
other text, Python's own whitespace test, linear time, no word made) is used where built;
`squash_reference` and `squashed_length_reference` are the reference and run where it is
not, or with ``GOSSAMER_NATIVE=0``. With the C scan of boxes read whole
(`gossamer.extract.kinds`) it takes the tree extractor from 885 to 754 M instructions over
every tenth real page (``benchmarks/bench_walk.py --callgrind --every 10``).
"""

from __future__ import annotations

from collections.abc import Callable

from gossamer.parse.native import load

__all__ = ["squash", "squash_reference", "squashed_length", "squashed_length_reference"]

SQUASH = load("gossamer.extract._squash")


def squash_reference(parts: str | list[str]) -> str:
    """The words of ``parts`` (a text, or pieces of one to join), one space between them."""
    text = parts if isinstance(parts, str) else parts[0] if len(parts) == 1 else "".join(parts)
    return " ".join(text.split())


def squashed_length_reference(parts: str | list[str]) -> int:
    """The length of `squash_reference` of ``parts``."""
    return len(squash_reference(parts))


squash: Callable[[str | list[str]], str] = squash_reference if SQUASH is None else SQUASH.squash
"""`squash_reference`, in C where it is built."""
squashed_length: Callable[[str | list[str]], int] = (
    squashed_length_reference if SQUASH is None else SQUASH.squashed_length
)
"""`squashed_length_reference`, in C where it is built."""

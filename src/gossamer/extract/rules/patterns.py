"""Regular expressions of rule documents, compiled once with RE2.

What a page controls is the text a pattern reads: its URLs (a rule's ``url`` and ``exclude``,
a link rule's ``allow`` and ``deny``, matched in the crawl's own loop on every URL) and its
content (regex fields and processors). Python's ``re`` backtracks: ``(a+)+$`` takes
exponential time and ``"a":"(.*)".*"b":"(.*)"`` polynomial time on texts a page can hold, and
no check of a pattern's shape finds every such case. RE2 (``google-re2``) runs in time linear
in the text for every pattern it accepts, so no pattern is refused for its shape; what RE2
cannot run in linear time it does not accept (backreferences ``\\1``, lookaround ``(?=``,
``(?!``, ``(?<=``, possessive ``a++`` and atomic ``(?>...)`` groups), and such a pattern is
refused when the document is read, with the reason.

RE2's time is linear in the text but also grows with the pattern's compiled program: in the
worst case (its DFA out of states, as for a long alternation of counted repeats) it costs
text x program, 4 s for a 2 KB URL and a 4 KB pattern of 166,000 instructions. URL patterns
are matched in the crawl's own loop, so one is refused over `MAX_URL_PROGRAM` instructions
(ordinary ones take 10 to 120); content patterns run in the rule workers, under their time
bound.

RE2 reads ``\\d``, ``\\w``, ``\\s`` and ``\\b`` as ASCII classes (Python's ``re`` as Unicode
ones); ``\\pL``, ``\\p{Greek}`` and ``\\pN`` name Unicode classes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, cast

import re2

__all__ = [
    "MAX_URL_PROGRAM",
    "Match",
    "Pattern",
    "compile_pattern",
    "compile_url_pattern",
    "show",
]

MAX_URL_PROGRAM = 1000
"""The most RE2 instructions a URL pattern compiles to (a 2 KB URL then costs at most about
12 ms; the patterns of everyday rules take 10 to 120)."""

_UNSUPPORTED = (
    "RE2 runs every pattern in linear time and so has no backreferences ('\\1'), lookaround "
    "('(?=', '(?!', '(?<=', '(?<!'), possessive ('a++') or atomic ('(?>...)') groups"
)


class Match(Protocol):
    """A match of a :class:`Pattern` (RE2's, like ``re.Match``)."""

    def group(self, group: int | str = 0, /) -> str | None: ...


class Pattern(Protocol):
    """A compiled pattern (RE2's, with ``re.Pattern``'s methods)."""

    @property
    def pattern(self) -> str: ...
    @property
    def groups(self) -> int: ...
    @property
    def groupindex(self) -> Mapping[str, int]: ...
    def search(self, text: str, /) -> Match | None: ...
    def finditer(self, text: str, /) -> Iterator[Match]: ...
    @property
    def programsize(self) -> int: ...


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported once, by its document
    return options


def compile_url_pattern(text: str) -> Pattern:
    """A pattern matched against URLs; raises ``ValueError`` as :func:`compile_pattern`, and
    for a pattern over `MAX_URL_PROGRAM` instructions."""
    pattern = compile_pattern(text)
    if pattern.programsize > MAX_URL_PROGRAM:
        raise ValueError(
            f"regex {show(text)} compiles to {pattern.programsize} RE2 instructions, over "
            f"{MAX_URL_PROGRAM}: a URL pattern is matched on every URL and its cost grows with "
            "its size (write it shorter)"
        )
    return pattern


def compile_pattern(text: str) -> Pattern:
    """A pattern matched against what a page holds; raises ``ValueError`` for a bad pattern
    or one RE2 does not run (it says why)."""
    try:
        return cast(Pattern, re2.compile(text, _options()))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        message = f"bad regex {show(text)}: {reason}"
        if _unsupported(str(reason)):
            message += f" ({_UNSUPPORTED})"
        raise ValueError(message) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"bad regex {show(text)}: {exc}") from None


def _unsupported(reason: str) -> bool:
    return any(
        part in reason
        for part in ("invalid perl operator", "bad repetition operator", "invalid escape")
    )


def show(text: str) -> str:
    """``text`` (a rule's pattern, selector or path) quoted for a one-line message: cut to
    80 characters, as a document may hold one of many kilobytes."""
    return repr(text if len(text) <= 80 else text[:77] + "...")

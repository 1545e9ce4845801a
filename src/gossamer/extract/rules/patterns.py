"""Regular expressions of rule documents, compiled once and checked for the worst of their cost.

Python's ``re`` has no time limit. What a page controls is the length of the text a pattern
reads, which the rules cap (`gossamer.extract.rules.processors.MAX_REGEX_INPUT`,
`gossamer.extract.rules.sources.MAX_REGEX_HTML`); what the rule controls is the pattern, and a
pattern that repeats an unbounded repetition (``(a+)+``, ``(\\w*\\s?)*``) can backtrack for
exponential time on a short text. Patterns that read page content are refused with such a
nesting unless the inner or outer repetition cannot backtrack (possessive ``a++``, atomic
``(?>...)``).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["compile_pattern", "compile_url_pattern"]

_parser: Any = importlib.import_module("re._parser")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT"})
_BIG = 1000
"""A bounded repetition past this many counts as unbounded."""


def compile_url_pattern(text: str) -> re.Pattern[str]:
    """A pattern matched against URLs (short, bounded); raises ``ValueError``."""
    try:
        return re.compile(text)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ValueError(f"bad regex {_show(text)}: {exc}") from None


def compile_pattern(text: str) -> re.Pattern[str]:
    """A pattern matched against page content; raises ``ValueError`` for a bad pattern or one
    whose nested repetitions can backtrack without end."""
    pattern = compile_url_pattern(text)
    if _nested(_parser.parse(text), inside=False):
        raise ValueError(
            f"regex {_show(text)} repeats a repetition (as in '(a+)+'), which can take "
            "exponential time on some pages; make one of them possessive ('a++') or atomic "
            "('(?>...)')"
        )
    return pattern


def _show(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _nested(items: Any, *, inside: bool) -> bool:
    """Whether the parsed pattern holds an unbounded repetition inside another one."""
    for op, argument in items:
        name = str(op)
        if name in _REPEATS:
            _low, high, sub = argument
            unbounded = high == _parser.MAXREPEAT or high > _BIG
            if unbounded and inside:
                return True
            if _nested(sub, inside=inside or unbounded):
                return True
        elif any(_nested(sub, inside=inside) for sub in _parts(name, argument)):
            return True
    return False


def _parts(name: str, argument: Any) -> list[Any]:
    """The subpatterns of a group, an alternation, a lookaround or a conditional (possessive
    repeats and atomic groups do not backtrack: not walked)."""
    if name == "SUBPATTERN":
        return [argument[3]]
    if name == "BRANCH":
        return list(argument[1])
    if name in ("ASSERT", "ASSERT_NOT"):
        return [argument[1]]
    if name == "GROUPREF_EXISTS":
        return [branch for branch in argument[1:] if branch is not None]
    return []

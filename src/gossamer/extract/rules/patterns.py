"""Regular expressions of rule documents, compiled once and checked for the worst of their cost.

Python's ``re`` has no time limit. What a page controls is the text a pattern reads: its URLs
(a rule's ``url`` and ``exclude``, a link rule's ``allow`` and ``deny``) and its content, whose
length the rules cap (`gossamer.extract.rules.processors.MAX_REGEX_INPUT`,
`gossamer.extract.rules.sources.MAX_REGEX_HTML`). What the rule controls is the pattern, and a
pattern that repeats an unbounded repetition (``(a+)+``, ``(\\w*\\s?)*``) can backtrack for
exponential time on a short text. Every pattern is refused with such a nesting, unless

- the inner or outer repetition cannot backtrack (possessive ``a++``, atomic ``(?>...)``), or
- a round of the outer repetition is one repetition of a single character (class) and single
  characters, one of them a literal the repetition cannot match: ``(\\w+/)*`` and
  ``(?:\\d+,)*`` are fine (a ``/``, a ``,`` ends every round), as their rounds can split
  a text one way only.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

__all__ = ["compile_pattern", "compile_url_pattern"]

_parser: Any = importlib.import_module("re._parser")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT"})
_BIG = 1000
"""A bounded repetition past this many counts as unbounded."""

_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdecimal,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdecimal(),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
}


def _in_category(category: str, char: str) -> bool:
    test = _CATEGORIES.get(category)
    return True if test is None else test(char)


def compile_url_pattern(text: str) -> re.Pattern[str]:
    """A pattern matched against URLs; raises ``ValueError`` as :func:`compile_pattern`."""
    return compile_pattern(text)


def compile_pattern(text: str) -> re.Pattern[str]:
    """A pattern matched against what a page holds; raises ``ValueError`` for a bad pattern
    or one whose nested repetitions can backtrack without end."""
    try:
        pattern = re.compile(text)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ValueError(f"bad regex {_show(text)}: {exc}") from None
    if _nested(_parser.parse(text)):
        raise ValueError(
            f"regex {_show(text)} repeats a repetition (as in '(a+)+'), which can take "
            "exponential time on some texts; make one of them possessive ('a++') or atomic "
            "('(?>...)'), or end each round with a character the inner one cannot match "
            "('(\\w+/)*')"
        )
    return pattern


def _show(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _unbounded(argument: Any) -> bool:
    _low, high, _sub = argument
    return bool(high == _parser.MAXREPEAT or high > _BIG)


def _nested(items: Any) -> bool:
    """Whether the parsed pattern holds an unbounded repetition whose rounds can split a text
    in more than one way: one with an unbounded repetition inside, not :func:`_delimited`."""
    for op, argument in items:
        name = str(op)
        if name in _REPEATS:
            sub = argument[2]
            if _unbounded(argument) and _has_unbounded(sub) and not _delimited(sub):
                return True
            if _nested(sub):
                return True
        elif any(_nested(sub) for sub in _parts(name, argument)):
            return True
    return False


def _has_unbounded(items: Any) -> bool:
    """Whether ``items`` hold an unbounded repetition (possessive and atomic ones aside)."""
    for op, argument in items:
        name = str(op)
        if name in _REPEATS and _unbounded(argument):
            return True
        subs = [argument[2]] if name in _REPEATS else _parts(name, argument)
        if any(_has_unbounded(sub) for sub in subs):
            return True
    return False


_ONE_CHARACTER = frozenset({"LITERAL", "NOT_LITERAL", "IN", "ANY", "CATEGORY"})


def _delimited(items: Any) -> bool:
    """Whether a round of ``items`` is one unbounded repetition of a single character (class)
    and characters (``\\w+/``, ``[^,]+,\\s``), one of them a literal (or a set of literals)
    that the repetition cannot match: each round ends at its delimiter and the text between
    two delimiters splits one way only."""
    flat = _flatten(items)
    repeats = [argument for op, argument in flat or [] if str(op) in _REPEATS]
    if flat is None or len(repeats) != 1:
        return False
    sub = repeats[0][2]
    if len(sub) != 1 or str(sub[0][0]) not in _ONE_CHARACTER:
        return False
    for op, argument in flat:
        name = str(op)
        if name == "LITERAL":
            chars = [chr(argument)]
        elif name == "IN" and all(str(o) == "LITERAL" for o, _a in argument):
            chars = [chr(a) for _o, a in argument]
        else:
            continue
        if not any(_can_match(sub, char) for char in chars):
            return True
    return False


def _flatten(items: Any) -> list[Any] | None:
    """``items`` with their groups opened, or None when something other than a repetition,
    a character or an anchor is in them."""
    flat: list[Any] = []
    for op, argument in items:
        name = str(op)
        if name == "SUBPATTERN":
            inner = _flatten(argument[3])
            if inner is None:
                return None
            flat.extend(inner)
        elif name in _REPEATS or name in _ONE_CHARACTER or name == "AT":
            flat.append((op, argument))
        else:
            return None
    return flat


def _can_match(items: Any, char: str) -> bool:
    """Whether ``items`` may match ``char`` (True when unsure), in either case of a letter:
    the pattern may ignore case."""
    cases = {char, char.lower(), char.upper()}
    return any(_item_matches(op, argument, c) for op, argument in items for c in cases)


def _item_matches(op: Any, argument: Any, char: str) -> bool:
    name = str(op)
    if name == "LITERAL":
        return bool(chr(argument) == char)
    if name == "NOT_LITERAL":
        return bool(chr(argument) != char)
    if name == "CATEGORY":
        return _in_category(str(argument), char)
    if name == "IN":
        negated = any(str(o) == "NEGATE" for o, _a in argument)
        inside = any(_set_member(str(o), a, char) for o, a in argument if str(o) != "NEGATE")
        return inside != negated
    if name in _REPEATS:
        return _can_match(argument[2], char)
    if name == "ATOMIC_GROUP":
        return _can_match(argument, char)
    if name == "POSSESSIVE_REPEAT":
        return _can_match(argument[2], char)
    if name in ("SUBPATTERN", "BRANCH"):
        return any(_can_match(sub, char) for sub in _parts(name, argument))
    return name not in ("AT", "ASSERT", "ASSERT_NOT")


def _set_member(name: str, argument: Any, char: str) -> bool:
    if name == "LITERAL":
        return bool(chr(argument) == char)
    if name in ("RANGE", "RANGE_UNI_IGNORE"):
        low, high = argument
        return bool(low <= ord(char) <= high)
    if name == "CATEGORY":
        return _in_category(str(argument), char)
    return True


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

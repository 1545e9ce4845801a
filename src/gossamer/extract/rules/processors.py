"""The named processors a rule field's ``process`` list applies to its value, in order.

A processor is written as its name (``"strip"``) or as an inline table whose first key is
its name and whose other keys are its options (``{regex = '(\\d+)', group = 1}``):

==================  ==========================================================================
``strip``           text without leading and trailing whitespace
``normalize_space`` whitespace runs as one space, stripped
``lower``/``upper`` text in lower or upper case
``regex``           ``{regex = 'PATTERN', group = N|"name"}``: the group of the first match
                    (default: group 1 if the pattern has groups, else the whole match); null
                    when nothing matches. Reads the first `MAX_REGEX_INPUT` characters.
``replace``         ``{replace = "OLD", with = "NEW"}``: every OLD (literal text) as NEW
                    (default: removed)
``join``            a list as one text, its items joined by the separator (``{join = ", "}``;
                    ``"join"`` joins with one space); nulls are left out
``split``           text as a list split on the separator (``{split = ","}``; ``"split"``
                    splits on whitespace), each part stripped, empty parts left out
``int``             an integer from text such as ``"42"``, ``" -7 "`` or ``"1,234"`` (commas
                    between thousands)
``float``           a finite number from text such as ``"3.5"``, ``"-1e3"``, ``"1,234.5"``
``date``            a date (``2024-05-01``) or date-time (``2024-05-01T10:00:00+00:00``) in ISO
                    8601, from ISO 8601, RFC 2822 (``Wed, 01 May 2024 10:00:00 GMT``) or
                    ``1 May 2024`` / ``May 1, 2024`` (English month names);
                    ``{date = "%d/%m/%Y"}`` reads a ``strptime`` format instead
``absolute_url``    a reference resolved against the page's base URL (null unless http(s))
``first``/``last``  the first or last item of a list (null for an empty list)
``default``         ``{default = VALUE}``: VALUE instead of null, ``""`` or ``[]``
``call``            ``{call = "NAME"}``: the Python function the settings register as NAME
                    (``rule_functions``), called with the value; what it returns must be JSON
==================  ==========================================================================

Bounds: a processor's output is at most `MAX_FIELD_CHARS` characters of text (a text, or a
list's items together) and a list at most `MAX_LIST_ITEMS` items; ``replace``, ``join`` and
``split`` compute the size of their output before they build it. Past a bound the processor
raises :class:`ProcessorError`, as for a value it cannot convert.

Text processors (strip ... absolute_url) apply to each item of a list and leave nulls as they
are; ``split`` on a list splits each item and joins the parts into one list; ``join``, ``first``,
``last``, ``default`` and ``call`` take the whole value. A processor that cannot do its work
(``int`` of ``"abc"``, ``lower`` of a number) raises :class:`ProcessorError`: the evaluation
records it for the page and the value becomes null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from gossamer.extract.rules.patterns import Pattern, compile_pattern, show
from gossamer.safe import safe_text
from gossamer.urls import Resolver

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_REGEX_INPUT",
    "PROCESSORS",
    "Processor",
    "ProcessorError",
    "RuleFunction",
    "compile_processors",
    "json_value",
    "value_chars",
]

MAX_REGEX_INPUT = 1 << 20
"""The characters of a value a ``regex`` processor reads (a pattern's cost grows with them)."""

MAX_FIELD_CHARS = 4 << 20
"""The most characters of text one field's value holds (its list's items together)."""
MAX_LIST_ITEMS = 10_000
"""The most items a list value holds."""

RuleFunction = Callable[[Any], Any]
"""A function registered in the settings' ``rule_functions``: value in, JSON value out."""


class ProcessorError(ValueError):
    """A processor could not turn the value it was given; the message says why (short)."""


@dataclass(frozen=True, slots=True)
class Processor:
    """One compiled step of a field's ``process`` list."""

    name: str
    apply: Callable[[Any, str], Any]
    """(value, page base URL) -> value."""

    def __call__(self, value: Any, base_url: str) -> Any:
        output = self.apply(value, base_url)
        if isinstance(output, list) and len(output) > MAX_LIST_ITEMS:
            raise ProcessorError(f"{self.name}: {len(output)} items, over {MAX_LIST_ITEMS}")
        if value_chars(output, MAX_FIELD_CHARS) > MAX_FIELD_CHARS:
            raise ProcessorError(f"{self.name}: output over {MAX_FIELD_CHARS} characters")
        return output


def value_chars(value: Any, limit: int) -> int:
    """The characters of text in ``value`` (a JSON value; 8 for a number, a bool or null),
    counted until they pass ``limit``."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            total += 8
    return total


def _over(name: str, size: int) -> ProcessorError:
    return ProcessorError(f"{name}: output of {size} characters, over {MAX_FIELD_CHARS}")


def _text(name: str, function: Callable[[str], Any]) -> Callable[[Any, str], Any]:
    """A processor of text, applied to each item of a list; nulls pass through."""

    def one(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ProcessorError(f"{name} expects text, got {_kind(value)}")
        return function(value)

    def apply(value: Any, base_url: str) -> Any:
        if not isinstance(value, list):
            return one(value)
        done = []
        size = 0
        for item in value:
            done.append(one(item))
            size += value_chars(done[-1], MAX_FIELD_CHARS)
            if size > MAX_FIELD_CHARS:  # each item within bounds, all of them not
                raise ProcessorError(f"{name}: output over {MAX_FIELD_CHARS} characters")
        return done

    return apply


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_INT = re.compile(r"[+-]?\d{1,100}")
_FLOAT = re.compile(r"[+-]?(?:\d{1,100}(?:\.\d{0,100})?|\.\d{1,100})(?:[eE][+-]?\d{1,4})?")
_GROUPED = re.compile(r"([+-]?\d{1,3}(?:,\d{3}){1,30})(\.\d{0,100})?")
"""A number with commas between its thousands (``1,234``, ``-12,345.5``)."""


def _number_text(text: str) -> str:
    """``text`` stripped, without the commas of thousands grouping."""
    text = text.strip()
    grouped = _GROUPED.fullmatch(text)
    return text.replace(",", "") if grouped else text


def _to_int(value: Any, base_url: str) -> Any:
    def one(item: Any) -> int | None:
        if item is None:
            return None
        if isinstance(item, bool):
            raise ProcessorError(f"int cannot read {_short(item)}")
        if isinstance(item, int):
            return item
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, str) and _INT.fullmatch(_number_text(item)):
            return int(_number_text(item))
        raise ProcessorError(f"int cannot read {_short(item)}")

    return [one(item) for item in value] if isinstance(value, list) else one(value)


def _to_float(value: Any, base_url: str) -> Any:
    def one(item: Any) -> float | None:
        if item is None:
            return None
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            if math.isfinite(item):
                return float(item)
        elif isinstance(item, str) and _FLOAT.fullmatch(_number_text(item)):
            number = float(_number_text(item))
            if math.isfinite(number):
                return number
        raise ProcessorError(f"float cannot read {_short(item)}")

    return [one(item) for item in value] if isinstance(value, list) else one(value)


_DATE_FORMATS = ("%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y")


def _iso_date(text: str, formats: Sequence[str]) -> str:
    """``text`` as an ISO 8601 date or date-time; raises ProcessorError."""
    cleaned = " ".join(text.split())[:100]
    if formats is _DATE_FORMATS:
        iso = _auto_date(cleaned)
        if iso is not None:
            return iso
    for pattern in formats:
        try:
            parsed = datetime.strptime(cleaned, pattern)
        except ValueError:
            continue
        if not any(code in pattern for code in ("%H", "%I", "%M", "%S", "%z")):
            return parsed.date().isoformat()
        return parsed.isoformat()
    raise ProcessorError(f"date cannot read {_short(text)}")


def _auto_date(text: str) -> str | None:
    """ISO 8601 or RFC 2822, or None."""
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    if len(iso) == 10:
        try:
            return date.fromisoformat(iso).isoformat()
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(iso.replace(" ", "T", 1)).isoformat()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(text).isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def _date_format(pattern: str) -> str:
    """``pattern`` if ``strptime`` can read text with it; raises ``ValueError`` saying why
    not (an unknown directive, a stray ``%``, a directive given twice)."""
    try:
        datetime.strptime("", pattern)
    except ValueError as exc:
        if not str(exc).startswith("time data"):  # the format's fault, not the text's
            raise ValueError(f"date: bad format {show(pattern)}: {str(exc)[:200]}") from None
    except re.error as exc:  # '%Y%Y': strptime's own regex of the format does not compile
        reason = f"{exc} (each directive may appear once)"
        raise ValueError(f"date: bad format {show(pattern)}: {reason}") from None
    return pattern


def _date(formats: Sequence[str]) -> Callable[[Any, str], Any]:
    return _text("date", lambda text: _iso_date(text, formats))


def _regex(pattern: Pattern, group: int | str) -> Callable[[Any, str], Any]:
    def find(text: str) -> str | None:
        match = pattern.search(text[:MAX_REGEX_INPUT])
        return None if match is None else match.group(group)

    return _text("regex", find)


def _join(separator: str) -> Callable[[Any, str], Any]:
    def apply(value: Any, base_url: str) -> Any:
        if not isinstance(value, list):
            return value
        if not all(isinstance(item, str) or item is None for item in value):
            raise ProcessorError("join expects a list of text")
        texts = [item for item in value if item is not None]
        size = sum(map(len, texts)) + len(separator) * max(0, len(texts) - 1)
        if size > MAX_FIELD_CHARS:
            raise _over("join", size)
        return separator.join(texts)

    return apply


def _replace(old: str, new: str) -> Callable[[str], str]:
    def replace(text: str) -> str:
        if len(new) > len(old):
            size = len(text) + text.count(old) * (len(new) - len(old))
            if size > MAX_FIELD_CHARS:
                raise _over("replace", size)
        return text.replace(old, new)

    return replace


def _split(separator: str | None) -> Callable[[Any, str], Any]:
    def parts(text: Any) -> list[str]:
        if text is None:
            return []
        if not isinstance(text, str):
            raise ProcessorError(f"split expects text, got {_kind(text)}")
        pieces = text.split(separator, MAX_LIST_ITEMS)
        if len(pieces) > MAX_LIST_ITEMS:
            raise ProcessorError(f"split: more than {MAX_LIST_ITEMS} parts")
        return [part.strip() for part in pieces if part.strip()]

    def apply(value: Any, base_url: str) -> Any:
        if not isinstance(value, list):
            return parts(value) if value is not None else None
        done: list[str] = []
        for item in value:
            done.extend(parts(item))
            if len(done) > MAX_LIST_ITEMS:
                raise ProcessorError(f"split: more than {MAX_LIST_ITEMS} parts")
        return done

    return apply


def _absolute(value: Any, base_url: str) -> Any:
    resolver = Resolver(base_url)
    return _text("absolute_url", resolver.resolve)(value, base_url)


def _first(value: Any, base_url: str) -> Any:
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _last(value: Any, base_url: str) -> Any:
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def _default(replacement: Any) -> Callable[[Any, str], Any]:
    def apply(value: Any, base_url: str) -> Any:
        return replacement if value is None or value == "" or value == [] else value

    return apply


def _call(name: str, function: RuleFunction) -> Callable[[Any, str], Any]:
    def apply(value: Any, base_url: str) -> Any:
        try:
            returned = function(value)
        except Exception as exc:
            raise ProcessorError(f"call {name!r} raised {type(exc).__name__}") from exc
        try:
            return json_value(returned)
        except ValueError:
            raise ProcessorError(f"call {name!r} returned {_kind(returned)}, not JSON") from None

    return apply


def json_value(value: Any) -> Any:
    """``value`` as plain JSON (dicts, lists, str, int, finite float, bool, None) with text
    that encodes to UTF-8; raises ``ValueError`` for anything else."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError("not JSON") from exc
    return json.loads(safe_text(text))


_SIMPLE: dict[str, Callable[[Any, str], Any]] = {
    "strip": _text("strip", str.strip),
    "normalize_space": _text("normalize_space", lambda text: " ".join(text.split())),
    "lower": _text("lower", str.lower),
    "upper": _text("upper", str.upper),
    "join": _join(" "),
    "split": _split(None),
    "int": _to_int,
    "float": _to_float,
    "date": _date(_DATE_FORMATS),
    "absolute_url": _absolute,
    "first": _first,
    "last": _last,
}
"""Processors written by name alone."""

_OPTIONS: dict[str, frozenset[str]] = {
    "regex": frozenset({"group"}),
    "replace": frozenset({"with"}),
    "join": frozenset(),
    "split": frozenset(),
    "date": frozenset(),
    "default": frozenset(),
    "call": frozenset(),
}
"""Processors written as a table, with the options each takes besides its own key."""

PROCESSORS = tuple(sorted({*_SIMPLE, *_OPTIONS}))
"""Every processor's name."""


def compile_processors(
    specs: Sequence[Any], functions: Mapping[str, RuleFunction]
) -> tuple[Processor, ...]:
    """The processors of a ``process`` list; raises ``ValueError`` naming the bad entry
    (``process[2]: ...``). ``functions`` are those ``call`` may name."""
    compiled = []
    for index, spec in enumerate(specs):
        try:
            compiled.append(_compile(spec, functions))
        except ValueError as exc:
            raise ValueError(f"process[{index}]: {exc}") from None
    return tuple(compiled)


def _compile(spec: Any, functions: Mapping[str, RuleFunction]) -> Processor:
    if isinstance(spec, str):
        if spec in _SIMPLE:
            return Processor(spec, _SIMPLE[spec])
        if spec in _OPTIONS:
            raise ValueError(f"{spec} needs options: write it as {{{spec} = ...}}")
        raise ValueError(f"unknown processor {spec!r} (known: {', '.join(PROCESSORS)})")
    if not isinstance(spec, dict) or not spec:
        raise ValueError("a processor is a name or an inline table such as {regex = '...'}")
    name = next(iter(spec))
    if name not in _OPTIONS:
        raise ValueError(f"unknown processor {name!r} (known: {', '.join(PROCESSORS)})")
    stray = sorted(set(spec) - {name} - _OPTIONS[name])
    if stray:
        raise ValueError(f"{name}: unknown option {stray[0]!r}")
    return Processor(name, _with_options(name, spec, functions))


def _with_options(
    name: str, spec: dict[str, Any], functions: Mapping[str, RuleFunction]
) -> Callable[[Any, str], Any]:
    argument = spec[name]
    if name == "default":
        try:
            return _default(json_value(argument))
        except ValueError:
            raise ValueError(f"default: {_kind(argument)} is not a JSON value") from None
    if name == "split" and argument is None:
        return _split(None)
    if not isinstance(argument, str):
        raise ValueError(f"{name}: expected text, got {_kind(argument)}")
    if name == "regex":
        return _regex_processor(argument, spec.get("group"))
    if name == "replace":
        replacement = spec.get("with", "")
        if not isinstance(replacement, str):
            raise ValueError(f"replace: 'with' must be text, got {_kind(replacement)}")
        return _text("replace", _replace(argument, replacement))
    if name == "join":
        return _join(argument)
    if name == "split":
        if not argument:
            raise ValueError("split: the separator is empty")
        return _split(argument)
    if name == "date":
        return _date((_date_format(argument),))
    if argument not in functions:
        known = ", ".join(sorted(functions)) or "none"
        raise ValueError(f"call: no function {argument!r} in rule_functions (known: {known})")
    return _call(argument, functions[argument])


def _regex_processor(pattern_text: str, group: Any) -> Callable[[Any, str], Any]:
    pattern = compile_pattern(pattern_text)
    if group is None:
        group = 1 if pattern.groups else 0
    if isinstance(group, bool) or not isinstance(group, (int, str)):
        raise ValueError(f"regex: group must be a number or a name, got {_kind(group)}")
    if isinstance(group, int) and not 0 <= group <= pattern.groups:
        raise ValueError(f"regex: no group {group} in {show(pattern_text)}")
    if isinstance(group, str) and group not in pattern.groupindex:
        raise ValueError(f"regex: no group named {show(group)} in {show(pattern_text)}")
    return _regex(pattern, group)

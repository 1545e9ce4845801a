"""The one reader of the UI's JSON request bodies: bounded in size and depth, strict UTF-8,
no lone surrogates, no ``NaN``/``Infinity``; anything else is a 400 (413 when too large)
with one line saying why.

A browser (or anything that got past the token) can send any bytes: Python's ``json``
module recurses once per nesting level (a 20,000-deep body raised ``RecursionError``) and
accepts ``"\\ud800"``, a string UTF-8 cannot hold (a rule saved under such a name failed
when its document was written). Both are stopped here, before a handler sees the value.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "BodyError", "parse_json", "read_json"]

MAX_BODY_BYTES = 64 * 1024
"""The largest body read (the application's ``client_max_size`` too)."""
MAX_DEPTH = 32
"""Arrays and objects nested deeper than this are refused (a rule document needs ~6)."""
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class BodyError(ValueError):
    """A body that is not acceptable JSON; the message says why, in one line."""


def parse_json(raw: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``raw``; BodyError when it is not UTF-8, not JSON, nested deeper
    than ``max_depth``, or holds a lone surrogate or a non-finite number."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError("the body is not UTF-8") from None
    if _depth(raw) > max_depth:
        raise BodyError(f"the JSON is nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:  # unreachable past the depth check; kept as a last guard
        raise BodyError(f"the JSON is nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, over-long integers
        raise BodyError(f"the body is not valid JSON: {str(exc)[:120]}") from None
    _check_strings(value)
    return value


async def read_json(request: web.Request) -> Any:
    """The request's JSON body through :func:`parse_json`; HTTPBadRequest (400) for a bad
    one, HTTPRequestEntityTooLarge (413) past :data:`MAX_BODY_BYTES`."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise web.HTTPRequestEntityTooLarge(MAX_BODY_BYTES, request.content_length)
    raw = await request.read()  # bounded by the application's client_max_size too
    if len(raw) > MAX_BODY_BYTES:
        raise web.HTTPRequestEntityTooLarge(MAX_BODY_BYTES, len(raw))
    try:
        return parse_json(raw)
    except BodyError as exc:
        raise web.HTTPBadRequest(text=f"{exc}\n") from None


def _depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in ``raw``, strings skipped (a linear scan
    that recurses nowhere)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSE:
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent; ``1e999999`` overflows to infinity, which
    ``NaN``/``Infinity`` being refused must not let in by another spelling."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is too large for a number")
    return value


def _check_strings(value: Any) -> None:
    """BodyError if a string of ``value`` (a key or a value) holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _utf8(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                _utf8(key)
                stack.append(inner)


def _utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BodyError(
            "a JSON string holds a lone surrogate (\\ud800-\\udfff without its pair)"
        ) from None

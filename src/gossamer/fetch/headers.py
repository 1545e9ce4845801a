"""Response headers made safe where they enter: the header map of a result, its Content-Type
and Retry-After."""

from __future__ import annotations

import email.utils
import re
from collections.abc import Mapping
from datetime import UTC
from types import MappingProxyType

from multidict import CIMultiDictProxy

from gossamer.safe import safe_text

__all__ = ["header_map", "parse_content_type", "parse_retry_after"]

_TOKEN_CHARS = r"[!#$%&'*+.^_`|~0-9a-z-]"
_MIME = re.compile(f"{_TOKEN_CHARS}{{1,127}}/{_TOKEN_CHARS}{{1,127}}")
_CHARSET = re.compile(f"{_TOKEN_CHARS}{{1,64}}")


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """Split a Content-Type header into (lower-case mime type, lower-case charset).

    Either is None unless it is well formed (``type/subtype`` of RFC 9110 token characters; a
    charset of token characters, at most 64): a hostile header yields no value, never an odd
    one.
    """
    if not value:
        return None, None
    mime, _, params = value.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'").strip().lower() or None
            break
    mime = mime.strip().lower()
    if charset is not None and not _CHARSET.fullmatch(charset):
        charset = None
    return (mime if _MIME.fullmatch(mime) else None), charset


def parse_retry_after(value: str | None, now: float, date: str | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or None.

    An HTTP-date is measured against the response's ``Date`` header when it parses (so
    clock skew between us and the server does not matter), else against ``now`` (unix time).
    Dates in the past give 0.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    when = _http_date(value)
    if when is None:
        return None
    reference = _http_date(date) if date else None
    return max(0.0, when - (now if reference is None else reference))


def _http_date(value: str) -> float | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


_LINE_JOINED = frozenset({"set-cookie", "x-robots-tag"})
"""Headers whose repeated values are joined one per line, not by commas: a cookie's date
holds a comma, and an ``X-Robots-Tag`` user-agent prefix holds to the end of its header."""


def header_map(raw: CIMultiDictProxy[str]) -> Mapping[str, str]:
    """The headers, names lower-cased, names and values made valid text (`safe_text`)."""
    headers: dict[str, str] = {}
    for name, value in raw.items():
        key = safe_text(name.lower())
        value = safe_text(value)
        previous = headers.get(key)
        if previous is None:
            headers[key] = value
        else:
            headers[key] = f"{previous}{chr(10) if key in _LINE_JOINED else ', '}{value}"
    return MappingProxyType(headers)

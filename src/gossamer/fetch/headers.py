"""Response headers made safe where they enter: the header map of a result, its Content-Type
and Retry-After; and the validators a revisit sends back (`conditional_headers`). The
``email`` package's date parser (15 M instructions of imports, 2% of a crawl's start-up) is
loaded by the first HTTP-date read: a Retry-After, a revisit's validator."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC
from types import MappingProxyType

from gossamer.safe import safe_text

__all__ = [
    "conditional_headers",
    "header_map",
    "parse_content_type",
    "parse_retry_after",
    "raw_header_map",
    "retry_after",
]

_TOKEN_CHARS = r"[!#$%&'*+.^_`|~0-9a-z-]"
_MIME = re.compile(f"{_TOKEN_CHARS}{{1,127}}/{_TOKEN_CHARS}{{1,127}}")
_CHARSET = re.compile(f"{_TOKEN_CHARS}{{1,64}}")
_ETAG = re.compile(r"[\x21-\x7e]{1,512}")
"""An ETag sent back: visible ASCII, no space or control, at most 512 characters (RFC 9110's
etagc, less obs-text; an unquoted one is sent as it came, as browsers do)."""


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """Split a Content-Type header into (lower-case mime type, lower-case charset).

    Either is None unless it is well formed (``type/subtype`` of RFC 9110 token characters; a
    charset of token characters, at most 64): a hostile header yields no value, never an odd
    one. A crawl meets few distinct values: the last short ones parsed are remembered.
    """
    if not value:
        return None, None
    if len(value) <= _CACHED_LENGTH:
        return _cached_content_type(value)
    return _content_type(value)


_CACHED_LENGTH = 256
"""Longest header value whose parse is remembered (what the caches hold stays small)."""


@functools.lru_cache(maxsize=512)
def _cached_content_type(value: str) -> tuple[str | None, str | None]:
    return _content_type(value)


def _content_type(value: str) -> tuple[str | None, str | None]:
    if "," in value:
        return _combined_content_type(value)
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


def _combined_content_type(value: str) -> tuple[str | None, str | None]:
    """Content-Type sent on several lines (or as a list), read as the Fetch Standard's
    "extract a MIME type" reads it: the last valid type counts; a charset carries over from an
    earlier value of the same type when the later one names none."""
    mime: str | None = None
    charset: str | None = None
    for part in value.split(","):
        found, found_charset = _content_type(part)
        if found is None or found == "*/*":
            continue
        if found != mime:
            mime, charset = found, found_charset
        elif found_charset is not None:
            charset = found_charset
    return mime, charset


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


def retry_after(header: Callable[[bytes], str | None], now: float) -> float | None:
    """`parse_retry_after` of a response whose first header values ``header`` gives (by
    lower-case name); its ``Date`` is read only when it has a ``Retry-After``."""
    value = header(b"retry-after")
    return None if value is None else parse_retry_after(value, now, header(b"date"))


def _http_date(value: str) -> float | None:
    import email.utils

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


def header_map(raw: Iterable[tuple[str, str]]) -> Mapping[str, str]:
    """The headers (name and value pairs), names lower-cased, names and values made valid
    text (`safe_text`)."""
    headers: dict[str, str] = {}
    for name, value in raw:
        key = name.lower()
        if not (key.isascii() and value.isascii()):  # ASCII is valid text as it is
            key, value = safe_text(key), safe_text(value)
        _add(headers, key, value)
    return MappingProxyType(headers)


def raw_header_map(raw: Iterable[tuple[bytes, bytes]], names: Iterable[bytes]) -> Mapping[str, str]:
    """`header_map` of headers as received (bytes; ``names``: theirs, lower-cased): the same
    map, without first making text of every name and value that is ASCII already (most
    are)."""
    headers: dict[str, str] = {}
    for (name, value), lower in zip(raw, names, strict=True):
        if lower.isascii() and value.isascii():
            key, text = lower.decode("ascii"), value.decode("ascii")
        else:
            key = safe_text(name.decode("utf-8", "surrogateescape").lower())
            text = safe_text(value.decode("utf-8", "surrogateescape"))
        _add(headers, key, text)
    return MappingProxyType(headers)


def _add(headers: dict[str, str], key: str, value: str) -> None:
    """One header into ``headers``: a repeated name's values joined (`_LINE_JOINED`)."""
    previous = headers.get(key)
    if previous is None:
        headers[key] = value
    else:
        headers[key] = f"{previous}{chr(10) if key in _LINE_JOINED else ', '}{value}"


def conditional_headers(validators: Mapping[str, str] | None) -> dict[str, str] | None:
    """The conditional request headers of ``validators`` (stored ``If-None-Match`` and
    ``If-Modified-Since`` values, as a server sent them) that may go out: an ETag of visible
    ASCII (`_ETAG`), and a date that parses as an HTTP-date, sent as an IMF-fixdate. A value
    that is neither (non-ASCII, a header fragment, a date with trailing bytes, one past year
    9999 in UTC) is left out:
    the request is then less conditional, never malformed. None when nothing is left."""
    if not validators:
        return None
    headers: dict[str, str] = {}
    etag = validators.get("If-None-Match")
    if etag is not None and _ETAG.fullmatch(etag):
        headers["If-None-Match"] = etag
    since = validators.get("If-Modified-Since")
    date = _imf_fixdate(since) if since is not None else None
    if date is not None:
        headers["If-Modified-Since"] = date
    return headers or None


def _imf_fixdate(value: str) -> str | None:
    """``value`` as an IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``) if it is an HTTP-date
    of ASCII alone (any of RFC 9110's three forms), else None."""
    if not value.isascii() or len(value) > 64 or not value.isprintable():
        return None
    import email.utils

    try:
        parsed = email.utils.parsedate_to_datetime(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        parsed = parsed.astimezone(UTC)  # past year 9999 in UTC (``31 Dec 9999 23:00 -0100``)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return email.utils.format_datetime(parsed, usegmt=True)

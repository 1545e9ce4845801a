"""Making values read from the network safe to keep: valid Unicode, bounded, printable.

aiohttp decodes header bytes with ``surrogateescape``, so a header holding bytes that are not
UTF-8 arrives as a string with lone surrogates that no UTF-8 writer (SQLite, JSON lines,
PostgreSQL) accepts. Every value that reaches a record passes through here first.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["safe_location", "safe_text"]

_LOCATION_SAFE = "/?#[]@!$&'()*+,;=:%-._~"


def safe_text(value: str) -> str:
    """``value`` as text that encodes to UTF-8: undecodable bytes (``surrogateescape``) and
    other lone surrogates become U+FFFD. Clean text comes back unchanged (one check)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode(
            "utf-8", "surrogateescape" if _escaped_only(value) else "replace"
        ).decode("utf-8", "replace")
    return value


def _escaped_only(value: str) -> bool:
    """Whether every surrogate in ``value`` stands for one byte (U+DC80-U+DCFF)."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in value)


def safe_location(value: str) -> str:
    """A ``Location`` header as an ASCII URL reference: the bytes the server sent (UTF-8 for
    text, raw for undecodable bytes) percent-encoded where they are not ASCII, as browsers
    do; control characters are encoded too."""
    if value.isascii() and value.isprintable():
        return value
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = value.encode("utf-8", "replace")
    return quote(raw, safe=_LOCATION_SAFE)

"""Making values read from the network safe to keep: valid Unicode, bounded, printable.

aiohttp decodes header bytes with ``surrogateescape``, so a header holding bytes that are not
UTF-8 arrives as a string with lone surrogates that no UTF-8 writer (SQLite, JSON lines,
PostgreSQL) accepts. Every value that reaches a record passes through here first, and every
JSON line written passes through `json_line`: JSON encoders leave U+0085, U+2028 and U+2029
raw, and line readers that split on them (Python's ``str.splitlines``, JavaScript before
ES2019) would cut the line there.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["json_line", "json_lines", "safe_location", "safe_text"]

_LOCATION_SAFE = "/?#[]@!$&'()*+,;=:%-._~"
_LINE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
"""The line breaks JSON encoders leave raw in a string, and their JSON escapes."""


def safe_text(value: str) -> str:
    """``value`` as text that encodes to UTF-8: undecodable bytes (``surrogateescape``) and
    other lone surrogates become U+FFFD. Clean text comes back unchanged (one check)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _utf8(value).decode("utf-8", "replace")
    return value


def json_line(text: str) -> str:
    """A JSON text as one line for every line reader: U+0085, U+2028 and U+2029 (only ever
    inside its strings) written as JSON escapes, so it reads back the same. ASCII text comes
    back unchanged at once; other text costs a scan for each."""
    if text.isascii():
        return text
    for char, escape in _LINE_BREAKS:
        if char in text:
            text = text.replace(char, escape)
    return text


_LINE_BREAKS_UTF8 = tuple(
    (char.encode()[-1:], char.encode(), escape.encode()) for char, escape in _LINE_BREAKS
)
"""Each line break's last UTF-8 byte, its UTF-8 bytes and its escape."""


def json_lines(lines: bytearray) -> bytearray:
    """JSON lines in UTF-8 as `json_line` leaves text: U+0085, U+2028 and U+2029 escaped
    (ASCII lines come back at once; no other character's UTF-8 bytes hold theirs).

    A line break's bytes are searched for only where its last byte is found: a search for one
    byte is ``memchr``, some fifty times faster than one for two or three (4 and 2 ms a MB
    here); the pages of the real-pages web, 25 MB of JSON lines, took 20 ms instead of 55."""
    if lines.isascii():
        return lines
    for last, raw, escape in _LINE_BREAKS_UTF8:
        if last in lines and raw in lines:
            lines = lines.replace(raw, escape)
    return lines


def _utf8(value: str) -> bytes:
    """The bytes ``value`` stands for: UTF-8, with each escaped byte (U+DC80-U+DCFF, from
    ``surrogateescape``) as that byte and any other surrogate as U+FFFD (the ``replace``
    error handler of ``encode`` would write ``?``, a URL's query delimiter)."""
    if any(map(_lone, value)):
        value = "".join("\ufffd" if _lone(c) else c for c in value)
    return value.encode("utf-8", "surrogateescape")


def _lone(char: str) -> bool:
    """A surrogate that does not stand for an escaped byte."""
    return 0xD800 <= ord(char) <= 0xDFFF and not 0xDC80 <= ord(char) <= 0xDCFF


def safe_location(value: str) -> str:
    """A ``Location`` header as an ASCII URL reference: the bytes the server sent (UTF-8 for
    text, raw for undecodable bytes) percent-encoded where they are not ASCII, as browsers
    do; control characters are encoded too."""
    if value.isascii() and value.isprintable():
        return value
    return quote(_utf8(value), safe=_LOCATION_SAFE)

"""Pick the character encoding of a fetched HTML body, in the order a browser does.

The order follows the HTML Standard's "encoding sniffing algorithm": a byte order mark, then the
charset of the HTTP ``Content-Type`` header, then a ``<meta charset>`` or ``<meta http-equiv=
"content-type">`` declaration near the start of the document, then a guess from the bytes, then
a default. w3lib implements the declaration steps; this module adds the guess and keeps every
answer inside the set of encodings the Encoding Standard knows, so a header such as
``charset=base64`` can neither crash the decoder nor smuggle in a non-text codec.

Guessing an undeclared encoding: text whose first 32 KiB are valid UTF-8 is UTF-8 (pure ASCII
included). Other bytes go to ``charset_normalizer``, limited to the web's encodings, which tells
windows-1251, KOI8-R, Shift_JIS, EUC-JP, GB18030, Big5, EUC-KR, Greek, Central European etc.
apart on pages with a few hundred bytes of text; it costs 5-30 ms, paid only by undeclared
non-UTF-8 pages. When it cannot decide, windows-1252 (the default of most browser locales) is
used; short or mixed snippets can still be misread, never with an error.
"""

from __future__ import annotations

import codecs
from typing import Literal, NamedTuple

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
    to_unicode,
)

__all__ = [
    "DEFAULT_ENCODING",
    "DetectedEncoding",
    "EncodingSource",
    "decode_body",
    "detect_encoding",
    "sniff_encoding",
]

DEFAULT_ENCODING = "cp1252"
"""The encoding of a document that declares none and is not UTF-8 (WHATWG windows-1252)."""

SNIFF_BYTES = 32 * 1024
"""How much of an undeclared body is inspected to guess its encoding."""
_TIE = 0.01

EncodingSource = Literal["bom", "header", "meta", "sniffed", "default"]

# Python codec names of the encodings in the WHATWG Encoding Standard (as w3lib resolves their
# labels), plus the UTF-32 byte order marks w3lib recognises. Anything else is ignored like an
# unknown label. ISO-2022-KR, HZ and friends are "replacement" encodings there, so not listed.
_ENCODING_NAMES = """
    utf-8 utf-16-le utf-16-be utf-32-le utf-32-be cp866 iso8859-2 iso8859-3 iso8859-4
    iso8859-5 iso8859-6 iso8859-7 iso8859-8 iso8859-10 iso8859-13 iso8859-14 iso8859-15
    iso8859-16 koi8-r koi8-u mac-roman mac-cyrillic cp874 cp1250 cp1251 cp1252 cp1253 cp1254
    cp1255 cp1256 cp1257 cp1258 gb18030 big5hkscs euc_jp iso2022_jp cp932 cp949
"""
_WEB_ENCODINGS = frozenset(_ENCODING_NAMES.split())

_UNICODE = frozenset({"utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"})
_DETECTOR_CANDIDATES = sorted(_WEB_ENCODINGS - _UNICODE | {"big5"})

# WHATWG labels that w3lib does not resolve.
_EXTRA_LABELS = {
    "iso-8859-8-i": "iso8859-8",
    "csiso88598i": "iso8859-8",
    "logical": "iso8859-8",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-ukrainian": "mac-cyrillic",
    "unicode-1-1-utf-8": "utf-8",
    "unicode11utf8": "utf-8",
    "unicode20utf8": "utf-8",
    "x-unicode20utf8": "utf-8",
    "cseuckr": "cp949",
    "windows-949": "cp949",
    "x-cp1250": "cp1250",
    "x-cp1251": "cp1251",
    "x-user-defined": "cp1252",
    # names charset_normalizer may answer with
    "euc_jis_2004": "euc_jp",
    "euc_jisx0213": "euc_jp",
    "shift_jis_2004": "cp932",
    "shift_jisx0213": "cp932",
}


class DetectedEncoding(NamedTuple):
    """The encoding chosen for a body, where the choice came from, and the BOM to skip."""

    encoding: str
    """Python codec name, e.g. ``"utf-8"``, ``"cp1251"``, ``"cp932"`` (Shift_JIS)."""
    source: EncodingSource
    bom_length: int = 0


def web_encoding(label: str | None) -> str | None:
    """Map an encoding label to a Python codec name, or ``None`` if browsers do not know it."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    name = _EXTRA_LABELS.get(label) or resolve_encoding(label)
    if name == "utf-16":  # the "utf-16" label is UTF-16LE in the Encoding Standard
        name = "utf-16-le"
    return name if name in _WEB_ENCODINGS else None


def _looks_like_utf8(sample: bytes) -> bool:
    if sample.isascii():
        return True
    try:
        # final=False: a sample cut inside a multi-byte character is still UTF-8.
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _detect_legacy(sample: bytes) -> str | None:
    """charset_normalizer's guess among the web encodings, or ``None``.

    Single-byte Latin encodings often decode a page equally well (charset_normalizer ranks
    windows-1250 first for plain French or German); windows-1252, the browsers' default, wins
    such ties.
    """
    from charset_normalizer import from_bytes  # imported by the first page that needs a guess

    matches = from_bytes(sample, cp_isolation=_DETECTOR_CANDIDATES)
    best = matches.best()
    if best is None:
        return None
    close = [
        match
        for match in matches
        if match.chaos <= best.chaos + _TIE and match.coherence >= best.coherence - _TIE
    ]
    if any("cp1252" in match.could_be_from_charset for match in close):
        return "cp1252"
    for match in close:
        for name in match.could_be_from_charset:
            if (encoding := web_encoding(name)) is not None:
                return encoding
    return None


def sniff_encoding(body: bytes) -> tuple[str, EncodingSource]:
    """Guess the encoding of an undeclared body: UTF-8 if its start is valid UTF-8, else
    charset_normalizer's guess among the web encodings, else windows-1252."""
    sample = body[:SNIFF_BYTES]
    if _looks_like_utf8(sample):
        return "utf-8", "sniffed"
    try:
        guess = _detect_legacy(sample)
    except Exception:  # a detector bug must not lose the page
        guess = None
    if guess is not None:
        return guess, "sniffed"
    return DEFAULT_ENCODING, "default"


def detect_encoding(
    body: bytes, header_charset: str | None = None, content_type: str | None = None
) -> DetectedEncoding:
    """Choose the encoding of an HTML body: BOM, then the HTTP charset (``header_charset``, or
    the one in the raw ``content_type`` header), then ``<meta>`` in the first 4 KiB, then a
    guess (see :func:`sniff_encoding`)."""
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None and bom is not None:
        return DetectedEncoding(bom_encoding, "bom", len(bom))
    declared = web_encoding(header_charset)
    if declared is None and content_type:
        declared = web_encoding(http_content_type_encoding(content_type))
    if declared is not None:
        return DetectedEncoding(declared, "header")
    declared = web_encoding(html_body_declared_encoding(body))
    if declared is not None:
        # A <meta> read as ASCII cannot truthfully declare UTF-16 (HTML Standard, prescan).
        if declared.startswith(("utf-16", "utf-32")):
            declared = "utf-8"
        return DetectedEncoding(declared, "meta")
    encoding, source = sniff_encoding(body)
    return DetectedEncoding(encoding, source)


def decode_body(
    body: bytes, header_charset: str | None, content_type: str | None
) -> tuple[str, str]:
    """Decode an HTML body to text; returns ``(text, encoding used)``.

    Never raises: undecodable bytes become U+FFFD and NUL bytes are kept as they are.
    """
    detected = detect_encoding(body, header_charset, content_type)
    payload = body[detected.bom_length :] if detected.bom_length else body
    return to_unicode(payload, detected.encoding), detected.encoding

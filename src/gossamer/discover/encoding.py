"""The encoding of an XML sitemap or feed, told from its first bytes, and a decoder for it.

Everything handed to expat is UTF-8 decoded here first, with undecodable bytes replaced: a
sitemap in a multi-byte encoding expat lacks (GB2312, Shift_JIS), one that names an encoding
no one knows (``utf8``, ``bogus``) or the wrong one (UTF-16 declared over UTF-8 bytes), or one
with a stray Latin-1 byte would otherwise end at its first character. Only a text encoding
that reads the declaration's own ASCII back unchanged is taken: Python's codec registry also
names transforms (``rot13``, ``hex``, ``base64_codec``, ``zlib_codec``, ``bz2_codec``) that
fail on the bytes, or would inflate them unbounded, and encodings the declaration could not
have been written in (``cp037``, ``idna``, ``punycode``).
"""

from __future__ import annotations

import codecs
import re

__all__ = ["xml_decoder"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE, whose BOM it starts with
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_WIDE_STARTS = ((b"\x00<\x00?", "utf-16-be"), (b"<\x00?\x00", "utf-16-le"))
_DECLARED = re.compile(rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")
_ASCII_INCOMPATIBLE = ("utf-16", "utf-32")
_PROBE = b'<?xml version="1.0" encoding="x"?><urlset>'
"""ASCII an encoding must read back unchanged to be taken."""


def xml_decoder(head: bytes) -> codecs.IncrementalDecoder:
    """A decoder for the document starting with ``head``: its BOM, else its XML
    declaration's encoding when Python knows one that reads ASCII as ASCII, else UTF-8."""
    return codecs.getincrementaldecoder(_encoding(head))(errors="replace")


def _encoding(head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    for start, name in _WIDE_STARTS:
        if head.startswith(start):
            return name
    match = _DECLARED.match(head)
    if match is None:
        return "utf-8"
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
        reads_ascii = codecs.getincrementaldecoder(name)(errors="replace").decode(_PROBE, True)
    except Exception:  # a transform raises anything: TypeError, zlib.error, OSError...
        return "utf-8"
    if reads_ascii != _PROBE.decode("ascii") or name.startswith(_ASCII_INCOMPATIBLE):
        return "utf-8"
    return name

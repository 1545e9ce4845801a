"""Fixed bodies for special endpoints: binary files, charsets, malformed HTML, bombs."""

from __future__ import annotations

import functools
import gzip
import struct
import zlib
from collections.abc import Iterator

import brotli

MIB = 1 << 20

CHARSET_SAMPLES: dict[str, str] = {
    "windows-1251": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "iso-8859-1": "Voilà! Le garçon a mangé une crème brûlée à Zürich, señor.",
    "shift_jis": "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。",
}
"""Known text on each ``/charset/<name>`` page, to check decoding."""

PDF_TEXT = "gossamer test pdf"
ENCODED_MARKER = "encoded-page-marker"
MALFORMED_MARKER = "malformed-marker-7f3a"

MALFORMED = (
    b"<html><head><title>Malformed page</head><body>\n"
    b"<p>Unclosed paragraph <b>bold <i>both\n"
    b"<div class=\"x><a href='/'>swallowed by the open quote</a>\n"
    b"<p>" + MALFORMED_MARKER.encode() + b" \x00\x00 NUL bytes \xff\xfe\x80 invalid utf-8 "
    b"<<<>>> & &amp &#xZZ; </i></b></span>\n"
    b'<a href="/">home</a> <a href=/ >bare href</a>\n'
    b"<table><tr><td>cell<td>cell2</p></div>\n"
    b"<script>if (a < b) { document.write('</div>') }\n"
)
"""Broken HTML: unclosed tags and quotes, NUL and invalid UTF-8 bytes, no closing tags."""


def charset_page(name: str) -> tuple[str, bytes]:
    """``(content_type, body)`` for a charset page, declared only as documented.

    windows-1251: only ``<meta charset>``; iso-8859-1: only the Content-Type header;
    shift_jis: no declaration anywhere (only sniffing finds it).
    """
    sample = CHARSET_SAMPLES[name]
    meta = '<meta charset="windows-1251">' if name == "windows-1251" else ""
    paras = "".join(f"<p>{sample}</p>\n" for _ in range(8 if name == "shift_jis" else 1))
    doc = (
        f"<!DOCTYPE html><html><head>{meta}<title>{sample[:12]}</title></head>"
        f'<body>\n{paras}<p><a href="/">home</a></p></body></html>\n'
    )
    ctype = "text/html; charset=ISO-8859-1" if name == "iso-8859-1" else "text/html"
    return ctype, doc.encode(name)


def encoded_page() -> bytes:
    """The HTML served (compressed) by ``/encoded/<coding>``."""
    para = f"<p>{ENCODED_MARKER}: this page was compressed by the server.</p>\n" * 40
    return f'<!DOCTYPE html><html><body>{para}<a href="/">home</a></body></html>\n'.encode()


def compress(data: bytes, coding: str) -> bytes:
    """Encode ``data`` with an HTTP content coding (gzip, deflate = zlib format, br)."""
    if coding == "gzip":
        return gzip.compress(data, mtime=0)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "br":
        return bytes(brotli.compress(data))
    raise ValueError(f"unknown content coding {coding!r}")


def gzip_members(data: bytes, members: int = 2) -> bytes:
    """``data`` as a gzip body of ``members`` concatenated members (RFC 1952 allows it)."""
    step = -(-len(data) // members)
    return b"".join(
        gzip.compress(data[start : start + step], mtime=0) for start in range(0, len(data), step)
    )


_LOOKALIKE_FIRST = 29  # 0x08 0x1D: a stored block header that reads as a zlib header


def raw_deflate_lookalike(data: bytes) -> bytes:
    """``data`` (at least 29 bytes) as raw deflate whose first two bytes pass zlib's header
    check: a stored block of 29 bytes whose header byte has a padding bit set (deflate
    ignores it) and whose length reads as the header's second byte, then ordinary blocks.
    Read as zlib it fails at once ("invalid stored block lengths"); read raw it is ``data``."""
    if len(data) < _LOOKALIKE_FIRST:
        raise ValueError("raw_deflate_lookalike needs at least 29 bytes")
    first = _LOOKALIKE_FIRST
    head = b"\x08" + struct.pack("<HH", first, first ^ 0xFFFF) + data[:first]
    rest = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return head + rest.compress(data[first:]) + rest.flush()


def attr_bomb(tags: int = 2000, attributes: int = 500) -> bytes:
    """A page of ``tags`` tags with ``attributes`` attributes each (about 10 MB by default),
    then one link, ``/``."""
    tag = b"<div " + b" ".join(b'x%03d="ab"' % i for i in range(attributes)) + b">x</div>\n"
    return b"<!DOCTYPE html><html><body>" + tag * tags + b'<a href="/">home</a></body></html>'


def deep(depth: int = 100_000) -> bytes:
    """``depth`` unclosed ``<div>`` tags with a link before and after them: ``/`` and
    ``/status/200``."""
    return (
        b'<!DOCTYPE html><html><body><a href="/">home</a>'
        + b"<div>" * depth
        + b'<a href="/status/200">after</a></body></html>'
    )


def unclosed_links(count: int = 5001) -> bytes:
    """``count`` unclosed ``<a href>`` siblings, to ``/status/200?i=0`` and onwards."""
    links = b"".join(b'<a href="/status/200?i=%d">link %d\n' % (i, i) for i in range(count))
    return b"<!DOCTYPE html><html><body>" + links + b"</body></html>"


def pdf(text: str = PDF_TEXT) -> bytes:
    """A one-page PDF showing ``text``, with a correct xref table."""
    content = f"BT /F1 18 Tf 20 80 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def png(width: int = 8, height: int = 8) -> bytes:
    """A small RGB gradient PNG."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data)
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 32 % 256, y * 32 % 256, 128)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@functools.lru_cache(maxsize=4)
def gzip_bomb(mib: int) -> bytes:
    """A gzip stream of ``mib`` MiB of spaces, about 1 KB on the wire per MiB.

    Each MiB is compressed after a full flush, so its compressed form is the same every
    time and is repeated rather than recomputed; only the CRC walks the whole size.
    """
    block = b" " * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)
    return header + first + again * (mib - 1) + tail + trailer


_HUGE_HEAD = b"<!DOCTYPE html><html><body><pre>\n"
_HUGE_TAIL = b"\n</pre></body></html>\n"
_HUGE_BLOCK = (b"huge body line of filler text, 64 bytes long for easy counting.\n" * 1024)[:65536]


def huge_chunks(total: int) -> Iterator[bytes]:
    """An HTML document of exactly ``total`` bytes (at least 64), in 64 KiB pieces."""
    middle = total - len(_HUGE_HEAD) - len(_HUGE_TAIL)
    yield _HUGE_HEAD
    while middle > 0:
        piece = _HUGE_BLOCK[:middle]
        middle -= len(piece)
        yield piece
    yield _HUGE_TAIL

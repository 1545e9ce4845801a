"""Hostile PDF documents for the PDF tests: encrypted, slow, a decompression bomb, a cycle."""

from __future__ import annotations

import io
import zlib

from pypdf import PdfWriter
from pypdf.generic import NameObject, StreamObject

from gossamer.testweb import payloads

MIB = 1 << 20


def encrypted() -> bytes:
    """A document readable only with the user password ``pw``."""
    writer = PdfWriter(clone_from=io.BytesIO(payloads.pdf("secret text")))
    writer.encrypt(user_password="pw", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def many_pages(count: int) -> bytes:
    """A document of ``count`` text pages: seconds of work for pypdf."""
    source = PdfWriter(clone_from=io.BytesIO(payloads.pdf("page text " * 20)))
    writer = PdfWriter()
    for _ in range(count):
        writer.add_page(source.pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _deflate_bomb(mib: int) -> bytes:
    """A zlib stream of ``mib`` MiB of spaces, about 1 KB per MiB, made in well under a second:
    one MiB compressed after a full flush compresses the same every time, so it is repeated;
    only the checksum walks the whole size."""
    block = b" " * MIB
    compressor = zlib.compressobj(9)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush(zlib.Z_FINISH)[:-4]  # without the checksum of two MiB
    checksum = 1
    for _ in range(mib):
        checksum = zlib.adler32(block, checksum)
    return first + again * (mib - 1) + tail + checksum.to_bytes(4, "big")


def bomb(mib: int = 1024) -> bytes:
    """One page whose content stream inflates to ``mib`` MiB (1 GiB from about 1 MB)."""
    writer = PdfWriter()
    page = writer.add_blank_page(100, 100)
    stream = StreamObject()
    stream._data = _deflate_bomb(mib)  # already compressed: set_data would compress it again
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def cyclic_page_tree() -> bytes:
    """A page tree whose ``/Pages`` node lists itself among its kids."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
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

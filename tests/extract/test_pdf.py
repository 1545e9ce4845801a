"""PDF text in worker processes: text, broken and encrypted documents, a decompression bomb
and a document slower than the time limit each end as text or a short error, never an
exception, and the pool goes on answering."""

from __future__ import annotations

import io
import zlib
from collections.abc import AsyncIterator

import pytest
from pypdf import PdfWriter
from pypdf.generic import NameObject, StreamObject

from gossamer.extract.pdf import PdfPool, pdf_text
from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def pool() -> AsyncIterator[PdfPool]:
    pool = PdfPool(workers=1, timeout=10, memory_mb=256)
    try:
        yield pool
    finally:
        await pool.close()


def encrypted() -> bytes:
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


def bomb(size: int = 1 << 30) -> bytes:
    """One page whose content stream inflates to ``size`` bytes (1 GiB from about 1 MB)."""
    writer = PdfWriter()
    page = writer.add_blank_page(100, 100)
    stream = StreamObject()
    compressor = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    data = b"".join(compressor.compress(chunk) for _ in range(size >> 20)) + compressor.flush()
    stream._data = data  # already compressed: set_data would compress it again
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_text_of_a_pdf(pool: PdfPool) -> None:
    result = await pool.text(payloads.pdf("hello from a pdf"))
    assert (result.text, result.error, result.pages) == ("hello from a pdf", None, 1)
    assert (await pool.text(payloads.pdf("x" * 50), max_chars=10)).text == "x" * 10


async def test_broken_and_encrypted_documents_are_errors(pool: PdfPool) -> None:
    assert (await pool.text(b"%PDF-1.4 not really")).error == "pdf-invalid"
    assert (await pool.text(b"")).error == "pdf-invalid"
    assert (await pool.text(encrypted())).error == "pdf-encrypted"
    assert (await pool.text(payloads.pdf("still fine"))).text == "still fine"


async def test_a_decompression_bomb_hits_the_memory_limit(pool: PdfPool) -> None:
    result = await pool.text(bomb())
    assert result.text is None or len(result.text) < 1 << 20
    assert result.error in ("pdf-memory", "pdf-invalid", None)  # pypdf caps inflation too
    assert (await pool.text(payloads.pdf("after the bomb"))).text == "after the bomb"


async def test_a_document_over_the_time_limit_is_stopped() -> None:
    pool = PdfPool(workers=1, timeout=0.05, memory_mb=256)
    try:
        assert (await pool.text(many_pages(3000))).error == "pdf-timeout"
        pool._timeout = 10
        assert (await pool.text(payloads.pdf("next one"))).text == "next one"
    finally:
        await pool.close()


def test_in_process_extraction_never_raises() -> None:
    assert pdf_text(b"\x00" * 100, 100).error == "pdf-invalid"

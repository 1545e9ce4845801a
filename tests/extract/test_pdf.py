"""PDF text in worker processes: text, broken and encrypted documents, a decompression bomb
and a document slower than the time limit each end as text or a short error, never an
exception, and the pool goes on answering."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.pdfs import bomb, cyclic_page_tree, encrypted, many_pages

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


async def test_text_of_a_pdf(pool: PdfPool) -> None:
    result = await pool.text(payloads.pdf("hello from a pdf"))
    assert (result.text, result.error, result.pages) == ("hello from a pdf", None, 1)
    assert (await pool.text(payloads.pdf("x" * 50), max_chars=10)).text == "x" * 10


async def test_broken_and_encrypted_documents_are_errors(pool: PdfPool) -> None:
    assert (await pool.text(b"%PDF-1.4 not really")).error == "pdf-invalid"
    assert (await pool.text(b"")).error == "pdf-invalid"
    assert (await pool.text(encrypted())).error == "pdf-encrypted"
    assert (await pool.text(cyclic_page_tree())).error == "pdf-invalid"
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


@pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])
async def test_a_worker_that_died_while_idle_is_an_error_and_replaced(pool: PdfPool) -> None:
    """Killed while idle (its memory cap, the OOM killer): the next document's write meets a
    closed pipe, which uvloop reports as RuntimeError and asyncio as a reset."""
    assert (await pool.text(payloads.pdf("first"))).text == "first"
    (worker,) = pool._idle
    worker.kill()
    await worker.wait()
    assert (await pool.text(payloads.pdf("second"))).error == "pdf-worker-died"
    assert (await pool.text(payloads.pdf("third"))).text == "third"

"""Text of PDF documents, extracted in worker processes with a time and a memory limit.

A PDF is a program of sorts: a hostile one can loop, inflate streams to gigabytes or take
pypdf minutes. So each document goes to one of a few long-lived worker processes (pypdf is
imported there, not in the crawler) whose address space is capped (``RLIMIT_AS``); a document
that takes longer than ``timeout`` gets its worker killed and replaced. Whatever happens, the
caller gets text or a short error (`PdfText.error`), never an exception or a stalled loop:

- ``pdf-timeout``: the document took longer than ``timeout`` seconds;
- ``pdf-memory``: the worker ran out of its memory limit;
- ``pdf-encrypted``: the document is encrypted (an empty user password is tried first);
- ``pdf-invalid``: pypdf could not read it;
- ``pdf-worker-died``: the worker process ended without an answer (a crash).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import struct
import sys
from dataclasses import dataclass

from gossamer.eventloop import send

__all__ = ["PdfPool", "PdfText", "pdf_text"]


@dataclass(frozen=True, slots=True)
class PdfText:
    """The text of a PDF (pages separated by blank lines), or why there is none."""

    text: str | None
    error: str | None = None
    pages: int = 0


def pdf_text(data: bytes, max_chars: int) -> PdfText:
    """Extract the text of a PDF in this process (what a worker runs)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return PdfText(None, "pdf-encrypted")
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            text = (page.extract_text() or "").strip()
            if text:
                parts.append(text)
                size += len(text) + 2
            if size >= max_chars:
                break
        return PdfText("\n\n".join(parts)[:max_chars], None, len(reader.pages))
    except MemoryError:
        return PdfText(None, "pdf-memory")
    except FileNotDecryptedError:
        return PdfText(None, "pdf-encrypted")
    except (PdfReadError, Exception):  # whatever a broken document makes pypdf raise
        return PdfText(None, "pdf-invalid")


def _serve(memory_bytes: int) -> None:
    """A worker (``python -m gossamer.extract.pdf MEMORY``): cap the address space, then answer
    documents from stdin until it closes. A request is an 8-byte big-endian length, a 4-byte
    text limit and the document; an answer a 4-byte length and JSON."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import pypdf  # noqa: F401  (imported once, before the first document)

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while head := stdin.read(12):
        size, max_chars = struct.unpack(">QI", head)
        data = stdin.read(size)
        try:
            result = pdf_text(data, max_chars)
        except MemoryError:
            result = PdfText(None, "pdf-memory")
        del data
        answer = json.dumps([result.text, result.error, result.pages]).encode()
        stdout.write(struct.pack(">I", len(answer)) + answer)
        stdout.flush()


class PdfPool:
    """At most ``workers`` documents at a time, each in a worker process limited to
    ``memory_mb`` of address space and ``timeout`` seconds. Workers start on first use and
    stay; `close` stops them."""

    def __init__(self, workers: int = 2, timeout: float = 20.0, memory_mb: int = 1024) -> None:
        self._timeout = timeout
        self._memory = memory_mb << 20
        self._idle: list[asyncio.subprocess.Process] = []
        self._slots = asyncio.Semaphore(workers)
        self._all: set[asyncio.subprocess.Process] = set()

    async def text(self, data: bytes, max_chars: int = 1_000_000) -> PdfText:
        """The document's text, or the reason there is none (see the module doc)."""
        async with self._slots:
            worker = self._idle.pop() if self._idle else await self._start()
            try:
                result = await asyncio.wait_for(self._ask(worker, data, max_chars), self._timeout)
            except TimeoutError:
                await self._discard(worker)
                return PdfText(None, "pdf-timeout")
            except (OSError, asyncio.IncompleteReadError, ValueError):
                await self._discard(worker)
                return PdfText(None, "pdf-worker-died")
            self._idle.append(worker)
            return result

    async def close(self) -> None:
        """Stop every worker."""
        for worker in list(self._all):
            await self._discard(worker)
        self._idle.clear()

    async def _start(self) -> asyncio.subprocess.Process:
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gossamer.extract.pdf",
            str(self._memory),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self._all.add(worker)
        return worker

    async def _ask(
        self, worker: asyncio.subprocess.Process, data: bytes, max_chars: int
    ) -> PdfText:
        assert worker.stdin is not None and worker.stdout is not None
        await send(worker.stdin, struct.pack(">QI", len(data), max_chars) + data)
        (size,) = struct.unpack(">I", await worker.stdout.readexactly(4))
        text, error, pages = json.loads(await worker.stdout.readexactly(size))
        return PdfText(text, error, pages)

    async def _discard(self, worker: asyncio.subprocess.Process) -> None:
        self._all.discard(worker)
        with contextlib.suppress(ProcessLookupError):
            worker.kill()
        await worker.wait()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))

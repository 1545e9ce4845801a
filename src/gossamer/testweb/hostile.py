"""Special endpoints that are slow, endless, huge or broken on the wire.

* ``/slow?ms=300``: headers only after ``ms`` milliseconds (at most 120 s).
* ``/hang``: reads the request and never answers; ends when the client or server closes.
* ``/trickle?bytes=2000&chunk=200&ms=100``: Content-Length up front, then ``chunk`` bytes
  every ``ms`` milliseconds.
* ``/drop``: closes the connection after reading the request, no response at all.
* ``/reset``: 200 with Content-Length 100000, 1000 bytes of body, then a TCP RST.
* ``/broken-chunked``: ``Transfer-Encoding: chunked`` with one valid chunk and, 50 ms
  later, the invalid chunk size ``zz``; the connection is then closed.
* ``/gzip-bomb?mb=200``: ``Content-Encoding: gzip``, about 200 KB on the wire, ``mb`` MiB of
  spaces once decoded (at most 4096).
* ``/huge?mb=20``: an HTML body of exactly ``mb`` MiB (at most 1024), streamed in 64 KiB
  pieces with Content-Length.
* ``/hostile/attr-bomb?tags=2000&attrs=500``: ``tags`` tags of ``attrs`` attributes each
  (about 10 MB; at most 20,000 tags, 5,000 attributes), then one link to ``/``.
* ``/hostile/deep?depth=100000``: a link to ``/``, ``depth`` unclosed ``<div>`` (at most
  2,000,000), a link to ``/status/200``.
* ``/hostile/unclosed-links?n=5001``: ``n`` unclosed ``<a href>`` siblings (at most
  200,000), to ``/status/200?i=0`` ... ``?i=n-1``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

from gossamer.testweb import payloads
from gossamer.testweb.protocol import HTML, Action, Reply, Request, page
from gossamer.testweb.specials import Context, query_int

RESET_DECLARED = 100_000
RESET_SENT = 1000
BROKEN_CHUNK_PAUSE = 0.05


async def slow(req: Request, ctx: Context) -> Reply:
    """A normal page whose head is sent after a delay."""
    delay = query_int(req, "ms", 300, 0, 120_000) / 1000
    return replace(page(200, "Slow page", f"<p>answered after {delay:g} s</p>"), delay=delay)


async def hang(req: Request, ctx: Context) -> Reply:
    """Never answer."""
    return Reply(None, action=Action.HANG)


async def drop(req: Request, ctx: Context) -> Reply:
    """Close the connection without answering."""
    return Reply(None, action=Action.DROP)


async def trickle(req: Request, ctx: Context) -> Reply:
    """A body sent a few bytes at a time."""
    total = query_int(req, "bytes", 2000, 1, 10 * payloads.MIB)
    chunk = query_int(req, "chunk", 200, 1, total)
    pause = query_int(req, "ms", 100, 0, 60_000) / 1000
    body = (b"<p>trickle</p>\n" * (total // 15 + 1))[:total]

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, total, chunk):
            if start:
                await asyncio.sleep(pause)
            yield body[start : start + chunk]

    headers = (("Content-Type", HTML), ("Content-Length", str(total)))
    return Reply(200, headers, stream=pieces)


async def reset(req: Request, ctx: Context) -> Reply:
    """Promise a long body, send part of it, then reset the connection."""
    headers = (("Content-Type", HTML), ("Content-Length", str(RESET_DECLARED)))
    return Reply(200, headers, b"x" * RESET_SENT, action=Action.RESET)


async def broken_chunked(req: Request, ctx: Context) -> Reply:
    """One valid chunk, a short pause (so clients see the head first), then a bad size."""
    first = b"<html><body>first chunk"

    async def rest() -> AsyncIterator[bytes]:
        await asyncio.sleep(BROKEN_CHUNK_PAUSE)
        yield b"zz\r\nnot a chunk\r\n0\r\n\r\n"

    headers = (("Content-Type", HTML), ("Transfer-Encoding", "chunked"))
    return Reply(200, headers, b"%x\r\n%s\r\n" % (len(first), first), rest, close=True)


async def gzip_bomb(req: Request, ctx: Context) -> Reply:
    """A tiny gzip body that inflates to ``mb`` MiB (built once per size, off the loop)."""
    mib = query_int(req, "mb", 200, 1, 4096)
    body = await asyncio.to_thread(payloads.gzip_bomb, mib)
    headers = (("Content-Type", HTML), ("Content-Encoding", "gzip"))
    return Reply(200, headers, body)


async def huge(req: Request, ctx: Context) -> Reply:
    """A very large HTML body, streamed without holding it in memory."""
    total = query_int(req, "mb", 20, 1, 1024) * payloads.MIB

    async def pieces() -> AsyncIterator[bytes]:
        for piece in payloads.huge_chunks(total):
            yield piece

    headers = (("Content-Type", HTML), ("Content-Length", str(total)))
    return Reply(200, headers, stream=pieces)


async def attr_bomb(req: Request, ctx: Context) -> Reply:
    """Tags with hundreds of attributes each (built off the loop)."""
    tags = query_int(req, "tags", 2000, 1, 20_000)
    attributes = query_int(req, "attrs", 500, 1, 5000)
    body = await asyncio.to_thread(payloads.attr_bomb, tags, attributes)
    return Reply(200, (("Content-Type", HTML),), body)


async def deep(req: Request, ctx: Context) -> Reply:
    """Elements nested far deeper than any parser keeps."""
    depth = query_int(req, "depth", 100_000, 1, 2_000_000)
    return Reply(200, (("Content-Type", HTML),), payloads.deep(depth))


async def unclosed_links(req: Request, ctx: Context) -> Reply:
    """Many ``<a href>`` never closed: siblings, not nesting, to an HTML parser."""
    count = query_int(req, "n", 5001, 0, 200_000)
    return Reply(200, (("Content-Type", HTML),), payloads.unclosed_links(count))

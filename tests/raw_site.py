"""A raw asyncio HTTP/1.1 server on loopback that answers with exact bytes: the part the byte-level
test sites share (their URLs, the connection loop, serving on a free port). A site says how it
answers one request (`RawSite._answer`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeVar

_S = TypeVar("_S", bound="RawSite")


@dataclass
class RawSite:
    """A site's address: ``host`` names it in URLs (another than 127.0.0.1: given to the crawl's
    resolve), ``port`` is set by `serving`."""

    host: str = "127.0.0.1"
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._answer(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; whether the connection stays open."""
        raise NotImplementedError


@contextlib.asynccontextmanager
async def serving(site: _S) -> AsyncIterator[_S]:
    """Serve ``site`` on a free port of 127.0.0.1 (``site.port``) while the block runs."""
    server = await asyncio.start_server(site.serve, "127.0.0.1", 0)
    site.port = server.sockets[0].getsockname()[1]
    try:
        yield site
    finally:
        server.close()
        await server.wait_closed()

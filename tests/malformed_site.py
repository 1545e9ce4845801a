"""A raw asyncio HTTP/1.1 server on loopback that writes exact bytes: one host whose home page
links a few answers no client may accept, answers cut short, and a chain of good pages found
one at a time (so the host's pace shows in the times they are asked for). Good pages are
served on keep-alive connections; every other answer closes its connection."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from tests.raw_site import RawSite

MALFORMED: Mapping[str, bytes] = {
    "/nul": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nhi",
    "/status": b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nhi",
    "/colon": b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: 2\r\n\r\nhi",
    "/length": b"HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nhi",
    "/lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
}
"""Heads no client may accept, the same at every try: each is ``protocol-error``."""
CUT: Mapping[str, bytes | None] = {
    "/cut-head": b"HTTP/1.1 200 OK\r\nContent-Le",
    "/reset": None,
}
"""Answers that end before their head does (a close, a reset: None), which a second try may
well get whole: ``server-disconnected`` or ``connection-reset``."""
SHORT = "/short"
"""A body shorter than its Content-Length: the connection closes after 2 of 100 bytes."""
CHAIN = 6
"""Good pages /chain1 .. /chainN, each linking the next."""


@dataclass
class MalformedSite(RawSite):
    """The server's state: every request it read, as (monotonic time, path)."""

    bad: tuple[str, ...] = (*MALFORMED, *CUT, SHORT)
    """The paths the home page links, besides /chain1."""
    log: list[tuple[float, str]] = field(default_factory=list)

    def requests(self) -> Counter[str]:
        """How many times each path was asked for."""
        return Counter(path for _, path in self.log)

    def chain_times(self) -> list[float]:
        """When each good page of the chain was asked for (in order)."""
        return [t for t, path in self.log if path.startswith("/chain")]

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        self.log.append((time.monotonic(), path))
        if path in MALFORMED:
            writer.write(MALFORMED[path])
        elif path in CUT:
            cut = CUT[path]
            if cut is None:
                writer.transport.abort()
                return False
            writer.write(cut)
        elif path == SHORT:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhi")
        else:
            writer.write(self._page(path))
            await writer.drain()
            return True
        await writer.drain()
        return False

    def _page(self, path: str) -> bytes:
        if path == "/":
            links = [*self.bad, "/chain1"]
        elif path.startswith("/chain") and int(path[6:]) < CHAIN:
            links = [f"/chain{int(path[6:]) + 1}"]
        else:
            links = []
        anchors = "".join(f'<a href="{link}">x</a>' for link in links)
        body = f"<html><body>{path} {anchors}</body></html>".encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

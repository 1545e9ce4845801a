"""A raw asyncio HTTP/1.1 server on loopback whose pages' bodies break off after their head:
the connection closes (or is reset) before the announced end of the body, on the first request
only or on every one (its robots.txt too: on the first). Its home page links them all, and a
page larger than the crawl's body cap (`BIG`), which comes whole. Whole answers are served on
keep-alive connections; a cut one closes its connection."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from tests.raw_site import RawSite

PAGE = b"<html><body><p>" + b"the whole page " * 40 + b"</p></body></html>"
"""The body of every page but the home page and `BIG`."""
LENGTH, CHUNKED, RESET = "length", "chunked", "reset"
"""How a body breaks off: short of its Content-Length, a chunked body without its last chunk,
or a reset of the connection."""
ONCE: Mapping[str, str] = {"/length-once": LENGTH, "/chunked-once": CHUNKED, "/reset-once": RESET}
"""Pages cut on their first request, whole on the next."""
ALWAYS = "/always"
"""A page cut short of its Content-Length on every request."""
BIG = "/big"
"""A page whose whole body (`BIG_BYTES`) is over the crawl's ``max_body_bytes``."""
BIG_BYTES = 8192
ROBOTS_TXT = b"User-agent: *\nAllow: /\n" + b"#" * 60 + b"\nDisallow: /private\n"
"""The site's robots.txt: cut on its first request (a `KEPT` bytes' start allows everything)
whole on the next; `PRIVATE` it disallows."""
PRIVATE = "/private"
KEPT = 40
"""Bytes of the body a cut answer sends."""


@dataclass
class CutBodySite(RawSite):
    """The server's state: the paths asked for, in order."""

    paths: tuple[str, ...] = (*ONCE, ALWAYS, BIG)
    """The paths the home page links."""
    log: list[str] = field(default_factory=list)

    def requests(self) -> Counter[str]:
        """How many times each path was asked for."""
        return Counter(self.log)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        self.log.append(path)
        cut = ONCE.get(path) if self.log.count(path) == 1 else None
        if path == ALWAYS or (path == "/robots.txt" and self.log.count(path) == 1):
            cut = LENGTH
        body = ROBOTS_TXT if path == "/robots.txt" else PAGE
        if cut is None:
            writer.write(self._whole(path))
            await writer.drain()
            return True
        if cut == CHUNKED:
            chunk = body[:KEPT]
            writer.write(
                _head(b"Transfer-Encoding: chunked") + b"%x\r\n%s\r\n" % (len(chunk), chunk)
            )
        else:
            writer.write(_head(b"Content-Length: %d" % len(body)) + body[:KEPT])
        await writer.drain()
        if cut == RESET:  # no linger: the close sends a reset, not a FIN
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        return False

    def _whole(self, path: str) -> bytes:
        if path == "/":
            anchors = "".join(f'<a href="{link}">x</a>' for link in self.paths)
            body = f"<html><body>{anchors}</body></html>".encode()
        elif path == BIG:
            body = b"<html><body><p>" + b"b" * BIG_BYTES + b"</p></body></html>"
        elif path == "/robots.txt":
            body = ROBOTS_TXT
        else:
            body = PAGE
        return _head(b"Content-Length: %d" % len(body)) + body


def _head(framing: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + framing + b"\r\n\r\n"

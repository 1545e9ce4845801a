"""The HTTP exchange as it went over the wire, kept for archiving (``--warc``) only.

`Fetcher` builds an `Exchange` when its config says ``keep_wire``: the request line and the
headers aiohttp sent, the status line, the response headers as received (raw bytes, in order)
and the body bytes before content decoding, up to the wire cap. aiohttp removes the chunked
transfer coding before handing the body over, so ``body`` is de-chunked.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from aiohttp.connector import Connection

from gossamer.redact import MASK

__all__ = ["Exchange", "PeerResponse", "capture", "cut_by", "masked"]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its response, as sent and received."""

    method: str
    target: str
    """The request target of the request line (path and query, as sent)."""
    request_headers: tuple[tuple[str, str], ...]
    version: str
    """The response's protocol, ``HTTP/1.1``."""
    status: int
    reason: str
    response_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    peer: str | None
    """The IP address the response came from."""
    cut: str | None = None
    """Why ``body`` lacks bytes the server sent (a ``WARC-Truncated`` reason: ``length``,
    ``time``, ``disconnect``, ``unspecified``); None when it holds the whole body."""


class PeerResponse(aiohttp.ClientResponse):
    """A response that notes the peer's IP address while its connection is open (a small
    body may be read, and its connection closed, before `aiohttp.ClientSession.get` returns).
    """

    peer: str | None = None

    async def start(self, connection: Connection) -> aiohttp.ClientResponse:
        transport = connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
            self.peer = peer[0]
        return await super().start(connection)


_TIME = frozenset({"read-timeout", "timeout"})
_DISCONNECT = frozenset(
    {"connection-reset", "incomplete-body", "server-disconnected", "connection-error"}
)


def cut_by(error: str | None, truncated: bool) -> str:
    """The ``WARC-Truncated`` reason of a body whose reading stopped early."""
    if error in _TIME:
        return "time"
    if error in _DISCONNECT:
        return "disconnect"
    if truncated and error in (None, "decompression-bomb"):
        return "length"  # a size cap (wire bytes or decoded bytes) stopped the read
    return "unspecified"


_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Request headers whose values an archive shows as ``***``: a credential never reaches a
WARC file."""


def masked(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``headers`` with the values of credentials shown as ``***``."""
    return tuple(
        (name, MASK if name.lower() in _CREDENTIAL_HEADERS else value) for name, value in headers
    )


def capture(response: aiohttp.ClientResponse, body: bytes, cut: str | None) -> Exchange:
    """The `Exchange` of ``response`` whose wire body was ``body`` (``cut`` for why not all)."""
    info = response.request_info
    version = response.version
    return Exchange(
        method=info.method,
        target=info.url.raw_path_qs or "/",
        request_headers=masked(tuple(info.headers.items())),
        version=f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1",
        status=response.status,
        reason=response.reason or "",
        response_headers=tuple(response.raw_headers),
        body=body,
        peer=response.peer if isinstance(response, PeerResponse) else None,
        cut=cut,
    )

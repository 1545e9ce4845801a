"""The HTTP exchange as it went over the wire, kept for archiving (``--warc``) only.

`Fetcher` builds an `Exchange` when its config says ``keep_wire``: the request line and the
headers sent, the status line, the response headers as received (raw bytes, in order) and
the body bytes before content decoding, up to the wire cap. Both clients (the lean one and
aiohttp, `gossamer.fetch.sending.capture`) remove the chunked transfer coding before handing
the body over, so ``body`` is de-chunked.
"""

from __future__ import annotations

from dataclasses import dataclass

from gossamer.redact import MASK

__all__ = ["Exchange", "cut_by", "masked"]


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
    """The reason phrase, its bytes as received: decoded as UTF-8 with ``surrogateescape``
    (both clients' parsers do), so encoding it back the same way gives them again."""
    response_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    peer: str | None
    """The IP address the response came from."""
    cut: str | None = None
    """Why ``body`` lacks bytes the server sent (a ``WARC-Truncated`` reason: ``length``,
    ``time``, ``disconnect``, ``unspecified``); None when it holds the whole body."""


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

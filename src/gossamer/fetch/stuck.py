"""The stuck-body guard: wakes body readers aiohttp leaves waiting on a closed connection."""

from __future__ import annotations

import asyncio
import functools
import weakref

import aiohttp
from aiohttp.client_proto import ResponseHandler

__all__ = ["StuckBodyGuard"]


class StuckBodyGuard:
    """Wakes body readers that aiohttp's C parser leaves waiting on a closed connection.

    On malformed chunked framing mid-body, aiohttp 3.14's C parser drops the body reader
    without feeding it EOF or an error, and stops the read timeout, so reading would hang
    until the total timeout. So: when a connection closes while a body read from it has
    neither EOF nor an error, that body gets a `ClientPayloadError` (a protocol error).
    """

    def __init__(self) -> None:
        self._reading: weakref.WeakKeyDictionary[ResponseHandler, aiohttp.StreamReader] = (
            weakref.WeakKeyDictionary()
        )
        self._hooked: weakref.WeakSet[ResponseHandler] = weakref.WeakSet()

    def watch(self, response: aiohttp.ClientResponse) -> ResponseHandler | None:
        """Start guarding ``response``'s body; pass the result to `unwatch` when done."""
        connection = response.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is None:  # the whole body is already buffered
            return None
        closed = protocol.closed
        if closed is None:  # the connection is already gone
            _unstick(protocol, response.content)
            return None
        if protocol not in self._hooked:
            self._hooked.add(protocol)
            closed.add_done_callback(functools.partial(self._on_closed, protocol))
        self._reading[protocol] = response.content
        return protocol

    def unwatch(self, protocol: ResponseHandler | None) -> None:
        """Stop guarding the body read from ``protocol``."""
        if protocol is not None:
            self._reading.pop(protocol, None)

    def _on_closed(self, protocol: ResponseHandler, closed: asyncio.Future[None]) -> None:
        if not closed.cancelled():
            closed.exception()  # mark it retrieved; the reader reports the failure
        content = self._reading.pop(protocol, None)
        if content is not None:
            _unstick(protocol, content)


def _unstick(protocol: ResponseHandler, content: aiohttp.StreamReader) -> None:
    if not content.is_eof() and content.exception() is None:
        error = aiohttp.ClientPayloadError("connection closed inside a malformed body")
        error.__cause__ = protocol.exception()
        content.set_exception(error)

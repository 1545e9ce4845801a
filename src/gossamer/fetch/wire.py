"""One HTTP/1.1 client connection of the lean client (`gossamer.fetch.lean`): an asyncio
protocol that writes a request and parses its response with llhttp (``httptools``).

Hostile input is stopped here, where it arrives: a status line or header line over
`MAX_LINE` bytes fails as ``headers-too-long`` (aiohttp's limit, so both clients agree),
more than `MAX_HEADERS` header lines as ``protocol-error``, as does any framing llhttp
refuses (a bad status line, invalid chunk sizes or chunk endings). After the head, what llhttp
holds between body pieces (a trailer line, a chunk line) is bounded alike; trailer fields
are counted against `MAX_HEADERS` and dropped, as aiohttp drops them. Body bytes are buffered
up to `HIGH_WATER` before the socket is paused (each piece counted with what holding it
costs), so a 1 GB chunk, or a million one-byte chunks, costs what the reader takes of it.
The read timeout (no byte for ``read_timeout``, waiting for the head counts) and the total
timeout share one loop timer per connection, set at the earlier deadline; data pushes the read
deadline back, and a keep-alive connection's next request moves the deadlines on, without
touching the timer, which sets itself again when it fires early.

A failure is a `WireError` naming its fetch error reason (`gossamer.fetch.reasons`); the
connection is then closed. A connection is reusable only when its response ended cleanly,
its server allows keep-alive, and no byte came that no request asked for (a 304 with a
body, junk after a response).
"""

from __future__ import annotations

import asyncio
import errno
from collections import deque
from typing import cast

import httptools

__all__ = ["HIGH_WATER", "MAX_HEADERS", "MAX_LINE", "Connection", "WireError"]

MAX_LINE = 8190
"""Longest status line, header name or header value, in bytes (aiohttp's limit)."""
MAX_HEADERS = 128
"""Most header lines in a response head (aiohttp's limit)."""
HIGH_WATER = 512 * 1024
"""Body bytes buffered before the socket is paused (resumed when the reader takes them)."""
_PIECE = 64
"""What one buffered body piece costs beyond its bytes (a bytes object, a deque slot): a body
sent in one-byte chunks is held back at the socket as soon as a big one would be."""
_PARTIAL = 2 * MAX_LINE + 4
"""Longest unfinished line held while a head comes in (a name, ``: `` and a value)."""
_NEVER = float("inf")


class WireError(Exception):
    """A request the lean client could not complete; ``reason`` is its fetch error reason."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class _Stop(Exception):
    """Raised from a parser callback to stop parsing (the reason is kept on the protocol)."""


class Connection(asyncio.Protocol):
    """One connection: `start` a request, await `head`, then `read` the body to its end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, read_timeout: float) -> None:
        self._loop = loop
        self._read_timeout = read_timeout
        self.transport: asyncio.Transport | None = None
        self.peer: str | None = None
        self.idle_since = 0.0
        self.received = 0
        """Bytes received for the current request (0: nothing of its answer came)."""
        self._parser = parser = httptools.HttpResponseParser(self)
        # aiohttp's leniencies (outside its debug mode), so both clients take the same answers
        parser.set_dangerous_leniencies(
            lenient_headers=True,
            lenient_optional_cr_before_lf=True,
            lenient_spaces_after_chunk_size=True,
        )
        self._active = self._done = self._closed = self._paused = False
        self._reuse = True
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.Handle | None = None
        self._timer_at = _NEVER
        """One timer for both timeouts, set for the earlier of the two deadlines: loop time
        `_timer_at` (not the handle's ``when()``: uvloop's timers count whole milliseconds,
        and one due now is a plain handle)."""
        self._total_deadline = self._read_deadline = _NEVER
        self._reading = False
        """Whether the read timeout runs (not while the socket is paused for the reader)."""
        self._reset()

    def _reset(self) -> None:
        self._head_done = False
        self._until_close = False
        self._line = 0
        self._unparsed = 0
        """Bytes fed since llhttp last reported progress (a chunk, a body piece, a field)."""
        self._trailing = False
        self._trailers = 0
        self._status = b""
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.names: list[bytes] = []
        """The names of `raw_headers`, lower-cased."""
        self._framing: list[tuple[bytes, bytes]] = []
        """The ``Content-Length`` and ``Transfer-Encoding`` headers (lower-case names)."""
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self.received = 0

    # -- the caller's side

    @property
    def usable(self) -> bool:
        """Whether the connection may carry another request (idle, open, clean)."""
        return (
            not self._closed
            and self._reuse
            and not self._active
            and not (self.transport is None or self.transport.is_closing())
        )

    def start(self, request: bytes, deadline: float) -> None:
        """Send ``request``; the response must be whole by ``deadline`` (loop time). Raises
        `WireError` when the connection closed before it (the server's close not yet seen as
        lost: asyncio drops such a write, uvloop raises RuntimeError)."""
        assert self.transport is not None and not self._active
        if self._closed or self.transport.is_closing():
            self._reuse = False
            raise WireError("server-disconnected", "closed before the request was sent")
        self._reset()
        self._active = True
        self._done = False
        self._error = None
        self._total_deadline = deadline
        self._reading = False
        self._arm_read()
        self.transport.write(request)

    async def head(self) -> None:
        """Wait for the response head (`status`, `reason`, `raw_headers` are then set)."""
        while not self._head_done:
            if self._error is not None:
                raise self._error
            await self._wait()

    @property
    def status(self) -> int:
        """The status code of the response."""
        return int(self._parser.get_status_code())

    @property
    def reason(self) -> str:
        """The reason phrase of the status line."""
        return self._status.decode("utf-8", "surrogateescape")

    @property
    def version(self) -> str:
        """The response's protocol, ``HTTP/1.1``."""
        return f"HTTP/{self._parser.get_http_version()}"

    async def read(self) -> bytes:
        """The body bytes come since the last read (as aiohttp's ``readany``: a body sent in
        tiny chunks is not handed on one chunk at a time); ``b""`` at the end of the body."""
        while True:
            chunks = self._chunks
            if chunks:
                chunk = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
                chunks.clear()
                self._buffered = 0
                if self._paused:
                    self._resume()
                return chunk
            if self._error is not None:
                raise self._error
            if self._done:
                return b""
            await self._wait()

    def finish(self) -> bool:
        """End the current request; True when the connection may be reused (else closed)."""
        self._active = False
        self._stop_timers()
        if self._done and self._error is None and self._reuse and not self._closed:
            self.idle_since = self._loop.time()
            return True
        self.close()
        return False

    def close(self) -> None:
        """Close the connection now."""
        self._reuse = False
        self._stop_timers()
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, _NEVER
        if self.transport is not None and not self._closed:
            self._closed = True
            self.transport.abort()

    # -- the event loop's side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not asyncio.Transport subclasses)
        self.transport = transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
            self.peer = peer[0]

    def data_received(self, data: bytes) -> None:
        if not self._active or self._done:
            self._reuse = False  # bytes no request asked for: never trust this connection
            return
        self.received += len(data)
        self._read_deadline = self._loop.time() + self._read_timeout
        if not self._head_done and not self._head_line_fits(data):
            return
        self._unparsed += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._parser_error(exc)
        except httptools.HttpParserUpgrade:  # a 101 answer to a GET that asked for none
            self._fail(WireError("protocol-error", "a switch of protocols"))
        if self._unparsed > _PARTIAL and self._head_done and not self._done:
            self._framing_too_long()

    def _framing_too_long(self) -> None:
        """Bound what llhttp holds between body pieces: a trailer line is kept whole until
        its end comes, and a chunk extension never ends where a server wants."""
        if self._trailing:
            self._fail(WireError("headers-too-long", "a trailer line"))
        else:
            self._fail(WireError("protocol-error", "a chunk line without end"))

    def _parser_error(self, exc: httptools.HttpParserError) -> None:
        if self._done:  # bytes after a whole response: dropped, connection not reused
            self._reuse = False
        elif not isinstance(exc.__context__, _Stop):  # a callback's stop has its reason
            self._fail(WireError("protocol-error", str(exc)))

    def _head_line_fits(self, data: bytes) -> bool:
        """Bound the head's unfinished line (llhttp holds a line until its end comes)."""
        end = data.rfind(b"\n")
        self._line = len(data) - end - 1 if end >= 0 else self._line + len(data)
        if self._line > _PARTIAL and not (end >= 0 and b"\r\n\r\n" in data):
            self._fail(WireError("headers-too-long", "a line of the response head"))
            return False
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._reuse = False
        if self._active and not self._done:
            reset = isinstance(exc, ConnectionResetError) or (
                isinstance(exc, OSError) and exc.errno == errno.ECONNRESET
            )
            if reset:
                self._fail(WireError("connection-reset"))
            elif not self._head_done:
                self._fail(WireError("server-disconnected"))
            elif self._until_close:
                self._done = True  # a body delimited by the connection's end: complete
                self._stop_timers()
            else:
                self._fail(WireError("incomplete-body"))
        self._wake()

    def pause_writing(self) -> None:  # a request head is small: nothing to hold back
        pass

    # -- llhttp's callbacks

    def on_status(self, status: bytes) -> None:
        self._status += status
        if len(self._status) > MAX_LINE:
            self._stop(WireError("headers-too-long", "status line"))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._unparsed = 0
        if len(name) > MAX_LINE or len(value) > MAX_LINE:
            self._stop(WireError("headers-too-long", "a header line"))
        if self._head_done:  # a trailer field: dropped, as aiohttp drops it, but counted
            self._trailers += 1
            if self._trailers > MAX_HEADERS:
                self._stop(WireError("protocol-error", "too many trailers"))
            return
        value = value.rstrip(b" \t")  # llhttp strips the space before a value, not after
        if b"\x00" in value:  # a control character lenient parsing lets through
            self._stop(WireError("protocol-error", "a NUL byte in a header value"))
        headers = self.raw_headers
        if len(headers) >= MAX_HEADERS:
            self._stop(WireError("protocol-error", "too many headers"))
        headers.append((name, value))
        lower = name.lower()
        self.names.append(lower)
        if lower == b"content-length" or lower == b"transfer-encoding":
            self._framing.append((lower, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:  # an interim answer (100 Continue): the real one follows
            self._status = b""
            self.raw_headers = []
            self.names = []
            self._framing = []
            return
        framed = False
        for lower, value in self._framing:
            if lower == b"content-length":
                framed = True
                if status == 304 and value.strip(b" 0"):
                    self._reuse = False  # a 304 that announces a body
            elif lower == b"transfer-encoding":
                # chunked last frames the body; any other coding runs to the connection's end
                framed = value.rstrip().lower().endswith(b"chunked")
                if status == 304:
                    self._reuse = False
        self._until_close = not framed and status not in (204, 304)
        self._unparsed = 0
        if self._until_close or not self._parser.should_keep_alive():
            self._reuse = False
        self._head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._unparsed = 0
        self._trailing = False
        self._chunks.append(body)
        self._buffered += len(body) + _PIECE
        if self._buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
            self._reading = False  # the reader is behind, not the server
        self._wake()

    def on_chunk_header(self) -> None:
        self._unparsed = 0
        self._trailing = True  # until its data comes: the last chunk's trailers follow

    def on_chunk_complete(self) -> None:
        self._unparsed = 0
        self._trailing = False

    def on_message_complete(self) -> None:
        if not self._head_done:
            return  # an interim answer's end
        self._done = True
        self._stop_timers()
        self._wake()

    def on_message_begin(self) -> None:
        if self._done:  # a second answer to one request: dropped, the connection not reused
            self._reuse = False
            raise _Stop

    # -- helpers

    def _stop(self, error: WireError) -> None:
        self._fail(error)
        raise _Stop

    def _fail(self, error: BaseException) -> None:
        if self._error is None and not self._done:
            self._error = error
        self.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _resume(self) -> None:
        self._paused = False
        if self.transport is not None and not self._closed:
            self.transport.resume_reading()
            if not self._done:
                self._arm_read()

    def _arm_read(self) -> None:
        """Start the read timeout now; the timer is set again only to fire sooner."""
        if not self._reading and self._read_timeout:
            self._reading = True
            self._read_deadline = self._loop.time() + self._read_timeout
        due = self._total_deadline
        if self._reading and self._read_deadline < due:
            due = self._read_deadline
        timer = self._timer
        if timer is None or due < self._timer_at:
            if timer is not None:
                timer.cancel()
            self._timer, self._timer_at = self._loop.call_at(due, self._on_timer), due

    def _on_timer(self) -> None:
        when = self._timer_at
        self._timer, self._timer_at = None, _NEVER
        read_by = self._read_deadline if self._reading else _NEVER
        if read_by <= when and read_by < self._total_deadline:
            self._fail(WireError("read-timeout"))
        elif self._total_deadline <= when:
            self._fail(WireError("timeout"))
        else:  # early: data came since, or a request that began after it was set
            due = min(read_by, self._total_deadline)
            if due < _NEVER:  # else no request is waiting: the timer lapses
                self._timer, self._timer_at = self._loop.call_at(due, self._on_timer), due

    def _stop_timers(self) -> None:
        """No timeout runs now. The timer itself is left set (when it fires early it is set
        again, or lapses): a keep-alive connection's next request reuses it, rather than
        each request making a timer and cancelling it."""
        self._reading = False
        self._total_deadline = _NEVER

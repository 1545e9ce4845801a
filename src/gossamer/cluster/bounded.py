"""Bounds on what a Redis server may send: no reply makes a gossamer process allocate without
limit, nor crash on a garbled header.

redis-py's reader believes the lengths a server announces: a bulk string's ``$<length>`` is
read in full, an aggregate's ``*<count>`` elements are collected, nested without limit, so a
broken or hostile "Redis" answering ``$10000000000`` drives a worker to MemoryError, and a
header that is not a number raises a bare ValueError. gossamer's replies are small (an entry is
a URL and a few numbers; the largest reply, a claim, holds one claim batch), so every client
gossamer makes (:func:`gossamer.cluster.jobs.connect`) reads with the parsers below. Before
reading it, they refuse:

- a bulk string, error or verbatim string longer than :data:`MAX_BULK` (64 MiB; Redis' own
  limit is 512 MiB),
- an aggregate of more than :data:`MAX_ELEMENTS` elements, more than that many elements in one
  reply, or nesting deeper than :data:`MAX_DEPTH`,
- a reply of more than :data:`MAX_REPLY` bytes in all, a header line longer than the stream's
  64 KiB limit, or a header whose length or number does not parse (or is a length below
  -1, RESP2's null).

A refusal raises :class:`ReplyRefused`, a redis-py ConnectionError: redis-py drops the
connection, and a worker treats it like an outage (its guard retries, then gives up with one
line naming the reason). hiredis, if installed, is not used for these clients: its reader has
no such bounds. The checks cost about a microsecond per reply (see ``benchmarks/``).
"""

from __future__ import annotations

from typing import Any

from redis._parsers.resp2 import _AsyncRESP2Parser
from redis._parsers.resp3 import _AsyncRESP3Parser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.utils import check_protocol_version

MAX_BULK = 64 << 20
"""Bytes of one bulk string."""
MAX_ELEMENTS = 1_000_000
"""Elements of one aggregate, and of one reply in all."""
MAX_DEPTH = 32
"""Nesting of aggregates in one reply."""
MAX_REPLY = 256 << 20
"""Bytes of one reply in all."""

_SIZED = frozenset(b"$!=")
"""Types whose header is a byte length."""
_AGGREGATE = frozenset(b"*~%>|")
"""Types whose header is an element count."""
_PAIRS = frozenset(b"%|")
"""Aggregates of key-value pairs: twice their count in elements."""
_COUNTED = _SIZED | _AGGREGATE
_INTEGER = frozenset(b":(")
_DOUBLE = ord(",")


class ReplyRefused(RedisConnectionError):
    """A Redis reply over gossamer's bounds or garbled; the connection is dropped."""


class _Bounded:
    """The checks, mixed into redis-py's two asyncio parsers (see the module docstring).

    Every element of a reply starts with one header line (``_readline``), so the checks run
    there, before the parser reads what the header announces: ``_open`` holds the elements
    still to come of each aggregate under way (its length is the nesting depth).
    """

    _pos: int

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        self._open: list[int] = []
        self._elements = 0
        return await super().read_response(*args, **kwargs)  # type: ignore[misc]

    async def _readline(self) -> bytes:
        try:
            line: bytes = await super()._readline()  # type: ignore[misc]
        except ValueError:  # asyncio's stream limit: a line without end
            raise ReplyRefused("Redis sent a reply line longer than 64 KiB") from None
        code = line[0] if line else 0
        if code in _COUNTED:
            self._sized(code, line[1:])
        elif code in _INTEGER or code == _DOUBLE:
            _check_number(code, line[1:])
            self._done()
        else:
            self._done()
        return line

    def _sized(self, code: int, rest: bytes) -> None:
        try:
            count = int(rest)
        except ValueError:
            count = -2
        if count < -1:  # -1 is RESP2's null; no other length is below 0
            raise ReplyRefused(f"Redis sent a malformed reply header {rest[:20]!r}")
        if code in _SIZED:
            if count > MAX_BULK:
                raise ReplyRefused(f"Redis sent a string of {count} bytes (most {MAX_BULK})")
            if self._pos + count > MAX_REPLY:
                raise ReplyRefused(f"Redis sent a reply over {MAX_REPLY >> 20} MiB")
            self._done()
            return
        count *= 2 if code in _PAIRS else 1
        self._elements += max(count, 0)
        if self._elements > MAX_ELEMENTS:
            raise ReplyRefused(f"Redis sent over {MAX_ELEMENTS} elements in one reply")
        if count <= 0:
            self._done()
            return
        self._open.append(count)
        if len(self._open) > MAX_DEPTH:
            raise ReplyRefused(f"Redis sent a reply nested deeper than {MAX_DEPTH}")

    def _done(self) -> None:
        """An element is complete: so is every aggregate it was the last element of."""
        open_ = self._open
        while open_:
            open_[-1] -= 1
            if open_[-1]:
                return
            open_.pop()


def _check_number(code: int, text: bytes) -> None:
    """Refuse an integer or double that redis-py's ``int()`` / ``float()`` would choke on."""
    try:
        int(text) if code in _INTEGER else float(text)
    except ValueError:
        raise ReplyRefused(f"Redis sent a malformed number {text[:20]!r}") from None


class BoundedRESP2Parser(_Bounded, _AsyncRESP2Parser):
    """redis-py's asyncio RESP2 parser with gossamer's bounds."""


class BoundedRESP3Parser(_Bounded, _AsyncRESP3Parser):
    """redis-py's asyncio RESP3 parser with gossamer's bounds."""


def bounded_parser(protocol: object) -> type[BoundedRESP2Parser | BoundedRESP3Parser]:
    """The bounded parser of the RESP version ``protocol`` (None: redis-py's default, 3)."""
    return BoundedRESP3Parser if check_protocol_version(protocol, 3) else BoundedRESP2Parser

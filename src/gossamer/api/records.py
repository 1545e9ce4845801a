"""Records as a crawl writes them: :class:`RecordStream`, an async iterator fed by a record
sink (:class:`Broadcast`) placed after the crawl's own sinks, so a record reaches it once it
is committed to crawl.db and written to pages.jsonl.

A stream holds at most ``limit`` records its reader has not taken; past that, the sink waits
for the reader (a reader that falls behind slows the crawl as a slow sink would, and the
records do not pile up in memory). A stream its reader closed (:meth:`RecordStream.aclose`,
the end of ``async with``) or dropped no longer holds the crawl back; one kept and never read
does, once full, until the crawl is stopped: from then on (the crawl leases nothing more, so
what is left to write is the pages in flight) records are kept for every reader without
waiting, and a stream never read no longer holds the crawl's end.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Self

from gossamer.sinks.base import PageRecord

DEFAULT_LIMIT = 1000
"""Records a stream holds for its reader before the crawl waits for it."""


class _Channel:
    """The buffer between the sink and one stream. The sink holds the channel, not the
    stream, so a stream its reader dropped is collected and its channel closed."""

    def __init__(self, limit: int) -> None:
        self.buffer: deque[PageRecord] = deque()
        self.limit = limit
        self.ended = False
        """The crawl ended: no record comes any more."""
        self.closed = False
        """The reader left: records are no longer kept for it."""
        self.released = False
        """The crawl is stopping: records are kept past ``limit``, never waited for."""
        self.readable = asyncio.Event()
        self.writable = asyncio.Event()

    async def put(self, record: PageRecord) -> None:
        while len(self.buffer) >= self.limit and not (self.closed or self.released):
            self.writable.clear()
            await self.writable.wait()
        if not self.closed:
            self.buffer.append(record)
            self.readable.set()

    def end(self) -> None:
        self.ended = True
        self.readable.set()

    def release(self) -> None:
        self.released = True
        self.writable.set()

    def close(self) -> None:
        self.closed = True
        self.buffer.clear()
        self.writable.set()
        self.readable.set()


class RecordStream(AsyncIterator[PageRecord]):
    """The records of a crawl as they are written, from the moment the stream was asked for
    (:meth:`gossamer.Crawl.records`) to the crawl's end, in the order of pages.jsonl. Iterate
    it with ``async for``; leave early with ``break`` or :meth:`aclose`."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel
        weakref.finalize(self, channel.close)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> PageRecord:
        channel = self._channel
        while not channel.buffer:
            if channel.ended or channel.closed:
                raise StopAsyncIteration
            channel.readable.clear()
            await channel.readable.wait()
        record = channel.buffer.popleft()
        channel.writable.set()
        return record

    async def aclose(self) -> None:
        """Stop reading: the crawl no longer keeps records for this stream."""
        self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Broadcast:
    """A record sink handing each record to every open stream (see the module docstring)."""

    def __init__(self) -> None:
        self._channels: list[_Channel] = []
        self._ended = False
        self._released = False

    def stream(self, limit: int = DEFAULT_LIMIT) -> RecordStream:
        """A new stream of the records written from now on (none once the crawl ended)."""
        if limit < 1:
            raise ValueError("a record stream holds at least one record")
        channel = _Channel(limit)
        if self._released:
            channel.release()
        if self._ended:
            channel.end()
        else:
            self._channels.append(channel)
        return RecordStream(channel)

    async def write(self, records: list[PageRecord]) -> None:
        """Hand one checkpoint's records to each open stream, waiting for full ones."""
        self._channels = [channel for channel in self._channels if not channel.closed]
        for channel in self._channels:
            for record in records:
                await channel.put(record)

    def release(self) -> None:
        """The crawl is stopping: no stream makes it wait any more (see the module
        docstring)."""
        self._released = True
        for channel in self._channels:
            channel.release()

    def end(self) -> None:
        """The crawl ended: each stream ends once its reader took what it holds."""
        self._ended = True
        for channel in self._channels:
            channel.end()
        self._channels = []

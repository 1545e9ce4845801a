"""What a crawl and a cluster worker run from Python share: the task they run in, their
record streams, their handlers, and stopping them whether or not their crawl loop is built
yet."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

from gossamer.api.records import DEFAULT_LIMIT, Broadcast, RecordStream
from gossamer.crawl.additions import Additions
from gossamer.engine import Crawler
from gossamer.hooks import Handler, let_go_abandoned
from gossamer.page.handlers import Handlers
from gossamer.stats import CrawlStats

H = TypeVar("H", bound=Handler)


class Running:
    """The part of :class:`gossamer.Crawl` and :class:`gossamer.Worker` that runs, streams
    and stops; each says what it runs (:meth:`_main`)."""

    def __init__(self, handlers: Handlers | None, signals: bool) -> None:
        self.handlers = handlers if handlers is not None else Handlers()
        """The page handlers by URL pattern (:meth:`handler` adds to them)."""
        self._signals = signals
        self._broadcast = Broadcast()
        self._task: asyncio.Task[CrawlStats] | None = None
        self._crawler: Crawler | None = None
        self._stop_asked = False

    def handler(
        self, pattern: str, *, name: str | None = None, keep_links: bool = False
    ) -> Callable[[H], H]:
        """Register the decorated function for the pages whose URL ``pattern`` finds (see
        :meth:`gossamer.Handlers.handler`). Register handlers before the crawl starts."""
        if self._task is not None:
            raise RuntimeError("handlers are registered before the crawl starts")
        return self.handlers.handler(pattern, name=name, keep_links=keep_links)

    def records(self, limit: int = DEFAULT_LIMIT) -> RecordStream:
        """The records written from now on, as they are written, until the crawl ends (see
        :class:`gossamer.RecordStream`); ask for it before :meth:`start` to see every
        record. ``limit``: records held for a reader that falls behind before the crawl
        waits for it."""
        return self._broadcast.stream(limit)

    def start(self) -> None:
        """Start the crawl in a task of the running event loop (once)."""
        if self._task is not None:
            raise RuntimeError("a crawl runs once: make another for another run")
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait(self) -> CrawlStats:
        """Wait for the crawl to end; its figures (what stats.json holds). Raises what made
        it fail (:class:`gossamer.SettingsError` for bad settings)."""
        if self._task is None:
            raise RuntimeError("the crawl has not started")
        return await asyncio.shield(self._task)

    async def run(self) -> CrawlStats:
        """Start the crawl and wait for its end (:meth:`start`, then :meth:`wait`)."""
        self.start()
        return await self.wait()

    def stop(self) -> None:
        """Stop the crawl gracefully, as SIGINT does: nothing more is leased, URLs in flight
        finish (or go back to the queue after a grace time), the records are committed and
        :meth:`wait` returns. A crawl of ``resume=True`` settings continues from there. A
        record stream that is not read no longer holds the crawl: its records are kept for
        it from then on without waiting."""
        self._stop_asked = True
        self._broadcast.release()
        if self._crawler is not None:
            self._crawler.stop()

    @property
    def running(self) -> bool:
        """Started and not ended yet."""
        return self._task is not None and not self._task.done()

    def stats(self) -> CrawlStats | None:
        """The crawl's figures so far (None before its crawl loop is built)."""
        return None if self._crawler is None else self._crawler.stats()

    def _additions(self) -> Additions:
        return Additions(
            handlers=self.handlers or None,
            sinks=(self._broadcast,),
            started=self._started,
            signals=self._signals,
            progress=self._progress(),
            stopping=self._stopping,
        )

    def _stopping(self) -> bool:
        return self._stop_asked

    def _progress(self) -> bool | None:
        return False

    def _started(self, crawler: Crawler) -> None:
        self._crawler = crawler
        if self._stop_asked:
            crawler.stop()

    async def _run(self) -> CrawlStats:
        try:
            return await self._main(self._additions())
        finally:
            self._broadcast.end()
            await let_go_abandoned()  # else the program's asyncio.run() waits for them

    def _main(self, additions: Additions) -> Coroutine[Any, Any, CrawlStats]:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        """Start the crawl; leaving the block waits for its end (stopping it first when the
        block raised)."""
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.stop()
            try:
                await self.wait()
            except Exception:  # the block's own exception is the one to see
                return
            return
        await self.wait()

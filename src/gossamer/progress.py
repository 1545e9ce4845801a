"""The live progress line on a terminal (rich), redrawn from the event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from gossamer.stats import CrawlStats


@contextlib.asynccontextmanager
async def progress_line(
    source: Callable[[], CrawlStats], *, enabled: bool, interval: float = 0.25
) -> AsyncIterator[None]:
    """Show ``source().progress_line()`` on stderr while the block runs, when enabled.

    Snapshots are taken on the event loop (rich's own refresh thread is off), so the crawl's
    counters are never read from another thread.
    """
    if not enabled:
        yield
        return
    from rich.console import Console  # only on a terminal: a quiet start skips its import
    from rich.live import Live
    from rich.text import Text

    live = Live(console=Console(stderr=True), auto_refresh=False, transient=True)

    async def redraw() -> None:
        while True:
            live.update(Text(source().progress_line(), style="bold"), refresh=True)
            await asyncio.sleep(interval)

    with live:
        task = asyncio.create_task(redraw())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

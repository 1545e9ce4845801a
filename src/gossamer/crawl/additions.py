"""What a Python program running a crawl adds to what its settings build (the API,
:mod:`gossamer.api`, gives it; the ``gossamer`` command adds nothing but signal handling and
the progress line): page handlers, record sinks after the crawl's own, a callback handed the
crawl loop once it is built, and whether signals stop the crawl."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from gossamer.engine import Crawler
    from gossamer.page.handlers import Handlers
    from gossamer.sinks.base import RecordSink

__all__ = ["Additions"]


class Additions(msgspec.Struct, frozen=True):
    """What the program running a crawl adds to it (see the module docstring)."""

    handlers: Handlers | None = None
    """Page handlers by URL pattern (the page stage's ``handler`` step, items.jsonl)."""
    sinks: tuple[RecordSink, ...] = ()
    """Sinks handed each checkpoint's records after pages.jsonl, items.jsonl and the store."""
    started: Callable[[Crawler], None] | None = None
    """Called with the crawl loop once it is built, before its first request."""
    signals: bool = True
    """SIGINT and SIGTERM stop the crawl gracefully (a second one exits at once)."""
    progress: bool | None = None
    """Show the progress line on stderr; None: unless ``quiet``, when stderr is a terminal."""
    stopping: Callable[[], bool] | None = None
    """Whether the program asked the crawl to stop: a cluster worker still waiting for its
    job stops waiting at its next look (the program cancels that wait too, but a cancel can
    be lost in a race with a Redis reply)."""

    @property
    def items(self) -> bool:
        """Whether the crawl writes items.jsonl for its handlers' items."""
        return bool(self.handlers)


NOTHING = Additions()
"""A crawl as its settings make it (signals handled, the progress line as ``quiet`` says)."""

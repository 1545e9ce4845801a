"""The logger of gossamer's HTTP ports (the metrics port, the dashboard): a request aiohttp
cannot parse is the client's doing, not the server's trouble.

aiohttp logs each such request (a path over its 8 KiB line limit, a header too long, bytes
that are no HTTP) as "Error handling request" at ERROR with its traceback, on the
``aiohttp.server`` logger: nine lines on the crawl's stderr per request, ``--quiet`` or not,
as many as a client cares to send. :func:`server_logger` is the logger those ports give
aiohttp instead: its :class:`BadRequests` filter makes such a record one DEBUG line without
the traceback, at most one every :data:`INTERVAL` seconds (with the count since the last
line). An exception of a handler itself (a 500) keeps its level and its traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp.http_exceptions import HttpProcessingError

INTERVAL = 60.0
"""Seconds between two lines about bad requests."""
_NAME = "gossamer.metrics.requests"
_MAX_REASON = 200
"""Characters of a bad request's reason shown (aiohttp's may quote the request's bytes)."""


class BadRequests(logging.Filter):
    """Turns aiohttp's record of a request it could not parse into a rate-limited DEBUG line
    (see the module docstring); lets every other record through as it is."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._next = 0.0
        self._count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, HttpProcessingError):
            return True
        self._count += 1
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + INTERVAL
        reason = " ".join(str(error).split())[:_MAX_REASON]
        record.msg = "%d request(s) not understood (bad HTTP) since the last line; the last: %s"
        record.args = (self._count, reason)
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        self._count = 0
        return True


def server_logger() -> logging.Logger:
    """The logger an aiohttp server of gossamer's is given (``AppRunner(logger=...)``), with
    its :class:`BadRequests` filter (added once)."""
    logger = logging.getLogger(_NAME)
    if not any(isinstance(f, BadRequests) for f in logger.filters):
        logger.addFilter(BadRequests())
    return logger


__all__ = ["INTERVAL", "BadRequests", "server_logger"]

"""Logs: the standard :mod:`logging`, one logger per module, set up once per command.

Every module logs through ``logging.getLogger(__name__)``. A state change an operator cares
about (a leader change, a partition move, a reclaim, a Redis outage and its end, a robots.txt
that cannot be fetched, a host slowed down) is one record whose ``extra`` holds ``event`` (its
name, e.g. ``leader-acquired``) and the values that explain it. ``--log-level`` chooses what is
shown (``warning`` by default: trouble only; ``info`` adds the state changes); ``--log-json``
writes one JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
then the event's fields. Everything written passes through
:func:`~gossamer.redact.redact_text`, so no password in a URL or DSN reaches a log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from gossamer.redact import redact_text
from gossamer.safe import json_line

LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LEVEL = "warning"
_PACKAGE = "gossamer"
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
"""Attributes every log record has: the others came in through ``extra``."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, then the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact_text(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry:
                entry[key] = _safe(value)
        if record.exc_info:
            entry["exception"] = redact_text(self.formatException(record.exc_info))
        text = json.dumps(entry, ensure_ascii=False, default=lambda v: redact_text(str(v)))
        return json_line(text)


class TextFormatter(logging.Formatter):
    """``2025-01-31 12:00:00,123 WARNING gossamer.cluster.resilient: message``, redacted."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (as :data:`logging.lastResort`)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:
        return sys.stderr


@contextmanager
def logging_to_stderr(level: str = DEFAULT_LEVEL, json_lines: bool = False) -> Iterator[None]:
    """While the block runs, gossamer's records of ``level`` and above go to stderr, as text
    or (``json_lines``) one JSON object per line; then the loggers are as they were."""
    logger = logging.getLogger(_PACKAGE)
    handler = _Stderr()
    handler.setLevel(level.upper())
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    saved = logger.level
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


LOG_FILE = "crawl.log"
LOG_FILE_BYTES = 2 * 1024 * 1024
"""Size at which crawl.log is rotated to crawl.log.1 (one old file kept): at most 4 MiB."""


_LOG_FILE_OWNER: ContextVar[object | None] = ContextVar("gossamer_log_file", default=None)
"""The log file whose block the running code is in (the tasks a crawl starts inherit it)."""


class _OwnRecords(logging.Filter):
    """Passes the records logged in its file's block (its crawl's task and the tasks and
    threads it started with their context), and those logged outside every file's block (a
    thread started without one): two crawls in one process keep to their own files."""

    def __init__(self, owner: object) -> None:
        super().__init__()
        self._owner = owner

    def filter(self, record: logging.LogRecord) -> bool:
        owner = _LOG_FILE_OWNER.get()
        return owner is None or owner is self._owner


@contextmanager
def logging_to_file(path: Path, level: str = "info") -> Iterator[None]:
    """While the block runs, gossamer's records of ``level`` and above are also written to
    ``path`` as JSON lines (the dashboard reads its tail), rotated at :data:`LOG_FILE_BYTES`.

    Only the records of the block's own context go there (see :class:`_OwnRecords`): the
    block must run in a task of its own (each crawl does), or other code of that task writes
    to the file too."""
    logger = logging.getLogger(_PACKAGE)
    try:
        handler = _RotatingFile(path, LOG_FILE_BYTES)
    except OSError:
        yield
        return
    handler.setLevel(level.upper())
    handler.setFormatter(JsonFormatter())
    owner = object()
    handler.addFilter(_OwnRecords(owner))
    owned = _LOG_FILE_OWNER.set(owner)
    saved = logger.level
    logger.addHandler(handler)
    wanted = logging.getLevelName(level.upper())
    if not saved or wanted < saved:
        logger.setLevel(wanted)
    try:
        yield
    finally:
        _LOG_FILE_OWNER.reset(owned)
        logger.removeHandler(handler)
        logger.setLevel(saved)
        handler.close()


class _RotatingFile(logging.FileHandler):
    """A file renamed to ``NAME.1`` (the one old file kept) when a record would take it to
    ``max_bytes``, as ``logging.handlers.RotatingFileHandler`` with one backup does: that
    module loads pickle, queue and socket at every crawl's start for this one class."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self._max_bytes = max_bytes

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.stream is None:
                self.stream = self._open()
            size = self.stream.tell()
            if size and size + len(self.format(record)) + 1 >= self._max_bytes:
                self.stream.close()
                self.stream = None  # reopened, empty, below
                os.replace(self.baseFilename, self.baseFilename + ".1")
        except Exception:  # as logging does: a failing handler never fails the crawl
            self.handleError(record)
            return
        super().emit(record)


def _iso_time(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact_text(str(value))

"""The one reader of a crawl folder's files (status.json, stats.json, crawl.log): bounded in
size and in nesting, regular files only.

A crawl folder is anything under ``--out``: a status.json of 100,000 nested ``[`` raised
``RecursionError`` and a stats.json linked to /dev/zero was read until memory ran out, each
making the dashboard's overview a 500 that hid every crawl. Here a FIFO or a device is
refused before a byte is read (opening a FIFO would block), a file past its bound is refused
from its size, and JSON nested deeper than :data:`MAX_DEPTH` is refused, so what the
dashboard serves can always be written back as JSON. Each refusal is a :class:`FileError`
whose message says what is wrong in one line.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "MAX_DEPTH",
    "MAX_JSON_BYTES",
    "FileError",
    "open_file",
    "parse_json",
    "read_bytes",
    "read_json",
]

MAX_JSON_BYTES = 8 * 1024 * 1024
"""The largest status.json or stats.json read (they hold ~2 KB; the figures of each proxy of
a pool of tens of thousands take a few MB)."""
MAX_DEPTH = 32
"""Arrays and objects nested deeper than this are refused (what the crawl writes nests a few
levels deep)."""


class FileError(ValueError):
    """A file of a crawl folder that cannot be shown; the message says why, in one line."""


def open_file(path: Path) -> BinaryIO | None:
    """``path`` opened for reading; None if there is no such file. FileError for what is not
    a regular file (a FIFO is opened without blocking, then refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileError(f"{path.name}: cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileError(f"{path.name}: not a regular file")
    return os.fdopen(fd, "rb")


def read_bytes(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path``; None if there is no such file. FileError for
    what is not a regular file or holds more than ``limit`` bytes."""
    handle = open_file(path)
    if handle is None:
        return None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        data = b"" if size > limit else handle.read(limit + 1)  # it may grow meanwhile
    if size > limit or len(data) > limit:
        raise FileError(f"{path.name}: larger than {limit} bytes")
    return data


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, read through :func:`read_bytes` and :func:`parse_json`;
    None if there is no such file. FileError for anything else than a JSON object."""
    raw = read_bytes(path, MAX_JSON_BYTES)
    if raw is None:
        return None
    try:
        value = parse_json(raw)
    except FileError as exc:
        raise FileError(f"{path.name}: {exc}") from None
    if not isinstance(value, dict):
        raise FileError(f"{path.name}: not a JSON object")
    return value


def parse_json(raw: bytes) -> Any:
    """The JSON value of ``raw``; FileError when it is not JSON or nested deeper than
    :data:`MAX_DEPTH`. ``NaN``, ``Infinity`` and numbers too large for a float are read as
    null, which the browser's JSON can hold."""
    try:
        value = json.loads(raw, parse_constant=_null, parse_float=_finite)
    except RecursionError:
        raise FileError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, over-long integers
        raise FileError(f"not valid JSON: {str(exc)[:120]}") from None
    if _too_deep(value):
        raise FileError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _null(name: str) -> None:
    return None


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests arrays and objects deeper than :data:`MAX_DEPTH` (a walk
    that recurses nowhere)."""
    if not isinstance(value, dict | list):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        inner = item.values() if isinstance(item, dict) else item
        for child in inner:
            if isinstance(child, dict | list):
                if depth >= MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False

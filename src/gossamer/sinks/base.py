"""The page record every sink stores: one per finished URL."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class PageRecord:
    """The outcome of one URL: fetched, redirected, failed or skipped by robots.txt."""

    url: str
    status: int | None
    depth: int
    content_type: str | None = None
    bytes: int = 0
    fetched_at: float | None = None
    """Unix seconds when the response ended (None when no request was made)."""
    elapsed_ms: float | None = None
    title: str | None = None
    outlinks: int = 0
    redirect_to: str | None = None
    error: str | None = None
    attempts: int = 1
    truncated: bool = False

    def to_json(self) -> str:
        """One JSON line (no newline)."""
        return _ENCODER.encode(dict(zip(FIELD_NAMES, _values(self), strict=True)))

    def as_row(self) -> tuple[Any, ...]:
        """The values in field order (SQLite rows)."""
        return _values(self)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> PageRecord:
        """Inverse of :meth:`as_row`."""
        values = dict(zip(FIELD_NAMES, row, strict=True))
        values["truncated"] = bool(values["truncated"])
        return cls(**values)


FIELD_NAMES = tuple(f.name for f in fields(PageRecord))
_values = operator.attrgetter(*FIELD_NAMES)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

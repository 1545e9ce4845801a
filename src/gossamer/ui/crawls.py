"""Crawls as the dashboard sees them: read from their output folders, never written.

A crawl is a folder holding a ``crawl.db`` (a given ``--out`` folder or one of its
subfolders, e.g. the workers' folders of a cluster job). Its page records are read from
crawl.db opened read-only (``mode=ro``: a running crawl is not disturbed), a batch of new rows
at each look, so the figures grow with the crawl and a long crawl is read once, not at every
look. Its live counters and held-back hosts come from status.json (rewritten by the crawl
every few seconds), its final ones from stats.json, its log from the tail of crawl.log, each
read through :mod:`gossamer.ui.files` (bounded; a file that cannot be shown is the crawl's
``error``, and the other crawls are shown as ever).

Everything read is the crawl's output, i.e. pages of the web: it reaches the page as JSON and
is shown as text, never as HTML.
"""

from __future__ import annotations

import hashlib
import logging
import math
import sqlite3
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gossamer.ui.files import FileError, open_file, parse_json, read_json

log = logging.getLogger(__name__)

DB_FILE = "crawl.db"
STATUS_FILE = "status.json"
STATS_FILE = "stats.json"
LOG_FILE = "crawl.log"
LEVELS = ("debug", "info", "warning", "error", "critical")
STALE_AFTER = 15.0
"""Seconds after which a status.json that says ``running`` means the crawl is gone."""
BATCH = 20_000
"""Page rows read at one look (a long crawl is caught up over a few looks)."""
LAST_PAGES = 25
MINUTES = 60
"""Minutes of pages/s history shown."""
MAX_HOSTS = 20_000
MAX_REASONS = 200
EXAMPLES = 3
LOG_TAIL_BYTES = 256 * 1024
"""Bytes of crawl.log read from its end."""
LOG_LINES = 300
MAX_FOLDERS = 1_000
"""Subfolders of an ``--out`` folder looked into, at most."""
TEXT_CHARS = 20_000
"""Characters of a record's long text fields shown."""
URL_CHARS = 4_096
"""Characters of a URL read for the lists (the record shows it to :data:`TEXT_CHARS`)."""

# The texts are cut by SQLite, never read whole into Python: a crawl.db may hold anything.
_COLUMNS = (
    f"id, substr(url, 1, {URL_CHARS}), status, substr(error, 1, 300), fetched_at, "
    "elapsed_ms, substr(title, 1, 200), bytes, depth"
)


def crawl_id(path: Path) -> str:
    """A short stable name for the crawl in ``path`` (URLs carry it, never a path)."""
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]


def discover(outs: list[Path]) -> dict[str, Path]:
    """Every crawl folder in ``outs`` and their subfolders, by id."""
    found: dict[str, Path] = {}
    for out in outs:
        candidates = [out]
        try:
            children = sorted(p for p in out.iterdir() if p.is_dir())
        except OSError:
            children = []
        candidates += children[:MAX_FOLDERS]
        for folder in candidates:
            if (folder / DB_FILE).is_file():
                found[crawl_id(folder)] = folder
    return found


def _reason(error: str) -> str:
    return error.split(":", 1)[0].strip()[:80] or "error"


def _cut(column: str) -> str:
    """SQL for ``column`` (any name) as the record shows it: a text of more than
    :data:`TEXT_CHARS` characters cut after one more, a blob as its size."""
    name = '"' + column.replace('"', '""') + '"'
    return (
        f"CASE typeof({name}) WHEN 'text' THEN substr({name}, 1, {TEXT_CHARS + 1}) "
        f"WHEN 'blob' THEN '<' || length({name}) || ' bytes>' ELSE {name} END"
    )


def _finite(value: Any) -> Any:
    """``value``, but None for an infinite or NaN REAL (a crawl.db may hold one; JSON may not)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc[:200] or "?"
    except ValueError:
        return "?"


@dataclass(frozen=True, slots=True)
class Live:
    """A crawl's state as status.json (or stats.json) tells it."""

    state: str
    stats: dict[str, Any]
    held_back: list[dict[str, Any]]
    error: str | None = None
    """Why status.json or stats.json could not be read, in one line (None: no problem)."""


class CrawlView:
    """One crawl's figures, brought up to date by :meth:`refresh` (call it off the event
    loop: it reads SQLite)."""

    def __init__(self, ident: str, path: Path) -> None:
        self.ident = ident
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._last_id = 0
        self._pages = 0
        self._minutes: Counter[int] = Counter()
        self._statuses: Counter[str] = Counter()
        self._errors: dict[str, list[Any]] = {}
        self._hosts: Counter[str] = Counter()
        self._last: deque[dict[str, Any]] = deque(maxlen=LAST_PAGES)
        self._newest = 0.0
        self._oldest = 0.0
        self._file: tuple[int, int] | None = None

    # -- reading ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            uri = f"{(self.path / DB_FILE).resolve().as_uri()}?mode=ro"
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=2.0)
            self._conn.execute("PRAGMA query_only = ON")
        return self._conn

    def _reset(self) -> None:
        """Forget what was read: the crawl.db is another one now (``--overwrite``)."""
        self.close()
        self._last_id = self._pages = 0
        self._minutes.clear()
        self._statuses.clear()
        self._errors.clear()
        self._hosts.clear()
        self._last.clear()
        self._newest = self._oldest = 0.0

    def _replaced(self) -> bool:
        try:
            stat = (self.path / DB_FILE).stat()
        except OSError:
            return False
        file = (stat.st_dev, stat.st_ino)
        replaced = self._file is not None and file != self._file
        self._file = file
        return replaced

    def refresh(self) -> None:
        """Read the page rows written since the last look (at most :data:`BATCH`)."""
        with self._lock:
            if self._replaced():
                self._reset()
            try:
                rows = (
                    self._connect()
                    .execute(
                        f"SELECT {_COLUMNS} FROM pages WHERE id > ? ORDER BY id LIMIT ?",
                        (self._last_id, BATCH),
                    )
                    .fetchall()
                )
            except sqlite3.Error as exc:
                log.warning("cannot read %s: %s", self.path / DB_FILE, exc)
                self.close()
                return
            for row in rows:
                self._count(row)

    def _count(self, row: tuple[Any, ...]) -> None:
        ident, url, status, error, fetched_at, elapsed_ms, title, size, depth = map(_finite, row)
        self._last_id = ident
        self._pages += 1
        if isinstance(fetched_at, int | float):
            self._minutes[int(fetched_at // 60)] += 1
            self._newest = max(self._newest, float(fetched_at))
            self._oldest = min(self._oldest or float(fetched_at), float(fetched_at))
            if len(self._minutes) > 2 * MINUTES:
                for minute in sorted(self._minutes)[:-MINUTES]:
                    del self._minutes[minute]
        self._statuses[str(status) if status is not None else "no response"] += 1
        if error:
            reason = _reason(str(error))
            entry = self._errors.get(reason)
            if entry is None and len(self._errors) < MAX_REASONS:
                entry = self._errors[reason] = [0, []]
            if entry is not None:
                entry[0] += 1
                if len(entry[1]) < EXAMPLES:
                    entry[1].append({"id": ident, "url": url, "error": str(error)[:300]})
        self._hosts[_host(str(url))] += 1
        if len(self._hosts) > MAX_HOSTS:
            self._hosts = Counter(dict(self._hosts.most_common(MAX_HOSTS // 2)))
        self._last.append(
            {
                "id": ident,
                "url": url,
                "status": status,
                "error": error,
                "fetched_at": fetched_at,
                "elapsed_ms": elapsed_ms,
                "title": (title or "")[:200],
                "bytes": size,
                "depth": depth,
            }
        )

    def record(self, page: int) -> dict[str, Any] | None:
        """The whole record of page row ``page`` (long texts cut, blobs by their size)."""
        with self._lock:
            try:
                conn = self._connect()
                names = [str(info[1]) for info in conn.execute("PRAGMA table_info(pages)")]
                columns = ", ".join(_cut(name) for name in names)
                query = f"SELECT {columns} FROM pages WHERE id = ?"
                row = conn.execute(query, (page,)).fetchone()
            except sqlite3.Error as exc:
                log.warning("cannot read %s: %s", self.path / DB_FILE, exc)
                return None
        if row is None:
            return None
        out = {name: _finite(value) for name, value in zip(names, row, strict=True)}
        for key, value in out.items():
            if isinstance(value, str) and len(value) > TEXT_CHARS:
                out[key] = value[:TEXT_CHARS] + " [...]"
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- what the page shows ---------------------------------------------------------------

    def live(self) -> Live:
        """What status.json says (stats.json when status.json is missing or cannot be read)."""
        errors: list[str] = []
        status = _read(self.path / STATUS_FILE, errors)
        if status is not None:
            state = _state(status)
            stats = status.get("stats")
            held = status.get("held_back") if state in ("running", "paused") else []
            held = [h for h in held if isinstance(h, dict)] if isinstance(held, list) else []
            return Live(state, stats if isinstance(stats, dict) else {}, held)
        final = _read(self.path / STATS_FILE, errors)
        error = "; ".join(errors) or None
        if final is not None:
            return Live("finished", final, [], error)
        return Live("unknown", {}, [], error)

    def summary(self, live: Live | None = None) -> dict[str, Any]:
        """The crawl's line in the overview (of ``live``, else read now)."""
        live = live or self.live()
        rate = live.stats.get("pages_per_second")
        return {
            "id": self.ident,
            "name": self.path.name,
            "path": str(self.path),
            "state": live.state,
            "pages": max(self._pages, _int(live.stats.get("pages"))),
            "pages_per_second": rate if isinstance(rate, int | float) else 0,
            "error": live.error,
        }

    def detail(self) -> dict[str, Any]:
        """Everything the crawl's page shows."""
        live = self.live()
        with self._lock:
            return {
                **self.summary(live),
                "stats": live.stats,
                "held_back": live.held_back[:20],
                "rate": self._rate(live.state),
                "statuses": dict(self._statuses.most_common(30)),
                "errors": [
                    {"reason": reason, "count": count, "examples": examples}
                    for reason, (count, examples) in sorted(
                        self._errors.items(), key=lambda item: -item[1][0]
                    )[:30]
                ],
                "top_hosts": self._hosts.most_common(15),
                "last_pages": list(reversed(self._last)),
                "records": self._pages,
            }

    def _rate(self, state: str) -> list[dict[str, Any]]:
        """Pages/s of each of the last minutes (of the crawl's last page, or now while it
        runs); the first and the last minute are counted over the seconds the crawl ran."""
        now = time.time()
        running = state in ("running", "paused")
        last = now if running else self._newest or now
        end = int(last // 60)
        out = []
        for minute in range(end - MINUTES + 1, end + 1):
            count = self._minutes.get(minute, 0)
            start = max(minute * 60.0, self._oldest)
            seconds = max(min(minute * 60.0 + 60, last) - start, 1.0)
            out.append({"t": minute * 60, "rate": round(count / seconds, 2) if count else 0.0})
        return out

    def log_tail(self, level: str) -> list[dict[str, Any]]:
        """The last lines of crawl.log at ``level`` or above (read from its end only; none
        if it is not a regular file)."""
        floor = LEVELS.index(level)
        try:
            handle = open_file(self.path / LOG_FILE)
            if handle is None:
                return []
            with handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - LOG_TAIL_BYTES))
                data = handle.read(LOG_TAIL_BYTES)
        except (OSError, FileError):
            return []
        lines = data.split(b"\n")
        if size > LOG_TAIL_BYTES:
            lines = lines[1:]  # cut in the middle
        out = []
        for line in lines:
            entry = _log_entry(line)
            if entry is not None and LEVELS.index(entry["level"]) >= floor:
                out.append(entry)
        return out[-LOG_LINES:]


def _log_entry(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        data = parse_json(line)
    except FileError:
        data = {"message": line.decode("utf-8", "replace")}
    if not isinstance(data, dict):
        return None
    level = str(data.get("level", "info")).lower()
    return {
        "time": str(data.get("time", ""))[:40],
        "level": level if level in LEVELS else "info",
        "logger": str(data.get("logger", ""))[:80],
        "event": str(data.get("event", ""))[:80],
        "message": str(data.get("message", ""))[:2000],
    }


def _read(path: Path, errors: list[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``; None (with why in ``errors``) if it cannot be read."""
    try:
        return read_json(path)
    except FileError as exc:
        errors.append(str(exc))
        return None


def _state(status: dict[str, Any]) -> str:
    """status.json's state; ``interrupted`` if it says running but is no longer rewritten."""
    state = str(status.get("state", "unknown"))[:40]
    updated = status.get("updated")  # compared, not subtracted: 10**400 is JSON too
    stale = not (isinstance(updated, int | float) and updated >= time.time() - STALE_AFTER)
    return "interrupted" if state in ("running", "paused") and stale else state


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Crawls:
    """The crawls of the given ``--out`` folders, found anew at each look."""

    def __init__(self, outs: list[Path]) -> None:
        self._outs = outs
        self._views: dict[str, CrawlView] = {}
        self._lock = threading.Lock()

    def refresh_list(self) -> list[CrawlView]:
        """Find the crawls (new ones appear, removed ones go) and read their new rows."""
        with self._lock:
            return self._refresh_list()

    def _refresh_list(self) -> list[CrawlView]:
        found = discover(self._outs)
        for ident in set(self._views) - set(found):
            self._views.pop(ident).close()
        for ident, path in found.items():
            if ident not in self._views:
                self._views[ident] = CrawlView(ident, path)
        views = sorted(self._views.values(), key=lambda v: str(v.path))
        for view in views:
            view.refresh()
        return views

    def get(self, ident: str) -> CrawlView | None:
        with self._lock:
            if ident not in self._views:
                self._refresh_list()
            return self._views.get(ident)

    def close(self) -> None:
        for view in self._views.values():
            view.close()
        self._views.clear()

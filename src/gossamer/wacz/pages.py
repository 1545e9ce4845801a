"""The pages list of a WACZ (``pages/pages.jsonl``): a header line, then one line per HTML
page the crawl archived (``url``, ``ts`` as the capture's WARC-Date, ``title`` where known),
read from the crawl's ``pages.jsonl`` one line at a time.

A page is listed when its record names a response in a packaged WARC file, it answered 2xx
(or 304, a revisit of a page), its content type is HTML, and its payload was not withheld
(``noindex``): a replay tool opens each listed page, so each must be in the index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gossamer.wacz.index import IndexCounts

__all__ = ["HEADER", "page_lines"]

log = logging.getLogger(__name__)

HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_HTML = frozenset({"text/html", "application/xhtml+xml"})
_MAX_TITLE = 1000
_SURROGATE = re.compile("[\ud800-\udfff]")


def page_lines(
    path: Path, files: Mapping[str, str], counts: IndexCounts
) -> Iterator[dict[str, Any]]:
    """The pages of the crawl record file ``path`` (``pages.jsonl``); ``files`` maps the
    WARC files' names under ``OUT/warc`` to their names in the WACZ, ``counts`` tells which
    responses were indexed (not withheld, not torn)."""
    if not path.exists():
        log.warning("%s missing: the WACZ lists no pages of that crawl", path)
        return
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
            except ValueError:  # a torn last line (pages.jsonl is repaired on --resume)
                log.warning("%s line %d is not JSON: skipped", path, number)
                continue
            page = _page(record, files, counts) if isinstance(record, dict) else None
            if page is not None:
                yield page


def _page(
    record: dict[str, Any], files: Mapping[str, str], counts: IndexCounts
) -> dict[str, Any] | None:
    name = files.get(str(record.get("warc_file")))
    offset, url, when = record.get("warc_offset"), record.get("url"), record.get("fetched_at")
    if name is None or not isinstance(url, str) or not isinstance(when, int | float):
        return None
    status, kind = record.get("status"), record.get("content_type")
    if not isinstance(status, int) or not (200 <= status < 300 or status == 304):
        return None
    if not isinstance(kind, str) or kind.split(";", 1)[0].strip().lower() not in _HTML:
        return None
    if not counts.archived(name, offset):
        return None
    ts = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    page: dict[str, Any] = {
        "id": _page_id(f"{name} {offset} {ts} {url}"),
        "url": url,
        "ts": ts,
    }
    title = record.get("title")
    if isinstance(title, str) and title.strip():
        page["title"] = _clean_title(title)
    return page


def _page_id(capture: str) -> str:
    """A page's id: a digest of where its capture lies (unique in merged crawls too)."""
    return hashlib.blake2b(capture.encode(errors="replace"), digest_size=16).hexdigest()


def _clean_title(title: str) -> str:
    """At most ``_MAX_TITLE`` characters that UTF-8 can hold (a lone surrogate from a
    page's ``&#xD800;`` becomes U+FFFD)."""
    return _SURROGATE.sub("\ufffd", title[:_MAX_TITLE])

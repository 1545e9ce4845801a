"""status.json: the live state of one crawl process, rewritten every few seconds.

stats.json is written once, at the end; a dashboard (``gossamer ui``) reading a crawl under
way reads status.json instead: the counters of :class:`~gossamer.stats.CrawlStats`, whether
the crawl runs, is paused or has ended, and the hosts politeness holds back (waiting on a
Crawl-delay, a back-off or a Retry-After, with how long). Each write goes to a temporary file
renamed over the old one, so a reader never sees half a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from gossamer.engine import Crawler

log = logging.getLogger(__name__)

STATUS_FILE = "status.json"
INTERVAL = 2.0
"""Seconds between two writes."""
HELD_BACK = 20
"""Hosts listed as held back, at most."""


def snapshot(crawler: Crawler, state: str, worker: str | None = None) -> dict[str, Any]:
    """What status.json holds now."""
    stats = msgspec.structs.asdict(crawler.stats())
    stats["elapsed"] = round(stats["elapsed"], 3)
    stats["pages_per_second"] = round(stats["pages_per_second"], 2)
    return {
        "state": state,
        "pid": os.getpid(),
        "worker": worker,
        "updated": round(time.time(), 3),
        "stats": stats,
        "held_back": [msgspec.structs.asdict(h) for h in crawler.held_back(HELD_BACK)],
    }


def write_status(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextlib.asynccontextmanager
async def status_file(
    out: Path, crawler: Crawler, worker: str | None = None, interval: float = INTERVAL
) -> AsyncIterator[None]:
    """Keep ``out/status.json`` up to date while the block runs; at its end the state is
    ``finished`` (or ``stopped`` when the crawl was stopped with URLs left)."""
    path = out / STATUS_FILE

    def write(state: str) -> None:
        try:
            write_status(path, snapshot(crawler, state, worker))
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc.strerror)

    async def loop() -> None:
        while True:
            write("paused" if crawler.paused else "running")
            await asyncio.sleep(interval)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        write("stopped" if crawler.stopping else "finished")

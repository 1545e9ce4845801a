"""What a crawl writes: its output directory, crawl.db, pages.jsonl, items.jsonl, the WARC
archive and the shared page store, each opened by one function."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gossamer.crawldb import CrawlDB
from gossamer.engine import SEEDING_META
from gossamer.errors import CommandError
from gossamer.settings import CrawlSettings, SettingsError
from gossamer.sinks.jsonl import ItemJsonlSink, JsonlSink, repair_jsonl
from gossamer.sinks.sqlite import SQLiteSink

if TYPE_CHECKING:
    from gossamer.sinks.postgres import PostgresSink, StoreExport
    from gossamer.sinks.warc import WarcWriter

_OUTPUTS = (
    "crawl.db",
    "crawl.db-wal",
    "crawl.db-shm",
    "pages.jsonl",
    "items.jsonl",
    "stats.json",
    "status.json",
    "crawl.log",
    "crawl.log.1",
    "crawl.wacz",
)


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_STORAGE = frozenset({errno.EROFS, errno.EIO})
_REFUSED = re.compile(r"unable to open database file|readonly database|disk I/O error")
"""sqlite's words for a crawl.db it cannot open or write (its folder or itself not writable,
the disk failing)."""


class Advice(NamedTuple):
    """What :func:`storage_errors` tells a user to do: once the disk has room, and with a
    corrupt crawl.db."""

    full: str
    corrupt: str


CRAWL_ADVICE = Advice(
    "free some space, then continue the crawl with --resume",
    "restore it from a copy, or start the crawl again with --overwrite",
)
WORKER_ADVICE = Advice(
    "free some space, then start the worker again",
    "restore it from a copy, or move it away, then start the worker again",
)
"""A cluster worker's: it always resumes, and one that starts with no crawl.db of its own
loses nothing of the job (its state is in Redis)."""


@contextmanager
def storage_errors(out: Path, advice: Advice = CRAWL_ADVICE) -> Iterator[None]:
    """A full disk, a read-only or failing one, an output the crawl may not write (a failed
    system call on a file in ``out``: permission denied, not a directory...) or a corrupt
    crawl.db met in the block ends it as a :class:`CommandError`: one line naming the file and
    what to do (``advice``: the crawl can be resumed once there is room; a corrupt crawl.db
    cannot). Another OSError (a socket's, a file's outside ``out``) goes on."""
    db = out / "crawl.db"
    try:
        yield
    except OSError as exc:
        if exc.errno not in _FULL | _STORAGE and not _within(exc.filename, out):
            raise
        where = exc.filename or out
        if exc.errno in _FULL:
            raise CommandError(
                f"cannot write {where}: no space left on device ({advice.full})"
            ) from exc
        raise CommandError(f"cannot write {where}: {exc.strerror}") from exc
    except sqlite3.OperationalError as exc:
        if "full" in str(exc):
            raise CommandError(
                f"cannot write {db}: no space left on device ({advice.full})"
            ) from exc
        if _REFUSED.search(str(exc)) is None:
            raise
        raise CommandError(f"cannot write {db}: {exc}") from exc
    except sqlite3.DatabaseError as exc:  # malformed, not a database
        raise CommandError(f"{db} is corrupt ({exc}): {advice.corrupt}") from exc


def _within(filename: object, out: Path) -> bool:
    """Whether an OSError's ``filename`` is ``out`` or a file in it."""
    if not isinstance(filename, str | bytes):
        return False
    path = os.path.abspath(os.fsdecode(filename))
    return Path(path).is_relative_to(os.path.abspath(out))


@contextmanager
def holding_out_dir(settings: CrawlSettings) -> Iterator[None]:
    """--out created, locked for this crawl and prepared (`prepare_out_dir`) while the block
    runs. The lock (``flock`` on the folder itself: no file of its own, none that
    ``--overwrite`` deletes) refuses a second crawl on the folder, resumed or overwriting,
    which would record URLs twice and double every host's pace. Linux drops it with the
    process, however that ends."""
    out = settings.out
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {out}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise SettingsError(
                f"invalid setting 'out': another crawl is running in {out} (see its "
                "status.json); wait for it to end or stop it first"
            ) from exc
        prepare_out_dir(settings)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def prepare_out_dir(settings: CrawlSettings) -> None:
    """Create --out; refuse to mix a new crawl into an old one unless asked."""
    out = settings.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'out': {exc.strerror}: {out}") from exc
    if settings.resume:
        return
    if settings.overwrite:
        for name in _OUTPUTS:
            (out / name).unlink(missing_ok=True)
        for path in (out / "warc").glob("*.warc.gz"):
            path.unlink()
    elif (out / "crawl.db").exists():
        raise SettingsError(
            f"invalid setting 'out': {out} holds a crawl already; use --resume or --overwrite"
        )


async def open_outputs(
    stack: AsyncExitStack, settings: CrawlSettings, worker: str | None, with_items: bool
) -> tuple[PostgresSink | None, CrawlDB, JsonlSink, ItemJsonlSink | None]:
    """The shared page store (first: a bad store fails before crawl.db exists), crawl.db,
    pages.jsonl (repaired after a crash) and, with rules, items.jsonl; each entered on
    ``stack`` as it opens."""
    out = settings.out
    sink = await open_store(settings, worker)
    if sink is not None:
        stack.push_async_callback(sink.close)
    db = CrawlDB(out / "crawl.db")
    stack.callback(db.close)
    jsonl_path = out / "pages.jsonl"
    committed = repair_jsonl(jsonl_path)
    jsonl = JsonlSink(jsonl_path)
    stack.callback(jsonl.close)
    await jsonl.write(SQLiteSink(db).records_after(committed))
    items = None
    if with_items:
        items = item_sink(out / "items.jsonl", db)
        stack.callback(items.close)
    return sink, db, jsonl, items


def item_sink(path: Path, db: CrawlDB) -> ItemJsonlSink:
    """items.jsonl, its torn last line cut and the committed items it lacks appended."""
    committed = repair_jsonl(path)
    sink = ItemJsonlSink(path)
    sink.write_items(SQLiteSink(db).items_after(committed))
    return sink


def warc_writer(settings: CrawlSettings) -> WarcWriter | None:
    """With ``--warc``: a new archive file under ``out/warc`` (even when resuming)."""
    if not settings.warc:
        return None
    from gossamer.sinks.warc import WarcWriter  # FastWARC loads only for --warc

    return WarcWriter(
        settings.out / "warc",
        max_bytes=settings.warc_max_bytes,
        info={
            "http-header-user-agent": settings.user_agent,
            "robots": "obey" if settings.robots else "ignore",
        },
    )


async def open_store(settings: CrawlSettings, worker: str | None) -> PostgresSink | None:
    """With ``--store``: the shared page store, its rows signed by ``worker`` (default
    host-pid)."""
    if settings.store is None:
        return None
    # Imported only for a store: asyncpg costs import time and memory in every process.
    from gossamer.sinks.postgres import PostgresSink

    name = worker or f"{socket.gethostname()}-{os.getpid()}"
    return await PostgresSink.open(settings.store, name)


async def catch_up(sink: PostgresSink | None, db: CrawlDB) -> StoreExport | None:
    """The store's view of crawl.db, after sending the records a lost server missed."""
    if sink is None:
        return None
    from gossamer.sinks.postgres import StoreExport

    store = StoreExport(sink, db)
    await store.catch_up()
    return store


def stored_seeds(path: Path) -> list[str]:
    """The seeds of the crawl stored at ``path`` (``--resume`` without seeds)."""
    if not path.exists():
        return []
    db = CrawlDB(path)
    try:
        stored = db.get_meta("seeds")
        seeding = db.get_meta(SEEDING_META)
    finally:
        db.close()
    if seeding == "started":
        raise SettingsError(
            "invalid setting 'seeds': the crawl stopped before all its seeds were queued; "
            "resume with the same seeds (or --seeds-file) and --resume"
        )
    return stored.split("\n") if stored else []

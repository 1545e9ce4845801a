"""The shared page store: page records upserted into a PostgreSQL table (``--store``).

Every crawl process (a lone ``gossamer crawl`` or each cluster worker) writes the records of a
checkpoint after crawl.db's commit and before the checkpoint's acks, so an acked URL's record is
in the table. The table holds one row per URL: the fields of :class:`PageRecord` as columns
(nested values as jsonb), ``fp`` (the URL fingerprint) as primary key, ``worker`` (who wrote the
row) and ``written_at``. A record written twice (a worker died after writing but before its
ack, and another fetched the URL again) is upserted, never duplicated.

The items rules read go to a second table in the same transaction as their pages: ``items``
(``<table>_items`` for another ``?table=``), one row per item keyed by ``(url, rule, idx)``
with its fields as jsonb. A page written again replaces its items: those it no longer has are
deleted and the rest upserted, so each page's items are there once, whichever worker wrote it.

Batches go through ``COPY`` into a temporary table and one ``INSERT ... ON CONFLICT``: measured
on loopback PostgreSQL 15, 10 us per record in batches of 1000 against 20 us with
``executemany`` (equal at 100 records).

crawl.db remembers how many of its records reached the table (meta ``store:<target>``): a
resumed crawl first sends the rest, so records a lost server missed are re-exported by running
the crawl again with ``--resume`` (a cluster worker: starting it again with the same ``--out``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from gossamer.crawldb import CrawlDB
from gossamer.errors import CommandError
from gossamer.redact import redact_text, redact_url
from gossamer.retry import Backoff, Outage, retry
from gossamer.settings import SettingsError
from gossamer.sinks.base import FIELD_NAMES, Item, PageRecord
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.urls import fingerprint

log = logging.getLogger(__name__)
DEFAULT_TABLE = "pages"
RETRY_FOR = 60.0
"""Seconds a lost server is retried mid-crawl before the crawl stops."""
CONNECT_TIMEOUT = 5.0
WRITE_TIMEOUT = 30.0
_BACKOFF = Backoff(0.1, 5.0)
_CATCH_UP_BATCH = 1000
_FILE_PARAMETERS = ("sslrootcert", "sslcert", "sslkey", "sslcrl", "passfile")
"""DSN parameters naming files: checked where the URL comes in, not at the first connect."""
_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_INCOMING = "gossamer_incoming"
_INCOMING_ITEMS = "gossamer_incoming_items"
ITEM_COLUMNS = ("url", "rule", "idx", "fetched_at", "fields", "worker")
_TRANSIENT = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
)
"""Errors of a lost or restarting server (retried); anything else is a rejection."""


class StoreError(CommandError):
    """The page store is unreachable or refuses the records: one line, exit status 1."""


@dataclass(frozen=True, slots=True)
class StoreTarget:
    """A parsed ``--store`` URL."""

    dsn: str
    """The URL asyncpg connects to (without ``table``)."""
    table: str
    shown: str
    """The URL without its password, for messages and crawl.db's meta key."""


def parse_store_url(url: str) -> StoreTarget:
    """Split ``postgres://user@host:port/db?table=name``; raises SettingsError when malformed."""
    parts = urlsplit(url)
    shown = redact_url(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise SettingsError(
            "invalid setting 'store': expected a postgres://host/database URL or a key=value "
            f"connection string, got {shown!r}"
        )
    try:
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError as exc:
        raise SettingsError(f"invalid setting 'store': {exc} in {shown!r}") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    table = next((v for k, v in reversed(query) if k == "table"), DEFAULT_TABLE)
    if not _TABLE_NAME.fullmatch(table):
        raise SettingsError(
            f"invalid setting 'store': table {table!r} must be a lowercase SQL name "
            "(a-z, 0-9, _; at most 63 characters, not starting with a digit)"
        )
    for key, value in query:
        path = Path(value)
        if key in _FILE_PARAMETERS and not (path.is_file() and os.access(path, os.R_OK)):
            raise SettingsError(f"invalid setting 'store': {key}: no readable file {value!r}")
    rest = urlencode([(k, v) for k, v in query if k != "table"])
    return StoreTarget(urlunsplit(parts._replace(query=rest)), table, shown)


# -- the table ------------------------------------------------------------------------------

_SQL_TYPES: dict[Any, str] = {
    bool: "boolean",
    int: "bigint",
    float: "double precision",
    str: "text",
}


def _column_type(kind: Any) -> str:
    """The SQL type of a PageRecord field: scalars as themselves, anything else as jsonb."""
    options = [kind]
    if get_origin(kind) in (Union, UnionType):
        options = list(get_args(kind))
    nullable = NoneType in options
    options = [o for o in options if o is not NoneType]
    sql = _SQL_TYPES.get(options[0], "jsonb") if len(options) == 1 else "jsonb"
    return sql if nullable else f"{sql} NOT NULL"


_HINTS = get_type_hints(PageRecord)
_FIELD_TYPES = [(name, _column_type(_HINTS[name])) for name in FIELD_NAMES]
_JSON_FIELDS = frozenset(i for i, (_, sql) in enumerate(_FIELD_TYPES) if sql.startswith("jsonb"))
_ADDED_COLUMNS = {
    "flags": "jsonb NOT NULL DEFAULT '[]'::jsonb",
    "extra": "jsonb",
    "warc_file": "text",
    "warc_offset": "bigint",
    "warc_length": "bigint",
    "text": "text",
    "lang": "text",
    "description": "text",
    "canonical": "text",
    "published": "text",
    "authors": "jsonb NOT NULL DEFAULT '[]'::jsonb",
    "images": "jsonb NOT NULL DEFAULT '[]'::jsonb",
    "text_chars": "bigint",
    "rule": "text",
    "items": "bigint NOT NULL DEFAULT 0",
    "rule_errors": "jsonb NOT NULL DEFAULT '[]'::jsonb",
    "duplicate_of": "text",
    "proxy": "text",
    "rendered": "boolean NOT NULL DEFAULT false",
    "relevance": "double precision",
    "change": "text",
    "previous_fetched_at": "double precision",
}
"""Fields added after the table's first version: added to an existing table when it opens."""
COLUMNS = ("fp", *FIELD_NAMES, "worker")
"""The columns a write fills (``written_at`` takes the server's clock)."""


def _create_sql(table: str) -> str:
    columns = ",\n    ".join(f'"{name}" {sql}' for name, sql in _FIELD_TYPES)
    return (
        f'CREATE TABLE IF NOT EXISTS "{table}" (\n    fp bigint PRIMARY KEY,\n    {columns},\n'
        "    worker text NOT NULL,\n    written_at timestamptz NOT NULL DEFAULT now()\n)"
    )


_FETCH_COLUMNS = frozenset(
    {
        "status",
        "fetched_at",
        "elapsed_ms",
        "error",
        "redirect_to",
        "attempts",
        "flags",
        "warc_file",
        "warc_offset",
        "warc_length",
        "proxy",
        "change",
        "previous_fetched_at",
        "worker",
    }
)
"""The columns a short record (a tombstone, a 304) writes: the rest keep the page's content."""
_SHORT = (
    """(EXCLUDED."change" = 'gone' OR EXCLUDED."status" = 304)"""
    """ AND NOT EXCLUDED."flags" ? 'noindex'"""
)
"""A 304 holds no content, whatever its ``change`` (none: it answered no conditional request);
one that says ``noindex`` (an ``X-Robots-Tag``) clears the row's content, as a 200 ``noindex``
does: the owner no longer wants it indexed."""


def _update(table: str, column: str) -> str:
    """What an upsert sets ``column`` to: a short record keeps the content of the row."""
    if column in _FETCH_COLUMNS:
        return f'"{column}" = EXCLUDED."{column}"'
    return f'"{column}" = CASE WHEN {_SHORT} THEN "{table}"."{column}" ELSE EXCLUDED."{column}" END'


def _upsert_sql(table: str) -> str:
    """The upsert of the incoming rows: a record replaces the URL's row, except a tombstone
    (``change`` gone) or a 304 (unchanged), which mark it: status, times, change, and the
    content of the last full fetch kept (a gone page's row is marked, never deleted), unless
    the mark says ``noindex``."""
    names = ", ".join(f'"{c}"' for c in COLUMNS)
    updates = ", ".join(_update(table, c) for c in COLUMNS[1:])
    return (
        f'INSERT INTO "{table}" ({names}) SELECT {names} FROM {_INCOMING} '
        f"ON CONFLICT (fp) DO UPDATE SET {updates}, written_at = now()"
    )


def _incoming_sql(table: str) -> str:
    """The session's temporary table that COPY fills (emptied at each commit)."""
    names = ", ".join(f'"{c}"' for c in COLUMNS)
    return (
        f"CREATE TEMP TABLE IF NOT EXISTS {_INCOMING} ON COMMIT DELETE ROWS "
        f'AS SELECT {names} FROM "{table}" WITH NO DATA'
    )


def items_table(table: str) -> str:
    """The items table next to the page table ``table``."""
    return "items" if table == DEFAULT_TABLE else f"{table}_items"[:63]


def _create_items_sql(table: str) -> str:
    return (
        f'CREATE TABLE IF NOT EXISTS "{items_table(table)}" (\n'
        "    url text NOT NULL,\n    rule text NOT NULL,\n    idx integer NOT NULL,\n"
        "    fetched_at double precision,\n    fields jsonb NOT NULL,\n"
        "    worker text NOT NULL,\n    written_at timestamptz NOT NULL DEFAULT now(),\n"
        "    PRIMARY KEY (url, rule, idx)\n)"
    )


def _items_sql(table: str) -> tuple[str, str, str]:
    """The session's temporary items table, the statement deleting the items a page written
    again no longer has, and the upsert of the incoming items."""
    items = items_table(table)
    names = ", ".join(ITEM_COLUMNS)
    incoming = (
        f"CREATE TEMP TABLE IF NOT EXISTS {_INCOMING_ITEMS} ON COMMIT DELETE ROWS "
        f'AS SELECT {names} FROM "{items}" WITH NO DATA'
    )
    stale = (
        f'DELETE FROM "{items}" AS i USING unnest($1::text[], $2::text[], $3::int[]) '
        "AS p(url, rule, kept) WHERE i.url = p.url AND (i.idx >= p.kept OR i.rule <> p.rule)"
    )
    upsert = (
        f'INSERT INTO "{items}" ({names}) SELECT {names} FROM {_INCOMING_ITEMS} '
        "ON CONFLICT (url, rule, idx) DO UPDATE SET fetched_at = EXCLUDED.fetched_at, "
        "fields = EXCLUDED.fields, worker = EXCLUDED.worker, written_at = now()"
    )
    return incoming, stale, upsert


def item_row(item: Item, worker: str) -> tuple[Any, ...]:
    """The row of ``item`` in the items table's column order (jsonb holds no NUL)."""
    fields = json.dumps(item.fields, ensure_ascii=False)
    if "\\u0000" in fields:
        fields = json.dumps(_without_nul(item.fields), ensure_ascii=False)
    return (
        item.url.replace("\x00", "\ufffd"),
        item.rule,
        item.index,
        item.fetched_at,
        fields,
        worker,
    )


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def record_row(record: PageRecord, worker: str) -> tuple[Any, ...]:
    """The row of ``record`` in the table's column order."""
    values = list(record.values())
    for i, value in enumerate(values):
        if i in _JSON_FIELDS and value is not None:
            values[i] = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, str) and "\x00" in value:
            values[i] = value.replace("\x00", "\ufffd")  # text columns cannot hold NUL
    return (fingerprint(record.url), *values, worker)


# -- the sink -------------------------------------------------------------------------------


class PostgresSink:
    """Upserts batches of records into one table over one connection, reconnecting as needed.

    A write that fails because the server went away is retried with backoff for ``retry_for``
    seconds; then (or at once when the server rejects the records) it raises StoreError, and
    so does every later write: the crawl stops, its records are safe in crawl.db.
    """

    def __init__(
        self,
        target: StoreTarget,
        worker: str,
        *,
        retry_for: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.worker = worker
        self._retry_for = RETRY_FOR if retry_for is None else retry_for
        self._clock = clock
        self._conn: asyncpg.Connection | None = None
        self._failure: StoreError | None = None
        self._created = False
        self._upsert = _upsert_sql(target.table)
        self._items_sql = _items_sql(target.table)

    @classmethod
    async def open(cls, url: str, worker: str, *, retry_for: float | None = None) -> PostgresSink:
        """Connect and create the table if missing; a bad URL or server fails here, once."""
        sink = cls(parse_store_url(url), worker, retry_for=retry_for)
        try:
            sink._conn = await sink._connect()
        except asyncpg.InvalidAuthorizationSpecificationError as exc:
            raise SettingsError(
                f"PostgreSQL at {sink.target.shown} refused the connection ({_say(exc)}): check "
                "the user and password (in the URL, PGPASSWORD or the passfile: PGPASSFILE, "
                "~/.pgpass), the client certificate (sslcert, sslkey) and the sslmode pg_hba.conf "
                "asks for"
            ) from None
        except ssl.SSLError as exc:
            raise SettingsError(
                f"TLS with PostgreSQL at {sink.target.shown} failed ({_say(exc)}): check the "
                "URL's sslrootcert (the CA that signed the server's certificate), sslcert and "
                "sslkey"
            ) from None
        except (asyncpg.PostgresError, *_TRANSIENT) as exc:
            raise StoreError(f"cannot use PostgreSQL at {sink.target.shown}: {_say(exc)}") from None
        return sink

    async def write(self, records: list[PageRecord]) -> None:
        """Upsert ``records`` (in one transaction); retried while the server is away."""
        if self._failure is not None:
            raise self._failure
        if not records:
            return
        # One row per URL: an upsert command may not touch a row twice.
        rows = list({row[0]: row for row in (record_row(r, self.worker) for r in records)}.values())
        ruled = {r.url: r for r in records if r.rule is not None or r.items}
        try:
            await self._write_retrying(rows, list(ruled.values()))
        except StoreError as exc:
            self._failure = exc
            await self._drop()
            raise

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    await conn.close()
            except (asyncpg.PostgresError, *_TRANSIENT):
                conn.terminate()

    async def _write_retrying(self, rows: list[tuple[Any, ...]], ruled: list[PageRecord]) -> None:
        """Write ``rows``, trying again while the server is away, ``retry_for`` seconds from
        the first attempt."""
        outage = Outage(
            self._retry_for, clock=self._clock, started=True, on_start=self._down, on_end=self._back
        )

        async def dropped(error: BaseException, failures: int) -> None:
            await self._drop()

        try:
            await retry(
                functools.partial(self._write_once, rows, ruled),
                errors=_TRANSIENT,
                outage=outage,
                backoff=_BACKOFF,
                give_up=lambda exc: StoreError(self._lost_message(exc)),
                failed=dropped,
            )
        except asyncpg.PostgresError as exc:
            raise StoreError(
                f"PostgreSQL at {self.target.shown} refused the page records: {_say(exc)}"
            ) from None

    def _down(self, error: BaseException) -> None:
        log.warning(
            "lost PostgreSQL at %s (%s); retrying for up to %gs",
            self.target.shown,
            _say(error),
            self._retry_for,
            extra={"event": "store-unreachable", "store": self.target.shown},
        )

    def _back(self, seconds: float) -> None:
        log.info(
            "PostgreSQL at %s answers again after %.1fs",
            self.target.shown,
            seconds,
            extra={"event": "store-recovered", "store": self.target.shown},
        )

    async def _write_once(self, rows: list[tuple[Any, ...]], ruled: list[PageRecord]) -> None:
        async with asyncio.timeout(WRITE_TIMEOUT):
            if self._conn is None:
                self._conn = await self._connect()
            conn = self._conn
            async with conn.transaction():
                await conn.copy_records_to_table(_INCOMING, records=rows, columns=COLUMNS)
                await conn.execute(self._upsert)
                if ruled:
                    await self._write_items(conn, ruled)

    async def _write_items(self, conn: asyncpg.Connection, ruled: list[PageRecord]) -> None:
        """Replace the items of the pages ``ruled`` (in the caller's transaction)."""
        _, stale, upsert = self._items_sql
        urls = [r.url.replace("\x00", "\ufffd") for r in ruled]
        rules = [r.rule or "" for r in ruled]
        await conn.execute(stale, urls, rules, [len(r.found) for r in ruled])
        rows = [item_row(item, self.worker) for r in ruled for item in r.found]
        if rows:
            await conn.copy_records_to_table(_INCOMING_ITEMS, records=rows, columns=ITEM_COLUMNS)
            await conn.execute(upsert)

    async def _connect(self) -> asyncpg.Connection:
        try:
            conn = await asyncpg.connect(self.target.dsn, timeout=CONNECT_TIMEOUT)
        except ssl.SSLError:  # a certificate verification error is a ValueError too
            raise
        except ValueError as exc:  # asyncpg's ClientConfigurationError: a bad DSN parameter
            reason = " ".join(redact_text(str(exc)).split())  # asyncpg adds a HINT line
            raise SettingsError(f"invalid setting 'store': {reason}") from None
        try:
            if not self._created:
                await self._create_table(conn)
                self._created = True
            await conn.execute(_incoming_sql(self.target.table))
            await conn.execute(self._items_sql[0])
        except BaseException:
            conn.terminate()
            raise
        return conn

    async def _create_table(self, conn: asyncpg.Connection) -> None:
        table = self.target.table
        async with conn.transaction():
            # Workers starting together: CREATE TABLE IF NOT EXISTS races without the lock.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", table)
            await conn.execute(_create_sql(table))
            await conn.execute(_create_items_sql(table))
        have = {
            row[0]
            for row in await conn.fetch(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = $1",
                table,
            )
        }
        missing = [c for c in COLUMNS if c not in have and c not in _ADDED_COLUMNS]
        if not missing:
            for name in _ADDED_COLUMNS.keys() - have:
                await conn.execute(
                    f'ALTER TABLE "{table}" ADD COLUMN IF NOT EXISTS "{name}" '
                    f"{_ADDED_COLUMNS[name]}"
                )
        if missing:
            raise StoreError(
                f"table {table!r} at {self.target.shown} is not a gossamer page table "
                f"(no column {', '.join(missing)}); choose another with ?table=NAME"
            )

    async def _drop(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.terminate()

    def _lost_message(self, exc: BaseException) -> str:
        return (
            f"lost PostgreSQL at {self.target.shown} for {self._retry_for:g}s ({_say(exc)}); "
            "the crawl stopped and every record is in crawl.db and pages.jsonl: run it again "
            "with --resume (cluster: start the worker again with the same --out) once "
            "PostgreSQL is back to send the missing records"
        )


class StoreExport:
    """The store as a crawl's checkpoint sees it: crawl.db counts the records that reached it.

    Records reach the store in crawl.db's order, so the count marks a prefix of its pages
    table; :meth:`catch_up` sends the rest (a resumed crawl whose server was lost).
    """

    def __init__(self, sink: PostgresSink, db: CrawlDB) -> None:
        self.sink = sink
        self._db = db
        self._key = f"store:{sink.target.shown}"
        self._sent = int(db.get_meta(self._key) or 0)

    async def catch_up(self) -> int:
        """Send the committed records the store has not had yet; returns how many."""
        records = SQLiteSink(self._db).records_after(self._sent)
        for start in range(0, len(records), _CATCH_UP_BATCH):
            await self.write(records[start : start + _CATCH_UP_BATCH])
        return len(records)

    async def write(self, records: list[PageRecord]) -> None:
        """Upsert the records of a checkpoint (committed to crawl.db already)."""
        if not records:
            return
        await self.sink.write(records)
        self._sent += len(records)
        self._db.set_meta(self._key, str(self._sent))


def _say(exc: BaseException) -> str:
    text = redact_text(str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__

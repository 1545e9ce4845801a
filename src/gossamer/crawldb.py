"""The embedded crawl database, ``crawl.db``: frontier state and page records in one SQLite file.

Writers *stage* statements; :meth:`CrawlDB.commit` runs everything staged in one transaction
on a worker thread, so the frontier's state and the records it refers to always change
together (the basis of ``--resume`` after ``kill -9``). A statement whose rows no later one
depends on (a URL marked finished) is staged *last* (:meth:`CrawlDB.stage_last`): its rows
run at the end of the transaction, one batch however they came between the others.

Tables:

* ``urls(fp, url, host, depth, hops, attempts, state, seq, priority)``: every URL ever
  accepted; ``state`` 0 is queued (or in flight), 1 is finished. The partial index
  ``urls_queued`` on (host, seq) of queued rows lets the frontier read back URLs it spilled
  out of memory.
* ``pages(id, ...)``: one row per finished URL, in the order the records were produced; the
  JSONL file mirrors it line for line. ``kind`` is ``page``, or ``sitemap`` for a sitemap
  or feed file read (its format and counts in ``extra``).
* ``items(id, page, url, rule, idx, fetched_at, fields)``: the items rules read, committed
  with their page's row (``page`` is its id; ``idx`` the item's place on the page, from 0),
  in order; items.jsonl mirrors it line for line.
* ``sitemaps(host, url)``: ``Sitemap:`` lines of the robots.txt files met.
* ``sitemap_reads(origin, url)``: the sitemaps (and feeds) read to their end in this crawl,
  each with the origin whose robots.txt named it (``''`` for ``--sitemap``); staged after
  the entries it gave, so a sitemap missing here is read again by ``--resume``.
* ``sitemap_entries(fp, url, lastmod, changefreq, priority, source)``: what sitemaps and
  feeds said of each URL they listed (``fp`` as in ``urls``; ``lastmod`` in epoch seconds,
  the newest seen; ``changefreq`` and ``priority`` hints as the last file gave them, null
  when none did; ``source`` that file). Revisits read it: a newer ``lastmod`` makes a URL
  due.
* ``digests(exact, near, url)``: the content digests of the crawl's first pages of each
  content (``gossamer.digests``: exact hash and SimHash, null when near duplicates were
  not looked for, as signed 64-bit integers).
* ``revisits(fp, etag, last_modified, payload, text, fetched_at, captured_at, interval, due,
  checks, changes, gone, observed, size, content_type, checked_at)``: a continuous crawl's
  (``--recrawl``) state of each page it fetched (:mod:`gossamer.frontier.revisits`;
  ``checked_at``: when a sitemap's ``lastmod`` last said it had not changed); the partial index
  ``revisits_due`` on due times lets the frontier read the URLs due, a batch at a time.
* ``meta(key, value)``: small facts about the crawl; ``credentials`` holds the user names
  and passwords of the seeds' URLs (``user:password@host:port``, a line each), which the
  ``urls`` table shows as ``user:***@host:port`` (a user name alone, maybe a token, as
  ``***.TAG@host:port``, ``TAG`` 8 hex digits of its digest; :meth:`CrawlDB.hide`): the one
  place a password is kept, to fetch the URLs queued after ``--resume``
  (:meth:`CrawlDB.reveal`).
  A line is ``masked<TAB>user:password@host:port`` when the user info given on a resume
  replaced another user's (:meth:`CrawlDB.renew`).
  Once it holds one, crawl.db is readable by its owner only, as with cookies.
* ``cookies(domain, path, name, value, secure, expires, host_only)``: the crawl's cookie
  jar (``gossamer.fetch.cookies``), written as it changes, so ``--resume`` continues the
  sessions. They are credentials: once it holds cookies, crawl.db (with
  its -wal and -shm files) is readable by its owner only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gossamer.redact import mask_user_alone, redact_url

_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
BEGIN;
CREATE TABLE IF NOT EXISTS urls (
    fp INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL,
    hops INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    state INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,
    priority REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS urls_queued ON urls (host, seq) WHERE state = 0;
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    status INTEGER,
    depth INTEGER NOT NULL,
    content_type TEXT,
    bytes INTEGER NOT NULL,
    fetched_at REAL,
    elapsed_ms REAL,
    title TEXT,
    outlinks INTEGER NOT NULL,
    redirect_to TEXT,
    error TEXT,
    attempts INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    flags TEXT NOT NULL DEFAULT '',
    extra TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    warc_length INTEGER,
    text TEXT,
    lang TEXT,
    description TEXT,
    canonical TEXT,
    published TEXT,
    authors TEXT,
    images TEXT,
    text_chars INTEGER,
    rule TEXT,
    items INTEGER NOT NULL DEFAULT 0,
    rule_errors TEXT,
    proxy TEXT,
    rendered INTEGER NOT NULL DEFAULT 0,
    relevance REAL,
    duplicate_of TEXT,
    change TEXT,
    previous_fetched_at REAL,
    kind TEXT NOT NULL DEFAULT 'page'
);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    page INTEGER NOT NULL,
    url TEXT NOT NULL,
    rule TEXT NOT NULL,
    idx INTEGER NOT NULL,
    fetched_at REAL,
    fields TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_page ON items (page);
CREATE TABLE IF NOT EXISTS sitemaps (
    host TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (host, url)
);
CREATE TABLE IF NOT EXISTS sitemap_reads (
    origin TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (origin, url)
);
CREATE TABLE IF NOT EXISTS sitemap_entries (
    fp INTEGER PRIMARY KEY, url TEXT NOT NULL, lastmod REAL, changefreq TEXT, priority REAL,
    source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS digests (
    exact INTEGER PRIMARY KEY, near INTEGER, url TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS revisits (
    fp INTEGER PRIMARY KEY,
    etag TEXT,
    last_modified TEXT,
    payload INTEGER,
    text INTEGER,
    fetched_at REAL NOT NULL,
    captured_at REAL NOT NULL,
    interval REAL NOT NULL,
    due REAL,
    checks INTEGER NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0,
    gone INTEGER NOT NULL DEFAULT 0,
    observed REAL NOT NULL DEFAULT 0,
    size INTEGER NOT NULL DEFAULT 0,
    content_type TEXT,
    checked_at REAL
);
CREATE INDEX IF NOT EXISTS revisits_due ON revisits (due) WHERE due IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS paces (host TEXT PRIMARY KEY, not_before REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cookies (
    domain TEXT NOT NULL, path TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
    secure INTEGER NOT NULL, expires REAL, PRIMARY KEY (domain, path, name)
);
"""
_CLEAR_COOKIES = "DELETE FROM cookies"
_ADD_COOKIE = (
    "INSERT OR REPLACE INTO cookies (domain, path, name, value, secure, expires, host_only)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_DROP_COOKIE = "DELETE FROM cookies WHERE domain = ? AND path = ? AND name = ?"
_ADDED_COOKIE_COLUMNS = (("host_only", "INTEGER NOT NULL DEFAULT 0"),)
"""Columns of ``cookies`` added after its first version."""

_ADDED_REVISIT_COLUMNS = (("checked_at", "REAL"),)
"""Columns of ``revisits`` added after its first version."""

_CREDENTIALS_META = "credentials"
_ADDED_URL_COLUMNS = (("priority", "REAL NOT NULL DEFAULT 0"),)
"""Columns of ``urls`` added after its first version, with their definitions."""
_ADDED_COLUMNS = (
    ("flags", "TEXT NOT NULL DEFAULT ''"),
    ("extra", "TEXT"),
    ("warc_file", "TEXT"),
    ("warc_offset", "INTEGER"),
    ("warc_length", "INTEGER"),
    ("text", "TEXT"),
    ("lang", "TEXT"),
    ("description", "TEXT"),
    ("canonical", "TEXT"),
    ("published", "TEXT"),
    ("authors", "TEXT"),
    ("images", "TEXT"),
    ("text_chars", "INTEGER"),
    ("rule", "TEXT"),
    ("items", "INTEGER NOT NULL DEFAULT 0"),
    ("rule_errors", "TEXT"),
    ("proxy", "TEXT"),
    ("rendered", "INTEGER NOT NULL DEFAULT 0"),
    ("relevance", "REAL"),
    ("duplicate_of", "TEXT"),
    ("change", "TEXT"),
    ("previous_fetched_at", "REAL"),
    ("kind", "TEXT NOT NULL DEFAULT 'page'"),
)
"""Columns of ``pages`` added after its first version, with their definitions."""

Row = Sequence[Any]


def _as_is(value: Any) -> Any:
    return value


# sqlite3 looks for an adapter for every parameter that is not exactly an int, float or str,
# and for None, bool and bytes it finds none the slow way: it raises and clears an
# AttributeError each time (some 20 per page written, a null column each). An adapter that
# returns the value as it is binds exactly what sqlite3 binds without one (NULL, an integer,
# a blob), at a tenth of the cost. The registry is the process's: one already there is kept.
for _type in (type(None), bool, bytes):
    if (_type, sqlite3.PrepareProtocol) not in sqlite3.adapters:
        sqlite3.register_adapter(_type, _as_is)


class CrawlDB:
    """One crawl.db connection, used from a single worker thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # one transaction, after the WAL is on and before any write: no sync per table
        self._conn.executescript(_SCHEMA)
        self._add_missing_columns()
        self._conn.execute("COMMIT")
        self._staged: list[tuple[str, list[Row]]] = []
        self._last: dict[str, list[Row]] = {}
        self._keyed: dict[str, dict[Hashable, Row]] = {}
        """Rows of the statements staged last, by statement."""
        self._lock = asyncio.Lock()
        self._private = False
        self._secrets: dict[str, str] = {}
        """The seeds' user info by its form with the password masked: what :meth:`hide`
        took out of the URLs stored."""
        stored = self.get_meta(_CREDENTIALS_META)
        for line in (stored or "").splitlines():
            masked, tab, authority = line.partition("\t")  # a URL holds no tab
            if not tab:
                masked, authority = _masked(line), line
            self._secrets[masked] = authority

    def _add_missing_columns(self) -> None:
        """Bring a crawl.db of an earlier version up to the schema (``--resume``)."""
        tables = (
            ("urls", _ADDED_URL_COLUMNS),
            ("pages", _ADDED_COLUMNS),
            ("cookies", _ADDED_COOKIE_COLUMNS),
            ("revisits", _ADDED_REVISIT_COLUMNS),
        )
        for table, added in tables:
            have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            for name, definition in added:
                if name not in have:
                    self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")

    def stage(self, sql: str, rows: Iterable[Row]) -> None:
        """Queue a statement with its parameter rows for the next commit."""
        batch = list(rows)
        if not batch:
            return
        if self._staged and self._staged[-1][0] is sql:
            self._staged[-1][1].extend(batch)
        else:
            self._staged.append((sql, batch))

    def stage_last(self, sql: str, row: Row) -> None:
        """Queue a row of a statement for the end of the next commit, after everything
        staged: for a statement no other staged one depends on, nor it on one staged after
        it (marking a URL finished: its row was inserted before, nothing reads the mark in
        the transaction), whose rows would otherwise make a batch of one per page."""
        rows = self._last.get(sql)
        if rows is None:
            self._last[sql] = [row]
        else:
            rows.append(row)

    def stage_keyed(self, sql: str, key: Hashable, row: Row) -> None:
        """Queue a row of a statement for the next commit, in place of the one staged with
        the same ``key`` since the last (a host's latest pace, not one per page)."""
        rows = self._keyed.get(sql)
        if rows is None:
            self._keyed[sql] = {key: row}
        else:
            rows[key] = row

    async def commit(self) -> None:
        """Write everything staged so far in one transaction (off the event loop)."""
        staged, self._staged = self._staged, []
        if self._last:
            staged.extend(self._last.items())
            self._last = {}
        if self._keyed:
            staged.extend((sql, list(rows.values())) for sql, rows in self._keyed.items())
            self._keyed = {}
        if not staged:
            return
        async with self._lock:
            write = asyncio.ensure_future(asyncio.to_thread(self._write, staged))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                # The thread is writing: hold the lock until it is done, so a cancelled
                # commit never overlaps the next one or close().
                await write
                raise

    def _write(self, staged: list[tuple[str, list[Row]]]) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            for sql, rows in staged:
                self._conn.executemany(sql, rows)

    def query(self, sql: str, params: Row = ()) -> list[tuple[Any, ...]]:
        """Run a read query synchronously (start-up and shutdown only)."""
        return self._conn.execute(sql, params).fetchall()

    def iterate(self, sql: str, params: Row = ()) -> Iterator[tuple[Any, ...]]:
        """Stream the rows of a read query (start-up only: millions of rows, little memory)."""
        yield from self._conn.execute(sql, params)

    async def read(self, sql: str, params: Row = ()) -> list[tuple[Any, ...]]:
        """Commit what is staged, then run a read query off the event loop."""
        await self.commit()
        async with self._lock:
            return await asyncio.to_thread(self.query, sql, params)

    def function(
        self, name: str, arity: int, fn: Callable[..., str | bytes | int | float | None]
    ) -> None:
        """Make ``fn`` callable from this connection's SQL as ``name`` (deterministic), so a
        statement over millions of rows runs inside SQLite, streaming."""
        self._conn.create_function(name, arity, fn, deterministic=True)

    def get_meta(self, key: str) -> str | None:
        """A value of the meta table."""
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Stage a meta value."""
        self.stage("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [(key, value)])

    def cookies(self) -> list[tuple[str, str, str, str, bool, float | None, bool]]:
        """The stored cookie jar: (domain, path, name, value, secure, expires, host_only)."""
        rows = self.query(
            "SELECT domain, path, name, value, secure, expires, host_only FROM cookies"
        )
        return [(d, p, n, v, bool(s), e, bool(h)) for d, p, n, v, s, e, h in rows]

    def save_cookies(self, rows: Sequence[Row]) -> None:
        """Stage the whole cookie jar, replacing the stored one at the next commit."""
        self._make_private()
        self.stage(_CLEAR_COOKIES, [()])
        self.stage(_ADD_COOKIE, [(*row[:6], row[6] if len(row) > 6 else False) for row in rows])

    def update_cookies(self, rows: Sequence[Row], removed: Sequence[Row]) -> None:
        """Stage the cookies set (``rows``) and removed (their (domain, path, name) keys)."""
        self._make_private()
        self.stage(_DROP_COOKIE, removed)
        self.stage(_ADD_COOKIE, [(*row[:6], row[6] if len(row) > 6 else False) for row in rows])

    def hide(self, url: str) -> str:
        """``url`` as the ``urls`` table stores it: its password as ``***``, the password
        kept apart (meta ``credentials``, crawl.db made private) for :meth:`reveal`."""
        scheme, _, rest = url.partition("://")
        authority, slash, path = rest.partition("/")
        if "@" not in authority:
            return url
        masked = _masked(authority)
        if masked == authority:
            return url  # no user info to mask (``@host``)
        if self._secrets.get(masked) != authority:
            self._secrets[masked] = authority
            self._store_secrets()
        return f"{scheme}://{masked}{slash}{path}"

    def credentials(self) -> set[str]:
        """The user info (``user:password@host[:port]``) :meth:`reveal` puts back."""
        return set(self._secrets.values())

    def renew(self, given: Iterable[str]) -> None:
        """Take the seeds' user info ``given`` again (``--resume``; ``user[:password]@host
        [:port]``) over the stored one of the same host and port, that the URLs queued
        are fetched with it from now on (a password changed, another account): the same
        user's, else the first given there. The stored user info of other hosts stays."""
        by_origin: dict[str, dict[str, str]] = {}
        for authority in given:
            userinfo, _, origin = _masked(authority).rpartition("@")  # a token: its tag
            by_origin.setdefault(origin, {}).setdefault(userinfo.partition(":")[0], authority)
        renewed = {}
        for masked, stored in self._secrets.items():
            userinfo, _, origin = masked.rpartition("@")
            choices = by_origin.get(origin)
            if choices:
                authority = choices.get(userinfo.partition(":")[0], next(iter(choices.values())))
                if authority != stored:
                    renewed[masked] = authority
        if renewed:
            self._secrets.update(renewed)
            self._store_secrets()

    def _store_secrets(self) -> None:
        """Stage the credentials row: an authority a line, after its masked form and a tab
        when that is not its own (another user's, :meth:`renew`)."""
        lines = [
            authority if _masked(authority) == masked else f"{masked}\t{authority}"
            for masked, authority in self._secrets.items()
        ]
        self._make_private()
        self.set_meta(_CREDENTIALS_META, "\n".join(lines))

    def reveal(self, url: str) -> str:
        """A URL the ``urls`` table stores as it was queued (its password put back)."""
        scheme, _, rest = url.partition("://")
        authority, slash, path = rest.partition("/")
        if "@" not in authority:
            return url
        return f"{scheme}://{self._secrets.get(authority, authority)}{slash}{path}"

    def _make_private(self) -> None:
        if not self._private:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.chmod(f"{self.path}{suffix}", 0o600)
            self._private = True

    def close(self) -> None:
        """Close the connection (everything staged must have been committed)."""
        self._conn.close()


def _masked(authority: str) -> str:
    """``user:password@host`` as ``user:***@host``, ``user@host`` as ``***.TAG@host``
    (:func:`~gossamer.redact.mask_user_alone`: two tokens of one host stay two)."""
    userinfo = authority.rpartition("@")[0]
    if userinfo and ":" not in userinfo:
        return mask_user_alone(authority)
    return redact_url(f"http://{authority}").partition("://")[2]

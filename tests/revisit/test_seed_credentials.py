"""A seed's password in a continuous embedded crawl (real site on loopback behind basic auth):
crawl.db keeps it in its owner-only ``credentials`` meta row and nowhere else (every table,
revisit states included), revisits send it, another origin never gets it."""

from __future__ import annotations

import asyncio
import base64
import logging
import sqlite3
import stat
from pathlib import Path

import pytest
from tests.credentials_site import AT_SIGN, PLAIN, SECRET, UNESCAPED, guarded_site, serve_on

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings


def holding(db: Path, secret: str) -> set[tuple[str, str]]:
    """(table, column) of every value of crawl.db that holds ``secret`` (text or blob)."""
    found = set()
    with sqlite3.connect(db) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, value in zip(columns, row, strict=True):
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    if secret.encode() in raw:
                        found.add((table, column))
    return found


@pytest.mark.parametrize(("host", "address", "escaped", "password"), [PLAIN, AT_SIGN, UNESCAPED])
async def test_a_continuous_crawl_keeps_the_seed_s_password_in_one_row(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    host: str,
    address: str,
    escaped: str,
    password: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    expected = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    seen: list[tuple[str, str, str | None]] = []
    out = tmp_path / "out"
    async with serve_on(address, guarded_site(seen, expected)) as port:
        settings = {
            "seeds": [f"http://alice:{escaped}@{host}:{port}/"],
            "resolve": [f"site.test={address}", f"other.test={address}"],
            "allow_domains": [host.strip("[]"), "other.test"],
            "out": out,
            "robots": False,
            "sitemap": [f"http://{host}:{port}/sitemap.xml"],
            "quiet": True,
            "recrawl": True,
            "revisit_initial": 1,
            "revisit_min": 1,
            "revisit_max": 1,
            "max_duration": 3,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
            "warc": True,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)
    with sqlite3.connect(out / "crawl.db") as conn:
        assert conn.execute("SELECT count(*) FROM revisits").fetchone()[0] >= 3
    assert holding(out / "crawl.db", SECRET) == {("meta", "value")}
    assert holding(out / "crawl.db", expected.split()[1]) == set()
    assert stat.S_IMODE((out / "crawl.db").stat().st_mode) == 0o600
    mine = [(path, auth) for name, path, auth in seen if not name.startswith("other.test")]
    for path in ("/", "/a", "/b"):
        sent = [auth for p, auth in mine if p == path]
        assert sent == [expected] * len(sent) and len(sent) >= 2, (path, sent)  # revisited
    away = [auth for name, _, auth in seen if name.startswith("other.test")]
    assert away and set(away) == {None}, away  # the redirect followed, no password sent
    assert len([path for _, path, _ in seen if path == "/sitemap.xml"]) >= 2  # read again
    for secret in (SECRET, expected.split()[1]):
        assert not [r.getMessage() for r in caplog.records if secret in r.getMessage()]
        files = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith("crawl.db")]
        assert [p.name for p in files if secret.encode() in p.read_bytes()] == [], secret

"""A ``--sitemap`` URL's password, in a crawl of a real loopback server that asks for it: it
is sent, it is kept in crawl.db in one place only (the ``credentials`` meta row, as a seed's),
and a crawl resumed (``--resume --recrawl``) reads the sitemap again with it. It was stored as
given in ``sitemap_reads`` and ``sitemap_entries``."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

SECRET = "s3cr3t-pw"
_AUTH = "Basic " + base64.b64encode(f"reader:{SECRET}".encode()).decode()


async def test_a_sitemap_password_is_kept_in_one_place_and_used_on_resume(
    tmp_path: Path,
) -> None:
    authorized: list[bool] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path != "/maps/s.xml":
            return web.Response(text="<html><body>page</body></html>", content_type="text/html")
        authorized.append(request.headers.get("Authorization") == _AUTH)
        if not authorized[-1]:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="x"'})
        base = f"http://{request.host}"
        body = f"<urlset><url><loc>{base}/maps/page</loc></url></urlset>"
        return web.Response(text=body, content_type="text/xml")

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings: dict[str, Any] = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "sitemap": [f"http://reader:{SECRET}@127.0.0.1:{port}/maps/s.xml"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "delay": 0.01,
            "checkpoint_interval": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)
        assert authorized == [True]
        with sqlite3.connect(out / "crawl.db") as db:
            tables = [
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            holding = {
                table
                for table in tables
                if table != "meta"
                and SECRET in repr(db.execute(f'SELECT * FROM "{table}"').fetchall())
            }
            meta = db.execute("SELECT value FROM meta WHERE key = 'credentials'").fetchall()
        assert not holding
        assert SECRET in repr(meta)
        again = settings | {"seeds": [], "resume": True, "recrawl": True, "max_duration": 1.5}
        again["sitemap"] = []
        await asyncio.wait_for(run_crawl(load_settings(again, env={})), 30)
    assert authorized == [True, True]  # read again, with its password


async def test_a_site_naming_a_sitemap_with_credentials_gets_none_sent_or_kept(
    tmp_path: Path,
) -> None:
    """Credentials are the user's to give: a robots.txt ``Sitemap:`` line, or a sitemap
    index's child, carrying a user name is not fetched, and its password is kept nowhere."""
    asked: dict[str, str | None] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        asked[request.path] = request.headers.get("Authorization")
        here = f"127.0.0.1:{request.url.port}"
        if request.path == "/robots.txt":
            lines = f"Sitemap: http://u5:{SECRET}@{here}/sm.xml\nSitemap: http://{here}/ix.xml\n"
            return web.Response(text=f"User-agent: *\nAllow: /\n{lines}")
        if request.path == "/ix.xml":
            child = f"<sitemap><loc>http://u6:{SECRET}@{here}/child.xml</loc></sitemap>"
            return web.Response(
                text=f"<sitemapindex>{child}</sitemapindex>", content_type="text/xml"
            )
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")

    out = tmp_path / "out"
    async with serve(handle) as port:
        settings: dict[str, Any] = {
            "seeds": [f"http://127.0.0.1:{port}/"],
            "out": out,
            "allow_private": True,
            "quiet": True,
            "checkpoint_interval": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)
    assert "/ix.xml" in asked and "/sm.xml" not in asked and "/child.xml" not in asked
    assert not any(asked.values())
    for name in ("crawl.db", "pages.jsonl"):
        assert SECRET.encode() not in (out / name).read_bytes()

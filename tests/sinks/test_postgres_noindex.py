"""`--store postgres://...` holds a noindex page's record without its content, and the
record of a page naming another canonical URL followed, as pages.jsonl does."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl
from tests.pg_server import PostgresServer, table_rows
from tests.test_canonical_crawl import handle as canonical_site
from tests.test_revisit_hostile_answers import _records, _recrawl
from tests.test_robots_directives_crawl import NOINDEX
from tests.test_robots_directives_crawl import handle as robots_site
from warcio.archiveiterator import ArchiveIterator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_the_table_holds_no_content_of_a_noindex_page(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    records = await crawl(tmp_path / "out", robots_site, store=pg.table_url(table))
    rows = {"/" + row["url"].split("/", 3)[3]: row for row in await table_rows(pg.url, table)}
    assert rows.keys() == records.keys()
    for path in NOINDEX:
        row = rows[path]
        assert row["status"] == 200 and "noindex" in row["flags"], row
        assert (row["text"], row["title"], row["text_chars"]) == (None, None, None)
    assert rows["/h-all"]["text"] and rows["/h-all"]["title"] == "Title of /h-all"
    assert "/from/h-nofollow" not in rows and "nofollow" in rows["/h-nofollow"]["flags"]


async def test_the_table_holds_a_followed_canonical_once(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    store = pg.table_url(table)
    records = await crawl(tmp_path / "out", canonical_site, canonical="follow", store=store)
    rows = {"/" + row["url"].split("/", 3)[3]: row for row in await table_rows(pg.url, table)}
    assert rows.keys() == records.keys()
    agree = rows["/agree"]
    assert "canonical-followed" in agree["flags"] and agree["text"] is None
    assert agree["canonical"] == records["/main-agree"]["url"]
    assert rows["/main-agree"]["text"]


class NoindexNotModified:
    """``/x`` answers its first request in full with an ETag, then 304 with
    ``X-Robots-Tag: noindex`` to the conditional ones; ``asked``: how many times."""

    def __init__(self) -> None:
        self.asked = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path != "/x":
            return web.Response(text='<a href="/x">x</a>', content_type="text/html")
        self.asked += 1
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"', "X-Robots-Tag": "noindex"})
        body = "<html><head><title>first</title></head><body><p>FIRST words</p></body></html>"
        return web.Response(text=body, content_type="text/html", headers={"ETag": '"v1"'})


async def test_a_304_that_says_noindex_clears_the_rows_content(
    tmp_path: Path, pg: PostgresServer, table: str
) -> None:
    site, out = NoindexNotModified(), tmp_path / "out"
    await _recrawl(site.handle, out, store=pg.table_url(table))
    assert site.asked >= 2
    rows = {row["url"].rsplit("/", 1)[1]: row for row in await table_rows(pg.url, table)}
    x = rows["x"]
    assert (x["status"], x["change"], x["flags"]) == (304, "unchanged", ["noindex"])
    assert (x["text"], x["title"], x["text_chars"]) == (None, None, None)
    revisits = [r for r in _records(out, "/x") if r["status"] == 304]
    assert revisits and all(r["text"] is None for r in revisits)
    for path in out.rglob("*.warc.gz"):  # the 304 is archived without a reference to the body
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if (record.rec_headers.get_header("WARC-Target-URI") or "").endswith("/x"):
                    assert record.rec_headers.get_header("WARC-Profile") is None

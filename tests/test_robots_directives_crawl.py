"""``X-Robots-Tag`` headers and robots meta tags in whole crawls of a real server on loopback:
``nofollow`` drops a page's links, ``noindex`` keeps its record and stores no content in
pages.jsonl, crawl.db, items.jsonl or the WARC files (warcio reads them back), HTML, plain
text and PDF alike; ``--ignore-noindex`` stores it all the same."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.content_site import PDF_TEXT, crawl
from tests.warc_check import check_archive, seek
from warcio.archiveiterator import ArchiveIterator

from gossamer.sinks.base import FIELD_NAMES, PageRecord
from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(60)

TEXT = "Rivers carry water from the mountains to the sea, shaping valleys on the way. " * 4

HEADERS: dict[str, list[str]] = {
    "/h-noindex": ["noindex"],
    "/h-nofollow": ["nofollow"],
    "/h-none": ["none"],
    "/h-agent": ["gossamer: noindex"],
    "/h-other-agent": ["otherbot: noindex, nofollow"],
    "/h-two-headers": ["googlebot: nofollow", "noindex"],
    "/h-agent-list": ["otherbot: noindex, gossamer: nofollow"],
    "/h-expired": ["unavailable_after: Fri, 25 Jun 2010 15:00:00 PST"],
    "/h-all": ["all"],
    "/plain.txt": ["noindex"],
    "/doc.pdf": ["gossamer: noindex"],
}
METAS = {
    "/m-robots": '<meta name="robots" content="noindex">',
    "/m-token": '<meta name="gossamer" content="noindex, nofollow">',
    "/m-other": '<meta name="googlebot" content="noindex, nofollow">',
    "/m-strictest": (
        '<meta name="robots" content="index, follow"><meta name="gossamer" content="noindex">'
    ),
}
PAGES = [*HEADERS, *METAS]
NOINDEX = {
    "/h-noindex",
    "/h-none",
    "/h-agent",
    "/h-two-headers",
    "/h-expired",
    "/plain.txt",
    "/doc.pdf",
    "/m-robots",
    "/m-token",
    "/m-strictest",
}
NOFOLLOW = {"/h-nofollow", "/h-none", "/h-agent-list", "/m-token"}
RULES = """
[[rule]]
name = "headings"
url = '.'

[[rule.field]]
name = "heading"
css = "h1"
"""


def _html(path: str) -> bytes:
    head = METAS.get(path, "")
    return (
        f"<!doctype html><html><head><title>Title of {path}</title>{head}</head><body>"
        f"<h1>Heading of {path}</h1><article><p>{TEXT}</p></article>"
        f'<a href="/from{path}">next</a></body></html>'
    ).encode()


async def handle(request: web.Request) -> web.Response:
    path = request.path
    if path == "/":
        links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES)
        return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")
    response = web.Response(body=_html(path), content_type="text/html")
    if path == "/plain.txt":
        response = web.Response(text=TEXT, content_type="text/plain")
    elif path == "/doc.pdf":
        response = web.Response(body=payloads.pdf(PDF_TEXT), content_type="application/pdf")
    elif path.startswith("/from/"):
        response = web.Response(body=b"<html><p>linked</p></html>", content_type="text/html")
    elif path not in PAGES:
        return web.Response(status=404, text="not here")
    for value in HEADERS.get(path, []):
        response.headers.add("X-Robots-Tag", value)
    return response


def _check_withheld(record: dict[str, Any]) -> None:
    assert record["status"] == 200 and "noindex" in record["flags"], record
    assert record["text"] is None and record["title"] is None and record["text_chars"] is None
    assert record["lang"] is None and record["description"] is None
    assert record["items"] == 0 and record["extra"] is None
    assert record["bytes"] > 0


async def test_noindex_and_nofollow_in_every_form(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    records = await crawl(out, handle, rules=[rules], warc=True, digests="off")
    for path in PAGES:
        record = records[path]
        assert ("noindex" in record["flags"]) == (path in NOINDEX), record
        assert ("nofollow" in record["flags"]) == (path in NOFOLLOW), record
        if path in NOINDEX:
            _check_withheld(record)
        else:
            assert TEXT.strip()[:40] in record["text"], record
            assert record["title"] == f"Title of {path}" and record["items"] == 1
        if path.endswith((".txt", ".pdf")):
            continue
        # nofollow drops the links (the record counts none); noindex keeps them
        assert (f"/from{path}" in records) == (path not in NOFOLLOW), path
        assert record["outlinks"] == (0 if path in NOFOLLOW else 1)
    _check_stored(out, records)
    _check_warc(out, records)


def _check_stored(out: Path, records: dict[str, dict[str, Any]]) -> None:
    """crawl.db and items.jsonl hold no content of a noindex page."""
    with sqlite3.connect(out / "crawl.db") as conn:
        rows = conn.execute(f"SELECT {', '.join(FIELD_NAMES)} FROM pages").fetchall()
    db = {"/" + r.url.split("/", 3)[3]: r for r in map(PageRecord.from_row, rows)}
    for path in NOINDEX:
        assert db[path].text is None and db[path].title is None and "noindex" in db[path].flags
        assert db[path].status == 200
    assert db["/h-all"].text is not None
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    with_items = {"/" + item["url"].split("/", 3)[3] for item in items}
    assert with_items & set(PAGES) == {p for p in PAGES if p not in NOINDEX and p[1] in "hm"}
    assert len(records) == len(db)


def _check_warc(out: Path, records: dict[str, dict[str, Any]]) -> None:
    """A noindex page's response record: its headers, no payload, ``WARC-Truncated:
    noindex``; warcio reads every record back, digests checked."""
    check_archive(out, list(records.values()))
    for path in PAGES:
        found = seek(out / "warc", records[path])
        if path in NOINDEX:
            assert found.rec_headers.get_header("WARC-Truncated") == "noindex"
            assert found.body == b""
            assert found.http_headers.get_statuscode() == "200"
            assert found.http_headers.get_header("X-Robots-Tag") is not None or path.startswith(
                "/m"
            )
        else:
            assert found.rec_headers.get_header("WARC-Truncated") is None
            assert len(found.body) == records[path]["bytes"]
    # warcio's decoding reader takes the empty payload too
    member = (out / "warc" / records["/h-noindex"]["warc_file"]).read_bytes()
    start = records["/h-noindex"]["warc_offset"]
    member = member[start : start + records["/h-noindex"]["warc_length"]]
    [content] = [r.content_stream().read() for r in ArchiveIterator(io.BytesIO(member))]
    assert content == b""


async def test_ignore_noindex_stores_the_content_and_keeps_the_flag(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = await crawl(out, handle, ignore_noindex=True, warc=True, digests="off")
    for path in NOINDEX:
        record = records[path]
        assert "noindex" in record["flags"] and record["text"], record
    assert records["/doc.pdf"]["text"] == PDF_TEXT
    assert records["/m-robots"]["title"] == "Title of /m-robots"
    found = seek(out / "warc", records["/h-noindex"])
    assert found.rec_headers.get_header("WARC-Truncated") is None and found.body
    assert "/from/m-token" not in records  # nofollow still holds


async def test_follow_nofollow_follows_a_nofollow_header_too(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, follow_nofollow=True, text=False)
    assert "nofollow" in records["/h-nofollow"]["flags"]
    assert "/from/h-nofollow" in records and "/from/m-token" in records


async def test_a_links_only_crawl_flags_noindex_and_drops_nofollow_links(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, text=False)
    assert "noindex" in records["/h-agent"]["flags"] and records["/h-agent"]["title"] is None
    assert records["/h-all"]["title"] == "Title of /h-all"
    assert "/from/h-nofollow" not in records and "/from/h-noindex" in records


async def test_the_robots_token_names_the_crawler(tmp_path: Path) -> None:
    async def mine(request: web.Request) -> web.Response:
        if request.path == "/":
            return web.Response(body=b'<a href="/p">p</a>', content_type="text/html")
        response = web.Response(body=_html("/p"), content_type="text/html")
        response.headers["X-Robots-Tag"] = "mybot: noindex, gossamer: nofollow"
        return response

    records = await crawl(tmp_path / "out", mine, robots_token="MyBot")
    assert records["/p"]["flags"] == ["noindex"] and "/from/p" in records


async def test_the_user_agent_names_the_crawler_by_default(tmp_path: Path) -> None:
    """A site owner addresses the crawler by the name in their logs: with no
    ``--robots-token``, ``--user-agent``'s own product is it, robots.txt's groups included."""

    async def mine(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            rules = "User-agent: *\nDisallow: /private\n\nUser-agent: mybot\nDisallow: /no\n"
            return web.Response(text=rules)
        if request.path == "/":
            links = b'<a href="/p">p</a><a href="/no/x">x</a><a href="/private/y">y</a>'
            return web.Response(body=links, content_type="text/html")
        response = web.Response(body=_html(request.path), content_type="text/html")
        response.headers["X-Robots-Tag"] = "mybot: noindex, gossamer: nofollow"
        return response

    agent = "MyBot/2.0 (+https://bot.test/about)"
    records = await crawl(tmp_path / "out", mine, user_agent=agent, robots=True)
    assert records["/p"]["flags"] == ["noindex"] and "/from/p" in records
    assert records["/no/x"]["error"] == "robots"  # MyBot's group, not *'s
    assert records["/private/y"]["status"] == 200

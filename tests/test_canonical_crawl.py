"""Canonical links in whole crawls of a real server on loopback: ``Link`` headers and
``<link rel=canonical>`` tags (agreeing, disagreeing, alone, on a PDF), recorded by default
and followed with ``--canonical follow``: out of scope, to the page itself, to an error page
and in a loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.content_site import PDF_TEXT, crawl
from tests.warc_check import check_archive, seek

from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(60)

TEXT = "Canonical pages hold the text a crawl keeps once, whatever their copies say. " * 3
HEADER = {
    "/agree": "/main-agree",
    "/disagree": "/main-header",
    "/header-only": "main-header-only",  # relative: against the page URL
    "/offsite": "http://elsewhere.test/x",
    "/to-missing": "/missing",
    "/doc.pdf": "/main.pdf",
}
TAG = {
    "/agree": "/main-agree",
    "/disagree": "/main-tag",
    "/tag-only": "/main-tag-only",
    "/loop-a": "/loop-b",
    "/loop-b": "/loop-a",
    "/self": "HTTP://SITE.test:{port}/self#top",
    "/to-missing-2": "/missing-2",
}
LINKED = [*HEADER, "/tag-only", "/loop-a", "/self", "/missing-2"]
MAINS = {"/main-agree", "/main-header", "/main-header-only", "/main-tag-only", "/main.pdf"}


async def handle(request: web.Request) -> web.Response:
    path, port = request.path, request.url.port
    if path == "/":
        links = "".join(f'<a href="{p}">{p}</a>' for p in LINKED)
        return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")
    if path.startswith("/missing"):
        return web.Response(status=404, text="not here")
    if path.endswith(".pdf"):
        response = web.Response(body=payloads.pdf(PDF_TEXT), content_type="application/pdf")
    else:
        tag = TAG.get(path)
        head = "" if tag is None else f'<link rel="canonical" href="{tag.format(port=port)}">'
        more = '<a href="/to-missing-2">late</a>' if path == "/self" else ""
        html = f"<html><head><title>{path}</title>{head}</head><body><p>{TEXT}</p>{more}"
        response = web.Response(body=f"{html}</body></html>".encode(), content_type="text/html")
    if path in HEADER:
        response.headers["Link"] = f'<{HEADER[path]}>; rel="canonical"'
    return response


def _url(records: dict[str, dict[str, Any]], path: str) -> str:
    return records["/"]["url"].rstrip("/") + path


async def test_record_reads_headers_and_tags_and_follows_nothing(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, per_host=1)
    canonical = {path: r["canonical"] for path, r in records.items()}
    assert canonical["/agree"] == _url(records, "/main-agree")
    assert canonical["/disagree"] == _url(records, "/main-header")  # the header wins
    assert "canonical-conflict" in records["/disagree"]["flags"]
    assert "canonical-conflict" not in records["/agree"]["flags"]
    assert canonical["/header-only"] == _url(records, "/main-header-only")
    assert canonical["/tag-only"] == _url(records, "/main-tag-only")
    assert canonical["/doc.pdf"] == _url(records, "/main.pdf")
    assert canonical["/offsite"] == "http://elsewhere.test/x"
    assert canonical["/self"] == _url(records, "/self")
    assert not MAINS & records.keys()  # recorded, not followed
    for path in LINKED:
        if path != "/missing-2":
            assert records[path]["text"], path
            assert not {"canonical-followed", "canonical-loop"} & set(records[path]["flags"])


async def test_follow_queues_the_canonical_url_and_stores_the_copy_without_content(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    records = await crawl(out, handle, canonical="follow", per_host=1, warc=True)
    for path in ("/agree", "/disagree", "/header-only", "/tag-only", "/doc.pdf"):
        record = records[path]
        assert "canonical-followed" in record["flags"], record
        assert record["status"] == 200 and record["text"] is None and record["title"] is None
        found = seek(out / "warc", record)
        assert found.rec_headers.get_header("WARC-Truncated") == "not-canonical"
        assert found.body == b""
    for path in MAINS:  # each canonical page fetched once, its content kept
        assert records[path]["status"] == 200 and records[path]["text"], path
        assert records[path]["depth"] == 2  # a canonical hop counts as a link
    assert records["/main.pdf"]["text"] == PDF_TEXT
    assert "/main-tag" not in records  # the header won
    lines = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    check_archive(out, lines)
    # its canonical URL turned out missing: the page's content stored after all, in a
    # second record (the first says it was followed, its WARC record without content)
    missing = [r for r in lines if r["url"] == _url(records, "/to-missing")]
    assert [r["flags"] for r in missing] == [["canonical-followed"], ["canonical-error"]]
    assert missing[0]["text"] is None and missing[1]["text"]
    assert seek(out / "warc", missing[0]).body == b""
    assert TEXT.strip() in seek(out / "warc", missing[1]).body.decode()


async def test_follow_ignores_and_flags_offsite_self_error_and_loop(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, canonical="follow", per_host=1, digests="off")
    flags = {path: set(r["flags"]) for path, r in records.items()}
    assert "canonical-offsite" in flags["/offsite"] and records["/offsite"]["text"]
    assert not any(r["url"].startswith("http://elsewhere.test") for r in records.values())
    assert not {f for f in flags["/self"] if f.startswith("canonical")}
    assert records["/self"]["text"]
    # A -> B -> A: A names B (followed), B names A back: B keeps its content
    assert "canonical-followed" in flags["/loop-a"] and records["/loop-a"]["text"] is None
    assert "canonical-loop" in flags["/loop-b"] and records["/loop-b"]["text"]
    # an error page known before: ignored, the page kept; found after: its record flagged
    assert records["/missing-2"]["status"] == 404
    assert "canonical-error" in flags["/to-missing-2"] and records["/to-missing-2"]["text"]
    assert records["/missing"]["status"] == 404 and "canonical-error" in flags["/missing"]

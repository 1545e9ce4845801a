"""``noarchive`` in whole crawls of a real server on loopback: the record is flagged and its
text kept, the WARC response record keeps the headers without the payload
(``WARC-Truncated: noarchive``), ``page_signals`` counts it; ``--archive-noarchive`` keeps
the payload, the flag still set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl
from tests.warc_check import check_archive, seek

pytestmark = pytest.mark.timeout(60)

TEXT = "Lakes hold the water rivers bring down from the hills, still and deep. " * 4
HEADERS = {"/h-noarchive": "noarchive, noai, noimageai", "/h-agent": "gossamer: noarchive"}
METAS = {
    "/m-noarchive": '<meta name="robots" content="noarchive, noai">',
    "/m-big": '<meta name="robots" content="noarchive">',  # parsed in the parse sandbox
}
PAGES = ["/plain", *HEADERS, *METAS]


async def handle(request: web.Request) -> web.Response:
    path = request.path
    if path == "/":
        links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES)
        return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")
    if path not in PAGES:
        return web.Response(status=404, text="not here")
    filler = "<span>x</span>" * 5000 if path == "/m-big" else ""
    body = (
        f"<!doctype html><html><head><title>Title of {path}</title>{METAS.get(path, '')}"
        f"</head><body><article><p>{TEXT}</p></article>{filler}</body></html>"
    )
    response = web.Response(body=body.encode(), content_type="text/html")
    if path in HEADERS:
        response.headers["X-Robots-Tag"] = HEADERS[path]
    return response


async def test_noarchive_withholds_the_archived_payload_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = await crawl(out, handle, warc=True, digests="off")
    check_archive(out, list(records.values()))
    for path in PAGES:
        record = records[path]
        asked = path != "/plain"
        assert ("noarchive" in record["flags"]) == asked, record
        assert TEXT.strip()[:40] in record["text"] and record["title"] == f"Title of {path}"
        found = seek(out / "warc", record)
        if asked:
            assert found.rec_headers.get_header("WARC-Truncated") == "noarchive"
            assert found.body == b"" and found.http_headers.get_statuscode() == "200"
        else:
            assert found.rec_headers.get_header("WARC-Truncated") is None
            assert len(found.body) == record["bytes"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["page_signals"]["noarchive"] == 4


async def test_archive_noarchive_keeps_the_payload(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = await crawl(out, handle, warc=True, digests="off", archive_noarchive=True)
    record = records["/h-noarchive"]
    assert "noarchive" in record["flags"]
    found = seek(out / "warc", record)
    assert found.rec_headers.get_header("WARC-Truncated") is None
    assert len(found.body) == record["bytes"]

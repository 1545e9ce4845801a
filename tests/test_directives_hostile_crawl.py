"""Robots directives that hostile or unusual pages hide, in whole crawls of a real server on
loopback: a ``noindex`` meta after a tracking pixel in the head, a ``noindex`` past the
header and meta bounds (found all the same: fail closed), a date no datetime holds, the
``noindex`` of error pages and redirects (no body in the WARC, every attempt), and a
decompression bomb (its record kept, nothing parsed from it)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.content_site import crawl
from warcio.archiveiterator import ArchiveIterator

pytestmark = pytest.mark.timeout(60)

SECRET = "SECRET-CONTENT"
PIXEL = '<noscript><img height="1" width="1" src="/px.gif"></noscript>'
NOINDEX_META = '<meta name="robots" content="noindex">'
HEADS = {
    "/pixel": PIXEL + NOINDEX_META,
    "/bare-pixel": '<img src="/px.gif">' + NOINDEX_META,
    "/pixel-canonical": PIXEL + '<link rel="canonical" href="/from/pixel-canonical">',
    "/many-metas": '<meta name="x" content="y">' * 1001 + NOINDEX_META,
    "/many-words": '<meta name="robots" content="' + "max-snippet:1," * 100 + 'noindex">',
    "/long-content": '<meta name="robots" content="' + "a" * 9000 + ',noindex">',
    "/bodymeta404": NOINDEX_META,
    "/equiv": '<meta http-equiv="X-Robots-Tag" content="noindex">',
}
HEADERS = {
    "/two-headers": ["x" * 5000, "x" * 5000, "noindex"],
    "/many-directives": ["max-snippet:1," * 100 + "noindex"],
    "/far-future": ["unavailable_after: 25 Jun 99999999999 15:00:00 GMT"],
    "/e404": ["noindex"],
    "/e500": ["noindex"],
    "/r301": ["noindex"],
    "/semicolon": ["noindex;nofollow"],
    "/day": ["unavailable_after: 25 jun 2010"],
}
STATUS = {"/e404": 404, "/e500": 500, "/r301": 301, "/bodymeta404": 404}
PAGES = [*HEADS, *HEADERS, "/bomb"]
NOINDEX = {*PAGES} - {"/pixel-canonical", "/far-future", "/bomb"}
BOMB = gzip.compress(b'<a href="/from/bomb">x</a>' + b"<" * (3 << 20))


def _html(path: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>{SECRET} {path}</title>{HEADS.get(path, '')}"
        f"</head><body><p>{SECRET} of {path}</p><a href='/from{path}'>next</a></body></html>"
    ).encode()


async def handle(request: web.Request) -> web.Response:
    path = request.path
    if path == "/":
        links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES)
        return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")
    if path == "/bomb":
        headers = {"Content-Encoding": "gzip"}
        return web.Response(body=BOMB, content_type="text/html", headers=headers)
    if path.startswith("/from/") or path == "/px.gif":
        return web.Response(body=b"<html><p>linked</p></html>", content_type="text/html")
    response = web.Response(body=_html(path), content_type="text/html")
    response.set_status(STATUS.get(path, 200))
    if path == "/r301":
        response.headers["Location"] = "/from/r301"
    for value in HEADERS.get(path, []):
        response.headers.add("X-Robots-Tag", value)
    return response


def _responses(out: Path) -> dict[str, list[bytes]]:
    """Every response record's payload in the WARC files, by path."""
    found: dict[str, list[bytes]] = {}
    for file in sorted((out / "warc").iterdir()):
        with file.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type != "response":
                    continue
                path = "/" + record.rec_headers.get_header("WARC-Target-URI").split("/", 3)[3]
                truncated = record.rec_headers.get_header("WARC-Truncated") or ""
                body = record.content_stream().read()
                found.setdefault(path, []).append(truncated.encode() + b"|" + body)
    return found


async def test_hidden_noindex_is_found_and_its_content_withheld(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = await crawl(
        out,
        handle,
        warc=True,
        digests="off",
        max_retries=1,
        retry_backoff=0.01,
        max_body_bytes=1 << 20,
    )
    for path in PAGES:
        record: dict[str, Any] = records[path]
        assert ("noindex" in record["flags"]) == (path in NOINDEX), record
        withheld = path in NOINDEX or path == "/bomb"
        shown = (record["text"] or "") + (record["title"] or "")
        assert (SECRET in shown) == (not withheld and STATUS.get(path, 200) == 200), record
        assert record["error"] != "internal-error", record
    warc = _responses(out)
    for path in NOINDEX:
        attempts = warc[path]
        assert attempts and all(a == b"noindex|" for a in attempts), (path, attempts)
    assert len(warc["/e500"]) == 2  # the retry's answer withheld too
    assert records["/pixel-canonical"]["canonical"].endswith("/from/pixel-canonical")
    assert "/from/far-future" in records  # its links followed, the date ignored
    assert "/from/pixel" in records  # noindex keeps the links


async def test_a_decompression_bomb_is_not_parsed(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="off", max_body_bytes=1 << 20)
    bomb = records["/bomb"]
    assert bomb["error"] == "decompression-bomb" and bomb["truncated"], bomb
    assert bomb["outlinks"] == 0 and bomb["text"] is None and bomb["title"] is None
    assert "/from/bomb" not in records

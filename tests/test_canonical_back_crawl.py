"""``--canonical follow`` when the canonical URL leads back to the page that named it, in whole
crawls of a real server on loopback: a canonical URL answering 301 or 302 to the page (named by
a tag or a ``Link`` header), a longer cycle (A names B, B names C, C redirects to A), a
redirect chain back (A names B, B redirects to C, C to A) and two pages naming each other.
The page the cycle comes back to is the canonical page in fact: its content is stored once,
under its own URL, in a second record flagged ``canonical-loop`` (the first, flagged
``canonical-followed``, has none); no URL is requested twice; each page's content is stored
at most once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.content_site import crawl
from tests.warc_check import check_archive, seek

pytestmark = pytest.mark.timeout(60)

TAG = {
    "/a": "/b",  # /b redirects (301) to /a
    "/c": "/c-canon",  # /c-canon redirects (302) to /c
    "/x": "/y",  # /y names /z, /z redirects to /x
    "/y": "/z",
    "/m": "/m2",  # /m2 redirects to /m3, /m3 to /m
    "/p": "/q",  # /p and /q name each other
    "/q": "/p",
}
HEADER = {"/h": "/h-canon"}  # /h-canon redirects (301) to /h
REDIRECTS = {
    "/b": ("/a", web.HTTPMovedPermanently),
    "/c-canon": ("/c", web.HTTPFound),
    "/h-canon": ("/h", web.HTTPMovedPermanently),
    "/z": ("/x", web.HTTPMovedPermanently),
    "/m2": ("/m3", web.HTTPMovedPermanently),
    "/m3": ("/m", web.HTTPFound),
}
LINKED = ["/a", "/c", "/h", "/x", "/m", "/p"]
KEPT = ["/a", "/c", "/h", "/x", "/m"]
"""The pages a cycle comes back to: each the canonical page in fact."""


def _site(requests: Counter[str]) -> Any:
    async def handle(request: web.Request) -> web.Response:
        path = request.path
        requests[path] += 1
        if path in REDIRECTS:
            target, answer = REDIRECTS[path]
            raise answer(target)
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a>' for p in LINKED)
            return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")
        tag = TAG.get(path)
        head = "" if tag is None else f'<link rel="canonical" href="{tag}">'
        text = f"The page {path} holds the text a crawl keeps once, whatever its copies say. " * 3
        html = f"<html><head><title>{path}</title>{head}</head><body><p>{text}</p></body></html>"
        response = web.Response(body=html.encode(), content_type="text/html")
        if path in HEADER:
            response.headers["Link"] = f'<{HEADER[path]}>; rel="canonical"'
        return response

    return handle


def _all_records(out: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for line in (out / "pages.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        found.setdefault("/" + record["url"].split("/", 3)[3], []).append(record)
    return found


async def test_a_canonical_url_leading_back_keeps_the_page_content_once(tmp_path: Path) -> None:
    requests: Counter[str] = Counter()
    out = tmp_path / "out"
    await crawl(out, _site(requests), canonical="follow", per_host=1, digests="off", warc=True)
    records = _all_records(out)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    check_archive(out, [json.loads(line) for line in lines])  # each record its own response
    assert max(requests.values()) == 1, requests  # nothing fetched twice: no loop
    for path in KEPT:
        stored = [r for r in records[path] if r["text"]]
        assert len(stored) == 1, (path, records[path])  # its content once, under its URL
        kept = stored[0]
        assert kept["status"] == 200 and f"The page {path} " in kept["text"]
        assert "canonical-loop" in kept["flags"] and "canonical-followed" not in kept["flags"]
        assert kept["title"] == path
        found = seek(out / "warc", kept)  # the archive holds the page's body for it
        assert found.rec_headers.get_header("WARC-Truncated") is None
        assert f"The page {path} ".encode() in found.body
        first = [r for r in records[path] if not r["text"]]
        assert [r["flags"] for r in first] == [["canonical-followed"]], records[path]
    for path in ("/b", "/c-canon", "/h-canon", "/z", "/m3"):  # the redirect closing a cycle
        (record,) = records[path]
        assert "canonical-loop" in record["flags"] and "canonical-error" not in record["flags"]
    # in a cycle, every other page's content is left to the page it comes back to
    assert [r["text"] for r in records["/y"]] == [None]
    assert "canonical-followed" in records["/y"][0]["flags"]
    # two pages naming each other: one keeps its content, once
    stored = [r["url"] for p in ("/p", "/q") for r in records[p] if r["text"]]
    assert len(stored) == 1 and len(records["/p"]) == len(records["/q"]) == 1

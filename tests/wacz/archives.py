"""Crawl output directories made by gossamer's own WARC writer, with the records of hard
cases: a page fetched twice (the second time a ``revisit`` record), a ``noindex`` page whose
payload is withheld, a title in odd Unicode, a redirect and an image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gossamer.fetch.exchange import Exchange
from gossamer.page.state import Withheld
from gossamer.sinks.base import IDENTICAL_PAYLOAD, Archivable, Revisit
from gossamer.sinks.warc import WarcWriter

T0 = 1_800_000_000.25
ORIGIN = "http://site0.test:8000"
TITLE = (
    "Caf\u00e9 \u202e\u0627\u0644\u0639\u0631\u0628\u064a\u0629 "
    "\U0001f578\ufe0f z\u0300\u0301 \ud800"
)
"""Accents, a right-to-left override and Arabic, an emoji with a variation selector,
combining marks, and a lone surrogate (a page's ``&#xD800;``): U+FFFD in the WACZ."""
PAGE = b"<html><head><title>Home</title></head><body><p>the spider's home</p></body></html>"
ODD = ("<html><head><title>" + TITLE[:-2] + "</title></head><body>odd</body></html>").encode()


def exchange(path: str, body: bytes, status: int = 200, kind: str = "text/html") -> Exchange:
    """A GET of ``path`` answered ``status`` with ``body``."""
    headers = [(b"Content-Type", kind.encode()), (b"Content-Length", str(len(body)).encode())]
    if status == 301:
        headers.append((b"Location", b"/"))
    return Exchange(
        method="GET",
        target=path,
        request_headers=(("Host", "site0.test:8000"), ("User-Agent", "gossamer-test")),
        version="HTTP/1.1",
        status=status,
        reason="OK" if status == 200 else "Moved",
        response_headers=tuple(headers),
        body=body,
        peer="127.0.0.1",
    )


class _Fetch:
    def __init__(self, url: str, fetched_at: float, exchange: Exchange) -> None:
        self.url = url
        self.fetched_at = fetched_at
        self.exchange: Exchange | None = exchange


async def write_crawl(out: Path, *, prefix: str = "gossamer") -> list[dict[str, Any]]:
    """A crawl's WARC files and pages.jsonl under ``out`` (the hard cases above); its records."""
    writer = WarcWriter(out / "warc", prefix=prefix, clock=lambda: T0)
    home = exchange("/", PAGE)
    fetches: list[tuple[Archivable, dict[str, Any]]] = [
        (_Fetch(ORIGIN + "/", T0, home), {"title": "Home"}),
        (_Fetch(ORIGIN + "/odd", T0 + 1, exchange("/odd", ODD)), {"title": TITLE}),
        (
            Withheld.of(_Fetch(ORIGIN + "/secret", T0 + 2, exchange("/secret", PAGE)), "noindex"),
            {"title": "Secret", "flags": ["noindex"]},
        ),
        (_Fetch(ORIGIN + "/old", T0 + 3, exchange("/old", b"", 301)), {"status": 301}),
        (
            _Fetch(
                ORIGIN + "/logo.png", T0 + 4, exchange("/logo.png", b"\x89PNG", kind="image/png")
            ),
            {"content_type": "image/png"},
        ),
        (Revisit(ORIGIN + "/", T0 + 60, home, IDENTICAL_PAYLOAD, T0), {"title": "Home"}),
    ]
    records = []
    for fetch, fields in fetches:
        location = await writer.write(fetch)
        assert location is not None
        records.append(
            {
                "url": fetch.url,
                "status": 200,
                "content_type": "text/html",
                "fetched_at": fetch.fetched_at,
                "title": None,
                "warc_file": location.file,
                "warc_offset": location.offset,
                "warc_length": location.length,
            }
            | fields
        )
    writer.close()
    with (out / "pages.jsonl").open("w", encoding="utf-8") as pages:
        for record in records:
            pages.write(json.dumps(record) + "\n")
        pages.write('{"url": "http://site0.test:8000/torn", "sta')  # a crash's torn line
    return records

"""Random bytes at every path a response takes: headers, URLs, charsets, bodies, robots.txt.

The property tests call the parsing functions directly with many examples; the crawl test
serves a small web of generated responses from a raw TCP server on loopback (any bytes in any
header) and runs whole crawls against it. Each crawl must end with every URL it met recorded
exactly once, nothing left queued, crawl.db and pages.jsonl in agreement and no internal error.
Examples are derandomized (the same in every run) and bounded in number and time;
``GOSSAMER_FUZZ_EXAMPLES=500`` explores further.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import sqlite3
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import brotli
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gossamer.crawl import run_crawl
from gossamer.fetch.http import parse_content_type, parse_retry_after
from gossamer.parse.links import parse_html
from gossamer.safe import safe_location, safe_text
from gossamer.settings import load_settings
from gossamer.urls import InvalidURL, canonicalize

CRAWLS = int(os.environ.get("GOSSAMER_FUZZ_EXAMPLES", "12"))
PROPERTY = settings(max_examples=300, derandomize=True, deadline=None)

header_bytes = st.binary(max_size=48).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
url_text = st.one_of(
    st.text(max_size=80),
    st.builds(lambda a, b: f"http://{a}/{b}", st.text(max_size=20), st.text(max_size=30)),
    st.sampled_from(["http://[::1", "http://a.test:99999/", "http://%zz/", "https://xn--/", "//x"]),
)
html_piece = st.one_of(
    st.sampled_from(
        [
            b"<a href='", b"'>", b"<a href=/p1>x</a>", b"<title>", b"</title>", b"<base href='",
            b"<meta charset='", b"<meta name=robots content=nofollow>", b"<div>", b"</div>",
            b"<!--", b"-->", b"<script>", b"</script>", b"<p>", b"\xff\xfe", b"\x00", b"&#0;",
            b"<area href='/p2'>", b"<link rel=next href='", b"<svg><title>", b"<table><td>",
        ]
    ),
    st.binary(max_size=24),
    st.text(max_size=24).map(lambda t: t.encode("utf-8", "surrogatepass")),
)  # fmt: skip
html_bytes = st.lists(html_piece, max_size=40).map(b"".join)


# -- properties of the parsing functions ---------------------------------------------------


@PROPERTY
@given(url_text)
def test_canonicalize_gives_ascii_or_invalid_url(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except InvalidURL:
        return
    assert canonical.isascii() and canonical.startswith(("http://", "https://"))
    assert canonicalize(canonical) == canonical


@PROPERTY
@given(html_bytes, st.one_of(st.none(), st.text(max_size=20)), url_text)
def test_parse_html_never_raises_and_keeps_valid_text(
    body: bytes, charset: str | None, href: str
) -> None:
    page = parse_html(
        body + f"<a href='{href}'>".encode("utf-8", "surrogatepass"), "http://a.test/d/"
    )
    for text in [page.title or "", *page.links]:
        text.encode("utf-8")  # no lone surrogates
    page = parse_html(body, "http://a.test/", header_charset=charset)
    assert all(link.startswith(("http://", "https://")) for link in page.links)


@PROPERTY
@given(header_bytes)
def test_header_values_are_made_safe(raw: bytes) -> None:
    value = raw.decode("utf-8", "surrogateescape")  # as aiohttp hands header values over
    safe_text(value).encode("utf-8")
    assert safe_location(value).isascii()
    mime, charset = parse_content_type(value)
    assert mime is None or (mime.isascii() and "/" in mime)
    assert charset is None or charset.isascii()
    after = parse_retry_after(value, 1e9)
    assert after is None or after >= 0


# -- whole crawls against a web of random responses ----------------------------------------


@dataclass(frozen=True)
class Answer:
    """One generated response (status line and headers are raw bytes on the wire)."""

    status: int
    content_type: bytes
    location: bytes
    retry_after: bytes
    coding: bytes
    encode: bool
    extra: tuple[tuple[bytes, bytes], ...]
    body: bytes

    def wire(self) -> bytes:
        body = self.body
        if self.encode and self.coding in CODERS:
            body = CODERS[self.coding](body)
        head = [b"HTTP/1.1 %d X" % self.status, b"Content-Type: " + self.content_type]
        if self.location:
            head.append(b"Location: " + self.location)
        if self.retry_after:
            head.append(b"Retry-After: " + self.retry_after)
        if self.coding:
            head.append(b"Content-Encoding: " + self.coding)
        head += [name + b": " + value for name, value in self.extra]
        head += [b"Content-Length: %d" % len(body), b"Connection: close"]
        return b"\r\n".join(head) + b"\r\n\r\n" + body


CODERS = {
    b"gzip": gzip.compress,
    b"deflate": zlib.compress,
    b"br": brotli.compress,
}
token = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).map(str.encode)
answers = st.builds(
    Answer,
    status=st.sampled_from([200, 200, 200, 200, 301, 302, 307, 404, 410, 429, 500, 503, 999]),
    content_type=st.one_of(
        st.just(b"text/html"),
        st.builds(lambda v: b"text/html; charset=" + v, header_bytes),
        header_bytes,
    ),
    location=st.one_of(st.just(b""), st.builds(lambda v: b"/p" + v, header_bytes), header_bytes),
    retry_after=st.one_of(st.just(b""), st.sampled_from([b"0", b"1", b"9" * 40]), header_bytes),
    coding=st.sampled_from([b"", b"", b"gzip", b"deflate", b"br", b"x-zz"]),
    encode=st.booleans(),
    extra=st.lists(st.tuples(token, header_bytes), max_size=3).map(tuple),
    body=html_bytes,
)


@dataclass
class FuzzWeb:
    """``/`` links ``/p0`` .. ``/p{n-1}``; each answers its generated response."""

    answers: list[Answer]
    robots: bytes
    requested: list[bytes] = field(default_factory=list)

    def index(self) -> bytes:
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(len(self.answers)))
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + (
            f"<html><body>{links}</body></html>".encode()
        )

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1]
            self.requested.append(target)
            writer.write(self.reply(target))
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, IndexError):
            pass
        finally:
            writer.close()

    def reply(self, target: bytes) -> bytes:
        path = target.partition(b"?")[0]
        if path == b"/robots.txt":
            return b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + self.robots
        if path.startswith(b"/p") and path[2:].isdigit() and int(path[2:]) < len(self.answers):
            return self.answers[int(path[2:])].wire()
        if path.startswith(b"/p"):
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        return self.index()


async def crawl_fuzz_web(web: FuzzWeb, out: Path) -> None:
    server = await asyncio.start_server(web.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    fast = {
        "seeds": [f"http://127.0.0.1:{port}/"],
        "out": out,
        "quiet": True,
        "concurrency": 8,
        "max_pages": 200,
        "max_retries": 1,
        "retry_backoff": 0.01,
        "max_retry_after": 0.3,
        "robots_retry": 0.05,
        "total_timeout": 2.0,
        "read_timeout": 1.0,
        "connect_timeout": 1.0,
        "checkpoint_interval": 0.05,
    }
    try:
        await asyncio.wait_for(run_crawl(load_settings(fast, env={})), 40)
    finally:
        server.close()
        await server.wait_closed()


def check_outputs(out: Path, web: FuzzWeb) -> None:
    lines = (out / "pages.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    urls = [r["url"] for r in records]
    assert len(urls) == len(set(urls)), "a URL was recorded twice"
    stats = json.loads((out / "stats.json").read_text())
    assert stats["internal_errors"] == 0
    assert stats["pages"] == len(records)
    assert stats["queued"] == 0 or stats["pages"] >= 200
    with sqlite3.connect(out / "crawl.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == len(records)
        left = conn.execute("SELECT COUNT(*) FROM urls WHERE state = 0").fetchone()[0]
    assert left == 0 or stats["pages"] >= 200
    paths = {u.split("/", 3)[3] for u in urls}
    asked = {t.decode("latin-1").lstrip("/") for t in web.requested if t != b"/robots.txt"}
    if stats["pages"] < 200:
        assert asked <= paths, f"requested without a record: {sorted(asked - paths)[:3]}"


@settings(
    max_examples=CRAWLS,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(answers, min_size=1, max_size=12), html_bytes)
def test_crawl_of_random_answers_records_each_url_once(
    generated: list[Answer], robots: bytes
) -> None:
    web = FuzzWeb(generated, robots)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        asyncio.run(crawl_fuzz_web(web, out))
        check_outputs(out, web)


pytestmark = pytest.mark.timeout(300)

"""Prompt special endpoints: redirects, statuses, flaky errors, traps, files, charsets."""

from __future__ import annotations

import gzip
import re
import zlib

import aiohttp
import pytest

from gossamer.testweb import CHARSET_SAMPLES, TestWebServer
from gossamer.testweb.payloads import ENCODED_MARKER, MALFORMED_MARKER, PDF_TEXT, encoded_page
from gossamer.testweb.specials import APP_PAGES

from .support import client


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[aiohttp.ClientResponse, bytes]:
    """GET without following redirects; the response and its body."""
    async with session.get(url, allow_redirects=False) as response:
        return response, await response.read()


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/redirect/301", 301, "/"),
        ("/redirect/302/abs", 302, "http://site0.test:{port}/"),
        ("/redirect/303", 303, "/"),
        ("/redirect/307/rel", 307, "../../"),
        ("/redirect/308/cross", 308, "http://site1.test:{port}/"),
        ("/redirect/302?to=/docs/", 302, "/docs/"),
        ("/redirect/chain/3", 302, "/redirect/chain/2"),
        ("/redirect/chain/1", 302, "/"),
        ("/redirect/loop/a", 302, "/redirect/loop/b"),
        ("/redirect/loop/b", 302, "/redirect/loop/a"),
    ],
)
async def test_redirect_locations(
    server: TestWebServer, session: aiohttp.ClientSession, path: str, status: int, location: str
) -> None:
    response, _ = await fetch(session, server.url(0, path))
    assert response.status == status
    assert response.headers["Location"] == location.format(port=server.port)


async def test_redirects_followed(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    for path in ("/redirect/301", "/redirect/307/rel", "/redirect/302/abs"):
        async with session.get(server.url(0, path)) as response:
            assert response.status == 200 and str(response.url) == server.url(0)
    async with session.get(server.url(0, "/redirect/308/cross")) as response:
        assert str(response.url) == server.url(1)
    async with session.get(server.url(0, "/redirect/chain/3")) as response:
        assert len(response.history) == 3 and str(response.url) == server.url(0)
    for path in ("/redirect/chain/12", "/redirect/loop/a"):
        with pytest.raises(aiohttp.TooManyRedirects):
            async with session.get(server.url(0, path), max_redirects=10):
                pass


@pytest.mark.parametrize("code", [404, 410, 500, 503, 429, 418])
async def test_status_codes(
    server: TestWebServer, session: aiohttp.ClientSession, code: int
) -> None:
    response, body = await fetch(session, server.url(2, f"/status/{code}"))
    assert response.status == code and b"<html>" in body
    assert ("Retry-After" in response.headers) == (code in (429, 503))
    if code in (429, 503):
        assert response.headers["Retry-After"] == "1"


async def test_status_without_body(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    response, body = await fetch(session, server.url(0, "/status/204"))
    assert response.status == 204 and body == b""
    response, _ = await fetch(session, server.url(0, "/status/999"))
    assert response.status == 404


@pytest.mark.parametrize("code", [429, 500, 503])
async def test_flaky_fails_n_times_then_recovers(
    server: TestWebServer, session: aiohttp.ClientSession, code: int
) -> None:
    statuses = [(await fetch(session, server.url(0, f"/flaky/{code}")))[0].status for _ in range(4)]
    assert statuses == [code, code, 200, 200]
    custom = [
        (await fetch(session, server.url(0, f"/flaky/{code}?n=3")))[0].status for _ in range(4)
    ]
    assert custom == [code, code, code, 200]
    other_host, _ = await fetch(session, server.url(2, f"/flaky/{code}"))
    assert other_host.status == code
    if code != 500:
        response, _ = await fetch(session, server.url(3, f"/flaky/{code}?retry_after=7"))
        assert response.headers["Retry-After"] == "7"


async def test_calendar_trap_is_endless(
    server: TestWebServer, session: aiohttp.ClientSession
) -> None:
    url = server.url(0, "/calendar/2024/01")
    seen = set()
    for _ in range(30):
        response, body = await fetch(session, url)
        assert response.status == 200
        seen.add(url)
        url = server.url(0, re.findall(rb'href="([^"]+)">next', body)[0].decode())
    assert len(seen) == 30 and url.endswith("/calendar/2026/07")
    _, body = await fetch(session, server.url(0, "/calendar/2024/01"))
    assert b'href="/calendar/2023/12"' in body
    response, _ = await fetch(session, server.url(0, "/calendar/2024/13"))
    assert response.status == 404


async def test_repeat_and_long_url_traps(
    server: TestWebServer, session: aiohttp.ClientSession
) -> None:
    path = "/repeat/a/"
    for _ in range(15):
        response, body = await fetch(session, server.url(0, path))
        assert response.status == 200 and b'href="a/"' in body
        path += "a/"
    assert path.count("/a") == 16
    path, lengths = "/long/x", []
    for _ in range(15):
        response, body = await fetch(session, server.url(0, path))
        assert response.status == 200
        path = re.findall(rb'href="(/long/[^"]+)"', body)[0].decode()
        lengths.append(len(path))
    assert lengths == sorted(set(lengths)) and lengths[-1] > 100


async def test_pdf_and_png(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    response, pdf = await fetch(session, server.url(0, "/files/doc.pdf"))
    assert response.content_type == "application/pdf"
    assert pdf.startswith(b"%PDF-1.4") and pdf.endswith(b"%%EOF\n") and PDF_TEXT.encode() in pdf
    xref = int(pdf.rsplit(b"startxref\n", 1)[1].split()[0])
    assert pdf[xref:].startswith(b"xref\n")
    response, image = await fetch(session, server.url(0, "/files/image.png"))
    assert response.content_type == "image/png" and image.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")
    idat = image.index(b"IDAT")
    length = int.from_bytes(image[idat - 4 : idat], "big")
    assert len(zlib.decompress(image[idat + 4 : idat + 4 + length])) == height * (1 + 3 * width)


async def test_malformed_html(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    response, body = await fetch(session, server.url(0, "/malformed"))
    assert response.status == 200 and b"\x00" in body and MALFORMED_MARKER.encode() in body
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert not body.rstrip().endswith(b"</html>")


async def test_charset_pages(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    response, body = await fetch(session, server.url(0, "/charset/windows-1251"))
    assert response.headers["Content-Type"] == "text/html"
    assert b'<meta charset="windows-1251">' in body
    assert CHARSET_SAMPLES["windows-1251"] in body.decode("windows-1251")
    response, body = await fetch(session, server.url(0, "/charset/iso-8859-1"))
    assert response.headers["Content-Type"] == "text/html; charset=ISO-8859-1"
    assert b"charset" not in body and CHARSET_SAMPLES["iso-8859-1"] in body.decode("latin-1")
    response, body = await fetch(session, server.url(0, "/charset/shift_jis"))
    assert response.headers["Content-Type"] == "text/html" and b"charset" not in body.lower()
    assert CHARSET_SAMPLES["shift_jis"] in body.decode("shift_jis")
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
async def test_encoded_pages(
    server: TestWebServer, session: aiohttp.ClientSession, coding: str
) -> None:
    async with session.get(
        server.url(0, f"/encoded/{coding}"), headers={"Accept-Encoding": coding}
    ) as r:
        assert r.headers["Content-Encoding"] == coding
        assert int(r.headers["Content-Length"]) < 1000
        text = await r.text()
    assert text.count(ENCODED_MARKER) == 40


async def test_unusual_encodings_decode_to_the_page(server: TestWebServer) -> None:
    page = encoded_page()
    async with client(auto_decompress=False) as session:
        async with session.get(server.url(0, "/encoded/gzip-multi")) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            multi = await r.read()
        async with session.get(server.url(0, "/encoded/deflate-raw-lookalike")) as r:
            assert r.headers["Content-Encoding"] == "deflate"
            lookalike = await r.read()
    first = zlib.decompressobj(31)
    assert first.decompress(multi) != page and first.unused_data[:2] == b"\x1f\x8b"
    assert gzip.decompress(multi) == page  # gzip.decompress reads every member
    assert (lookalike[0] << 8 | lookalike[1]) % 31 == 0
    with pytest.raises(zlib.error):
        zlib.decompress(lookalike)
    assert zlib.decompress(lookalike, -zlib.MAX_WBITS) == page


async def test_the_app_section_is_built_by_script(
    server: TestWebServer, session: aiohttp.ClientSession
) -> None:
    response, body = await fetch(session, server.url(0, "/app/0"))
    assert response.status == 200
    assert b'<div id="root"></div>' in body and b"<noscript>" in body
    markup, _, script = body.partition(b"<script>")
    assert b"<a " not in markup and b'<a href="/app/1">' in script  # once the script ran
    _, last = await fetch(session, server.url(0, f"/app/{APP_PAGES - 1}"))
    assert b'<a href="/">' in last
    for bad in (f"/app/{APP_PAGES}", "/app/01", "/app/x"):
        response, _ = await fetch(session, server.url(0, bad))
        assert response.status == 404

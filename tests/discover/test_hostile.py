"""Hostile sitemaps cost bounded time and memory and end as flagged results: billion laughs,
external entities, gzip bombs, endless sitemaps, huge text and tokens, broken and deep XML."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp import web
from tests.discover.bounded import MIB, bounded, feed_until_done, repeat
from tests.local_app import serve

from gossamer.discover import (
    MAX_FILE_BYTES,
    MAX_FILE_URLS,
    Flag,
    Format,
    Limits,
    SitemapReader,
    read_file,
)

SOURCE = "http://h/sitemap.xml"
URL = b"<url><loc>http://h/page/%d</loc><lastmod>2024-05-06</lastmod></url>\n"

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>http://h/&lol9;</loc></url><url><loc a="&lol9;">http://h/x</loc></url></urlset>
"""


def test_billion_laughs_is_refused_at_its_first_entity() -> None:
    with bounded(seconds=1.0, mib=2):
        items, reader = read_file(SOURCE, BILLION_LAUGHS)
    assert (items, reader.flags) == ([], (Flag.ENTITIES,))


def test_billion_laughs_gzipped_and_byte_by_byte() -> None:
    body = gzip.compress(BILLION_LAUGHS)
    reader = SitemapReader(SOURCE)
    with bounded(seconds=1.0, mib=2):
        fed = feed_until_done(reader, (body[i : i + 1] for i in range(len(body))))
    assert (fed.items, reader.flags) == ([], (Flag.ENTITIES,))


@pytest.fixture
async def listener() -> Iterator[tuple[int, list[str]]]:
    """A local HTTP server that records every request it gets."""
    asked: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(text='<!ENTITY x "http://h/leak">root:x:0:0')

    async with serve(handler) as port:
        yield port, asked


async def test_external_entities_read_no_file_and_ask_no_server(
    listener: tuple[int, list[str]],
) -> None:
    port, asked = listener
    base = f"http://127.0.0.1:{port}"
    documents = [
        '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        "<urlset><url><loc>http://h/&xxe;</loc></url></urlset>",
        f'<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{base}/general">]>'
        f"<urlset><url><loc>http://h/&xxe;</loc></url></urlset>",
        f'<!DOCTYPE urlset [<!ENTITY % p SYSTEM "{base}/parameter"> %p;]>'
        f"<urlset><url><loc>http://h/&x;</loc></url></urlset>",
        f'<!DOCTYPE urlset [<!ENTITY img SYSTEM "{base}/unparsed" NDATA png>]><urlset/>',
    ]
    for document in documents:
        with bounded(seconds=1.0, mib=2):
            items, reader = read_file(SOURCE, document.encode())
        assert (items, reader.flags) == ([], (Flag.ENTITIES,)), document
    # an external DTD is not loaded (the document is read without it), nor is an XInclude
    external = (
        f'<!DOCTYPE urlset SYSTEM "{base}/dtd"><urlset xmlns:xi="http://www.w3.org/2001/XInclude">'
        f'<xi:include href="{base}/xinclude"/><url><loc>http://h/1</loc></url></urlset>'
    )
    items, reader = read_file(SOURCE, external.encode())
    assert ([item.url for item in items], reader.flags) == (["http://h/1"], ())
    async with aiohttp.ClientSession() as session, session.get(f"{base}/probe") as response:
        assert "root:" in await response.text()  # the server would have answered
    assert asked == ["/probe"]


def single_member_bomb(inflated: int) -> bytes:
    """Two entries, then ``inflated`` bytes of spaces, in one gzip member (about 1,000:1)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b"<urlset>" + URL % 1 + URL % 2)]
    block = b" " * MIB
    parts += [packer.compress(block) for _ in range(inflated // MIB)]
    parts.append(packer.compress(b"</urlset>") + packer.flush())
    return b"".join(parts)


def test_gzip_bomb_stops_at_the_uncompressed_limit() -> None:
    bomb = single_member_bomb(64 * MIB)
    assert len(bomb) < 100_000
    reader = SitemapReader(SOURCE)
    with bounded(seconds=5.0, mib=8):
        fed = feed_until_done(reader, (bomb[i : i + 4096] for i in range(0, len(bomb), 4096)))
    assert [item.url for item in fed.items] == ["http://h/page/1", "http://h/page/2"]
    assert reader.flags == (Flag.GZIP_BOMB,)
    assert reader.bytes_read == MAX_FILE_BYTES
    assert fed.consumed < len(bomb)


def test_gigabyte_bomb_of_many_gzip_members_stops_too() -> None:
    member = gzip.compress(b" " * MIB)

    def chunks() -> Iterator[bytes]:
        yield gzip.compress(b"<urlset>" + URL % 1)
        for _ in range(1024):  # 1 GiB inflated, 1 MiB sent
            yield member

    reader = SitemapReader(SOURCE)
    with bounded(seconds=5.0, mib=8):
        fed = feed_until_done(reader, chunks())
    assert [item.url for item in fed.items] == ["http://h/page/1"]
    assert reader.flags == (Flag.GZIP_BOMB,)
    assert fed.consumed < 60 * len(member)


def test_a_large_gzip_of_real_entries_is_too_large_not_a_bomb() -> None:
    doc = b"".join(URL % i for i in range(30_000))
    body = gzip.compress(b"<urlset>" + doc + b"</urlset>")
    items, reader = read_file(SOURCE, body, Limits(max_bytes=len(doc) // 2))
    assert reader.flags == (Flag.TOO_LARGE,)
    assert 10_000 < len(items) < 20_000


def test_ten_million_entries_stop_at_the_url_limit() -> None:
    reader = SitemapReader(SOURCE)
    chunks = repeat(b"<urlset>", URL % 7, 10_000_000, b"</urlset>")
    with bounded(seconds=30.0, mib=16):  # 50,000 entries; all ten million would take minutes
        fed = feed_until_done(reader, chunks)
    assert reader.flags == (Flag.TOO_MANY_URLS,)
    assert reader.count == MAX_FILE_URLS
    assert fed.consumed < 10 * MIB  # the rest of the stream was never generated


def test_ten_million_lines_of_text_stop_at_the_url_limit() -> None:
    reader = SitemapReader(SOURCE)
    with bounded(seconds=10.0, mib=16):
        fed = feed_until_done(reader, repeat(b"", b"http://h/page\n", 10_000_000))
    assert (reader.format, reader.flags, reader.count) == (
        Format.TEXT,
        (Flag.TOO_MANY_URLS,),
        MAX_FILE_URLS,
    )
    assert fed.consumed < 2 * MIB


@pytest.mark.parametrize(
    ("head", "fill"),
    [
        (b"<urlset>" + URL % 1 + b"<url><loc>http://h/", b"a"),  # inside a field read
        (b"<urlset>" + URL % 1 + b"<url><x>", b"a"),  # inside one not read
        (b"<urlset>" + URL % 1 + b"<url><loc><![CDATA[", b"a"),
        (b"http://h/page/1\nhttp://h/", b"a"),  # a plain-text line
    ],
)
def test_a_gigabyte_text_node_is_cut_at_the_size_limit(head: bytes, fill: bytes) -> None:
    reader = SitemapReader(SOURCE)
    with bounded(seconds=10.0, mib=8):
        fed = feed_until_done(reader, repeat(head, fill * 4096, 1024**3 // 4096))
    assert [item.url for item in fed.items] == ["http://h/page/1"]
    assert Flag.TOO_LARGE in reader.flags
    assert reader.bytes_read == MAX_FILE_BYTES
    assert fed.consumed <= MAX_FILE_BYTES + 65536


@pytest.mark.parametrize(
    "head",
    [b"<urlset><!--", b'<urlset><url a="', b"<urlset><url", b"<urlset><?pi "],
)
def test_a_huge_token_stops_early_in_linear_time(head: bytes) -> None:
    """Expat scans an unfinished token again on each feed: one of a gigabyte would cost
    minutes, so reading stops once a token passes ``max_token_bytes``."""
    reader = SitemapReader(SOURCE)
    with bounded(seconds=2.0, mib=8):
        fed = feed_until_done(reader, repeat(head, b"a" * 4096, 1024**3 // 4096))
    assert reader.flags == (Flag.HUGE_TOKEN,)
    assert fed.consumed < 2 * MIB


def test_broken_xml_keeps_the_entries_before_the_break() -> None:
    good = b"".join(URL % i for i in range(1000))
    for broken in (b"<url><loc>http://h/x</url>", b"<url><loc>a&nbsp;b</loc></url>", b"\x00"):
        items, reader = read_file(SOURCE, b"<urlset>" + good + broken + URL % 5000 + b"</urlset>")
        assert len(items) == 1000, broken
        assert reader.flags == (Flag.BROKEN_XML,)
    items, reader = read_file(SOURCE, b"<urlset>" + good)  # cut off at the end
    assert (len(items), reader.flags) == (1000, (Flag.BROKEN_XML,))


def test_deep_nesting_stops_at_the_depth_limit() -> None:
    reader = SitemapReader(SOURCE)
    with bounded(seconds=2.0, mib=4):
        fed = feed_until_done(reader, repeat(b"<urlset>" + URL % 1, b"<a>", 10_000_000))
    assert [item.url for item in fed.items] == ["http://h/page/1"]
    assert reader.flags == (Flag.DEEP_XML,)
    assert fed.consumed < MIB


def test_more_than_the_limit_received_is_cut() -> None:
    """A gzip body past ``max_bytes`` as received is cut too, inflated or not."""
    noise = zlib.compress(bytes(range(256)) * 4096)
    reader = SitemapReader(SOURCE, Limits(max_bytes=100_000))
    fed = feed_until_done(reader, repeat(b"\x1f\x8b" + b"\x08" * 8, noise, 1000))
    assert reader.done and fed.consumed < 2 * MIB


def test_gzip_past_the_received_limit_keeps_what_came_before_the_limit() -> None:
    doc = b"<urlset>" + b"".join(URL % i for i in range(5000)) + b"</urlset>"
    body = zlib.compress(doc, 0, wbits=31)  # stored, not compressed: as long as the XML
    items, reader = read_file(SOURCE, body, Limits(max_bytes=len(body) // 2))
    assert reader.flags == (Flag.TOO_LARGE,)
    assert abs(len(items) - 2500) < 50

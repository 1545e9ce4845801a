"""Each sitemap and feed format, with the quirks of sitemaps in the wild."""

from __future__ import annotations

import gzip

import pytest

from gossamer.discover import Child, Entry, Flag, Format, Limits, SitemapReader, read_file
from gossamer.discover.dates import parse_date, parse_rfc822, parse_w3c

SOURCE = "http://h/a/sitemap.xml"
MAY_6 = 1714953600.0  # 2024-05-06T00:00:00Z
MAY_6_070809 = MAY_6 + 7 * 3600 + 8 * 60 + 9


def urls(body: bytes) -> list[str]:
    items, _ = read_file(SOURCE, body)
    return [item.url for item in items]


def one_by_one(body: bytes) -> tuple[list[Entry | Child], SitemapReader]:
    """Reads ``body`` a byte at a time: every boundary falls inside some token."""
    reader = SitemapReader(SOURCE)
    items = []
    for index in range(len(body)):
        items += reader.feed(body[index : index + 1])
    items += reader.close()
    return items, reader


URLSET = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    b' xmlns:xhtml="http://www.w3.org/1999/xhtml"'
    b' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
    b"<url><loc>http://h/a/1</loc><lastmod>2024-05-06</lastmod>"
    b"<changefreq>daily</changefreq><priority>0.8</priority></url>\n"
    b"<url><loc>http://h/a/2</loc><lastmod>2024-05-06T07:08:09+00:00</lastmod></url>\n"
    b"</urlset>\n"
)


def test_urlset_gives_loc_lastmod_changefreq_priority() -> None:
    items, reader = read_file(SOURCE, URLSET)
    assert items == [
        Entry("http://h/a/1", MAY_6, "daily", 0.8, SOURCE),
        Entry("http://h/a/2", MAY_6_070809, None, None, SOURCE),
    ]
    assert (reader.format, reader.count, reader.flags) == (Format.URLSET, 2, ())
    assert reader.bytes_read == len(URLSET)


def test_chunk_boundaries_anywhere_give_the_same_entries() -> None:
    items, reader = one_by_one(URLSET)
    assert items == read_file(SOURCE, URLSET)[0]
    assert reader.flags == ()


def test_bom_whitespace_cdata_and_odd_values() -> None:
    body = (
        b"\xef\xbb\xbf \r\n\t<?xml version='1.0'?><urlset><url>"
        b"<loc>\n   http://h/a/1?x=1&amp;y=2  \n</loc>"
        b"<lastmod>not a date</lastmod><changefreq> WEEKLY</changefreq><priority>7</priority>"
        b"</url><url><loc><![CDATA[http://h/a/2?p=<1>&q]]></loc><priority>x</priority></url>"
        b"<url><loc></loc></url><url><loc>ftp://h/a/3</loc></url><url><loc>/a/4</loc></url>"
        b"</urlset>"
    )
    items, reader = read_file(SOURCE, body)
    assert items == [
        Entry("http://h/a/1?x=1&y=2", None, "weekly", None, SOURCE),
        Entry("http://h/a/2?p=<1>&q", None, None, None, SOURCE),
        Entry("http://h/a/4", None, None, None, SOURCE),  # resolved against the sitemap
    ]
    assert reader.flags == ()


@pytest.mark.parametrize(
    "root",
    [
        b'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">',  # an old namespace
        b'<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9/">',  # a wrong one
        b"<urlset>",  # none
        b"<sm:urlset>",  # a prefix never declared
    ],
)
def test_any_namespace_or_none_is_read(root: bytes) -> None:
    close = b"</sm:urlset>" if root.startswith(b"<sm:") else b"</urlset>"
    assert urls(root + b"<url><loc>http://h/a/1</loc></url>" + close) == ["http://h/a/1"]


def test_alternates_images_and_videos_inside_a_url_are_not_its_loc() -> None:
    body = (
        b'<urlset xmlns:xhtml="http://www.w3.org/1999/xhtml"><url>'
        b'<xhtml:link rel="alternate" hreflang="fr" href="http://h/fr/1"/>'
        b"<image:image><image:loc>http://h/a/img.png</image:loc></image:image>"
        b"<video:video><video:content_loc>http://h/a/v.mp4</video:content_loc></video:video>"
        b"<loc>http://h/a/1</loc></url></urlset>"
    )
    assert urls(body) == ["http://h/a/1"]


def test_sitemap_index_gives_children_with_lastmod() -> None:
    body = (
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>http://h/a/s1.xml.gz</loc><lastmod>2024-05-06</lastmod></sitemap>"
        b"<sitemap><loc> http://h/a/s2.xml </loc></sitemap></sitemapindex>"
    )
    items, reader = read_file(SOURCE, body)
    assert items == [
        Child("http://h/a/s1.xml.gz", MAY_6, SOURCE),
        Child("http://h/a/s2.xml", None, SOURCE),
    ]
    assert reader.format is Format.INDEX


def test_gzip_is_told_by_its_magic_bytes_not_the_name() -> None:
    items, reader = read_file("http://h/a/sitemap.txt", gzip.compress(URLSET))
    assert [item.url for item in items] == ["http://h/a/1", "http://h/a/2"]
    assert (reader.format, reader.bytes_read) == (Format.URLSET, len(URLSET))
    plain, _ = read_file("http://h/a/sitemap.xml.gz", URLSET)  # named .gz, sent plain
    assert len(plain) == 2


def test_gzip_of_several_members_and_byte_by_byte() -> None:
    body = gzip.compress(URLSET[:150]) + gzip.compress(URLSET[150:])
    items, reader = one_by_one(body)
    assert [item.url for item in items] == ["http://h/a/1", "http://h/a/2"]
    assert reader.flags == ()


def test_truncated_gzip_keeps_the_entries_before_the_cut() -> None:
    doc = b"<urlset>" + b"".join(b"<url><loc>http://h/a/%d</loc></url>" % i for i in range(2000))
    body = gzip.compress(doc + b"</urlset>")
    items, reader = read_file(SOURCE, body[: len(body) // 2])
    assert 100 < len(items) < 2000
    assert Flag.BROKEN_GZIP in reader.flags
    corrupt = body[:20] + bytes(200) + body[220:]
    items, reader = read_file(SOURCE, corrupt)
    assert Flag.BROKEN_GZIP in reader.flags


def test_plain_text_sitemap() -> None:
    body = b"\xef\xbb\xbfhttp://h/a/1\r\n\n   https://h/a/2  \n# a comment\nh/a/x\nhttp://h/a/3"
    items, reader = read_file(SOURCE, body)
    assert [item.url for item in items] == ["http://h/a/1", "https://h/a/2", "http://h/a/3"]
    assert reader.format is Format.TEXT
    assert one_by_one(body)[0] == items


def test_rss_items_link_guid_and_pubdate() -> None:
    """A pubDate or dc:date is a date of publication (``published``)."""
    body = (
        b'<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"'
        b' xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title>'
        b'<link>http://h/</link><atom:link href="http://h/feed" rel="self"/>'
        b"<item><title>1</title><link>http://h/a/p1</link>"
        b"<pubDate>Mon, 06 May 2024 07:08:09 GMT</pubDate></item>"
        b'<item><guid isPermaLink="true">http://h/a/p2</guid><dc:date>2024-05-06</dc:date></item>'
        b'<item><guid isPermaLink="false">tag:h,2024:3</guid></item>'
        b"<item><link><![CDATA[ http://h/a/p4 ]]></link><pubDate>yesterday</pubDate></item>"
        b"<item><guid>12345</guid></item>"  # an id with isPermaLink left out: no URL
        b'<item><atom:link rel="alternate" href="http://h/a/p6"/><guid>http://h/x</guid></item>'
        b"</channel></rss>"
    )
    items, reader = read_file(SOURCE, body)
    assert items == [
        Entry("http://h/a/p1", MAY_6_070809, None, None, SOURCE, published=True),
        Entry("http://h/a/p2", MAY_6, None, None, SOURCE, published=True),
        Entry("http://h/a/p4", None, None, None, SOURCE),
        Entry("http://h/a/p6", None, None, None, SOURCE),
    ]
    assert reader.format is Format.RSS


def test_rss_1_0_rdf_items() -> None:
    body = (
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">'
        b"<channel><link>http://h/</link></channel>"
        b"<item><link>http://h/a/p1</link></item></rdf:RDF>"
    )
    assert urls(body) == ["http://h/a/p1"]


def test_atom_entries_alternate_link_and_dates() -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        b'<link href="http://h/"/><link rel="self" href="http://h/feed"/>'
        b'<entry><link rel="edit" href="http://h/edit/1"/><link href="/a/p1"/>'
        b"<published>2024-05-06</published><updated>2024-05-06T07:08:09Z</updated></entry>"
        b'<entry><link rel="alternate" type="text/html" href="http://h/a/p2"/>'
        b"<published>2024-05-06T00:00:00Z</published></entry>"
        b'<entry><link rel="enclosure" href="http://h/a/p3.mp3"/></entry></feed>'
    )
    items, reader = read_file(SOURCE, body)
    assert items == [  # updated: when the entry last changed; published: when it appeared
        Entry("http://h/a/p1", MAY_6_070809, None, None, SOURCE),
        Entry("http://h/a/p2", MAY_6, None, None, SOURCE, published=True),
    ]
    assert reader.format is Format.ATOM


DOC = '<?xml version="1.0" encoding="{}"?><urlset><url><loc>http://h/a/{}</loc></url></urlset>'


@pytest.mark.parametrize(
    ("declared", "encoding", "path"),
    [
        ("UTF-16", "utf-16", "é"),  # with its BOM
        ("UTF-16", "utf-16-le", "é"),  # without one
        ("UTF-16", "utf-16-be", "é"),
        ("UTF-32", "utf-32", "é"),
        ("ISO-8859-1", "latin-1", "é"),
        ("windows-1252", "cp1252", "é€"),
        ("gb2312", "gb2312", "中文"),  # multi-byte: expat alone cannot read these
        ("Shift_JIS", "shift_jis", "日本"),
        ("utf8", "utf-8", "é"),  # a name expat does not know
        ("bogus", "utf-8", "é"),  # one nobody knows
        ("UTF-16", "utf-8", "é"),  # the wrong one
    ],
)
def test_encodings_declared_right_and_wrong(declared: str, encoding: str, path: str) -> None:
    assert urls(DOC.format(declared, path).encode(encoding)) == [f"http://h/a/{path}"]


def test_a_stray_byte_outside_the_encoding_is_replaced_not_fatal() -> None:
    body = (
        b"<urlset><url><loc>http://h/a/\xe9</loc></url><url><loc>http://h/a/2</loc></url></urlset>"
    )
    assert urls(body) == ["http://h/a/\ufffd", "http://h/a/2"]


def test_other_documents_are_flagged_not_read() -> None:
    items, reader = read_file(
        SOURCE, b"<!DOCTYPE html><html><body><a href='/x'>x</a></body></html>"
    )
    assert (items, reader.format, reader.flags) == ([], Format.UNKNOWN, (Flag.NOT_A_SITEMAP,))
    items, reader = read_file(SOURCE, b"")
    assert (items, reader.format, reader.flags) == ([], Format.UNKNOWN, ())
    items, reader = read_file(SOURCE, b"  \n ")
    assert (items, reader.format) == ([], Format.UNKNOWN)


def test_limits_are_settable() -> None:
    body = b"<urlset>" + b"<url><loc>http://h/a/1</loc></url>" * 5 + b"</urlset>"
    items, reader = read_file(SOURCE, body, Limits(max_urls=3))
    assert len(items) == 3 and reader.flags == (Flag.TOO_MANY_URLS,)
    items, reader = read_file(SOURCE, body, Limits(max_urls=5))
    assert len(items) == 5 and reader.flags == ()


def test_a_url_past_the_length_limit_is_dropped_and_flagged() -> None:
    long = b"http://h/a/" + b"x" * 10_000
    body = b"<urlset><url><loc>" + long + b"</loc></url><url><loc>http://h/a/1</loc></url></urlset>"
    items, reader = read_file(SOURCE, body)
    assert [item.url for item in items] == ["http://h/a/1"]
    assert reader.flags == (Flag.LONG_URL,)
    items, reader = read_file(SOURCE, long + b"\nhttp://h/a/1\n")
    assert [item.url for item in items] == ["http://h/a/1"]
    assert reader.flags == (Flag.LONG_URL,)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", 1704067200.0),
        ("2024-05", 1714521600.0),
        ("2024-05-06", MAY_6),
        ("2024-05-06T07:08Z", MAY_6 + 7 * 3600 + 8 * 60),
        ("2024-05-06T09:08:09.5+02:00", MAY_6_070809 + 0.5),
        ("2024-05-06T07:08:09", MAY_6_070809),  # no zone: UTC
        (" 2024-05-06 ", MAY_6),
        ("2024-13-01", None),
        ("2024-05-06T25:00Z", None),
        ("2024-05-06T07:08+99:00", None),
        ("06/05/2024", None),
        ("", None),
        ("2024-05-06" + " " * 100, None),
    ],
)
def test_w3c_datetime(text: str, expected: float | None) -> None:
    assert parse_w3c(text) == expected


def test_rfc822_and_either() -> None:
    assert parse_rfc822("Mon, 06 May 2024 07:08:09 GMT") == MAY_6_070809
    assert parse_rfc822("Mon, 06 May 2024 09:08:09 +0200") == MAY_6_070809
    assert parse_rfc822("6 May 2024 07:08:09 -0000") == MAY_6_070809
    assert parse_rfc822("Mon, 32 May 2024 07:08:09 GMT") is None
    assert parse_rfc822("soon") is None
    assert parse_date("2024-05-06") == MAY_6
    assert parse_date("Mon, 06 May 2024 07:08:09 GMT") == MAY_6_070809

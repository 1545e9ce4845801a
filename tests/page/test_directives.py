"""Robots directives of ``X-Robots-Tag`` headers and ``<meta>`` tags, read as Google and Bing
read them: every form of the header, values addressed to a user agent, the meta tags of
``robots`` and of the crawler's own token, the most restrictive rule winning."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.page.directives import (
    MAX_DIRECTIVES,
    MAX_HEADER_CHARS,
    MAX_META_TAGS,
    Directives,
    header_directives,
    meta_directives,
)
from gossamer.parse.links import parse_html

NOW = 1_800_000_000.0  # 2027-01-15
NOINDEX, NOFOLLOW, BOTH, NONE = (
    Directives(True, False),
    Directives(False, True),
    Directives(True, True),
    Directives(),
)
NOARCHIVE = Directives(noarchive=True)


def header(value: str, token: str = "gossamer") -> Directives:
    return header_directives({"x-robots-tag": value}, token, NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("noindex", NOINDEX),
        ("nofollow", NOFOLLOW),
        ("noindex, nofollow", BOTH),
        ("NOINDEX,NOFOLLOW", BOTH),
        ("none", BOTH),
        ("all", NONE),
        ("index, follow", NONE),
        ("noarchive, nosnippet, max-snippet: 20, max-image-preview: large", NOARCHIVE),
        ("", NONE),
        ("gossamer: noindex", NOINDEX),
        ("GOSSAMER : noindex, nofollow", BOTH),
        ("otherbot: noindex, nofollow", NONE),
        ("otherbot: noindex, gossamer: nofollow", NOFOLLOW),
        ("gossamer: nofollow, otherbot: noindex", NOFOLLOW),
        ("noindex, otherbot: nofollow", NOINDEX),
        ("gossamer-news: noindex", NONE),  # another agent, not a prefix of ours
        ("unavailable_after: 25 Jun 2010 15:00:00 PST", NOINDEX),
        ("unavailable_after: Fri, 25 Jun 2010 15:00:00 PST, nofollow", BOTH),
        ("unavailable_after: Friday, 25-Jun-10 15:00:00 GMT", NOINDEX),
        ("unavailable_after: 2010-06-25T15:00:00Z", NOINDEX),
        ("unavailable_after: 2010-06-25", NOINDEX),
        ("unavailable_after: 2999-01-01T00:00:00+00:00", NONE),
        ("unavailable_after: 1 Jan 2999 00:00:00 GMT", NONE),
        ("unavailable_after: not a date", NONE),
        ("gossamer: unavailable_after: 2010-06-25", NOINDEX),
        ("otherbot: unavailable_after: 2010-06-25", NONE),
        ("noindex;nofollow", BOTH),
        ("unavailable_after: 25 jun 2010", NOINDEX),
        ("unavailable_after: 25 June 2010", NOINDEX),
        ("unavailable_after: 25 jun 2999", NONE),
    ],
)
def test_header_forms(value: str, expected: Directives) -> None:
    assert header(value) == expected


def test_several_headers_each_with_its_own_agent() -> None:
    # the fetcher joins repeated X-Robots-Tag headers one per line: a prefix ends with its
    # header, so the second header's noindex is for every crawler
    assert header("googlebot: nofollow\nnoindex") == NOINDEX
    assert header("otherbot: noindex, nofollow\ngossamer: nofollow") == NOFOLLOW
    assert header("index\nnoindex") == NOINDEX  # the most restrictive wins


def test_the_agent_is_the_robots_token() -> None:
    assert header("mybot: noindex", token="MyBot") == NOINDEX
    assert header("gossamer: noindex", token="mybot") == NONE


def test_no_header_and_hostile_headers() -> None:
    assert header_directives({}, "gossamer", NOW) == NONE
    assert header("gossamer:" * 1000) == NONE
    assert header("x" * 100_000) == NONE


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x" * MAX_HEADER_CHARS + ", noindex", NOINDEX),  # past the bound
        ("a" * (MAX_HEADER_CHARS - 3) + ", noindex", NOINDEX),  # cut in the word
        (", " * 10_000 + "noindex", NOINDEX),  # past the directive bound
        ("max-snippet:1," * MAX_DIRECTIVES + "nofollow", NOFOLLOW),
        ("x" * 9000 + "\nnoindex", NOINDEX),  # a long header then a short one
        ("noarchive," * 200 + "otherbot: none", BOTH.merge(NOARCHIVE)),  # past the bound
        ("noarchive," * 200 + "nonesuch, nofollowing", NOARCHIVE),
    ],
)
def test_restrictive_words_past_the_bounds_still_count(value: str, expected: Directives) -> None:
    # fail closed: a noindex past the bounds is found by a search for the word
    assert header(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "unavailable_after: 25 Jun 99999999999 15:00:00 GMT",
        "unavailable_after: 99999-01-01",
    ],
)
def test_dates_out_of_range_are_unreadable(value: str) -> None:
    assert header(value) == NONE
    content = value.replace('"', "")
    assert meta(f'<meta name="robots" content="{content}">') == NONE


def test_flags() -> None:
    assert BOTH.flags == ("noindex", "nofollow")
    assert NOFOLLOW.flags == ("nofollow",)
    assert NONE.flags == ()


def meta(html: str, token: str = "gossamer") -> Directives:
    """The directives of the meta tags of ``html``, read both ways: searched in the tree, and
    from the meta elements the parse found with the links (the crawl's way); the two agree."""
    searched = meta_directives(LexborHTMLParser(html), token, NOW)
    page = parse_html(html.encode(), "http://example.com/")
    assert page.tree is not None and page.metas is not None
    assert meta_directives(page.tree, token, NOW, page.metas) == searched
    return searched


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<meta name="robots" content="noindex">', NOINDEX),
        ('<meta name="ROBOTS" content="NoFollow">', NOFOLLOW),
        ('<meta name="robots" content="none">', BOTH),
        ('<meta name="gossamer" content="noindex, nofollow">', BOTH),
        ('<meta name="Gossamer" content="nofollow">', NOFOLLOW),
        ('<meta name="googlebot" content="noindex, nofollow">', NONE),
        (
            '<meta name="robots" content="index, follow"><meta name="gossamer" content="noindex">',
            NOINDEX,
        ),
        ('<meta name="robots" content="noindex"><meta name="gossamer" content="index">', NOINDEX),
        ('<meta name="robots" content="unavailable_after: 2010-06-25">', NOINDEX),
        ('<meta name="robots" content="all">', NONE),
        ('<meta name="description" content="noindex">', NONE),
    ],
)
def test_meta_forms(html: str, expected: Directives) -> None:
    assert meta(f"<html><head>{html}</head><body></body></html>") == expected


def test_meta_of_another_token() -> None:
    html = '<meta name="mybot" content="noindex"><meta name="gossamer" content="nofollow">'
    assert meta(html, token="mybot") == NOINDEX


NOINDEX_META = '<meta name="robots" content="noindex">'


@pytest.mark.parametrize(
    "head",
    [
        f'<noscript><img height="1" width="1" src="/px.gif"></noscript>{NOINDEX_META}',
        f'<img src="/px.gif">{NOINDEX_META}',
        f"<div>text</div>{NOINDEX_META}",
        '<meta name="x" content="y">' * (MAX_META_TAGS + 1) + NOINDEX_META,
        '<meta name="robots" content="index">' * (MAX_META_TAGS + 1) + NOINDEX_META,
        '<meta name="robots" content="' + "max-snippet:1," * MAX_DIRECTIVES + 'noindex">',
        '<meta name="robots" content="' + "a" * MAX_HEADER_CHARS + ',noindex">',
        '<meta name=" Robots " content=" noindex ">',
    ],
)
def test_a_noindex_meta_anywhere_and_past_the_bounds_counts(head: str) -> None:
    # a pixel in the head ends it for a parser with scripting off: the tags after it are in
    # the body, where they are read all the same
    assert meta(f"<html><head>{head}</head><body><p>text</p></body></html>") == NOINDEX


def test_an_http_equiv_meta_reads_as_the_header() -> None:
    assert meta('<meta http-equiv="X-Robots-Tag" content="noindex">') == NOINDEX
    assert meta('<meta http-equiv="x-robots-tag" content="gossamer: nofollow">') == NOFOLLOW
    assert meta('<meta http-equiv="X-Robots-Tag" content="otherbot: noindex">') == NONE


def test_a_name_with_quotes_is_no_selector_injection() -> None:
    assert meta('<meta name="robots" content="noindex">', token='x"], *, a[b="') == NOINDEX
    assert meta('<meta name="x\\" content="noindex">', token="x\\") == NOINDEX


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<META NAME=ROBOTS CONTENT=NOINDEX>", NOINDEX),
        ('<meta content="nofollow" name="rObOtS">', NOFOLLOW),
        ('<meta name="&#114;obots" content="noindex">', NOINDEX),
        ('<meta name="r&#x6F;bots" content="n&#111;index">', NOINDEX),
        ('<meta href="/x" name="robots" content="noindex">', NOINDEX),
        ('<meta name="robots" href="/x" content="none"><a href="/a">a</a>', BOTH),
        ('<meta http-equiv="X-ROBOTS-TAG" content="noindex">', NOINDEX),
        ('<meta http-equiv=" x-robots-tag" content="noindex">', NONE),
        ('<meta name="myrobots" content="noindex">', NONE),
        ('<meta name="robots" content="noindex" name="x">', NOINDEX),
        ("<svg><meta name=robots content=noindex></svg>", NOINDEX),
        ("<template><meta name=robots content=noindex></template>", NONE),
        ('<noscript><meta name="robots" content="noindex"></noscript>', NOINDEX),
        ('<a href="/a">a</a>' * 5000 + '<p><meta name="robots" content="nofollow">', NOFOLLOW),
        ('<base href="/b/"><meta name="robots" content="noindex">', NOINDEX),
    ],
)
def test_meta_tags_found_with_the_links_read_as_a_search_of_the_tree(
    html: str, expected: Directives
) -> None:
    assert meta(f"<html><head></head><body>{html}</body></html>") == expected

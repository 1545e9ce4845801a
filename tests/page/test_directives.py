"""Robots directives of ``X-Robots-Tag`` headers and ``<meta>`` tags, read as Google and Bing
read them: every form of the header, values addressed to a user agent, the meta tags of
``robots`` and of the crawler's own token, the most restrictive rule winning."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.page.directives import (
    MAX_HEADER_CHARS,
    Directives,
    header_directives,
    meta_directives,
)

NOW = 1_800_000_000.0  # 2027-01-15
NOINDEX, NOFOLLOW, BOTH, NONE = (
    Directives(True, False),
    Directives(False, True),
    Directives(True, True),
    Directives(),
)


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
        ("noarchive, nosnippet, max-snippet: 20, max-image-preview: large", NONE),
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
    assert header("x" * MAX_HEADER_CHARS + ", noindex") == NONE  # past the bound: unread
    assert header(", " * 10_000 + "noindex") == NONE  # past the directive bound
    assert header("gossamer:" * 1000) == NONE


def test_flags() -> None:
    assert BOTH.flags == ("noindex", "nofollow")
    assert NOFOLLOW.flags == ("nofollow",)
    assert NONE.flags == ()


def meta(html: str, token: str = "gossamer") -> Directives:
    return meta_directives(LexborHTMLParser(html), token, NOW)


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


def test_meta_in_the_body_is_not_read() -> None:
    html = '<html><head></head><body><meta name="robots" content="noindex"></body></html>'
    assert meta(html) == NONE

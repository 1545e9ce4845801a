"""parse_html on malformed and hostile documents: no exception, no hang."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest

from gossamer.parse import links
from gossamer.parse.links import MAX_DEPTH, parse_html

URL = "http://example.com/"
MB = 1024 * 1024
# Generous: these take milliseconds alone, but CI machines are shared. Unguarded, lexbor needs
# hours for the nested cases.
BUDGET_SECONDS = 5.0


def _distinct_names(tags: int) -> bytes:
    """Short tags (under 512 bytes), few enough for the page to pass as ordinary, whose
    attribute names are all distinct: lexbor's table of names never grows (unguarded, 2,048
    tags cost it 6 s, 8,192 past 300 s)."""
    return b"".join(
        b"<br " + b" ".join(b"a%d" % (60 * i + j) for j in range(60)) + b"></x>"
        for i in range(tags)
    )


HOSTILE: dict[str, Callable[[], bytes]] = {
    "5 MB of nested divs": lambda: b"<div>" * (5 * MB // 5),
    "nested divs with stray end tags": lambda: b"<div></span>" * (2 * MB // 12),
    "self-closing divs": lambda: b"<div/>" * (2 * MB // 6),
    "nested lists": lambda: b"<ul><li>" * (2 * MB // 8),
    "nested tables": lambda: b"<table><tr><td>" * 100_000,
    "anchors around divs": lambda: b"<a><div>" * 250_000,
    "formatting elements with distinct attributes": lambda: b"".join(
        b'<i class="c%d">' % i for i in range(100_000)
    ),
    "one tag with 200k attributes": lambda: (
        b"<a " + b" ".join(b"a%d=1" % i for i in range(200_000)) + b">"
    ),
    "one tag with 300k valueless attributes": lambda: (
        b"<a " + b" ".join(b"a%d" % i for i in range(300_000)) + b">"
    ),
    "160k distinct attribute names": lambda: b"".join(b"<br a%d=1>" % i for i in range(160_000)),
    "8,192 tags of 60 distinct valueless attribute names, each closed by a stray end tag": (
        lambda: _distinct_names(8192)
    ),
    "2,048 such tags": lambda: _distinct_names(2048),
    "one tag of 120k attributes behind a quoted >": lambda: (
        b'<a x=">" ' + b" ".join(b"a%d=1" % i for i in range(120_000)) + b">"
    ),
    "160k distinct tag names": lambda: b"".join(b"<x%d></x%d>" % (i, i) for i in range(160_000)),
    "8 MB href": lambda: b'<a href="/' + b"x" * (8 * MB) + b'">x</a>',
    "unclosed title": lambda: b"<title>" + b"a " * (3 * MB),
    "unclosed comment": lambda: b"<!-- " + b"<a href='/c'>" * 100_000,
    "unclosed attribute quote": lambda: b'<a href="/x' + b" y" * MB,
    "NUL bytes": lambda: b"\x00" * MB + b"<a href='/n\x00'>x</a>\x00",
    "random bytes": lambda: random.Random(7).randbytes(3 * MB),
    "nested svg": lambda: b"<svg>" * 100_000,
    "nested formatting": lambda: b"<b>" * 300_000,
    "empty": lambda: b"",
    "only whitespace": lambda: b" \t\r\n" * 1000,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_document_parses_quickly(name: str) -> None:
    body = HOSTILE[name]()
    started = time.thread_time()
    page = parse_html(body, URL)
    assert time.thread_time() - started < BUDGET_SECONDS
    assert all(link.startswith("http://example.com/") for link in page.links)


def test_deep_nesting_is_flattened_and_links_after_it_are_kept() -> None:
    body = b'<a href="/before">b</a>' + b"<div>" * MB + b'<a href="/after">a</a>'
    page = parse_html(body, URL)
    assert page.links == ["http://example.com/before", "http://example.com/after"]
    assert page.flags == ("html-flattened",)


def test_distinct_tag_names_are_capped_and_their_content_and_links_kept() -> None:
    names = b"".join(b"<x%d>t%d</x%d>" % (i, i, i) for i in range(100_000))
    body = names + b'<a href="/after">a</a><custom-a><a href="/in">i</a></custom-a>'
    page = parse_html(body, URL)
    assert page.links == ["http://example.com/after", "http://example.com/in"]
    assert page.flags == ("html-cut-names",)
    assert page.tree is not None and "t99999" in page.tree.text()


def test_custom_tag_names_under_the_cap_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links, "MAX_PAGE_LINKS", 100_000)  # the guard's own cuts only
    body = b"".join(
        b"<x%d><a href=/%d>t</a></x%d>" % (i % 1000, i, i % 1000) for i in range(20_000)
    )
    page = parse_html(body, URL)
    assert page.flags == () and len(page.links) == 20_000
    assert page.tree is not None and page.tree.css_first("x999") is not None


def test_nesting_up_to_the_limit_is_not_cut() -> None:
    depth = MAX_DEPTH - 10
    body = b"<div>" * depth + b'<a href="/deep">d</a>' + b"</div>" * depth + b"<p>" * 5000
    assert parse_html(body, URL).links == ["http://example.com/deep"]


def test_large_ordinary_page_is_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links, "MAX_PAGE_LINKS", 100_000)  # the guard's own cuts only
    rows = b"".join(
        b'<li class="item"><div><a href="/p/%d" data-id="%d">item %d</a></div>' % (i, i, i)
        for i in range(20_000)
    )
    body = b"<html><head><title>Big</title></head><body><ul>" + rows + b"</ul></body></html>"
    page = parse_html(body, URL)
    assert page.title == "Big"
    assert len(page.links) == 20_000
    assert page.links[-1] == "http://example.com/p/19999"


def test_unclosed_tags_and_misnesting() -> None:
    body = b"<html><body><p><a href='/1'>one<p><b><a href=/2>two<table><td><a href=/3>3</table"
    page = parse_html(body, URL)
    assert page.links == [
        "http://example.com/1",
        "http://example.com/2",
        "http://example.com/3",
    ]


def test_links_inside_script_and_comments_are_ignored() -> None:
    body = (
        b"<script>var s = '<a href=\"/script\">';</script><!-- <a href='/comment'> -->"
        b"<template><a href='/template'>t</a></template><a href='/real'>r</a>"
    )
    assert parse_html(body, URL).links == ["http://example.com/real"]

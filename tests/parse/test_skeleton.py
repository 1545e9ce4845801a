"""The skeleton reading: big pages of plain markup are parsed as they are without a regex or a
loop over their tags, every shape it cannot read exactly is left to the other checks, and
lexbor stays flat on what it lets through."""

from __future__ import annotations

import random
import re

import pytest
from selectolax.lexbor import LexborHTMLParser
from tests.parse.test_nesting import _NAMES, _mutated, _nested, lexbor_depth, reference_page
from tests.parse.test_scan import sphinx_like, spy_passes

from gossamer.parse import guard, scan
from gossamer.parse.links import parse_html
from gossamer.parse.skeleton import plain

URL = "http://example.com/"


@pytest.mark.parametrize("page", [reference_page(1000), sphinx_like(1500)], ids=["api", "sphinx"])
def test_a_big_plain_page_is_parsed_as_it_is(monkeypatch: pytest.MonkeyPatch, page: bytes) -> None:
    assert page.count(b"<") > scan.ORDINARY_MAX_TAGS
    assert scan.route(page, scan.tag_count(page)) == "plain"
    passes = spy_passes(monkeypatch)
    parsed = parse_html(page, URL)
    assert passes == [] and parsed.flags == () and parsed.links


# Each repeated: shapes whose tags lexbor reads otherwise than the first ">" after their "<"
# says, that nest deeper than their tags say, or whose attributes or names are too many.
REFUSED = {
    "a value holding an end tag": b'<span title="</span>">x',
    "a value holding a > and an end tag": b'<div title="a></div>">',
    "a quote in an attribute name": b'<div a"b c=" d></div>">',
    "a quote in an unquoted value after =": b'<div x=a=" y=" ></div>">',
    "a single-quoted value after a space": b"<div x= ' ></div>'>",
    "a quote inside an unquoted value": b'<div x=a"b y="c></div>">x',
    "an attribute name starting with =": b'<div ="a b=">x</div>">',
    "a = in a tag name": b'<div="a b=">x</div>">',
    "a single-quoted value": b'<div x=\'">\' y="1">x</div>',
    "spaces around =": b'<div x = "a>b">x</div>',
    "a stray end tag": b"<span></i>",
    "misnested blocks": b"<span><div></span></div>",
    "a list item under an inline element": b"<span><li>x</span>",
    "a paragraph under a formatting element": b"<b><p>x</b>",
    "list items and definitions alternating": b"<dd><li>x",
    "a style after a select": b"<select></select><style><div></style>",
    "a script escaped twice": b"<div><script><!--<script></script></div><!--</script>-->",
    "a breakout in SVG": b"<svg><p>x</p></svg>",
    "HTML in an SVG description": b"<svg><desc><div/></desc></svg>",
    "a CDATA section in SVG holding >": b"<svg><![CDATA[></svg>]]>",
    "a self-closing div": b"<div/>",
    "formatting left open in a paragraph": b"<div><p><b>x</div>",
    "MathML": b"<math><mi>x</mi></math>",
    "a template": b"<template><div></div></template>",
    "plain text": b"<plaintext><div>",
    "a tag name of 16 bytes": b"<abcdefghijklmnop></abcdefghijklmnop>",
    "a NUL in a tag name": b"<ab\x00></ab>",
    "a single-quoted value holding >": b"<div x='a>b' y='c'>x</div>",
    "a double-quoted value holding > after a single-quoted one": b"<div x='1' y=\"a>b\">x</div>",
    "a quote in a name after a single-quoted value": b"<div x='1' a'b='c'>x</div>",
    "three formatting end tags crossed": b"<b><i><u>x</b></i></u>",
    "crossed formatting end tags, one left open": b"<b><i>x</b></i></b>",
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_shapes_it_cannot_read_exactly_are_refused(name: str) -> None:
    assert not plain(b"<html><body>" + REFUSED[name] * 1000)


def test_single_quotes_and_crossed_formatting_end_tags_are_read() -> None:
    """sqlite's pages: values in single quotes (double quotes inside them, and single ones
    inside double), and a footer ending ``<small><i>x</small></i>``: the page is read as it
    is (it went to the nesting check's loop, at twice lexbor's parse), and lexbor stays
    flat."""
    unit = (
        b"<div class='x'><a href='/a' onclick='go(\"m\")' title=\"it's\">a</a>"
        b"<small><i>x</small></i><b><em>y</b>z</em></div>"
    )
    body = b"<html><body>" + unit * 3000 + b"</body></html>"
    assert body.count(b"<") > scan.ORDINARY_MAX_TAGS
    assert scan.route(body, scan.tag_count(body)) == "plain"
    assert lexbor_depth(body) <= 6


def test_a_slash_ending_an_unquoted_value_closes_nothing() -> None:
    """``<path d=x/>`` is no self-closing tag (the slash ends the value): in SVG each one
    opens an element that stays open."""
    body = b"<html><body><svg>" + b"<path d=x/>" * 3000 + b"</svg></body></html>"
    assert lexbor_depth(body) > guard.MAX_DEPTH
    assert not plain(body)
    assert plain(body.replace(b"d=x/>", b'd="x"/>'))


def test_limits_are_kept() -> None:
    for divs, accepted in ((127, True), (128, False)):  # <body> is one level too
        body = b"<body>" + b"<div>" * divs + b"x" + b"</div>" * divs + b"<p>y</p>" * 9000
        assert plain(body) is accepted
    formatting = b"<b>" * 17 + b"x" + b"</b>" * 17
    assert not plain(b"<body>" + formatting + b"<p>y</p>" * 9000)
    assert plain(b"<body>" + formatting[3:-4] + b"<p>y</p>" * 9000)
    crowded = b"<div " + b" ".join(b'a%d="1"' % i for i in range(300)) + b">x</div>"
    assert not plain(crowded + b"<p>y</p>" * 9000)
    names = b"".join(b'<br a%d="1" b%d="2">' % (i, i) for i in range(9000))
    assert not plain(names)
    valueless = b"".join(
        b"<br " + b" ".join(b"a%d" % (60 * i + j) for j in range(60)) + b">" for i in range(300)
    )
    assert not plain(valueless)
    tags = b"".join(b"<x%d></x%d>" % (i, i) for i in range(1100))
    assert not plain(tags)
    assert plain(b"".join(b"<x%d></x%d>" % (i % 1000, i % 1000) for i in range(9000)))


def test_what_lexbor_reads_as_text_is_read_as_text() -> None:
    """Comments, scripts, styles, titles and text areas hide what looks like tags, as in
    lexbor; a tag's quoted values may hold "<" and quotes of the other kind."""
    unit = (
        b'<div title="a<b" data-x="it\'s"><!-- <div> --><!--><span>x</span>'
        b"<script>if (a < b) { x = '</div>' }</script><style>p > a {}</style>"
        b"<title><div></title><textarea><div></TEXTAREA></div>"
    )
    body = b"<html><body>" + unit * 600 + b"</body></html>"  # 3,600 comments and raw texts
    assert plain(body)
    assert lexbor_depth(body) <= 6


def _attributes(rng: random.Random) -> str:
    """Attributes as they come: double, single and no quotes, values holding the characters
    that end tags and values, names glued to quotes."""
    choices = [
        ' a="x"',
        " b='y'",
        ' c="x>y"',
        " d='x>y'",
        ' e="</div>"',
        " f=g",
        " h",
        ' i="j"k="l"',
        ' m="\'"',
        " n='\"'",
        " o= p",
        ' q = "r"',
        " /",
        ' s=t"u',
        ' v="w" />',
    ]
    return "".join(rng.choice(choices) for _ in range(rng.randint(0, 3)))


def _with_attributes(rng: random.Random, markup: str) -> str:
    return re.sub(r"<([a-z][a-z0-9-]*)>", lambda m: f"<{m[1]}{_attributes(rng)}>", markup)


@pytest.mark.parametrize("attributes", [False, True])
def test_lexbor_stays_flat_on_what_is_let_through(attributes: bool) -> None:
    """Random nested markup, with implied end tags, stray tags, misnested formatting, and
    attributes of every kind: where `plain` lets a unit through repeated 60 times, lexbor
    nests it no deeper than repeated 30 times."""
    rng = random.Random(29 + attributes)
    names = [*_NAMES, "p", "li", "dd", "dt", "small", "ol", "blockquote", "script", "style"]
    through = 0
    for _ in range(200):
        markup = _nested(rng, rng.randint(2, 8), names)
        if rng.random() < 0.5:
            markup = _mutated(rng, markup)
        if attributes:
            markup = _with_attributes(rng, markup)
        unit = markup.encode()
        if plain(b"<html><body>" + unit * 60 + b"</body></html>"):
            through += 1
            depth = lexbor_depth(b"<html><body>" + unit * 30 + b"</body></html>")
            assert lexbor_depth(b"<html><body>" + unit * 60) <= depth + 2, unit
    assert through > (5 if attributes else 30)


def test_a_deep_page_let_through_stays_within_the_guards_depth() -> None:
    """At the skeleton's limits (128 levels, each with a paragraph, a list item and a table's
    implied parts), lexbor's tree stays under the guard's depth."""
    level = b"<div><ul><li><p><table><tr><td>"  # five levels and three implied elements
    closing = b"</td></tr></table></ul></div>"
    body = b"<html><body>" + level * 25 + b"x" + closing * 25 + b"<p>y</p>" * 9000
    assert plain(body)
    tree = LexborHTMLParser(body)
    assert tree.css_first(scan.too_deep_selector(guard.MAX_DEPTH + 1)) is None

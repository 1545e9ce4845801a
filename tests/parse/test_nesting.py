"""Big pages whose tags nest perfectly are parsed as they are; every other shape still goes
through the guard's pass, and lexbor stays shallow on what is let through."""

from __future__ import annotations

import random
import re
import time

import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.parse import guard, nesting, scan
from gossamer.parse.links import parse_html

URL = "http://example.com/"


def reference_page(entries: int) -> bytes:
    """A generated API reference: sections, definition lists, tables, a form, inline SVG
    icons with self-closing paths, scripts and comments; 30 tags an entry."""
    entry = (
        '<section id="s{n}"><dl class="py function"><dt id="f{n}"><span class="n">f{n}</span>'
        '<a class="headerlink" href="#f{n}">#</a></dt><dd><p>Calls <code>g</code> if x &gt; 1'
        '<br>see <a href="p{n}.html"><em>g</em></a>.</p><!-- note -->'
        "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
        '<svg viewBox="0 0 24 24"><path d="M0 0L1 1"/><g><circle r="2"></circle></g></svg>'
        "</dd></dl></section>\n"
    )
    head = (
        "<!DOCTYPE html><html><head><title>API</title><script>if (a < b && c > d) {}</script>"
        '<style>p > a {color: red}</style></head><body><form action="/s"><input name=q></form>'
    )
    body = "".join(entry.format(n=n) for n in range(entries))
    return (head + body + "</body></html>").encode()


def test_a_big_well_formed_page_skips_the_guards_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    body = reference_page(1000)
    assert body.count(b"<") > scan.ORDINARY_MAX_TAGS
    passes: list[str] = []
    real_run = guard._Guard.run

    def run(self: guard._Guard) -> guard.Guarded:
        passes.append("pass")
        return real_run(self)

    monkeypatch.setattr(guard._Guard, "run", run)
    assert nesting.well_formed(body)
    page = parse_html(body, URL)
    assert passes == [] and page.flags == ()
    assert len(page.links) == 1000 and page.title == "API"


REFUSED = {
    "a stray end tag": b"<div></span></div>",
    "an unclosed paragraph holding formatting": b"<div><p><b>x</div>",
    "an unclosed paragraph closed by an inline end tag": b"<span><p>x</span>",
    "misnested formatting three deep": b"<b><i><u>x</b></u></i>",
    "formatting rebuilt at every paragraph": b"<p><b c=1>x</p><p><b c=2>x</p>",
    "a self-closing div": b"<div/>",
    "a breakout tag in SVG": b"<svg><p>x</p></svg>",
    "an integration point": b"<svg><foreignObject><div></div></foreignObject></svg>",
    "a title in SVG": b"<svg><title>x</title></svg>",
    "a template": b"<template><div></div></template>",
    "an escaped script": b"<script><!--<script></script></div><!--</script>-->",
    "too deep": b"<div>" * (nesting.MAX_LEVEL + 1) + b"</div>" * (nesting.MAX_LEVEL + 1),
    "too much formatting": b"<b>" * 17 + b"x" + b"</b>" * 17,
    "a long tag": b"<a " + b" ".join(b"x%d" % i for i in range(300)) + b"></a>",
    "many attribute names": b"".join(b"<br a%d b%d>" % (i, i) for i in range(10_000)),
    "many tag names": b"".join(b"<x%d></x%d>" % (i, i) for i in range(1100)),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_shapes_lexbor_may_nest_deeper_are_refused(name: str) -> None:
    assert not nesting.well_formed(b"<html><body>" + REFUSED[name] + b"</body></html>")


IMPLIED = {
    "unclosed list items": b"<ul><li>a<li>b<li><p>c</ul>",
    "unclosed definitions": b"<dl><dt>a<dd>b<dt>c<dd><p>d</dl>",
    "unclosed paragraphs": b"<div><p>a<p>b</div><p>c</p></p>",
    "a paragraph closed over an unknown element": b"<p>see <name>x</p>",
    "two formatting elements misnested": b"<p><small><i>x</small></i></p>",
}


@pytest.mark.parametrize("name", list(IMPLIED))
def test_implied_end_tags_lexbor_closes_at_once_are_let_through(name: str) -> None:
    """End tags the HTML Standard implies (sqlite's and many hand-written pages leave them
    out) where lexbor closes the element at once; a thousand times over, lexbor stays flat."""
    body = b"<html><body>" + IMPLIED[name] * 1000 + b"</body></html>"
    assert nesting.well_formed(body)
    assert lexbor_depth(body) <= 8


_TOO_DEEP = scan.too_deep_selector(guard.MAX_DEPTH + 1)


def lexbor_depth(document: bytes) -> int:
    deepest, pending = 0, [(LexborHTMLParser(document).root, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        child = node.child if node is not None else None
        while child is not None:
            if child.tag != "-text":
                pending.append((child, depth + 1))
            child = child.next
    return deepest


_NAMES = [
    *("div", "p", "span", "a", "b", "i", "em", "code", "ul", "li", "table", "tr", "td", "th"),
    *("tbody", "form", "select", "option", "button", "section", "h1", "dl", "dt", "dd"),
    *("nobr", "font", "svg", "g", "path", "object", "caption", "label", "pre", "s", "u"),
    "x-item",
]


def _nested(rng: random.Random, depth: int, names: list[str] = _NAMES) -> str:
    """Random perfectly nested markup, with text, void elements and comments."""
    parts = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(names)
        inner = _nested(rng, depth - 1, names) if depth > 0 and rng.random() < 0.8 else "x"
        parts.append(f"<{name}>{inner}{rng.choice(['', '<br>', '<!--c-->', 'y'])}</{name}>")
    return "".join(parts)


def test_lexbor_stays_shallow_on_what_is_let_through() -> None:
    """Perfectly nested documents of every name mix (tables, forms, selects, formatting,
    SVG): where `well_formed` lets one through, lexbor's tree is within the guard's depth,
    repeated a hundred times in a row."""
    rng = random.Random(11)
    through = 0
    for _ in range(200):
        unit = _nested(rng, rng.randint(3, 12)).encode()
        body = b"<html><body>" + unit * 100 + b"</body></html>"
        if nesting.well_formed(body):
            through += 1
            # lexbor's own walk down from <html>: lexbor_depth(body) <= MAX_DEPTH, faster
            assert LexborHTMLParser(body).css_first(_TOO_DEEP) is None, unit
    assert through > 50


_FORMATTING_NAMES = frozenset({"a", "b", "i", "em", "code", "small", "s", "u", "font", "nobr"})


def _mutated(rng: random.Random, markup: str) -> str:
    """``markup`` with end tags of paragraphs, list items and definitions left out, stray
    tags put in, and neighbouring formatting end tags swapped."""
    out: list[str] = []
    for token in re.findall(r"<[^>]*>|[^<]+", markup):
        if token in ("</p>", "</li>", "</dd>", "</dt>") and rng.random() < 0.5:
            continue
        if rng.random() < 0.03:
            out.append(rng.choice(["</p>", "<p>", "<li>", "</div>", "</b>", "<dd>"]))
        out.append(token)
    for index in range(len(out) - 1):
        first, second = out[index], out[index + 1]
        swapped = first[:2] == second[:2] == "</" and first[2:-1] in _FORMATTING_NAMES
        if swapped and rng.random() < 0.5:
            out[index], out[index + 1] = second, first
    return "".join(out)


def test_lexbor_stays_flat_on_what_is_let_through_with_implied_ends() -> None:
    """Nested markup with implied end tags, stray tags and misnested formatting: where
    `well_formed` lets it through, repeating it 200 times nests lexbor no deeper than 100."""
    rng = random.Random(5)
    names = [*_NAMES, "p", "li", "dd", "dt", "small", "ol", "blockquote"]
    through = 0
    for _ in range(200):
        unit = _mutated(rng, _nested(rng, rng.randint(2, 8), names)).encode()
        body = b"<html><body>" + unit * 200 + b"</body></html>"
        if nesting.well_formed(body):
            through += 1
            depth = lexbor_depth(b"<html><body>" + unit * 100 + b"</body></html>")
            assert lexbor_depth(body) <= depth + 2, unit
    assert through > 20


def test_a_10_mb_well_formed_page_at_the_limits_is_linear() -> None:
    opened = b"".join(b"<div><b>" for _ in range(16)) + b"<div>" * (nesting.MAX_LEVEL - 34)
    closed = b"</div>" * (nesting.MAX_LEVEL - 34) + b"".join(b"</b></div>" for _ in range(16))
    unit = b"<p><span><i>x</i></span><div><em>y</em></div></p>"
    body = b"<html><body>" + opened + unit * (10 * 1024 * 1024 // len(unit)) + closed
    started = time.thread_time()
    page = parse_html(body, URL)
    assert time.thread_time() - started < 12.0
    assert page.flags == ()

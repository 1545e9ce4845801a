"""The cheap scans before the guard: a real-shaped page passes them without the guard's pass
or a regex reading it through, and every tag that could hold too many attributes is found."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from gossamer.parse import guard, scan
from gossamer.parse.guard import _ATTRIBUTE, _TOKEN, MAX_TAG_ATTRIBUTES
from gossamer.parse.links import parse_html

URL = "http://example.com/"


def sphinx_like(entries: int) -> bytes:
    """A page shaped like a Sphinx API reference: nested sections, definition lists, links,
    inline code, a quoted ``'='`` in the text and a ``>`` in a script, 15 tags an entry."""
    entry = (
        '<dl class="py function"><dt class="sig" id="f{n}"><span class="sig-name">'
        '<span class="pre">f{n}</span></span><a class="headerlink" href="#f{n}" '
        'title="Link to this definition">¶</a></dt><dd><p>Returns <code class="docutils">'
        "<span class=\"pre\">'='</span></code> if x &gt; 1, see "
        '<a class="reference internal" href="other.html#g{n}">g</a>.</p></dd></dl>\n'
    )
    body = "".join(entry.format(n=n) for n in range(entries))
    head = '<html><head><meta charset="utf-8"><title>API</title><script>if (a > b) {}</script>'
    return (head + "</head><body><section>" + body + "</section></body></html>").encode()


def test_a_real_shaped_page_is_parsed_without_the_pass_or_a_regex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = sphinx_like(750)
    assert 14_000 < body.count(b"<") <= scan.ORDINARY_MAX_TAGS
    calls: list[str] = []

    class Spy:
        def search(self, data: bytes) -> re.Match[bytes] | None:
            calls.append("regex")
            return None

    real_run = guard._Guard.run

    def run(self: guard._Guard) -> guard.Guarded:
        calls.append("pass")
        return real_run(self)

    monkeypatch.setattr(scan, "_ODD_TAG_BYTES", Spy())
    monkeypatch.setattr(guard._Guard, "run", run)
    parsed = guard.parse(body)
    assert parsed.flags == () and parsed.tree is not None
    assert len(parsed.tree.css("a[href]")) == 1500
    assert calls == []


def test_a_quoted_angle_bracket_in_text_is_no_tag() -> None:
    # the regex alone took the text '=' for a quoted value, and the page for a hostile one
    body = sphinx_like(400)
    assert scan._ODD_TAG_BYTES.search(body) is not None
    assert scan.ordinary(body, scan.tag_count(body))


@pytest.mark.parametrize(
    "tag",
    [
        " ".join(f'x{i}=">"' for i in range(2 * MAX_TAG_ATTRIBUTES)),
        " ".join(f"x{i}='a>b'" for i in range(2 * MAX_TAG_ATTRIBUTES)),
        'x = ">" ' + " ".join(f"y{i}" for i in range(2 * MAX_TAG_ATTRIBUTES)),
        'x="<b>" ' + " ".join(f'y{i}="<i>"' for i in range(2 * MAX_TAG_ATTRIBUTES)),
        " ".join(f"x{i}" for i in range(2 * MAX_TAG_ATTRIBUTES)),
    ],
)
def test_tags_that_could_hold_too_many_attributes_are_found(tag: str) -> None:
    body = ("<p>filler</p>" * 6000 + f"<a {tag} href=/x>k</a>").encode()
    assert not scan.ordinary(body, scan.tag_count(body))
    # the <a> left holds 256 attributes: too costly to rebuild, it is closed at once
    assert guard.parse(body).flags == ("html-cut-attributes", "html-cut-formatting")


pieces = st.lists(
    st.sampled_from(
        ["<a ", "<b>", "x", " ", "=", '"', "'", ">", "<", "y=1 ", 'z=">" ', "w='a>b' ", "</a>"]
    ),
    max_size=400,
).map("".join)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(pieces, st.integers(0, 600), st.sampled_from(["x ", "x", "x=1 ", 'x=">" ', "/", "'a' "]))
def test_every_crowded_tag_is_found(prefix: str, count: int, unit: str) -> None:
    """Whatever precedes it, a tag the guard's tokenizer reads with more than
    `MAX_TAG_ATTRIBUTES` attributes makes `odd_tag` true."""
    data = (prefix + unit * count + ">").encode()
    crowded = any(
        token.group(2) and len(_ATTRIBUTE.findall(token.group(3))) > MAX_TAG_ATTRIBUTES
        for token in _TOKEN.finditer(data.decode())
    )
    assert scan.odd_tag(data) or not crowded


def spy_passes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets an entry at every run of the guard's pass."""
    passes: list[str] = []
    real_run = guard._Guard.run

    def run(self: guard._Guard) -> guard.Guarded:
        passes.append("pass")
        return real_run(self)

    monkeypatch.setattr(guard._Guard, "run", run)
    return passes


def asciidoc_like(sections: int) -> bytes:
    """A page shaped like git's asciidoc manual pages: a long script of ``i < n`` loops and
    quoted ``">"`` strings, so that long runs between two ``>`` start with a ``<`` (in the
    script, no tag), then sections of paragraphs and links."""
    loop = "for (var i = 0; i < toc.childNodes.length; i++) { var e = toc.childNodes[i]; }\n"
    script = "var html = '<div class=\"x\">' + '\">\"';\n" + loop * 20
    section = (
        '<div class="sect"><h2 id="s{n}">S{n}</h2><p>Text <a href="p{n}.html">here</a>.</p></div>\n'
    )
    body = "".join(section.format(n=n) for n in range(sections))
    head = f"<html><head><title>git</title><script>/*<![CDATA[*/{script}/*]]>*/</script></head>"
    return (head + "<body>" + body + "</body></html>").encode()


@pytest.mark.parametrize("sections", [800, 1200])
def test_a_long_script_holding_lt_is_no_long_tag(
    monkeypatch: pytest.MonkeyPatch, sections: int
) -> None:
    """Runs of more than `LONG_TAG_CHARS` bytes without ``>`` behind a ``<`` in a script hold
    no tag of many attributes: the page is parsed without the guard's pass (it was not)."""
    body = asciidoc_like(sections)
    assert len(body) > 64 * 1024 and scan.long_tag(body) is False
    assert scan.route(body, scan.tag_count(body)) in ("as-is", "check")
    passes = spy_passes(monkeypatch)
    page = parse_html(body, URL)
    assert passes == [] and page.flags == () and len(page.links) == sections


def svg_icons(entries: int, paths: int) -> bytes:
    """A listing whose entries each hold an SVG icon of ``paths`` self-closing paths."""
    icon = '<svg viewBox="0 0 9 9">' + '<path d="M0 0L1 1"/>' * paths + "</svg>"
    entry = '<li><a href="/p/{n}">' + icon + "item {n}</a></li>\n"
    body = "".join(entry.format(n=n) for n in range(entries))
    return f"<html><head><title>t</title></head><body><ul>{body}</ul></body></html>".encode()


@pytest.mark.parametrize("entries", [600, 1500])
def test_self_closing_svg_paths_do_not_send_a_page_to_the_pass(
    monkeypatch: pytest.MonkeyPatch, entries: int
) -> None:
    """Pages of many self-closing tags (SVG icons), nesting perfectly, between 4,096 and
    16,384 ``<`` and past it, are parsed as they are and their tree checked (their
    ``<path/>`` count as closed), or past 16,384 read by the skeleton reading, not the
    guard's pass."""
    body = svg_icons(entries, 8)
    tags = body.count(b"<")
    assert tags > 4096
    expected = "plain" if tags > scan.ORDINARY_MAX_TAGS else "check"
    assert scan.route(body, scan.tag_count(body)) == expected
    passes = spy_passes(monkeypatch)
    page = parse_html(body, URL)
    assert passes == [] and page.flags == () and len(page.links) == entries


def test_self_closing_formatting_tags_count_as_open() -> None:
    """``<b c=N/>`` opens a ``<b>`` all the same (the slash closes nothing in HTML): a page of
    them, each in a paragraph, is not ordinary (lexbor would rebuild them all at every
    paragraph), while as many ``<path/>`` are closed."""
    formatting = b"".join(b"<p><b c=%d/>x</p>" % n for n in range(2000))
    paths = b"".join(b"<p><path d=%d/>x</p>" % n for n in range(2000))
    assert not scan.ordinary(formatting, scan.tag_count(formatting))
    assert scan.ordinary(paths, scan.tag_count(paths))


@pytest.mark.parametrize("prefix", [b"a", b"abcdefgh"])
def test_distinct_names_are_told_apart_past_eight_bytes(prefix: bytes) -> None:
    """Past 32,768 places where a name could start, the names are read and told apart (as
    64-bit numbers up to 8 bytes, by their bytes past that): 32,769 distinct names of 8 bytes
    or less, or sharing their first 8 bytes, are too many; 16,384 of them written three
    times over are not."""
    names = [prefix + b"%d" % n for n in range(2 * scan.MAX_ATTRIBUTE_NAMES + 1)]
    many = b"".join(b"<br " + b" ".join(names[n : n + 64]) + b">" for n in range(0, len(names), 64))
    few = b"".join(
        b"<br " + b" ".join(names[n : n + 32] * 3) + b">"
        for n in range(0, scan.MAX_ATTRIBUTE_NAMES, 32)
    )
    assert scan.odd_tag(many, names=True)
    assert not scan.odd_tag(few, names=True)


def test_names_are_looked_for_only_where_the_tags_could_write_too_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page of 200 KB of text and few short tags cannot hold 32,768 attribute names inside
    its tags: the places a name could start are never searched for (a pass over every byte
    of the page); the same page whose tags hold the bytes is read, and its names found."""
    words = b" ".join(b"w%d" % n for n in range(2 * scan.MAX_ATTRIBUTE_NAMES + 1))
    text = b"<html><body><p>" + words + b"</p></body></html>"
    names = [b"a%d" % n for n in range(2 * scan.MAX_ATTRIBUTE_NAMES + 1)]
    crowded = b"".join(
        b"<br " + b" ".join(names[n : n + 64]) + b">" for n in range(0, len(names), 64)
    )
    searched: list[int] = []
    name_starts = scan._name_starts

    def spy(data: bytes) -> object:
        searched.append(len(data))
        return name_starts(data)

    monkeypatch.setattr(scan, "_name_starts", spy)
    assert len(text) > 6 * scan.MAX_ATTRIBUTE_NAMES  # bytes enough to write them
    assert not scan.odd_tag(text, names=True)
    assert searched == []
    assert scan.odd_tag(crowded, names=True)
    assert searched == [len(crowded)]


# Formatting start tags, each with attributes of its own, in 16,000 '<' of paragraphs: closed
# at once, they leave the page ordinary; closed by end tags that may close nothing (of another
# name, in a comment, behind a comment, after a quoted ">", after a tag cut short), they count
# as staying in the list of active formatting elements, and the page is not ordinary.
CLOSED_AT_ONCE = ["<p><b c={n}>x</b></p>", "<p><CODE c={n}><span class=pre>x</span></code></p>"]
MAYBE_OPEN = [
    "<p><b c={n}>x</i></p>",
    "<p><b c={n}>x<!--</b>--></p>",
    "<p><b c={n}>x<!----></b></p>",
    '<p><b c={n} d=">">x</b></p>',
    "<p><b c={n}>x</b</p>",
    "<p><b c={n}><span>x<br></span></b></p>",
]


@pytest.mark.parametrize("shape", CLOSED_AT_ONCE + MAYBE_OPEN)
def test_formatting_that_could_stay_open_is_counted(shape: str) -> None:
    units = 16_000 // shape.count("<")
    body = "".join(shape.format(n=n) for n in range(units)).encode()
    marks = scan._Marks(body)
    if shape in CLOSED_AT_ONCE:
        assert marks.open_formatting() == 0
        assert scan.ordinary(body, scan.tag_count(body))
    else:
        assert marks.open_formatting() == units
        assert not scan.ordinary(body, scan.tag_count(body))


FORMATTING_PIECES = [
    "<b c=N>",
    "</b>",
    "<B c=N>",
    "</B >",
    "<i c=N>",
    "</i>",
    "<span>",
    "</span>",
    "<p>",
    "</p>",
    "<div>",
    "</div>",
    "<!--",
    "-->",
    "x",
    "<td>",
    "<table>",
    "</table>",
    "<a>",
    "<code c=N>",
    "</code>",
    "<script>",
    "</script>",
    "<svg>",
    "</svg>",
    '"',
    "'",
    ">",
    "<",
    "<nobr c=N>",
    "</nobr>",
    "<select>",
    "<textarea>",
    "<![CDATA[",
    "]]>",
    "<b/c=N>",
    "<font color=N>",
    "<math>",
    "<mi>",
    "<template>",
    "</template>",
    "<em c=N>",
    "</em>",
]
formatting_pieces = st.lists(st.sampled_from(FORMATTING_PIECES), min_size=1, max_size=12).map(
    "".join
)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(formatting_pieces, st.integers(1, 300))
def test_lexbor_rebuilds_no_more_than_the_open_formatting(unit: str, count: int) -> None:
    """However the page is shaped, lexbor builds no more elements than its tags and, at each
    token (at most two a ``<``), the formatting elements `_Marks.open_formatting` counts and
    an ``<a>``: what `ORDINARY_MAX_REBUILT` bounds."""
    body = "".join(unit.replace("N", str(n)) for n in range(count)).encode()
    tags = scan.tag_count(body)
    rebuilt = scan._Marks(body).open_formatting() + 1
    elements = len(LexborHTMLParser(body).css("*"))
    assert elements <= tags + 3 + rebuilt * (2 * tags + 2)

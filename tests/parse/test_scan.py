"""The cheap scans before the guard: a real-shaped page passes them without the guard's pass
or a regex reading it through, and every tag that could hold too many attributes is found."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gossamer.parse import guard, scan
from gossamer.parse.guard import _TOKEN, MAX_TAG_ATTRIBUTES

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
    assert guard.parse(body).flags == ("html-cut-attributes",)


pieces = st.lists(
    st.sampled_from(
        ["<a ", "<b>", "x", " ", "=", '"', "'", ">", "<", "y=1 ", 'z=">" ', "w='a>b' ", "</a>"]
    ),
    max_size=400,
).map("".join)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(pieces, st.integers(0, 600))
def test_every_long_tag_is_found(prefix: str, padding: int) -> None:
    """Whatever precedes it, a tag the guard's tokenizer reads as longer than
    `LONG_TAG_CHARS` makes `odd_tag` true."""
    data = (prefix + "x" * padding).encode()
    long = any(
        token.group(4) and token.end() - token.start() > scan.LONG_TAG_CHARS
        for token in _TOKEN.finditer(data.decode())
    )
    assert scan.odd_tag(data) or not long

"""The formatting scan in C (``parse/_formatscan.c``) gives the number the regexes give
(`gossamer.parse.formatting._rebuilt_bytes_regex`) on every input: generated markup of the
fragments the regexes tell apart, every prefix of hand-made edge cases (documents ending mid-
tag, mid-quote, mid-name), the hostile shapes of the parse tests and a real documentation set."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.parse import test_formatting, test_hostile_html

import gossamer
from gossamer.parse import native
from gossamer.parse.formatting import _rebuilt_bytes_regex, rebuilt_bytes

pytestmark = pytest.mark.skipif(
    native.FORMATSCAN is None, reason="the C formatting scan was not built (setup.py)"
)

SOURCE = str(Path(gossamer.__file__).parents[1])
DOCUMENTATION = [
    Path("/usr/share/doc/python3-doc/html"),
    Path("/usr/share/doc/postgresql-doc-15/html"),
    Path("/usr/share/doc/sqlite3"),
    Path("/usr/share/doc/git-doc"),
]


def assert_same(document: str | bytes, tags: int | None = None) -> None:
    assert rebuilt_bytes(document, tags) == _rebuilt_bytes_regex(document, tags), document


NAMES = ["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong"]
NAMES += ["tt", "u", "A", "B", "Big", "CODE", "eM", "NoBr", "S", "sMall", "STRONG", "U", "Tt"]
FRAGMENTS = [
    *(f"<{name}" for name in NAMES),
    *(f"</{name}" for name in NAMES),
    *(f"<{name}>" for name in NAMES[:14]),
    *(f"</{name}>" for name in NAMES[:14]),
    "<bold>", "<b1>", "<strongest>", "<ab>", "<sp", "<span", "<SPAN", "</span", "</Span >",
    "<span>", "</span>", "<br", "<BR>", "<br/>", "<img", "<Img src=x>", "<wbr>", "<brr>",
    "<p>", "</p>", "<div>", "<!--", "-->", "</", "<", ">", "/>", "/", " ", "\t", "\n", "\f",
    "\r", "\v", "=", " = ", "\t=\n", '"', "'", "`", "x", "c", "c=1", "c = 1", 'c="v"', "c='v'",
    'c="<b>"', "c='</b>'", "c=`x`", "c=a`b", 'x"', "c=\"'\"", "text ", "\u00e9", "\u00c9",
    "\u212a", "\x00", "\x7f",
]  # fmt: skip
RAW_BYTES = [b"\xff", b"\xc3", b"\xe2\x80", b"\x80"]


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    pieces = draw(
        st.lists(
            st.one_of(
                st.sampled_from(FRAGMENTS).map(str.encode),
                st.sampled_from(RAW_BYTES),
            ),
            max_size=60,
        )
    )
    return b"".join(pieces)


@settings(max_examples=3000, deadline=None)
@given(documents(), st.one_of(st.none(), st.integers(0, 5000)))
def test_generated_markup_reads_the_same(document: bytes, tags: int | None) -> None:
    assert_same(document, tags)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*FRAGMENTS, "\ud800", "\udfff"]), max_size=60).map("".join))
def test_text_with_lone_surrogates_reads_the_same(document: str) -> None:
    assert_same(document)


EDGES = [
    b"<b>x</b>",
    b"<B>x</b >",
    b"<b\tclass = 'x' id=\"y\" z=w v>text<br/><span a=1>in<span>side</span></span></b>",
    b"<a href=x><code><span class=pre>x</span></code><img src=y></a>",
    b"<nobr>x</NOBR>",
    b"<nobr><nobr c=1>x",
    b'<b c="unterminated',
    b"<b c='unterminated",
    b"<b c=`x`>y</b>",
    b"<b c = >y</b>",
    b"<b c=x=y>z</b>",
    b"<b <i>x</i></b>",
    b'<b x"=">x</b>">',
    b'<b title="></b>">x',
    b"<b><i>x</i><u>y</u>z<big>w</big ></b>",
    b"<b><i><u>x</u></i></b>",
    b"<b><span><span><span>x</span></span></span></b>",
    b"<b><span>x<b>y</b></span></b>",
    b"<strike>x</strike><strong>y</strong><small>z</small><s>w</s><tt>v</tt>",
    b"<font color=red>x</font><em>y</em>",
    b"<a>x</a><a b c d e>y",
    b"<b/>x</b>",
    b"<b//x//>y</b>",
    b"<b\x0bc>x</b>",
    b"<b\x00>x</b>",
    b"<\xc3\xa9>x",
]


@pytest.mark.parametrize("document", EDGES)
def test_every_prefix_of_an_edge_case_reads_the_same(document: bytes) -> None:
    for end in range(len(document) + 1):
        assert_same(document[:end])
        assert_same(document[:end] + b"<p>x" * 3)


def test_the_regex_tests_shapes_read_the_same() -> None:
    for piece in [*test_formatting.CLOSED_AT_ONCE, *test_formatting.LEFT_OPEN]:
        assert_same(piece)
        assert_same(b"<p>" + piece * 3 + b"</p>")
    for body in [*test_formatting.HOSTILE.values(), *test_formatting.GUARDED.values()]:
        assert_same(body)
        assert_same(body, 4096)


@pytest.mark.parametrize("name", list(test_hostile_html.HOSTILE))
def test_hostile_shapes_read_the_same(name: str) -> None:
    body = test_hostile_html.HOSTILE[name]()
    assert_same(body)


def test_the_scan_refuses_what_could_pass_64_bits() -> None:
    with pytest.raises(OverflowError):
        native.FORMATSCAN.scan(bytes((1 << 28) + 1))  # type: ignore[union-attr]
    body = b"<b" + b" " * (1 << 24)  # costs the rest of the document: 196 bytes a byte
    assert rebuilt_bytes(body, 0) == _rebuilt_bytes_regex(body, 0) > 196 << 24


def test_the_scan_is_linear_on_its_worst_shapes() -> None:
    """Shapes that make each ``<`` read far: the time per byte stays flat as they grow."""
    shapes = [
        lambda n: b"<b>" + b"<i>x</i>" * n,
        lambda n: b"<b x='" + b"<i y=\"'>" * n,
        lambda n: b"<b><span>" + b"<span>x</span>" * n,
        lambda n: b"<b " + b"a=b " * n,
        lambda n: b"<b c='<u>'>" * n,
    ]
    for shape in shapes:
        per_byte = []
        for body in (shape(20_000), shape(160_000)):
            best = float("inf")
            for _ in range(5):
                started = time.process_time()
                native.FORMATSCAN.scan(body)  # type: ignore[union-attr]
                best = min(best, time.process_time() - started)
            per_byte.append(best / len(body))
        assert per_byte[1] < 4 * per_byte[0] + 1e-9  # quadratic: 8 times


@pytest.mark.parametrize("root", DOCUMENTATION, ids=str)
def test_every_page_of_a_documentation_set_reads_the_same(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} is not installed")
    pages = [p for p in sorted(root.rglob("*.htm*")) if p.is_file()]
    assert pages
    for page in pages:
        assert_same(page.read_bytes())


def test_native_0_reads_with_the_regex() -> None:
    script = (
        "from gossamer.parse import native, formatting;"
        "print(native.FORMATSCAN is None, native.in_use()['formatscan'],"
        " formatting.rebuilt_bytes(b'<p><b c=1>x' * 3))"
    )
    outputs = []
    for flag in ("0", "1"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            env={"GOSSAMER_NATIVE": flag, "PATH": "/usr/bin:/bin", "PYTHONPATH": SOURCE},
            check=True,
            timeout=60,
            text=True,
        )
        outputs.append(done.stdout.split())
    assert outputs[0][:2] == ["True", "False"] and outputs[1][:2] == ["False", "True"]
    assert outputs[0][2] == outputs[1][2] != "0"


def python_count(body: bytes, most: int, step: int = 16 * 1024) -> int:
    """`gossamer.page.sandboxed._count`'s Python reading: a step of bytes at a time until the
    count passes ``most``."""
    count = start = 0
    while start < len(body) and count <= most:
        count += body.count(b"<", start, start + step)
        start += step
    return count


COUNT_BYTES = [b"<", b"<<", b"a", b"\x3d", b"\x3b", b"\xbc", b"\xbd", b"\x7c", b"\xfc", b"\x00"]
COUNT_BYTES += [b"\x7f", b"\x80", b"\xff", b"\x3c\xbc", b"x" * 7, b"<" * 255, b"<" * 256]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(COUNT_BYTES), max_size=300).map(b"".join),
    st.integers(min_value=0, max_value=40),
    st.sampled_from([-1, 0, 1, 7, 100, 4096, sys.maxsize]),
)
def test_the_count_of_lt_is_the_python_count(body: bytes, offset: int, most: int) -> None:
    """Every offset (the eight-byte steps start anywhere), bytes that differ from ``<`` by one
    bit (a carry between bytes would count them), runs of 255 and 256 ``<`` (the byte-wise
    sums' limit)."""
    assert native.FORMATSCAN is not None
    data = body[offset:]
    assert native.FORMATSCAN.count(data, most) == python_count(data, most)


def test_the_count_stops_after_the_step_that_passes_most() -> None:
    """As the Python count: a body whose first 16 KiB hold more than ``most`` is not read
    further (the count is then only some number past ``most``); one that never passes it is
    counted whole."""
    assert native.FORMATSCAN is not None
    step = 16 * 1024
    body = b"<" * step + b"<" * step
    assert native.FORMATSCAN.count(body, 10) == step
    assert native.FORMATSCAN.count(body, step) == 2 * step
    assert native.FORMATSCAN.count(b"x" * (3 * step + 5) + b"<", 0) == 1


@pytest.mark.parametrize("root", DOCUMENTATION, ids=str)
def test_every_page_of_a_documentation_set_counts_the_same(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} is not installed")
    pages = [p for p in sorted(root.rglob("*.htm*")) if p.is_file()]
    assert pages and native.FORMATSCAN is not None
    for page in pages:
        body = page.read_bytes()
        assert native.FORMATSCAN.count(body, sys.maxsize) == body.count(b"<"), page

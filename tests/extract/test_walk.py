"""The walk in C (``extract/_walk.c``) reads what the Python walk (`walk._Walker`) reads: the
same boxes (every total), blocks (text, links, images by address, density, commas), flagged
boxes, nodes read and skims, skimming or not and completed after a skim, on hand-made edge
cases, generated markup, hostile nesting and sizes, and a real documentation set. It also
fails cleanly (an allocation or a callback failing at any point of it) and reads alike from
several threads at once."""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from gossamer.extract import walk
from gossamer.parse.guard import parse

pytestmark = pytest.mark.skipif(walk._WALK is None, reason="_walk was not built (setup.py)")

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")


def described(reading: walk.Reading) -> Any:
    boxes = [msgspec.structs.astuple(box) for box in reading.boxes]
    blocks = [
        (b.tag, b.box, b.text, b.link_chars, [i.mem_id for i in b.images], b.density, b.commas)
        for b in reading.blocks
    ]
    skims = [
        (s.index, s.node.mem_id, s.blocks, s.depth, s.in_link, s.in_article, s.images_pending)
        for s in reading._skims
    ]
    return boxes, blocks, skims, reading._nodes, reading._unflagged


def readings(body: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each walk's readings of ``body``: skimming, not, and skimming then completed."""
    found = []
    for native in (walk._WALK, None):
        monkeypatch.setattr(walk, "_WALK", native)
        skimmed = walk.Reading(body, skim=True)
        seen = [described(skimmed), described(walk.Reading(body, skim=False))]
        seen.append(described(skimmed.unskimmed()))
        found.append(seen)
    return found


def assert_same(document: str | bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = LexborHTMLParser(document)
    if tree.body is None:
        return
    native, reference = readings(tree.body, monkeypatch)
    assert native == reference, document


NAV = "<nav><ul><li><a href='/a'>Home</a></li><li><a href='/b'>About, us</a></li></ul></nav>"
EDGES = [
    "",
    "<p></p>",
    "text alone",
    "  \n <p>  </p> \t <div> \u00a0 </div>",
    "<p>a <b>bold <i>move</i></b> <a href=x>link <code>x</code></a> end.</p>",
    "<div>one<br>two<br/>three<img src=a><img src=b>four</div><p>\u3001\uff0c\u060c,</p>",
    f"<header>{NAV}</header><article><header><h1>Title!</h1></header><p>Body.</p></article>",
    f"<img src=logo>{NAV}<p>after the menu\uff1f</p><footer>foot <img src=f></footer>",
    "<div class='sidebar' id=x role=navigation hidden><p>side</p></div><p aria-hidden=true>h</p>",
    "<table><tr><td>a <a href=1>one</a> <a href=2>two</a></td><th>h<br>b</th></tr></table>",
    "<a href=x><p>linked <b>para</b></p><div>box <i>in</i> link</div></a>",
    "<p>\ud800 lone \udfff surrogates \x00 and \ufffd</p><pre> x\n  y </pre>",
    "<dd><code>a</code><br><code>b</code> c</dd><dt><em>t</em><div>d</div></dt>",
    "<td><marquee><a href=m>m</a></marquee></td><p><svg><a href=s>svg <a>in</a></a></svg></p>",
    "<p><template><a href=t>t</a><div>d</div></template>after</p><!-- c --><script>s</script>",
    "<form><fieldset><legend>l</legend><input></fieldset></form><menu><li>m</li></menu>",
    "<main><section><aside>side</aside><figure><img src=i><figcaption>c</figcaption></figure>"
    "</section></main><x-y><p>custom</p></x-y>",
    "<div>" * 40 + "deep" + "</div>" * 40 + "<b>" * 40 + "bold" + "</b>" * 40,
    "<ul>" + "<li>item, <a href=x>link</a></li>" * 50 + "</ul>",
]


@pytest.mark.parametrize("document", EDGES)
def test_edge_cases_walk_alike(document: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(f"<html><body>{document}</body></html>", monkeypatch)


# _walk.c spells out these three in C: a change to one on the Python side must fail here
SENTENCE_ENDS = list(".!?\u3002\uff01\uff1f;:\u2026\u061f\uff0ea")
COMMAS = [",", "\u060c", "\uff0c", "\u3001", ";", "\uff64", "\u066b"]


@pytest.mark.parametrize("end", SENTENCE_ENDS)
def test_every_sentence_end_is_read_alike(end: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(f"<html><body><div>a box<p>a sentence{end}</p></div></body></html>", monkeypatch)


@pytest.mark.parametrize("comma", COMMAS)
def test_every_comma_is_counted_alike(comma: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(f"<html><body><p>one{comma} two{comma}{comma}</p></body></html>", monkeypatch)


def test_the_skimmed_link_share_is_the_one_in_c() -> None:
    # _walk.c counts a skimmed box's link characters as chars / 2
    assert walk.SKIMMED_LINK_SHARE == 0.5


def test_invalid_utf8_walks_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # bytes lexbor passes through: each text node decoded alone, a box read whole at once
    assert_same(b"<p>a\xe2<b>\x82\xac</b>\xff</p><div>x\xe2<b>\x82\xac</b>y<br></div>", monkeypatch)


def test_the_node_bound_holds_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # past MAX_NODES each level stops at its next element, its text still read; a box read
    # whole within the budget left, or walked when it would pass it
    many = walk.MAX_NODES // 2
    document = (
        "<div>" + "<i>a</i> " * many + "<p>" + "<b>x</b>" * (many - 3) + "</p>tail <b>b</b>"
        "<p>whole <b>y</b></p></div>after<nav><a href=x>l</a></nav><p>last</p>"
    )
    tree = LexborHTMLParser(f"<html><body>{document}</body></html>")
    assert tree.body is not None
    native, reference = readings(tree.body, monkeypatch)
    assert native == reference
    assert native[1][3] > walk.MAX_NODES


def test_deep_nesting_is_walked_within_max_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    # deeper than the parse guard lets through: the C walk keeps its levels off the C stack
    for opening, closing in (("<div>", "</div>"), ("<span>", "</span>"), ("<p><b>", "")):
        tree = LexborHTMLParser(opening * 3000 + "deep text" + closing * 3000)
        assert tree.body is not None
        native, reference = readings(tree.body, monkeypatch)
        assert native == reference


_PIECES = st.sampled_from(
    ["<p>", "</p>", "<td>", "<h2>", "<a href=x>", "</a>", "<b>", "</b>", "<img src=i>", "<br>",
     "<div>", "</div>", "text", "more, words.", " ", "\n", "\u3002", "<!-- c -->",
     "<script>s</script>", "<span>", "</span>", "<nav>", "</nav>", "<header>", "<article>",
     "<div class=sidebar>", "<ul>", "<li>", "</li>", "<table>", "<pre>", "<aside>", "<footer>",
     "<x-y>", "<marquee>", "<template>", "</template>", "<dd>", "<form>", "<main>", "&nbsp;"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=60))
def test_generated_markup_walks_alike(pieces: list[str]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same("<html><body>" + "".join(pieces), monkeypatch)


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3-doc is not installed")
def test_a_real_documentation_set_walks_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(PYTHON_DOCS.rglob("*.html"))[::4]
    assert len(files) > 50
    for file in files:
        tree = parse(file.read_bytes()).tree
        if tree is not None and tree.body is not None:
            native, reference = readings(tree.body, monkeypatch)
            assert native == reference, file


def test_a_walk_leaks_nothing() -> None:
    tree = LexborHTMLParser(
        f"<html><body>{NAV}<p>Some <a href=x>text</a>, <img src=a> here.</p>"
        "<div class=sidebar>side<img src=s></div><td>cell <b>bold</b></td></body></html>"
    )
    assert tree.body is not None and walk._WALK is not None

    def rss() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    for _ in range(20_000):
        walk.Reading(tree.body, skim=True).unskimmed()
    before = rss()
    for _ in range(100_000):
        walk.Reading(tree.body, skim=True).unskimmed()
    assert rss() - before < 2_000  # kB


def test_anything_but_a_node_is_refused() -> None:
    module = walk._WALK
    assert module is not None
    for wrong in (None, "p", object()):
        with pytest.raises(TypeError):
            module.walk(wrong, False, 0, False, False, None)


def test_an_error_in_the_names_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    # raised from inside the C walk (boxes, blocks and images made so far released), which
    # walks again afterwards as before
    tree = LexborHTMLParser(
        "<html><body><p>a <img src=i> b</p><div class=x>named<img src=j></div></body></html>"
    )
    assert tree.body is not None
    expected = described(walk.Reading(tree.body, skim=False))

    def fails(attributes: dict[str, str | None]) -> tuple[str, float, bool]:
        raise LookupError(attributes)

    monkeypatch.setattr(walk, "_named", fails)
    for _ in range(1000):
        with pytest.raises(LookupError):
            walk.Reading(tree.body, skim=False)
    monkeypatch.undo()
    assert described(walk.Reading(tree.body, skim=False)) == expected


HOSTILE_PAGE = (
    f"<html><body><img src=logo>{NAV}<p>Some <a href=x>text</a>, <img src=a> here.</p>"
    "<div class=sidebar>side<img src=s></div><td>cell <b>bold</b></td><div id=main><p>x<br>y"
    "</p><header>h</header><pre>a <i>b</i> <a href=q>link</a></pre></div><footer>f <img src=f>"
    "</footer><p>w\u00f6rd, \u3001 x.</p><div>" + "<span>deep " * 30 + "</div></body></html>"
)
_MODES = ((True, 0, False, None), (False, 0, False, None), (False, 3, True, ("nav", "x", 1.0)))
"""The walks the C module makes: skimming, not, and of a skimmed box alone."""


def _walks(tree: LexborHTMLParser | None = None) -> Iterator[Callable[[], Any]]:
    if tree is None:
        tree = LexborHTMLParser(HOSTILE_PAGE)
    assert tree.body is not None and walk._WALK is not None
    module, body = walk._WALK, tree.body
    for skim, depth, in_link, first in _MODES:
        yield partial(module.walk, body, skim, depth, in_link, False, first)


def _shown(found: Any) -> Any:
    boxes, blocks, flagged, nodes, skims = found
    return (
        [msgspec.structs.astuple(box) for box in boxes],
        [(b.tag, b.box, b.text, b.link_chars, len(b.images), b.commas) for b in blocks],
        flagged,
        nodes,
        [(s[0], s[2], s[3]) for s in skims],
    )


def test_a_failed_allocation_anywhere_raises_memory_error() -> None:
    # every allocation in turn fails (CPython's test hook): each walk ends with a MemoryError
    # or its full result, never a crash, a reference or a block kept, and walks on alike
    testcapi = pytest.importorskip("_testcapi")
    tree = LexborHTMLParser(HOSTILE_PAGE)
    for run in _walks(tree):
        expected = _shown(run())
        refs = sys.getrefcount(tree), [sys.getrefcount(name) for name in ("div", "p", "")]
        completed = 0
        for allowed in range(2_000):
            testcapi.set_nomemory(allowed, 0)
            try:
                found = run()
            except MemoryError:
                continue
            finally:
                testcapi.remove_mem_hooks()
            completed += 1
            assert _shown(found) == expected
            del found
            if completed == 3:
                break
        assert completed == 3  # the walk needs fewer allocations than were tried
        assert (sys.getrefcount(tree), [sys.getrefcount(n) for n in ("div", "p", "")]) == refs


@pytest.mark.parametrize("name", ["Box", "Block", "squash", "squashed_length", "_names_of"])
def test_a_failing_callback_raises_at_any_call(name: str) -> None:
    # what the C walk calls back (the boxes and blocks it builds, the squash, the names) raises
    # or gives a wrong value at its n-th call: the error reaches the caller, nothing is kept
    original = getattr(walk, name)
    expected = [_shown(run()) for run in _walks()]
    outcomes = set()

    def failing(at: int, wrong: object) -> Callable[..., Any]:
        calls = 0

        def call(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls != at:
                return original(*args)
            if wrong is LookupError:
                raise LookupError(name)
            return wrong

        return call

    try:
        for at in range(1, 30):
            for wrong in (LookupError, None, 1 << 80, ("names", "weight", 1)):
                setattr(walk, name, failing(at, wrong))
                assert walk._bound() is not None
                for run in _walks():
                    try:
                        run()
                        outcomes.add("done")
                    except (LookupError, TypeError, OverflowError, SystemError) as error:
                        outcomes.add(type(error).__name__)
    finally:
        setattr(walk, name, original)
        assert walk._bound() is not None
    assert "LookupError" in outcomes
    assert [_shown(run()) for run in _walks()] == expected


def test_walks_from_several_threads_at_once_read_alike() -> None:
    # parse threads walk their pages at once (callbacks let the GIL go): each reading is its
    # own, whether the threads share a tree or not
    documents = [HOSTILE_PAGE, *(f"<html><body>{page}</body></html>" for page in EDGES[4:])]
    trees = [LexborHTMLParser(document) for document in documents]
    shared = LexborHTMLParser(HOSTILE_PAGE)

    def reading(tree: LexborHTMLParser) -> Any:
        assert tree.body is not None
        found = walk.Reading(tree.body, skim=True).unskimmed()
        boxes = [msgspec.structs.astuple(box) for box in found.boxes]
        return boxes, [(b.text, b.box, [i.html for i in b.images]) for b in found.blocks]

    expected = [reading(tree) for tree in (*trees, shared)]
    failures: list[object] = []

    def work(offset: int) -> None:
        try:
            for _ in range(20):
                for index in range(offset, len(trees), 2):
                    if reading(trees[index]) != expected[index]:
                        failures.append(index)
                if reading(shared) != expected[-1]:
                    failures.append("shared")
        except Exception as error:  # reported by the assertion below
            failures.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(n % 2,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []

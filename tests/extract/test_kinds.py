"""The C scan of a box read whole (``extract/_whole.c``) finds what the Python one finds: the
same verdict, element count and links (by address) for every box of hand-made edge cases,
generated markup and a real documentation set, within any budget; and the walk reads the
same boxes and blocks with either."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.extract import kinds
from gossamer.extract.walk import Reading

pytestmark = pytest.mark.skipif(
    kinds.scan_whole is kinds.scan_whole_reference, reason="_whole was not built (setup.py)"
)

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")


def found(scanned: tuple[int, list[LexborNode]] | None) -> tuple[int, list[int]] | None:
    return None if scanned is None else (scanned[0], [link.mem_id for link in scanned[1]])


def assert_same(document: str | bytes, budgets: tuple[int, ...] = (-1, 0, 1, 3, 10**6)) -> None:
    tree = LexborHTMLParser(document)
    root = tree.root
    if root is None:
        return
    for box in root.traverse():
        for budget in budgets:
            expected = found(kinds.scan_whole_reference(box, budget))
            assert found(kinds.scan_whole(box, budget)) == expected, (document, box.tag, budget)


EDGES = [
    "",
    "<p></p>",
    "<p>text</p>",
    "<p>a <b>bold <i>move</i></b> <a href=x>link <code>x</code></a> end</p>",
    "<p>a<!-- a comment --><span>b</span></p>",
    "<td>a <a href=1>one</a> <a href=2>two</a> <img src=i> after</td>",
    "<h1>a<br>b</h1><h2>a<script>x</script></h2><h3><div>box</div></h3>",
    "<td><applet><a href=in>x</a></applet></td><td><marquee>m</marquee></td>",
    "<p><custom-tag><a href=c>custom</a></custom-tag></p>",
    "<p><template><a href=t>t</a><div>d</div></template>after</p>",
    "<p><svg><a href=s>svg</a><title>t</title></svg></p>",
    "<th>" + "<b>" * 300 + "deep" + "</b>" * 300 + "</th>",
    "<table><tr><td><a href=x><a href=y>nested</a></a></td></tr></table>",
]


@pytest.mark.parametrize("document", EDGES)
def test_edge_cases_scan_alike(document: str) -> None:
    assert_same(document)


def test_anything_but_a_node_is_refused() -> None:
    module = kinds._WHOLE
    assert module is not None
    for wrong in (None, "p", object()):
        with pytest.raises(TypeError):
            module.scan(wrong, 10)


def test_a_hostile_box_is_scanned_within_its_budget() -> None:
    box = LexborHTMLParser("<p>" + "<b>x</b>" * 50_000 + "</p>").css_first("p")
    assert box is not None
    started = time.process_time()
    assert kinds.scan_whole(box, 1000) is None  # stops at the budget
    whole = kinds.scan_whole(box, 10**6)
    assert whole is not None and whole[0] == 50_000 and whole[1] == []
    assert time.process_time() - started < 1.0


_PIECES = st.sampled_from(
    ["<p>", "</p>", "<td>", "<h2>", "<a href=x>", "</a>", "<b>", "</b>", "<img>", "<br>",
     "<div>", "</div>", "text", " ", "<!-- c -->", "<script>s</script>", "<span>", "</span>",
     "<applet>", "<x-y>", "<template>", "</template>", "<table>", "<li>"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_generated_markup_scans_alike(pieces: list[str]) -> None:
    assert_same("".join(pieces))


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3-doc is not installed")
def test_a_real_documentation_set_scans_and_walks_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(PYTHON_DOCS.rglob("*.html"))[::6]
    assert len(files) > 50
    for file in files:
        markup = file.read_bytes()
        assert_same(markup, budgets=(5, 10**6))
        readings = []
        monkeypatch.setattr("gossamer.extract.walk._WALK", None)  # the walk that scans
        for scan in (kinds.scan_whole, kinds.scan_whole_reference):
            monkeypatch.setattr("gossamer.extract.walk.scan_whole", scan)
            body = LexborHTMLParser(markup).body
            assert body is not None
            reading = Reading(body, skim=False)
            readings.append((reading.boxes, [(b.tag, b.box, b.text) for b in reading.blocks]))
        assert readings[0] == readings[1], file


@pytest.mark.parametrize(
    "first",
    ["gossamer.parse.native", "gossamer.parse.links", "gossamer.extract", "gossamer.digests"],
)
def test_the_c_parts_run_whichever_module_is_imported_first(first: str) -> None:
    """The parse sandbox's worker imports `gossamer.parse.native` (by the links) before the
    extractor: each C part must load all the same (it was left out, half imported)."""
    code = (
        f"import {first}; from gossamer.parse import native; "
        "from gossamer.extract import kinds, spaces, walk; from gossamer.digests import simhash; "
        "print(spaces.SQUASH is not None, kinds._WHOLE is not None, walk._WALK is not None, "
        "simhash._SIMHASH is not None, all(native.in_use().values()))"
    )
    source = str(Path(kinds.__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": source}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"] * 5

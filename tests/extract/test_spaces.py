"""The C squash of a text's spaces (``extract/_squash.c``) gives what Python's
``" ".join("".join(parts).split())`` gives: on hand-made edge cases (every kind of Unicode
whitespace, characters of every width, surrogates), on generated text, on the text nodes of a
real documentation set, and in linear time on a hostile text."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from gossamer.extract.spaces import SQUASH, squash_reference, squashed_length_reference

pytestmark = pytest.mark.skipif(SQUASH is None, reason="_squash was not built (setup.py)")

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def assert_same(parts: str | list[str]) -> None:
    assert SQUASH is not None
    expected = squash_reference(parts)
    found = SQUASH.squash(parts)
    assert found == expected, parts
    assert type(found) is str and found.isascii() == expected.isascii()  # the narrowest kind
    assert SQUASH.squashed_length(parts) == squashed_length_reference(parts)


EDGES: list[str | list[str]] = [
    "",
    [],
    [""],
    ["", "", ""],
    " ",
    "word",
    "  two   words  ",
    ["split", "word"],
    ["a ", " b"],
    ["a", " ", "b"],
    ["\n\n", "a", "\t", "", "b", "\r\n"],
    "".join(WHITESPACE) + "x" + "".join(WHITESPACE) + "y" + "".join(WHITESPACE),
    "caf\u00e9\u00a0au\u0085lait",  # latin-1 spaces squashed
    "\u00a0\u00e9\u00a0",  # the only wide characters are spaces: the result is ASCII
    ["\u3000", "\u5b57", "\u2003\U0001f600\u200b"],  # zero-width space is no whitespace
    ["\ud800 lone", "surrogate \udfff"],
    "\x1c\x1d\x1e\x1fx\x0b\x0cy",  # separators Python splits at
    ["\U0001f600", "a", "\u00e9"],  # parts of every width
]


@pytest.mark.parametrize("parts", EDGES)
def test_edge_cases_squash_alike(parts: str | list[str]) -> None:
    assert_same(parts)


def test_anything_but_text_is_refused() -> None:
    assert SQUASH is not None
    for wrong in (None, b"bytes", ["a", b"b"], ("a",), [1]):
        with pytest.raises(TypeError):
            SQUASH.squash(wrong)
        with pytest.raises(TypeError):
            SQUASH.squashed_length(wrong)


_CHARS = st.sampled_from([" ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "a", "\u00e9", "\u5b57"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(_CHARS, max_size=12) | st.text(max_size=6), max_size=6))
def test_generated_text_squashes_alike(parts: list[str]) -> None:
    assert_same(parts)
    assert_same("".join(parts))


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3-doc is not installed")
def test_a_real_documentation_sets_text_squashes_alike() -> None:
    files = sorted(PYTHON_DOCS.rglob("*.html"))[::4]
    assert len(files) > 100
    for file in files:
        body = LexborHTMLParser(file.read_bytes()).body
        assert body is not None
        texts = [node.text_content or "" for node in body.traverse(include_text=True)]
        assert_same(texts)
        for start in range(0, len(texts), 5):
            assert_same(texts[start : start + 5])


def test_a_hostile_text_takes_linear_time() -> None:
    assert SQUASH is not None
    hostile = " \u3000a" * 2_000_000  # 6 M characters, a word every three
    started = time.process_time()
    found = SQUASH.squash([hostile, hostile])
    assert time.process_time() - started < 1.0
    assert len(found) == 4_000_000 * 2 - 1 and found == squash_reference([hostile, hostile])

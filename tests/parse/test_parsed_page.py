"""`ParsedPage` behaves as the frozen dataclass it was (compared, hashed and shown by the same
fields, copied by `replace`, never changed in place), and a parse worker's imports leave out
``dataclasses`` (with the ``inspect`` and ``ast`` it brings) and ``hashlib``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.parse.links import ParsedPage, parse_html


def page(**changes: object) -> ParsedPage:
    fields: dict[str, object] = {
        "title": "T",
        "links": ["http://h/a"],
        "nofollow_links": 1,
        "meta_nofollow": False,
        "meta_noindex": True,
        "base_url": "http://h/",
        "text_encoding": "utf-8",
    }
    return ParsedPage(**(fields | changes))  # type: ignore[arg-type]


def test_pages_compare_by_their_values_not_their_nodes() -> None:
    tree = LexborHTMLParser("<a href=x>")
    assert page() == page(tree=tree, metas=(), canonical_link=tree.root, anchors=[], texts=None)
    assert page() != page(flags=("links-cut",))
    assert page() != page(names_canonical=True)
    assert page() != page(links=[])
    assert page() != ("T",)
    with pytest.raises(TypeError):  # links is a list, as the dataclass's hash found too
        hash(page())
    assert hash(page(links=())) == hash(page(links=(), tree=tree))


def test_a_page_is_shown_without_its_nodes() -> None:
    assert repr(page(tree=LexborHTMLParser("<p>"))) == (
        "ParsedPage(title='T', links=['http://h/a'], nofollow_links=1, meta_nofollow=False, "
        "meta_noindex=True, base_url='http://h/', text_encoding='utf-8', flags=(), "
        "names_canonical=None)"
    )


def test_a_page_is_frozen_and_replaced_as_a_whole() -> None:
    parsed = parse_html(b"<title>x</title><a href=/a>a</a>", "http://h/p")
    assert parsed.tree is not None
    with pytest.raises(AttributeError):
        parsed.title = "y"
    with pytest.raises(AttributeError):
        del parsed.links
    copy = parsed.replace(tree=None, flags=("html-flattened",))
    assert copy.tree is None and copy.flags == ("html-flattened",)
    assert (copy.title, copy.links, copy.base_url) == ("x", ["http://h/a"], "http://h/p")
    assert parsed.tree is not None and parsed.flags == ()
    with pytest.raises(TypeError):
        parsed.replace(colour="red")


def test_a_parse_worker_imports_no_dataclasses_nor_hashlib() -> None:
    """Nor ``hashlib`` (OpenSSL's start), which only a seed's masked user name needs."""
    script = (
        "import sys, gossamer.page.sandboxed;"
        "print(sorted({'dataclasses', 'inspect', 'ast', 'hashlib'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"

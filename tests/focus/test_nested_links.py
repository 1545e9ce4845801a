"""Links nested in one another over a big text: each link's anchor and block hold all that
follows it, and are read whole before they are cut; the reading of one page's link texts
stays bounded (the links past its budget are scored from their URL alone)."""

from __future__ import annotations

import time

import pytest

from gossamer.focus.anchors import MAX_READ_SECONDS, link_texts
from gossamer.parse.links import parse_html

DEPTH = 500
TEXT = "word " * 600_000
"""3 MB: 500 nested links read it 500 times (some 2 s before the budget)."""


def _nested(opening: str, closing: str, inner: str) -> bytes:
    """``opening`` (holding ``{i}``, the link's number) nested ``DEPTH`` deep around
    ``inner``."""
    openings = "".join(opening.format(i=i) for i in range(DEPTH))
    return f"<html><body>{openings}{inner}{closing * DEPTH}</body></html>".encode()


@pytest.mark.parametrize(
    "body",
    [
        _nested('<div><a href="/l{i}">x</a>', "</div>", TEXT),
        _nested('<a href="/l{i}">', "</a>", f"<svg><text>{TEXT}</text></svg>").replace(
            b"<body>", b"<body><svg>"
        ),
        _nested('<div><a href="/l{i}">x</a>', "</div>", "<b></b>" * 300_000),
    ],
    ids=["divs", "svg-anchors", "empty-elements"],
)
def test_nested_links_over_a_big_text_are_read_within_the_budget(body: bytes) -> None:
    page = parse_html(body, "http://a.test/", anchors=True)
    assert page.anchors is not None and len(page.anchors) == DEPTH
    started = time.thread_time()
    texts = link_texts(page, set(page.links))
    spent = time.thread_time() - started
    assert texts  # the first links are read
    assert spent < MAX_READ_SECONDS + 0.5, spent

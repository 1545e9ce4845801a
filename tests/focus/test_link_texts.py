"""What a judged page tells of its links when a documentation site's navigation links to them
first: the link's entry in the table of contents gives its context and list, not the "Next"
of the navigation; and a long list whose members prove off-topic stops lifting the rest."""

from __future__ import annotations

import dataclasses
import random

from gossamer.focus.anchors import link_texts, read_whole
from gossamer.focus.lists import ListEvidence
from gossamer.parse.links import parse_html

SITE = "http://docs.test"


def _chapter_page() -> bytes:
    """A reference chapter as DocBook writes it: a navigation table linking its next page
    ("Next") above the table of contents that lists and describes that page."""
    nav = (
        '<div class="navheader"><table><tr><td><a href="prev.html">Prev</a></td>'
        '<td><a href="abort.html">Next</a></td></tr></table></div>'
    )
    entries = (
        ("abort.html", "ABORT", "abort the current transaction"),
        ("analyze.html", "ANALYZE", "collect statistics about a database"),
        ("begin.html", "BEGIN", "start a transaction block"),
    )
    toc = "".join(
        f'<dt><span class="refentrytitle"><a href="{href}">{name}</a></span>'
        f'<span class="refpurpose"> \u2014 {purpose}</span></dt>'
        for href, name, purpose in entries
    )
    footer = '<div class="navfooter"><a href="abort.html">Next</a></div>'
    return f"<html><body>{nav}<h1>SQL Commands</h1><dl>{toc}</dl>{footer}</body></html>".encode()


def test_a_link_the_navigation_names_first_keeps_its_table_of_contents_entry() -> None:
    page = parse_html(_chapter_page(), f"{SITE}/commands.html")
    texts = link_texts(page, set(page.links))
    first = texts[f"{SITE}/abort.html"]
    assert "abort the current transaction" in first.context
    assert "ABORT" in first.anchor
    others = texts[f"{SITE}/analyze.html"], texts[f"{SITE}/begin.html"]
    assert all(first.group == other.group for other in others)  # one list: the contents
    assert texts[f"{SITE}/prev.html"].group != first.group


def test_a_long_list_whose_members_prove_off_topic_stops_lifting_the_rest() -> None:
    """One on-topic member lifts the rest of its list of forty; as the next ones prove
    off-topic its share falls, and the members waiting are told (scored again) before the
    share says nothing."""
    members = tuple(f"{SITE}/lang_{i}.html" for i in range(40))
    lists = ListEvidence()
    lists.add([members], lambda _key: None)
    assert lists.judged(members[0], True) == [members]
    lifted = lists.score(members[-1])
    told = []
    for url in members[1:12]:
        if lists.judged(url, False):
            told.append(lists.score(members[-1]))
    assert told, "the members waiting were never told the list's share fell"
    assert told[-1] < 0.1 <= lifted


def test_the_links_read_with_the_page_give_the_texts_the_tree_gives() -> None:
    """A focused crawl parses with ``anchors``: each ``<a>`` with its ``href`` as written, in
    document order (in-page, nofollow and repeated links too; an SVG link's ``xlink:href`` read
    as empty; no ``<area>`` or ``<link>``), and the texts read from them are those read from
    the tree."""
    body = (
        b'<html><head><link rel="next" href="n.html"></head><body>'
        b'<p>See <a href="#top">top</a> and <a href="a.html" rel="nofollow">A page</a>.</p>'
        b'<map><area href="m.html"></map><a href="b.html">B</a><svg><a xlink:href="s.html">s</a>'
        b'</svg><a href="a.html">A again</a></body></html>'
    )
    url = f"{SITE}/x/index.html"
    plain, kept = parse_html(body, url), parse_html(body, url, anchors=True)
    assert plain.anchors is None
    assert kept.anchors is not None
    assert [href for _, href in kept.anchors] == ["#top", "a.html", "b.html", "", "a.html"]
    assert [node.text() for node, _ in kept.anchors] == ["top", "A page", "B", "s", "A again"]
    wanted = {f"{SITE}/x/{name}" for name in ("a.html", "b.html", "m.html", "n.html")}
    assert link_texts(kept, wanted) == link_texts(plain, wanted)
    assert link_texts(kept, wanted)[f"{SITE}/x/a.html"].anchor == "A page A again"


def _shuffled_page(seed: int) -> bytes:
    """Links to 40 URLs, each linked one to four times from lists, tables, paragraphs and
    navigation (short texts and long), in an order drawn from ``seed``."""
    rng = random.Random(seed)
    parts = []
    for _ in range(160):
        href = f"/p{rng.randrange(40)}.html"
        text = rng.choice(["Next", "Up", f"Chapter {rng.randrange(99)} of the manual"])
        words = " about locking" * rng.randrange(8)
        link = f'<a href="{href}">{text}</a>{words}'
        parts.append(
            rng.choice(
                [
                    f"<ul><li>{link}</li></ul>",
                    f"<ul><li>{link}</li><li>{link}</li></ul>",
                    f"<table><tr><td>{link}</td></tr></table>",
                    f"<p>{link}</p>",
                    f"<nav>{link}</nav>",
                    f"<div><div><div><div><div><div><ol><li>{link}",
                ]
            )
        )
    return f"<html><body>{''.join(parts)}</body></html>".encode()


def test_a_parse_workers_reading_gives_the_texts_the_tree_gives_whatever_the_focus_asks() -> None:
    """A parse worker reads every link's texts whole, not knowing which URLs the focus will
    ask only the list of: `given` turns that into what `link_texts` reads from the tree for
    any URLs wanted and any asked the list alone of, lists numbered alike (a list read for a
    URL asked its list alone is numbered later, or not at all, and every later one moves)."""
    rng = random.Random(7)
    for seed in range(40):
        page = parse_html(_shuffled_page(seed), f"{SITE}/", anchors=True)
        whole = read_whole(page, set(page.links))
        without_tree = dataclasses.replace(page, tree=None, anchors=None, texts=whole)
        for _ in range(6):
            wanted = {u for u in page.links if rng.random() < 0.8}
            brief = {u for u in page.links if rng.random() < 0.4}
            expected = link_texts(page, wanted, brief)
            found = link_texts(without_tree, wanted, brief)
            assert found == expected and list(found) == list(expected), seed

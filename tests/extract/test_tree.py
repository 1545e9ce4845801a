"""The tree model (the default extractor) on pages built for each of its rules."""

from __future__ import annotations

import time

import msgspec
import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.extract import DEFAULT_EXTRACTOR, extract, walk
from gossamer.extract.tree import MAX_NODES, forget_names
from gossamer.extract.walk import Reading

URL = "https://news.example/2024/story"
NAV = """<header><a href="/">Example News</a><nav><ul><li><a href="/world">World</a></li>
<li><a href="/business">Business</a></li><li><a href="/culture">Culture</a></li></ul></nav>
</header>"""
FOOTER = "<footer><p>Copyright Example News, all rights reserved, since 1999.</p></footer>"


def sentences(topic: str, count: int) -> list[str]:
    return [
        f"The {topic} report, part {n}, says that the results were better than expected, "
        f"and that the next steps will be decided at the meeting in the spring of {2000 + n}."
        for n in range(count)
    ]


def text_of(body: str) -> str:
    page = f"<html><head><title>t</title></head><body>{NAV}{body}{FOOTER}</body></html>"
    return extract(LexborHTMLParser(page), URL).text


def test_tree_is_the_default() -> None:
    assert DEFAULT_EXTRACTOR == "tree"


def test_article_cut_into_parts_by_advertisements_and_pictures() -> None:
    parts = [sentences(f"part{k}", 3) for k in range(3)]
    body = "<main><article><h1>Title</h1><div class='story'>"
    for k, paragraphs in enumerate(parts):
        body += "<div class='story-body-part'>"
        body += "".join(f"<p>{p}</p>" for p in paragraphs) + "</div>"
        if k < 2:
            body += (
                "<div class='slot'><span>Advertisement</span></div>"
                "<figure><img src='/p.jpg' alt='A picture'>"
                "<figcaption>A caption under the picture, with its credit.</figcaption></figure>"
            )
    body += "</div></article></main>"
    text = text_of(body)
    for paragraphs in parts:
        for paragraph in paragraphs:
            assert paragraph in text
    assert "Advertisement" not in text
    assert "caption under the picture" not in text
    assert "World" not in text and "rights reserved" not in text


def test_article_in_a_box_tagged_like_boilerplate_is_still_found() -> None:
    paragraphs = sentences("aside", 4)
    body = "<main><aside><section>" + "".join(f"<p>{p}</p>" for p in paragraphs)
    body += "</section></aside></main>"
    text = text_of(body)
    assert all(p in text for p in paragraphs)


def test_link_lists_and_galleries_inside_the_article_are_left_out() -> None:
    paragraphs = sentences("budget", 4)
    links = "".join(
        f"<li><a href='/s/{n}'>Another story number {n} to read</a></li>" for n in range(6)
    )
    gallery = "".join(
        f"<div><img src='/g/{n}.jpg' alt='g{n}'><span>Photo {n} of the day</span></div>"
        for n in range(5)
    )
    body = (
        f"<article><div class='content'><p>{paragraphs[0]}</p><p>{paragraphs[1]}</p>"
        f"<div class='more'><h3>Read more</h3><ul>{links}</ul></div>"
        f"<div class='gallery'>{gallery}</div>"
        f"<p>{paragraphs[2]}</p><p>{paragraphs[3]}</p></div></article>"
    )
    text = text_of(body)
    assert all(p in text for p in paragraphs)
    assert "Another story" not in text
    assert "Photo 3 of the day" not in text


def test_lists_headings_and_data_tables_of_the_article_are_kept() -> None:
    paragraphs = sentences("table", 3)
    body = (
        f"<article><p>{paragraphs[0]}</p><h2>The figures</h2>"
        "<table><tr><th>Year</th><th>Riders</th></tr><tr><td>2023</td><td>41000</td></tr></table>"
        f"<p>{paragraphs[1]}</p><ol><li>First, the northern routes open.</li>"
        f"<li>Then the eastern ones follow.</li></ol><p>{paragraphs[2]}</p></article>"
    )
    text = text_of(body)
    assert "The figures" in text
    assert "41000" in text
    assert "First, the northern routes open.\nThen the eastern ones follow." in text
    assert all(p in text for p in paragraphs)


def test_boilerplate_by_name_role_and_hidden() -> None:
    paragraphs = sentences("names", 3)
    body = (
        "<div id='cookie-consent'><p>We use cookies, and by using this site you agree to them"
        " and to our partners' use of them.</p></div>"
        f"<div class='post-content'>{''.join(f'<p>{p}</p>' for p in paragraphs)}"
        "<div class='share-tools'><p>Share this story with your friends, family and"
        " colleagues.</p></div>"
        "<div hidden><p>A hidden paragraph that a reader never sees on the page.</p></div>"
        "<div role='complementary'><p>A complementary box with a long sentence in it.</p></div>"
        "</div><div id='comments'><p>I disagree with this article, and here is why, at"
        " length.</p></div>"
    )
    text = text_of(body)
    assert all(p in text for p in paragraphs)
    for noise in ("cookies", "Share this", "hidden paragraph", "complementary", "disagree"):
        assert noise not in text


def test_short_page_keeps_its_text() -> None:
    text = text_of("<div><p>Opening hours: 9 to 5, Monday to Friday.</p></div>")
    assert text == "Opening hours: 9 to 5, Monday to Friday."


def test_deep_and_huge_markup_costs_bounded_time() -> None:
    deep = "<div>" * 5000 + "<p>deep text</p>" + "</div>" * 5000
    wide = "<p><span>x</span></p>" * (MAX_NODES // 2 + 1000)
    for body in (deep, wide):
        forget_names()
        start = time.process_time()
        text_of(body)
        assert time.process_time() - start < 5


def test_crawl_settings_default_to_the_default_extractor() -> None:
    from gossamer.settings import CrawlSettings

    assert CrawlSettings().extractor == DEFAULT_EXTRACTOR


def test_huge_class_names_are_read_in_bounded_time() -> None:
    paragraphs = sentences("names", 2)
    body = "".join(
        f"<div class='{'x' * 100_000}{n} sidebar'><p>{p}</p></div>"
        for n, p in enumerate(paragraphs)
    )
    forget_names()
    start = time.process_time()
    text = text_of(f"<article>{body}</article>")
    assert time.process_time() - start < 1
    assert all(p in text for p in paragraphs)  # "sidebar" is past what is read


def reading_of(reading: Reading) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    boxes = [msgspec.structs.astuple(box) for box in reading.boxes]
    blocks = [
        (b.tag, b.box, b.text, b.link_chars, [i.attributes.get("src") for i in b.images])
        for b in reading.blocks
    ]
    return boxes, blocks


def test_a_skimming_walk_completed_reads_as_a_walk_that_skims_nothing() -> None:
    # boilerplate at the start, between and at the end, nested, with images and links inside;
    # a sidebar holding most of the text (unflagged), text and an image around each
    page = LexborHTMLParser(
        f"<html><body>{NAV}<p>Lead, before the menu.</p>"
        "<div class='sidebar'><p>Side <a href='/a'>link</a> text.</p><img src='/s.png'>"
        f"<aside><ul><li><a href='/b'>Deep</a></li></ul></aside>{''.join(sentences('side', 9))}"
        "</div>loose text <img src='/i.png'><div class='share'>Share this</div>"
        f"<article><p>{' '.join(sentences('main', 2))}</p><nav><a href='/n'>Next</a></nav>"
        f"</article>tail{FOOTER}</body></html>"
    )
    assert page.body is not None
    skimming = Reading(page.body, skim=True)
    assert skimming.skimmed
    whole = Reading(page.body, skim=False)
    assert not whole.skimmed
    assert reading_of(skimming.unskimmed()) == reading_of(whole)
    assert any(box.boilerplate for box in whole.boxes)


def test_a_skimmed_box_after_a_lone_image_is_read_by_walking_again() -> None:
    # the image waits for text to join: a walk of the sidebar would take it in
    page = LexborHTMLParser(
        "<html><body><img src='/logo.png'><nav><a href='/'>Home</a> words in the menu</nav>"
        f"<p>{' '.join(sentences('main', 3))}</p></body></html>"
    )
    assert page.body is not None
    completed = Reading(page.body, skim=True).unskimmed()
    assert reading_of(completed) == reading_of(Reading(page.body, skim=False))


def test_a_box_of_text_and_inline_elements_reads_whole_as_the_walk_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # read whole: links (nested in inline elements, or around the box), comments, entities,
    # spaces between inline elements, an image waiting before the box; walked: a box holding
    # a line break, a marquee (which may hold a link inside a link) or a box
    page = LexborHTMLParser(
        "<html><body><img src='/a.png'><p>The <a href='/x'><code><span>AST</span></code></a>"
        " <span class='pre'>node</span> <span>class</span>, <!-- note --> see"
        " <em>the <a href='/y'>grammar</a></em>&nbsp;&amp; more.</p>"
        "<a href='/z'><p><b>Linked</b> <i>para</i><span>graph</span></p></a>"
        "<pre><span>x</span> <span>=</span>\n  <span>1</span></pre>"
        "<dd><code>a</code><br><code>b</code> c</dd>"
        "<td><b>cell</b> <marquee><a href='/m'>moving</a></marquee> <i>text</i></td>"
        "<dt><em>term</em> <code>x</code><div>inside</div></dt></body></html>"
    )
    assert page.body is not None
    whole = reading_of(Reading(page.body, skim=False))
    monkeypatch.setattr(walk, "_WALK", None)  # the Python walk (the C one reads alike)
    monkeypatch.setattr(walk, "_WHOLE_TAGS", frozenset())
    walked = reading_of(Reading(page.body, skim=False))
    assert whole == walked
    texts = [block[2] for block in whole[1]]
    assert texts[0] == "The AST node class, see the grammar & more."
    assert whole[1][0][3] == len("AST") + len("grammar")


def test_a_skimming_walk_lists_the_boxes_it_only_measured() -> None:
    page = LexborHTMLParser(
        f"<html><body>{NAV}<p>{' '.join(sentences('main', 2))}</p>"
        "<div class='sidebar'><p>Side text.</p></div>"
        f"<aside><nav><a href='/x'>Deep</a></nav></aside>{FOOTER}</body></html>"
    )
    assert page.body is not None
    skimming = Reading(page.body, skim=True)
    skimmed = skimming.skimmed_boxes()
    assert [box.tag for box in skimmed] == ["header", "div", "aside", "footer"]
    assert all(box.skimmed and box.chars for box in skimmed)
    assert skimmed == [box for box in skimming.boxes if box.skimmed]
    assert Reading(page.body, skim=False).skimmed_boxes() == []


def test_the_walk_totals_each_box_as_its_blocks_add_up() -> None:
    # the walk writes a box's totals only where they change: what it holds must be what
    # adding up the blocks gives (`walk._total` writes every field of every box)
    page = LexborHTMLParser(
        "<html><body><div>Opening words. <p>A first, short, paragraph.</p>tail without stop"
        "<p></p><ul><li>one, two</li><li><a href='/x'>linked</a> item.</li><li></li></ul>"
        "</div><div>no stop<p>Inside, <img src='/a.png'> <img src='/b.png'>here</p>ends.</div>"
        "<section><div><div></div></div><p><a href='/y'>all links</a></p></section>"
        f"<table><tr><td>cell, one</td><td>cell two.</td></tr></table>{FOOTER}</body></html>"
    )
    assert page.body is not None
    reading = Reading(page.body, skim=False)
    fresh = [walk.Box(b.tag, b.parent, b.names, b.weight, b.boilerplate) for b in reading.boxes]
    walk._total(fresh, reading.blocks)
    assert [msgspec.structs.astuple(b) for b in reading.boxes] == [
        msgspec.structs.astuple(b) for b in fresh
    ]
    assert {b.ends_sentence for b in fresh} == {True, False}
    assert any(b.images > 1 for b in fresh) and any(b.items for b in fresh)

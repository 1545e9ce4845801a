"""Metadata fields, each on a page made for it; nulls on pages without them; hostile input."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.extract import extract, meta
from gossamer.parse import native
from gossamer.parse.links import parse_html
from gossamer.urls import Resolver

_SOURCE = str(Path(meta.__file__).parents[2])

URL = "https://news.example/2024/story"


def page(head: str = "", body: str = "<p>Text.</p>", lang: str = "") -> str:
    return f"<html{lang}><head>{head}</head><body>{body}</body></html>"


def test_lang_from_html_attribute_then_meta() -> None:
    assert extract(page(lang=' lang="de-AT"'), URL).lang == "de"
    head = '<meta http-equiv="content-language" content="fr">'
    assert extract(page(head), URL).lang == "fr"
    assert extract(page('<meta property="og:locale" content="pt_BR">'), URL).lang == "pt"
    assert extract(page(lang=' lang="x-klingon"'), URL).lang is None


def test_lang_from_xhtml_xml_lang_and_the_content_language_header_last() -> None:
    xhtml = ' xmlns="http://www.w3.org/1999/xhtml" xml:lang="en-US"'
    assert extract(page(lang=xhtml), URL).lang == "en"
    assert extract(page(lang=' lang="de" xml:lang="en"'), URL).lang == "de"
    assert extract(page(), URL, content_language="fr-CA, en").lang == "fr"
    assert extract(page(lang=' lang="nl"'), URL, content_language="fr").lang == "nl"
    head = '<meta http-equiv="content-language" content="it">'
    assert extract(page(head), URL, content_language="fr").lang == "it"


def test_description_meta_then_open_graph() -> None:
    head = '<meta property="og:description" content="OG"><meta name="description" content=" A  b ">'
    assert extract(page(head), URL).description == "A b"
    assert extract(page('<meta property="og:description" content="OG">'), URL).description == "OG"


def test_canonical_is_absolute() -> None:
    content = extract(page('<link rel="canonical" href="/2024/story?id=1#top">'), URL)
    assert content.canonical == "https://news.example/2024/story?id=1"
    assert extract(page('<link rel="canonical" href="javascript:x">'), URL).canonical is None


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        (
            '<meta property="article:published_time" content="2024-03-05T10:00:00Z">',
            "",
            "2024-03-05T10:00:00+00:00",
        ),
        (
            '<script type="application/ld+json">{"@graph": [{"@type": "NewsArticle",'
            ' "datePublished": "2023-11-06"}]}</script>',
            "",
            "2023-11-06",
        ),
        (
            "",
            '<span itemprop="datePublished" content="2022-01-02T03:04:05+01:00"></span>',
            "2022-01-02T03:04:05+01:00",
        ),
        ("", '<p>On <time datetime="2021-07-08 09:10">8 July</time></p>', "2021-07-08T09:10:00"),
    ],
)
def test_published_sources(head: str, body: str, expected: str) -> None:
    assert extract(page(head, body), URL).published == expected


def test_authors_from_meta_json_ld_and_rel() -> None:
    head = (
        '<meta name="author" content="Ann Lee">'
        '<script type="application/ld+json">{"author": [{"@type": "Person", "name": "Bo Chen"},'
        ' {"name": "ann lee"}]}</script>'
    )
    body = '<p>By <a rel="author" href="/c">Cy Dee</a></p>'
    assert extract(page(head, body), URL).authors == ("Ann Lee", "Bo Chen", "Cy Dee")


def test_images_of_main_content_absolute_and_capped() -> None:
    text = "A sentence long enough to count as article prose in the density model. " * 4
    figures = "".join(f'<p>{text}<img src="/i/{n}.jpg" alt="pic {n}"></p>' for n in range(60))
    body = f'<nav><img src="/logo.png"></nav><article>{figures}</article>'
    images = extract(page(body=body), URL).images
    assert len(images) == 50
    assert images[0].src == "https://news.example/i/0.jpg"
    assert images[0].alt == "pic 0"
    assert all("logo" not in image.src for image in images)


_WHATWG_CASES = [
    ("\\2024\\other", "https://news.example/2024/other"),  # backslashes are slashes
    ("/a b", "https://news.example/a%20b"),  # a space is percent-encoded
    ("//B\u00dcCHER.example/x", "https://xn--bcher-kva.example/x"),  # IDNA host
    ("http:other.example/x", "http://other.example/x"),  # another scheme names a host
    ("//news.example:443/a", "https://news.example/a"),  # the default port is dropped
]


@pytest.mark.parametrize(("href", "expected"), _WHATWG_CASES)
def test_canonical_resolves_as_links_do(href: str, expected: str) -> None:
    content = extract(page(f'<link rel="canonical" href="{href}">'), URL)
    assert content.canonical == expected
    assert content.canonical == Resolver(URL).resolve(href)


@pytest.mark.parametrize(("href", "expected"), _WHATWG_CASES)
def test_images_resolve_as_links_do(href: str, expected: str) -> None:
    text = "A sentence long enough to count as article prose in the density model. " * 4
    body = f'<article><p>{text}<img src="{href}" alt="pic"></p></article>'
    assert [image.src for image in extract(page(body=body), URL).images] == [expected]


def test_page_without_metadata_has_nulls() -> None:
    content = extract("<p>Just text.</p>", URL)
    assert content.lang is None
    assert content.description is None
    assert content.canonical is None
    assert content.published is None
    assert content.authors == ()
    assert content.images == ()
    record = content.as_record()
    assert record["authors"] == [] and record["images"] == []


def test_broken_json_ld_is_ignored() -> None:
    head = (
        '<script type="application/ld+json">{"datePublished": </script>'
        '<script type="application/ld+json">' + "[" * 100_000 + "</script>"
        '<script type="application/ld+json">{"datePublished": "not a date", "author": 7}</script>'
    )
    content = extract(page(head), URL)
    assert content.published is None
    assert content.authors == ()


def test_hostile_pages_are_bounded() -> None:
    deep = "<div>" * 50_000 + "<p>deep text</p>" + "</div>" * 50_000
    huge = "<p>" + "word " * 2_000_000 + "</p>"
    for markup in (deep, huge, "<<<>>><p", "", "\x00\x00<html lang=\x00>"):
        start = time.process_time()
        extract(markup, URL)
        assert time.process_time() - start < 10


def test_non_utf8_bytes() -> None:
    body = '<html><head><meta charset="windows-1252"></head><body><p>caf\xe9 cr\xe8me</p>'
    content = extract(body.encode("cp1252") + b"\xff\xfe\x81", URL)
    assert "café crème" in content.text


_SEVEN_SELECTORS = (
    'meta[content], link[rel][href], script[type="application/ld+json"], '
    "[itemprop=datePublished], time[datetime], [rel~=author], [itemprop=author]"
)
"""The marks as seven plain selectors: what `meta.gather`'s one query must select."""


def test_gather_selects_what_the_seven_plain_selectors_do() -> None:
    """Equivalence on a page with every kind of mark, near misses and their mixes."""
    head = (
        '<meta name="description" content="d"><meta name="x"><link rel="canonical" href="/c">'
        '<link rel="stylesheet"><script type="application/ld+json">{}</script>'
        '<script type="text/javascript">1</script><meta itemprop="datePublished" content="z">'
    )
    body = (
        '<span itemprop="datePublished">a</span><span itemprop="DATEPUBLISHED">b</span>'
        '<span itemprop="datePublished dateCreated">c</span><span itemprop="author">d</span>'
        '<div itemprop="name">e</div><time datetime="2020-01-02">f</time><time>g</time>'
        '<a rel="author" href="/me">h</a><a rel="nofollow author">i</a><a rel="nofollow">j</a>'
        '<time itemprop="author" datetime="x" rel="author">k</time><p itemprop>l</p>'
    ) * 3
    tree = LexborHTMLParser(page(head, body))
    expected = tree.css(_SEVEN_SELECTORS)
    assert len(expected) > 20
    assert [n.html for n in tree.css(meta._MARKS)] == [n.html for n in expected]
    assert len(meta.gather(tree).dated) == 3


_EVERY_MARK = page(
    '<meta name="description" content="first"><meta name="description" content="second">'
    '<meta property="og:locale" content="de_DE"><meta name="author" content="Ann Lee">'
    '<meta itemprop="datePublished" content="2021-03-04"><meta name="empty" content="">'
    '<link rel="stylesheet" href="/s.css"><link rel="Author" href="/about">'
    '<link rel="alternate canonical" href="/canon?x=1#f"><link rel="canonical" href="/second">'
    '<script type="application/ld+json">{"author": {"name": "Bo Chen"}}</script>',
    '<p>Text.</p><span itemprop="author">Cy Diaz</span><time datetime="2020-01-02">t</time>'
    '<svg><link rel="canonical" href="/in-svg"></svg><a rel="author" href="/me">Di Eng</a>'
    '<meta name="keywords" content="late">',
)
"""A page with every kind of mark, a second of some, near misses and one element that two
selectors of the query match (the ``<link rel=author>``)."""


def test_extract_with_the_parse_reads_the_metadata_its_own_query_does() -> None:
    """The meta elements and the canonical link the parse's walk for links found stand for
    the query's: every field the same, with far fewer elements for the query to look for."""
    parsed = parse_html(_EVERY_MARK.encode(), URL)
    assert parsed.tree is not None and parsed.metas is not None
    alone = extract(_EVERY_MARK, URL)
    assert extract(parsed.tree, URL, parsed=parsed) == alone
    assert alone.canonical == "https://news.example/canon?x=1"
    assert alone.authors == ("Ann Lee", "Bo Chen", "Cy Diaz", "Di Eng")
    with_parse, own = meta.gather(parsed.tree, parsed), meta.gather(parsed.tree)
    assert with_parse.metas == own.metas and with_parse.metas["keywords"] == "late"
    assert with_parse.canonical is not None and own.canonical is not None
    assert with_parse.canonical.html == own.canonical.html
    assert len(with_parse.bylines) == 3 and len(own.bylines) == 4  # the link, once


def test_gather_reads_the_meta_elements_of_the_parse() -> None:
    """Given the parse, the query leaves meta elements out: they come from the parse (here
    one that found none); past `MAX_MARKS` of them the query reads them itself."""
    tree = LexborHTMLParser(_EVERY_MARK)
    found = parse_html(_EVERY_MARK.encode(), URL)
    none = replace(found, metas=(), canonical_link=None)
    assert meta.gather(tree, none).metas == {}
    assert meta.gather(tree, none).canonical is None
    many = page("".join(f'<meta name="n{i}" content="{i}">' for i in range(meta.MAX_MARKS + 1)))
    parsed = parse_html(many.encode(), URL)
    assert parsed.tree is not None and parsed.metas is not None
    assert len(parsed.metas) > meta.MAX_MARKS
    assert len(meta.gather(parsed.tree, parsed).metas) == meta.MAX_MARKS


_NEAR_MISSES = (
    '<script type="application/ld+json" id=a>{}</script><script type="Application/LD+JSON" id=b>'
    '1</script><script type=" application/ld+json" id=c>1</script><script id=d>1</script>'
    '<svg><script type="application/ld+json" id=e>1</script><g itemprop="author" id=f></g>'
    '<time datetime="1" id=g></time><a rel="author" id=h></a></svg>'
    '<p itemprop="DATEPUBLISHED" id=i>x</p><p itemprop="Author" id=j>x</p>'
    '<p ITEMPROP="author" id=k>x</p><p itemprop="author name" id=l>x</p><p itemprop id=m>x</p>'
    '<a rel="AUTHOR" id=n>x</a><a rel="x\tauthor\x0cy" id=o>x</a><a rel="x\x0bauthor" id=p>x</a>'
    '<a rel="x\u00a0author" id=q>x</a><a rel="" id=r>x</a><a rel="authors" id=s>x</a>'
    '<TIME DATETIME="" id=t>x</TIME><time id=u>x</time><template><time datetime="1" id=v></time>'
    '</template><math><a rel="author" id=w></a></math>'
    '<time itemprop="datePublished" datetime="2020-01-02" rel="author" id=x>y</time>'
    '<script type="application/ld+json" itemprop="author" rel="nofollow author" id=y>{}</script>'
    '<svg><g rel="AUTHOR" id=z1></g><script type="APPLICATION/LD+JSON" id=z2></script>'
    '<script xlink:type="application/ld+json" id=z3></script><foreignObject>'
    '<p rel="Author" id=z4>x</p></foreignObject><script type="x" xlink:type="application/ld+json"'
    ' id=z5></script><script type="application/ld+json" xlink:type="application/ld+json" id=z6>'
    '</script></svg><math><mi rel="Author" id=z7></mi></math>'
    '<script xlink:type="application/ld+json" id=z8></script>'
)
"""Each selector's near misses (case, spaces, namespaces, a template's content) and elements
that several selectors match: on HTML elements a type's and a rel's ASCII case is ignored, on
SVG's and MathML's not; an SVG element's xlink:type is a type, read when it comes first
(lexbor reads an element's first attribute of a name)."""


def _varied_pages(count: int, seed: int = 28) -> list[str]:
    """``count`` pages of random tags, attributes and values around the four selectors (their
    names and words in several cases, joined by every kind of space, in and out of <svg>,
    <math>, <template>, tables and raw text elements), as hostile markup is."""
    rnd = random.Random(seed)
    tags = "p a time TIME script Script svg math template g div foreignObject mi annotation-xml"
    tags += " table tr td select option noscript textarea title style frameset html body head"
    names = "itemprop ITEMPROP rel REL type TYPE datetime DateTime xlink:type xml:lang id x:rel"
    words = "author AUTHOR Author datePublished DATEPUBLISHED application/ld+json "
    words += "APPLICATION/LD+JSON authors x nofollow \u212a \u0130author"
    spaces = [" ", "\t", "\n", "\f", "\r", "\v", "\u00a0", "\u3000"]
    pages = []
    for _ in range(count):
        parts = []
        for _ in range(rnd.randint(1, 80)):
            tag = rnd.choice(tags.split())
            if rnd.random() < 0.25:
                parts.append(f"</{tag}>")
                continue
            attrs = []
            for _ in range(rnd.randint(0, 4)):
                value = rnd.choice(spaces).join(rnd.choices(words.split(), k=rnd.randint(1, 2)))
                attrs.append(f'{rnd.choice(names.split())}="{value}"')
            parts.append(f"<{tag} {' '.join(attrs)}>t")
        pages.append("".join(parts))
    return pages


def _ids(nodes: list[LexborNode]) -> list[int]:
    return [node.mem_id for node in nodes]


@pytest.mark.skipif(meta.MARKS is None, reason="the C search of marks is not built")
def test_the_c_search_of_marks_finds_what_lexbors_query_does() -> None:
    """In document order, each element once per selector it matches, at most `MAX_MARKS`."""
    tree = LexborHTMLParser(f'<html rel="author" id=root><body>{_NEAR_MISSES * 2}')
    expected = [n.attributes.get("id") for n in meta._other_marks(tree, native=False)]
    assert [n.attributes.get("id") for n in meta._other_marks(tree)] == expected
    assert expected.count("x") == 6 and "v" not in expected and expected[0] == "root"
    assert {"z3", "z4", "z6"} <= set(expected)
    assert not {"z1", "z2", "z5", "z7", "z8"} & set(expected)
    many = LexborHTMLParser(page(body='<time datetime="1" rel="author">t</time>' * 1500))
    assert (
        len(meta._other_marks(many)) == meta.MAX_MARKS == len(meta._other_marks(many, native=False))
    )


@pytest.mark.skipif(meta.MARKS is None, reason="the C search of marks is not built")
def test_the_c_search_of_marks_on_varied_and_deep_markup() -> None:
    """The same nodes as lexbor's query on random pages around the selectors, and on a
    100,000-deep nesting (no recursion) and an element of 50,000 attributes."""
    marks = meta.MARKS
    assert marks is not None
    deep = '<span itemprop="author">' * 100_000 + "<svg>" + '<g rel="author">' * 1000
    wide = "<p " + " ".join(f"a{i}=x" for i in range(50_000)) + " itemprop=author rel=author>"
    found = 0
    for html in [*_varied_pages(300), deep, wide]:
        tree = LexborHTMLParser(html)
        assert tree.root is not None
        expected = _ids(tree.css(meta._OTHER_MARKS))
        assert _ids(marks.read(tree.root, 10**9)) == expected, html
        found += len(expected)
    assert found > 100_000


@pytest.mark.skipif(meta.MARKS is None, reason="the C search of marks is not built")
def test_the_c_search_of_marks_takes_an_element_of_a_parsed_document() -> None:
    marks = meta.MARKS
    assert marks is not None
    tree = LexborHTMLParser("<p itemprop=author>")
    for wrong in (tree, None, 0, "<p>"):
        with pytest.raises(TypeError):
            marks.read(wrong, 10)
    with pytest.raises(ValueError):
        marks.read(LexborNode.__new__(LexborNode), 10)
    assert marks.read(tree.root, 0) == []


def test_the_marks_fall_back_to_lexbors_query_where_the_c_search_does_not_run() -> None:
    """Unbuilt, turned off (``GOSSAMER_NATIVE=0``) or not binding (a module whose bind
    refuses), the query runs, with the same metadata."""

    class Refusing:
        def bind(self, *told: object) -> None:
            raise ImportError("another layout")

    assert native.bound(Refusing()) is None  # type: ignore[arg-type]
    script = (
        "import sys; from selectolax.lexbor import LexborHTMLParser; from gossamer.extract"
        " import meta; from gossamer.parse import native;"
        "m = meta.gather(LexborHTMLParser(sys.stdin.read()));"
        "print(meta.MARKS is None, native.in_use()['marks'], m.json_ld,"
        " [[n.html for n in ns] for ns in (m.dated, m.times, m.bylines)])"
    )
    body = page(_NEAR_MISSES, _NEAR_MISSES)
    outputs = []
    for flag in ("0", "1"):
        env = {**os.environ, "GOSSAMER_NATIVE": flag, "PYTHONPATH": _SOURCE}
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=body,
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=60,
        )
        outputs.append(done.stdout.split(" ", 2))
    assert outputs[0][:2] == ["True", "False"]
    assert outputs[0][2] == outputs[1][2] and "z4" in outputs[0][2]

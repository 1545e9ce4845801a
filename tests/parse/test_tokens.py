"""A page read from lexbor's tokens alone (``parse/_tokens.c``, `parse_tokens`) reads what
the tree gives (`parse_html`): the same links in the same order, counts, title, robots meta
tags, base and canonical link, on hand-made edge cases, on generated markup, on the test
web's pages and on real documentation sets; it leaves to the tree what it cannot read alike,
and differs only where its doc says (an element the tree builder moves or copies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gossamer.page import sandboxed
from gossamer.page.canonical import _within, tag_canonical
from gossamer.page.directives import meta_directives
from gossamer.parse import native
from gossamer.parse.links import ParsedPage, parse_html, parse_tokens

pytestmark = pytest.mark.skipif(
    native.TOKENS is None, reason="the C reading of tokens was not built (setup.py)"
)

URL = "http://example.com/dir/page.html"
_FIELDS = ("title", "links", "nofollow_links", "meta_nofollow", "meta_noindex", "base_url")
_FIELDS += ("text_encoding", "flags", "names_canonical")
DOC_SETS = [
    Path("/usr/share/doc/python3-doc/html"),
    Path("/usr/share/doc/postgresql-doc-15/html"),
    Path("/usr/share/doc/sqlite3"),
    Path("/usr/share/doc/git-doc"),
]
_UNPACKED = Path(__file__).resolve().parents[2] / "bench-out" / "debs" / "root"
"""Where ``benchmarks/realweb.py`` unpacks the documentation packages it cannot install."""


def fields(page: ParsedPage) -> dict[str, object]:
    found = {name: getattr(page, name) for name in _FIELDS}
    found["metas"] = [meta.attributes for meta in page.metas or ()]
    return found


def assert_pieces_alike(body: bytes, *, honour_nofollow: bool) -> None:
    """The tokens read in pieces (under a budget, `parse_tokens`' ``budget``) read as in one:
    lexbor takes a stream's pieces, the tokens that span two included (a piece ends before its
    last ``<``, so that a ``<![CDATA[`` comes whole: pieces of 9 bytes at least)."""
    assert native.TOKENS is not None
    whole = native.TOKENS.read(body, honour_nofollow)
    for piece in (9, 17, 61, 4093) if len(body) < 65536 else (17, 4093):
        assert native.TOKENS.read(body, honour_nofollow, 1e9, piece) == whole, (piece, body[:300])


def assert_same(body: bytes, url: str = URL, *, counts: bool = True) -> bool:
    """The token reading equals the tree's, for both nofollow settings; False when the
    tokens left the page to the tree. Without ``counts``, ``nofollow_links`` may differ (the
    tree builder's copies of an ``<a>`` count there)."""
    for follow in (False, True):
        assert_pieces_alike(body, honour_nofollow=not follow)
        tree = parse_html(body, url, follow_nofollow=follow, guarded=False)
        read = parse_tokens(body, url, follow_nofollow=follow)
        if read is None:
            return False
        expected, found = fields(tree), fields(read.page)
        if not counts:
            del expected["nofollow_links"], found["nofollow_links"]
        assert found == expected, body[:300]
        assert read.page.tree is None and read.page.canonical_link is None
        assert (read.canonical is not None) is bool(tree.names_canonical)
        if tree.tree is None or read.canonical is None:
            continue
        href, _, in_head = read.canonical
        assert tree.canonical_link is not None
        assert href == tree.canonical_link.attributes.get("href")
        head = tree.tree.head
        assert in_head is (head is not None and _within(tree.canonical_link, head.mem_id))
        reading = sandboxed.read_tokens(body, url, None, follow, "gossamer", 0.0)
        if reading is not None:
            assert reading.canonical == tag_canonical(tree.tree, tree.base_url, tree.canonical_link)
            assert reading.robots == meta_directives(tree.tree, "gossamer", 0.0, tree.metas)
    return True


EDGES = [
    "",
    "<a href=x>",
    '<a href="x" rel="NoFollow">a</a><a href=x>b</a><a href=y rel="">c</a><a href=z rel>d</a>',
    "<a href=x rel='nofollow\u00a0ugc'>nbsp</a><a href=y rel='NOFOLLOW\u212a'>k</a>",
    "<link rel=stylesheet href=s><link rel='next' href=n><link rel=ALTERNATE href=a>"
    "<link rel='canonical next' href=c><link rel=canonical href=c2><link href=plain>",
    "<base><base href=first><base href=second><meta name=robots content=nofollow>",
    "<meta href=m name=x><meta><svg><meta></svg>",
    "<svg><a xlink:href=y>svg</a><a href=z>z</a><use href=u></use></svg>",
    "<math><a href=m>m</a></math><template><a href=hidden></a></template>",
    "<area href=area1><area href=area1 rel=nofollow><div href=not-a-link>",
    "<a href='&#xD800;bad'>x</a><a href='caf\u00e9'>y</a><a href='\U0001f600'>z</a>",
    "<noscript><a href=ns>n</a></noscript><iframe><a href=inside></iframe>",
    "<a HREF=upper REL=NOFOLLOW>x</a><a href=dup href=second>y</a>",
    "<script>document.write('<a href=s>')</script><style><a href=st></style>"
    "<textarea><a href=ta></textarea><xmp><a href=x></xmp><noembed><a href=ne></noembed>"
    "<noframes><a href=nf></noframes><title><a href=t></title><a href=after>",
    "<plaintext><a href=never>",
    "<svg><p><style><a href=raw></style><a href=broke-out></svg>",
    "<svg><font color=red><style><a href=raw></style></font></svg>",
    "<svg><font><style><a href=svg></style></font></svg>",
    "<svg><g><a href=1></svg><style><a href=raw></style><a href=2>",
    "<svg><title>Logo</title><desc>d</desc><foreignObject><div><a href=f>f</a></div>"
    "</foreignObject><style>.a{}</style></svg><style><a href=raw></style><a href=after>",
    "<math><mi><b>x</b></mi><mtext><i>t</i></mtext></math><title>T</title><a href=m>",
    "<template><style><a href=t></style><a href=hidden></template><a href=shown>",
    "<template><template></template><a href=inner></template><a href=outer>",
    "<head><title> Two  words\n here </title><title>second</title></head>",
    "<title>a &amp; b &lt;c&gt;</title>",
    "<svg><title>svg title</title></svg><title>page title</title>",
    "<template><title>in template</title></template><title>page</title>",
    "<title></title><title>second</title>",
    "<title>   </title>",
    "<title>" + "long title " * 400 + "</title>",
    "<title>unclosed <a href=x>",
    "<html><head><link rel=canonical href=/c></head><body><a href=x></body>",
    "<head><noscript><img src=pixel></noscript><link rel=canonical href=/c></head>",
    "<head><noscript><link rel=stylesheet href=s></noscript><link rel=canonical href=/c>",
    "<head></head><link rel=canonical href=/after-head><body>",
    "<head></head>text<link rel=canonical href=/body>",
    "<p>text<link rel=canonical href=c>",
    "<link rel=canonical href=''><link rel=canonical href=/second>",
    "<link rel=canonical><link rel=canonical href=/second>",
    "<link rel='canonical\u00a0x' href=/odd>",
    "<template><link rel=canonical href=/t></template><link rel=canonical href=/c>",
    "<meta name=robots content='noindex, nofollow'><meta name=GOSSAMER content=noarchive>"
    "<meta http-equiv=X-Robots-Tag content=noindex>",
    "<meta name content='' name=b NAME=c x-Y=1>",
    "<base href=/b/><a href=rel>",
    "<base href='javascript:x'><a href=rel>",
    "<select><a href=x>y</a><option><a href=z>o</select>",
    "<!doctype html><!-- <a href=comment> --><a href=real><![CDATA[<a href=cdata>]]>",
    "<a href=x" + " y" * 50,
    "<a href='\t\n http://other.test/x \n'>",
    "<a href='\x00x'><a href=x rel='\x00nofollow'><meta name=robots content='\x00'>",
    "<title>a\x00b</title>",
    "<head><script><a href=x></script><title>t</title><title><b>2</b></title>"
    "<style>p{}</style><link rel=canonical href=/c>",
    "<head></head><noscript></noscript><link rel=canonical href=/c>",
    "<head></head><link rel=canonical href=/c><noscript></noscript>",
    "<template><svg><title>x</template><meta name=robots content=noindex><a href=/x>",
    "<svg><title><span>Logo</span></title><style><a href=s></style></svg><a href=after>",
    "<svg><foreignObject><p>x</p></foreignObject></svg><title>T</title>",
    "<a href=x rel=nofollow href=y rel=next>a</a><link rel=next href=n rel=canonical>",
    "<meta name=robots name=other content=noindex content=x>",
    "<svg><link xlink:href=/q rel=canonical></svg>",
    "<a " + " ".join(f"x{i}=1" for i in range(3000)) + " href=bomb>",
]


@pytest.mark.parametrize("document", EDGES)
def test_edge_cases_read_alike(document: str) -> None:
    assert assert_same(document.encode())


def test_invalid_utf8_and_other_encodings_read_alike() -> None:
    assert assert_same(b"<a href='\xff\xfe'>x</a><a href=y rel='no\xc3follow'>y</a>")
    latin = "<meta charset=windows-1252><title>caf\u00e9 \u2013 d\u00e9j\u00e0</title>"
    latin += "<a href=\u00e9>"
    assert assert_same(latin.encode("windows-1252"))
    assert assert_same(b"\xef\xbb\xbf<title>BOM</title><a href=b>")
    assert assert_same("<title>\u00e9</title><a href=x>".encode("utf-16"))


LEFT_TO_THE_TREE = [
    "<frameset><a href=q></frameset>",
    "<title>" + "x" * 70_000 + "</title>",
    "<svg><foreignObject><svg><a href=x></svg></foreignObject></svg>",
    "<svg>" + "<g>" * 300 + "<a href=deep>",
    "<svg><foreignObject><template><p>t</p></template></foreignObject></svg><a href=/x>",
    "<math><mi><template></template></mi></math><link rel=canonical href=/c><a href=/x>",
    "<svg><title><span>Logo</title><style>/*<meta name=robots content=nofollow>*/</style></svg>",
    "<svg><foreignObject><p>label</foreignObject></svg><title>T</title>",
    "<template><col><title></template><meta name=robots content=noindex><a href=/x>",
    "<math><annotation-xml encoding=text/html><style><a href=/x></style></annotation-xml></math>",
    "<math><title>X</title></math><title>Y</title>",
    "<math><mi><title>X</title></mi></math><title>Y</title>",
    "<select><button><selectedcontent></selectedcontent></button><option>o</option></select>",
    "<svg><style><![CDATA[.a{}]]></style></svg><script>" + "<x a=1>" * 10 + "</script>",
    "<svg><style><a href=svg-style></a></style><title><a href=t></title></svg><a href=out>",
    "<svg><foreignObject><style><a href=raw></style><a href=island></foreignObject></svg>",
    "<math><mi><script><a href=raw></script></mi><mtext><a href=m></mtext></math>",
]


@pytest.mark.parametrize("document", LEFT_TO_THE_TREE)
def test_what_the_tokens_cannot_read_alike_is_left_to_the_tree(document: str) -> None:
    assert parse_tokens(document.encode(), URL) is None


def test_the_page_stage_reads_the_head_as_the_tree_does() -> None:
    """`read_tokens` gives the directives and canonical URL of the tree, or None where the
    head's search decides."""
    body = (
        b"<html><head><title>T</title><meta name=robots content='noindex,noarchive'>"
        b"<link rel=canonical href=/c></head><body><a href=x>a</a></body></html>"
    )
    reading = sandboxed.read_tokens(body, URL, None, False, "gossamer", 0.0)
    assert reading is not None and reading.content is None
    assert reading.canonical == "http://example.com/c"
    assert reading.robots.noindex and reading.robots.noarchive and not reading.robots.nofollow
    assert reading.parsed.meta_noindex and reading.parsed.links == ["http://example.com/dir/x"]
    in_body = b"<p>x<link rel=canonical href=/c>"
    assert sandboxed.read_tokens(in_body, URL, None, False, "gossamer", 0.0) is None
    metas = b"<meta name=x>" * 1001
    assert sandboxed.read_tokens(metas, URL, None, False, "gossamer", 0.0) is None


def test_where_the_tree_builder_moves_or_copies_elements_the_tokens_keep_them_as_written() -> None:
    """The differences the module doc states, kept so that they change knowingly."""
    fostered = b"<table><tr><td><a href=cell></td></tr><a href=foster></table>"
    tree, read = parse_html(fostered, URL), parse_tokens(fostered, URL)
    assert read is not None
    assert tree.links == ["http://example.com/dir/foster", "http://example.com/dir/cell"]
    assert read.page.links == ["http://example.com/dir/cell", "http://example.com/dir/foster"]
    copied = b"<meta name=robots content=nofollow><p><a href=x>one</p><p>two"
    tree, read = parse_html(copied, URL), parse_tokens(copied, URL)
    assert read is not None and tree.links == read.page.links == []
    assert (tree.nofollow_links, read.page.nofollow_links) == (2, 1)


_PIECES = st.sampled_from(
    [
        "<a href=x>",
        "<a href=y rel=nofollow>",
        "</a>",
        "<area href=x>",
        "<link rel=canonical href=c>",
        "<link rel=next href=n>",
        "<link rel=stylesheet href=s>",
        "<meta name=robots content=nofollow>",
        "<meta name=robots content=noindex>",
        "<base href=b/>",
        "<title>",
        "</title>",
        "<head>",
        "</head>",
        "<body>",
        "<noscript>",
        "</noscript>",
        "<svg>",
        "</svg>",
        "<math>",
        "<mi>",
        "<foreignObject>",
        "</foreignObject>",
        "<template>",
        "</template>",
        "<style>",
        "</style>",
        "<script>",
        "</script>",
        "<textarea>",
        "</textarea>",
        "<div>",
        "<p>",
        "<span>",
        "<img>",
        "<br/>",
        "text",
        " ",
        "<!--",
        "-->",
        "<a href=",
        "'q'",
        ">",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_generated_markup_reads_alike(pieces: list[str]) -> None:
    """Markup of the pieces that decide where the tree's elements go (no table: its
    elements the tree builder moves, see the test above; an ``<a>`` left open it copies,
    which only ``nofollow_links`` counts)."""
    assert_same("".join(pieces).encode(), counts=False)


def test_the_test_webs_pages_read_alike() -> None:
    """The generated web the crawl's own tests use (small and big pages)."""
    from gossamer.testweb.site import generate

    for big in (False, True):
        web = generate(seed=7, hosts=2, pages_per_host=60, big_pages=big)
        for name, host in web.hosts.items():
            for path in host.pages:
                body = web.render_page(name, path, 8080).encode()
                assert assert_same(body, f"http://{name}:8080{path}")


def _doc_sets() -> list[Path]:
    found = []
    for path in DOC_SETS:
        unpacked = _UNPACKED / path.relative_to("/")
        found += [path] if path.is_dir() else [unpacked] if unpacked.is_dir() else []
    return found


@pytest.mark.skipif(not _doc_sets(), reason="no documentation package is installed")
def test_real_documentation_sets_read_alike() -> None:
    files = [file for path in _doc_sets() for file in sorted(path.rglob("*.htm*"))]
    assert len(files) > 100
    for file in files[::2]:
        assert assert_same(file.read_bytes(), "http://docs.test/a/b.html"), file


def test_a_budget_ends_the_tokenizer_on_markup_that_costs_it_more_than_its_length() -> None:
    """lexbor's tokenizer is quadratic in distinct attribute names (its hash table of names
    never grows): 1 MB of them costs it some 0.35 s; under a budget of 10 ms it stops within a
    piece of that and says None, and an ordinary page of that size reads within it."""
    import time

    names = "".join(f"<br a{i}=1>" for i in range(90_000)).encode()
    started = time.thread_time()
    assert parse_tokens(names, URL, budget=0.01) is None
    assert time.thread_time() - started < 0.15
    ordinary = b'<p>text <a href="/x">x</a></p>' * 30_000
    read = parse_tokens(ordinary, URL, budget=0.5)
    assert read is not None and read.page.links == ["http://example.com/x"]
    assert parse_tokens(names, URL) is not None  # unbounded, it reads on


@pytest.mark.parametrize("cut", range(14))
def test_a_cdata_section_read_in_pieces_reads_as_whole(cut: int) -> None:
    """lexbor reads a ``<![CDATA[`` cut between two pieces as other markup (its content then
    markup: a link the tree never has); a piece ends before its last ``<`` instead."""
    assert native.TOKENS is not None
    piece = 64
    body = b"x" * (piece - cut) + b"<svg><![CDATA[</svg><a href=/evil>]]></svg><a href=/good>"
    body += b"<p>" * 100
    whole = native.TOKENS.read(body, True)
    assert native.TOKENS.read(body, True, 1e9, piece) == whole
    assert parse_tokens(body, URL, budget=1.0) is None  # the tree reads CDATA in SVG


def test_what_a_budget_cannot_bound_is_left_to_the_worker() -> None:
    """Under a budget the tokens answer None, before the work, for a body not in UTF-8 (its
    decoding: 4 MB of bytes GB18030 leaves undefined took 1 s), too many distinct references
    (each one resolved), and metas of more than 64 KiB (a robots meta's directives
    are read word by word); without one, they read on."""
    import time

    from gossamer.parse.links import BUDGET_MAX_CHARS, BUDGET_MAX_REFERENCES

    undefined = b'<meta charset=gbk><a href="x">x</a>' + b"\x80" * 300_000
    references = b"".join(
        b'<a href="mailto:%d">x</a>' % n for n in range(BUDGET_MAX_REFERENCES + 1)
    )
    directives = "İ,".encode() * (BUDGET_MAX_CHARS // 2 + 1)
    robots = b'<meta name=robots content="' + directives + b'"><a href="x">x</a>'
    for body in (undefined, references, robots):
        started = time.thread_time()
        assert parse_tokens(body, URL, budget=1.0) is None
        assert time.thread_time() - started < 0.5
        assert parse_tokens(body, URL) is not None
    ordinary = b'<meta name=robots content="noindex"><a href="x">x</a>' * 1000
    read = parse_tokens(ordinary, URL, budget=1.0)
    assert read is not None and read.page.meta_noindex and read.page.links

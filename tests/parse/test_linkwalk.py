"""The C search for a page's links (``parse/_linkwalk.c``) reads exactly what the Python one
reads: the same links in the same order, the same counts, the same meta, base and canonical
elements, on hand-made edge cases, on generated markup and on a real documentation set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.parse import native
from gossamer.parse.links import _Nodes, parse_html, read_nodes

pytestmark = pytest.mark.skipif(
    native.LINKWALK is None, reason="the C search for links was not built (setup.py)"
)

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")


def reading(tree: LexborHTMLParser, *, honour: bool, native_walk: bool) -> tuple[object, ...]:
    """Everything `read_nodes` gives, nodes by address."""
    anchors: list[tuple[LexborNode, str]] = []
    nodes: _Nodes = read_nodes(tree, honour_nofollow=honour, anchors=anchors, native=native_walk)

    def at(node: LexborNode | None) -> int | None:
        return None if node is None else node.mem_id

    return (
        nodes.hrefs,
        nodes.eligible,
        nodes.rel_nofollow,
        [meta.mem_id for meta in nodes.metas],
        at(nodes.base),
        at(nodes.canonical),
        [(node.mem_id, href) for node, href in anchors],
    )


def assert_same(document: str | bytes) -> None:
    tree = LexborHTMLParser(document)
    for honour in (True, False):
        expected = reading(tree, honour=honour, native_walk=False)
        assert reading(tree, honour=honour, native_walk=True) == expected, document


EDGES = [
    "",
    "<a href=x>",
    "<html href=root><a href=x></a>",
    '<a href="x" rel="NoFollow">a</a><a href=x>b</a><a href=y rel="">c</a><a href=z rel>d</a>',
    "<a href=x rel='nofollow\u00a0ugc'>non-breaking space</a><a href=y rel='NOFOLLOW\u212a'>k</a>",
    "<a href=x rel='\u0130nofollow'>dotted capital I</a><a href=w rel='nofollow\x1c'>",
    "<a href=x rel='averyveryverylongwordindeed nofollow'>",
    "<link rel=stylesheet href=s><link rel='next' href=n><link rel=ALTERNATE href=a>"
    "<link rel='canonical next' href=c><link rel=canonical href=c2><link href=plain>",
    "<link rel=stylesheet href=s><link rel='alternate stylesheet' href=as>",
    "<base><base href=first><base href=second><meta name=robots content=nofollow>",
    "<meta href=m name=x><meta><svg><meta></svg>",
    "<svg><a xlink:href=y>svg</a><a href=z>z</a><use href=u></use></svg>",
    "<math><a href=m>m</a></math><template><a href=hidden></a></template>",
    "<area href=area1><area href=area1 rel=nofollow><div href=not-a-link>",
    "<a href='&#xD800;bad'>x</a><a href='caf\u00e9'>y</a><a href='\U0001f600'>z</a>",
    "<p><a href=1><b><a href=2>nested</a></b></a></p>" * 3,
    "<table><a href=foster>x</a><tr><td><a href=cell>y</td></tr></table>",
    "<noscript><a href=ns>n</a></noscript><iframe><a href=inside></iframe>",
    "<a HREF=upper REL=NOFOLLOW>x</a><a href=dup href=second>y</a>",
]


@pytest.mark.parametrize("document", EDGES)
def test_edge_cases_read_alike(document: str) -> None:
    assert_same(document)


def test_invalid_utf8_reads_alike() -> None:
    assert_same(b"<a href='\xff\xfe'>x</a><a href=y rel='no\xc3follow'>y</a>")


_PIECES = st.sampled_from(
    [
        "<a href=x>",
        "<a href=y rel=nofollow>",
        "<a rel=next>",
        "</a>",
        "<area href=x>",
        "<link rel=canonical href=c>",
        "<link rel=next href=n>",
        "<link rel=stylesheet href=s>",
        "<meta name=robots content=nofollow>",
        "<base href=b/>",
        "<base>",
        "<svg>",
        "</svg>",
        "<template>",
        "</template>",
        "<table>",
        "<td>",
        "<p>",
        "<b>",
        "text",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "<a href=",
        "'q'",
        ">",
        "<div href=d>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_generated_markup_reads_alike(pieces: list[str]) -> None:
    assert_same("".join(pieces))


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3-doc is not installed")
def test_a_real_documentation_set_reads_alike() -> None:
    files = sorted(PYTHON_DOCS.rglob("*.html"))[::3]
    assert len(files) > 100
    for file in files:
        assert_same(file.read_bytes())


def test_parse_html_gives_the_same_page_either_way() -> None:
    body = (
        b"<html><head><title>T</title><meta name=robots content=noindex>"
        b"<link rel=canonical href=/c><base href=/b/></head><body>"
        b"<a href=x>a</a><a href=y rel=nofollow>b</a><link rel=next href=n></body></html>"
    )
    script = (
        "import sys; from gossamer.parse.links import parse_html;"
        "p = parse_html(sys.stdin.buffer.read(), 'http://h/p');"
        "print(p.links, p.nofollow_links, p.meta_noindex, p.canonical_link is not None,"
        " p.base_url, p.title)"
    )
    outputs = []
    for flag in ("0", "1"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=body,
            capture_output=True,
            env={"GOSSAMER_NATIVE": flag, "PATH": "/usr/bin:/bin"},
            check=True,
            timeout=60,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    page = parse_html(body, "http://h/p")
    assert page.links == ["http://h/b/x", "http://h/b/n"]
    assert page.nofollow_links == 1 and page.meta_noindex


def test_the_walk_takes_the_root_element_never_an_address() -> None:
    """`read` takes the node and its tree from the <html> LexborNode itself: a number (an
    address, maybe of a freed tree: read as if it were a tree before) or an object of another
    type is refused, as is a node of no tree."""
    walk = native.LINKWALK
    assert walk is not None
    tree = LexborHTMLParser("<a href=x rel=nofollow><a href=y>")
    root = tree.root
    assert root is not None
    assert walk.read(root, True, None)[:3] == (["y"], 2, 1)
    for wrong in (root.mem_id, 0xDEADBEEF, "<a href=x>", tree, None):
        with pytest.raises(TypeError):
            walk.read(wrong, True, None)
    with pytest.raises(ValueError):
        walk.read(LexborNode.__new__(LexborNode), True, None)


def test_bind_checks_the_layout_on_a_node_selectolax_made() -> None:
    """The fields written to the nodes it makes are checked where selectolax put them: a
    node whose address or tree is not where the layout says is refused (before, only the
    size of the type was)."""
    import selectolax.lexbor as lexbor

    walk = native.LINKWALK
    assert walk is not None
    ids = [lexbor.create_tag(name).tag_id for name in ("a", "area", "link", "meta", "base")]
    tree, other = LexborHTMLParser("<p>"), LexborHTMLParser("<p>")
    node = tree.root
    assert node is not None
    for sample, its_tree, address in [
        (node, tree, node.mem_id + 8),
        (node, other, node.mem_id),
        (tree, tree, node.mem_id),
    ]:
        with pytest.raises(ImportError, match="another layout"):
            walk.bind(lexbor.__file__, LexborNode, sample, its_tree, address, *ids)
    walk.bind(lexbor.__file__, LexborNode, node, tree, node.mem_id, *ids)
    assert walk.read(LexborHTMLParser("<a href=x>").root, True, None)[0] == ["x"]

"""The C loop over a page's references (``parse/_resolve.c``) gives exactly what the Python
loop of `_resolve_links` gives: the same links in the same order, whatever the crawl resolved
before, on edge cases, generated references and a real documentation set; it leaks no
reference and passes on what the resolver raises."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gossamer.parse import links
from gossamer.parse.links import _Nodes, _resolve_links, parse_html
from gossamer.urls import _REMEMBERED, MAX_REFERENCE_CHARS, Resolver

pytestmark = pytest.mark.skipif(
    links._RESOLVE is None, reason="the C loop over references was not built (setup.py)"
)

_UNPACKED = Path(__file__).resolve().parents[2] / "bench-out" / "debs" / "root"
PYTHON_DOCS = next(
    (
        root / "usr/share/doc/python3-doc/html"
        for root in (Path("/"), _UNPACKED)  # installed, or unpacked by benchmarks/realweb.py
        if (root / "usr/share/doc/python3-doc/html").is_dir()
    ),
    Path("/usr/share/doc/python3-doc/html"),
)
BASES = [
    "http://h.test/a/b.html?q=1",
    "http://h.test/a/",
    "http://h.test/top.html",
    "https://h.test/a/b.html",
    "http://g.test/",
    "http://u:p@h.test/d/x.html",
]
EDGES = [
    "",
    "#",
    "#top",
    "x.html",
    "x.html#a",
    "x.html#b",
    "x.html #a",
    "x.html\t#a",
    " #f",
    "z.html#",
    "?q=2",
    "?q=2#f",
    "/root",
    "/root#f",
    "\\back",
    "//other.test/p",
    "http://abs.test/p",
    "http://abs.test/p#f",
    "https://abs.test/p",
    "HTTP://abs.test/p",
    "http:",
    "http:/",
    "http:x",
    "https:",
    "https:/",
    "https:x",
    "h",
    "ht",
    "http",
    "https",
    "httpx://a",
    "mailto:a@h.test",
    "javascript:void(0)",
    "http://[::1",
    "caf\u00e9.html#\u00e9t\u00e9",
    "\U0001f600.html",
    "x\udcff.html",
    "a" * MAX_REFERENCE_CHARS,
    "a" * (MAX_REFERENCE_CHARS + 1),
    "http://h.test/a/b.html?q=1",  # the page itself: left out
]


def python_links(hrefs: list[str], base: Resolver, own: str) -> list[str]:
    saved, links._RESOLVE = links._RESOLVE, None
    try:
        return _resolve_links(
            _Nodes(hrefs=hrefs), base, own, honour_nofollow=True, meta_nofollow=False
        )[0]
    finally:
        links._RESOLVE = saved


def c_links(hrefs: list[str], base: Resolver, own: str) -> list[str]:
    return _resolve_links(
        _Nodes(hrefs=hrefs), base, own, honour_nofollow=True, meta_nofollow=False
    )[0]


def forget() -> None:
    _REMEMBERED.absolute.clear()
    _REMEMBERED.by_base.clear()
    _REMEMBERED.size = 0


@pytest.mark.parametrize("first", ["c", "python"])
def test_edge_cases_resolve_alike_cold_and_warm(first: str) -> None:
    """Whichever loop meets the references first (and fills the tables), both give the
    same links, in order, once each, without the page itself."""
    hrefs = EDGES + EDGES[::-1]
    forget()  # once: a page's origin table is a root page's directory table
    for url in BASES + BASES[::-1]:
        order = [c_links, python_links] if first == "c" else [python_links, c_links]
        results = [run(hrefs, Resolver(url), url) for run in order for _ in range(2)]
        assert all(result == results[0] for result in results), url
        assert len(set(results[0])) == len(results[0])
        assert url not in results[0]


def test_a_base_element_resolves_alike() -> None:
    page = "http://h.test/a/b.html"
    base = Resolver("http://cdn.test/x/y/")
    forget()
    assert c_links(EDGES, base, page) == python_links(EDGES, base, page)


def test_the_limit_holds() -> None:
    hrefs = [f"p{i}.html" for i in range(links.MAX_PAGE_LINKS + 50)]
    page = "http://many.test/"
    found = c_links(hrefs, Resolver(page), page)
    assert found == python_links(hrefs, Resolver(page), page)
    assert len(found) == links.MAX_PAGE_LINKS


def test_no_reference_leaks() -> None:
    """A link and the tables' entries keep their reference counts once the result is gone
    (the C loop's counting of borrowed and new references)."""
    page = "http://leak.test/d/p.html"
    resolver = Resolver(page)
    hrefs = ["a.html", "a.html#x", "#top", "/r", "http://abs.test/", "mailto:x"]
    c_links(hrefs, resolver, page)  # remembered now
    tables = resolver.remembered()
    values = [v for table in tables for v in table.values() if v is not None]
    before = [sys.getrefcount(v) for v in values] + [sys.getrefcount(h) for h in hrefs]
    for _ in range(1000):
        c_links(hrefs, resolver, page)
    after = [sys.getrefcount(v) for v in values] + [sys.getrefcount(h) for h in hrefs]
    assert after == before


def test_what_the_resolver_raises_passes_on() -> None:
    class Boom(Exception):
        pass

    def resolve(reference: str) -> str | None:
        raise Boom(reference)

    page = "http://boom.test/"
    absolute, by_root, by_directory = Resolver(page).remembered()
    with pytest.raises(Boom):
        links._RESOLVE.known(
            ["never-seen.html"], page, absolute, by_root, by_directory, set(), 10, 100, resolve
        )
    with pytest.raises(TypeError):
        links._RESOLVE.known(("a",), page, absolute, by_root, by_directory, set(), 10, 100, resolve)


def test_a_string_subclass_goes_to_the_resolver() -> None:
    class Href(str):
        __slots__ = ()

    page = "http://sub.test/d/"
    forget()
    hrefs = [Href("x.html"), "x.html", Href("#f")]
    assert c_links(hrefs, Resolver(page), page) == python_links(hrefs, Resolver(page), page)


REFERENCE = st.one_of(
    st.sampled_from(EDGES),
    st.text(alphabet="ab/#?.:h\\ t%\u00e9", max_size=12),
    st.builds(lambda a, b: a + b, st.sampled_from(["http://", "https://", "/", "#", ""]),
              st.text(alphabet="xyz/#.", max_size=6)),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(REFERENCE, max_size=30), st.sampled_from(BASES), st.booleans())
def test_generated_references_resolve_alike(hrefs: list[str], url: str, cold: bool) -> None:
    if cold:
        forget()
    resolver = Resolver(url)
    assert c_links(hrefs, resolver, url) == python_links(hrefs, resolver, url)


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3-doc is not installed")
def test_a_real_documentation_set_resolves_alike() -> None:
    files = sorted(PYTHON_DOCS.rglob("*.html"))[::7]
    assert len(files) > 50
    for warm in (False, True):
        for file in files:
            url = f"http://docs.test/{file.relative_to(PYTHON_DOCS).as_posix()}"
            body = file.read_bytes()
            if not warm:
                forget()
            saved, links._RESOLVE = links._RESOLVE, None
            try:
                expected = parse_html(body, url).links
            finally:
                links._RESOLVE = saved
            assert parse_html(body, url).links == expected, url

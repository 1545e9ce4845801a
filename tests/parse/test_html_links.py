"""Link, title and meta-robots extraction by gossamer.parse.links."""

from __future__ import annotations

import pytest

from gossamer.page.canonical import tag_canonical
from gossamer.parse.links import MAX_PAGE_LINKS, MAX_TITLE_CHARS, ParsedPage, parse_html
from gossamer.urls import Resolver

PAGE = "http://example.com/dir/page.html?x=1"


def parse(body: str, url: str = PAGE, **kwargs: bool) -> ParsedPage:
    return parse_html(body.encode("utf-8"), url, **kwargs)


def links_of(markup: str, url: str = PAGE) -> list[str]:
    return parse(f"<html><head></head><body>{markup}</body></html>", url).links


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("other.html", ["http://example.com/dir/other.html"]),
        ("sub/a.html?q=2", ["http://example.com/dir/sub/a.html?q=2"]),
        ("./a", ["http://example.com/dir/a"]),
        ("../up.html", ["http://example.com/up.html"]),
        ("../../../../too-far", ["http://example.com/too-far"]),
        ("a/./b/../c", ["http://example.com/dir/a/c"]),
        ("%2e%2e/encoded-dots", ["http://example.com/encoded-dots"]),
        ("/root", ["http://example.com/root"]),
        ("/x/../y", ["http://example.com/y"]),
        ("?y=2", ["http://example.com/dir/page.html?y=2"]),
        ("//cdn.example.net/m.js", ["http://cdn.example.net/m.js"]),
        ("https://other.org/a#frag", ["https://other.org/a"]),
        ("HTTPS://Other.org/A", ["https://other.org/A"]),
        ("http://u:p@host.example:8080/p", ["http://u:p@host.example:8080/p"]),
        ("http://[::1]:8080/v6", ["http://[::1]:8080/v6"]),
        ("page2.html#top", ["http://example.com/dir/page2.html"]),
        ("\\\\evil.example\\x", ["http://evil.example/x"]),
        ("  \t/spaced  \n", ["http://example.com/spaced"]),
        ("/new\nline/ta\tb", ["http://example.com/newline/tab"]),
        ("a b.html", ["http://example.com/dir/a%20b.html"]),
        # not followed
        ("#section", []),
        ("", []),
        ("page.html?x=1#again", []),
        ("javascript:void(0)", []),
        (" JavaScript:alert(1)", []),
        ("mailto:someone@example.com", []),
        ("data:text/html,<p>hi</p>", []),
        ("tel:+123", []),
        ("ftp://files.example.com/", []),
        ("foo:bar", []),
        ("http://[::1/", []),
        ("http://[zz]/", []),
        ("http://host.example:99999/", []),
        ("http://", []),
        ("//", []),
        ("http://bad host/", []),
    ],
)
def test_a_href_resolution(href: str, expected: list[str]) -> None:
    assert links_of(f'<a href="{href}">x</a>') == expected


def test_document_order_and_exact_duplicates() -> None:
    markup = (
        '<a href="/b">1</a><a href="/a">2</a><a href="/b#other">3</a>'
        '<a href="http://example.com/a">4</a><a href="/B">5</a>'
    )
    assert links_of(markup) == [
        "http://example.com/b",
        "http://example.com/a",
        "http://example.com/B",
    ]


def test_area_and_link_rel_next_alternate() -> None:
    body = """<html><head>
      <link rel="stylesheet" href="/s.css">
      <link rel="alternate stylesheet" href="/alt.css">
      <link rel="icon" href="/favicon.ico">
      <link rel="NEXT" href="/page/2">
      <link rel="alternate" hreflang="de" href="/de/">
      <link rel="canonical" href="/canonical">
    </head><body><map><area href="/area" shape="rect"></map><a>no href</a></body></html>"""
    assert parse(body).links == [
        "http://example.com/page/2",
        "http://example.com/de/",
        "http://example.com/area",
    ]


@pytest.mark.parametrize(
    ("base", "href", "expected_base", "expected_link"),
    [
        ("/other/", "x", "http://example.com/other/", "http://example.com/other/x"),
        ("../b/", "x", "http://example.com/b/", "http://example.com/b/x"),
        (
            "https://cdn.example.org/s/",
            "x",
            "https://cdn.example.org/s/",
            "https://cdn.example.org/s/x",
        ),
        (
            "https://cdn.example.org/s/",
            "/abs",
            "https://cdn.example.org/s/",
            "https://cdn.example.org/abs",
        ),
        ("javascript:alert(1)", "x", PAGE, "http://example.com/dir/x"),
        ("ftp://files.example.com/", "x", PAGE, "http://example.com/dir/x"),
    ],
)
def test_base_href(base: str, href: str, expected_base: str, expected_link: str) -> None:
    page = parse(f'<html><head><base href="{base}"></head><body><a href="{href}">x</a></body>')
    assert page.base_url == expected_base
    assert page.links == [expected_link]


def test_only_first_base_counts_and_base_without_href_is_ignored() -> None:
    body = (
        '<head><base target="_blank"><base href="/first/"><base href="/second/"></head>'
        '<a href="x">x</a>'
    )
    page = parse(body)
    assert page.base_url == "http://example.com/first/"
    assert page.links == ["http://example.com/first/x"]


@pytest.mark.parametrize(
    ("markup", "expected_base"),
    [
        ('<base href><base href="http://other.example/x/">', PAGE),
        ('<a href="a">a</a><base href="http://other.example/x/">', "http://other.example/x/"),
        ('<p><base href="/sub/"></p>', "http://example.com/sub/"),
        ('<svg><base href="/svg/"></svg><base href="/html/">', "http://example.com/svg/"),
    ],
)
def test_the_first_base_href_in_document_order_even_after_the_links(
    markup: str, expected_base: str
) -> None:
    # the base is read in the pass that finds the links: one after them still counts, and a
    # first one without a value hides the later ones
    page = parse(f'<html><head></head><body>{markup}<a href="a">a</a></body></html>')
    assert page.base_url == expected_base
    assert page.links == [Resolver(expected_base).resolve("a")]


def test_fragment_only_link_with_foreign_base_points_to_base() -> None:
    page = parse('<base href="http://other.example/doc"><a href="#s">s</a>')
    assert page.links == ["http://other.example/doc"]


def test_rel_nofollow_token() -> None:
    markup = (
        '<a href="/a" rel="external NoFollow">1</a>'
        '<a href="/b" rel="noopener">2</a>'
        '<a href="/c" rel="nofollowing">3</a>'
        '<link rel="next nofollow" href="/d">'
    )
    page = parse(markup)
    assert page.links == ["http://example.com/b", "http://example.com/c"]
    assert page.nofollow_links == 2
    followed = parse(markup, follow_nofollow=True)
    assert followed.links == [
        "http://example.com/a",
        "http://example.com/b",
        "http://example.com/c",
        "http://example.com/d",
    ]
    assert followed.nofollow_links == 0


@pytest.mark.parametrize(
    ("content", "noindex", "nofollow"),
    [
        ("noindex, nofollow", True, True),
        ("NOFOLLOW", False, True),
        ("none", True, True),
        ("noindex", True, False),
        ("index,follow", False, False),
        ("noarchive, nofollow ", False, True),
    ],
)
def test_meta_robots(content: str, noindex: bool, nofollow: bool) -> None:
    body = f'<meta name="Robots" content="{content}"><a href="/a">a</a><a href="/b">b</a>'
    page = parse(body)
    assert (page.meta_noindex, page.meta_nofollow) == (noindex, nofollow)
    if nofollow:
        assert page.links == []
        assert page.nofollow_links == 2
        assert parse(body, follow_nofollow=True).links == [
            "http://example.com/a",
            "http://example.com/b",
        ]
    else:
        assert len(page.links) == 2


def test_other_meta_names_are_not_robots() -> None:
    page = parse('<meta name="description" content="nofollow"><a href="/a">a</a>')
    assert not page.meta_nofollow
    assert page.links == ["http://example.com/a"]


@pytest.mark.parametrize(
    ("markup", "title"),
    [
        ("<title>  Hello \n\t  world  </title>", "Hello world"),
        ("<title>a &amp; b &lt;c&gt;</title>", "a & b <c>"),
        ("<title>   </title>", None),
        ("<p>no title</p>", None),
        ("<title>first</title><title>second</title>", "first"),
        ("<body><svg><title>icon</title></svg><title>real</title></body>", "real"),
        ("<svg><g><a><title>deep</title></a></g></svg><title>real</title>", "real"),
        ("<svg>" + "<title>icon</title>" * 40 + "</svg><title>real</title>", "real"),
        ("<svg><title>icon</title></svg>", None),
        ('<title href="/t">with an href</title>', "with an href"),
        ("<head><template><title>tpl</title></template><title>real</title></head>", "real"),
        ("<head><noscript><title>ns</title></noscript><title>real</title></head>", "ns"),
        ("<head><meta name=a><title>head</title></head><body><title>body</title>", "head"),
        ("<head></head><body><svg><title>icon</title></svg><title>body</title>", "body"),
        ("<title>unclosed <b>bold", "unclosed <b>bold"),
    ],
)
def test_title(markup: str, title: str | None) -> None:
    assert parse(markup).title == title


def test_title_is_capped() -> None:
    title = parse("<title>" + "word " * 1000 + "</title>").title
    assert title is not None
    assert len(title) <= MAX_TITLE_CHARS
    assert title.startswith("word word")


@pytest.mark.parametrize(
    ("markup", "names"),
    [
        ('<head><link rel="canonical" href="/main"></head>', True),
        ('<head><link rel="next CANONICAL" href="/main"></head>', True),
        ('<head><link rel="\tcanonical\n" href=""></head>', True),
        ('<head><link rel="stylesheet canonical" href="/c"></head>', True),
        ('<body><p><link rel="canonical" href="/late"></p></body>', True),
        ('<head><link rel="canonical"></head>', False),
        ('<link rel="alternate" href="/alt"><a rel="canonical" href="/a">a</a>', False),
        ('<head><link rel="canonical-ish" href="/x"><meta name="canonical"></head>', False),
        ("<head><title>none</title></head>", False),
    ],
)
def test_a_canonical_link_is_noticed_with_the_links(markup: str, names: bool) -> None:
    """The search for links tells whether a ``<link rel=canonical href>`` may be there; when
    it says no, the canonical link's own search of the head finds nothing either."""
    page = parse(f"<html>{markup}</html>")
    assert page.names_canonical is names
    assert page.tree is not None
    if not names:
        assert tag_canonical(page.tree, page.base_url) is None


def test_page_url_with_fragment_and_no_path() -> None:
    page = parse_html(b'<a href="x">x</a><a href="?q">q</a>', "https://example.com#top")
    assert page.base_url == "https://example.com/"
    assert page.links == ["https://example.com/x", "https://example.com/?q"]


def test_non_http_page_url_is_rejected() -> None:
    with pytest.raises(ValueError):
        parse_html(b"<a href='x'>x</a>", "ftp://example.com/")


def test_parsed_page_is_frozen() -> None:
    page = parse("<title>t</title>")
    with pytest.raises(AttributeError):
        page.title = "other"  # type: ignore[misc]


def test_links_in_order_whatever_their_attributes_say() -> None:
    """The elements with an ``href`` are told apart by name and ``rel``: the links of every
    kind keep document order, the first canonical link is the one kept, an ``xlink:href``
    alone reads as an empty ``href``, the first of two ``href`` counts, and each element
    counts once towards ``nofollow``."""
    markup = (
        '<html><head><base href="/base/"><link rel="canonical" href="/first-canonical">'
        '<link rel="CANONICAL next" href="/second-canonical"><link href="/no-rel"></head><body>'
        '<a href="/1">1</a><A HREF="/2" REL="NoFollow">2</A><a href="/3" rel>3</a>'
        '<a href="/4" rel="">4</a><area href="/5" rel="nofollow"><a href="/6" href="/7">6</a>'
        '<a-b href="/custom">custom</a-b><svg><a xlink:href="/svg">svg</a><a href="/8"></a></svg>'
        '<a href="/9" rel="next  alternate">9</a><area href="/10"><link rel="next" href="/1">'
        "</body></html>"
    )
    page = parse(markup)
    after_canonical = ["http://example.com/second-canonical"]
    kept = ["/1", "/3", "/4", "/6", "/base/", "/8", "/9", "/10"]  # /base/: xlink:href
    assert page.links == [*after_canonical, *(f"http://example.com{path}" for path in kept)]
    assert page.nofollow_links == 2
    assert page.canonical_link is not None
    assert page.canonical_link.attributes["href"] == "/first-canonical"
    assert page.anchors is None
    anchors = parse_html(markup.encode(), "http://example.com/", anchors=True).anchors
    assert anchors is not None
    hrefs = ["/1", "/2", "/3", "/4", "/6", "", "/8", "/9"]  # "": an xlink:href alone
    assert [href for _, href in anchors] == hrefs
    assert [node.tag for node, _ in anchors] == ["a"] * len(hrefs)
    followed = parse(markup, follow_nofollow=True)
    assert followed.links[:3] == [
        *after_canonical,
        "http://example.com/1",
        "http://example.com/2",
    ]
    assert followed.nofollow_links == 0
    robots = parse(markup.replace("<body>", '<body><meta name="robots" content="nofollow">'))
    assert (robots.links, robots.nofollow_links) == ([], 12)


@pytest.mark.parametrize("guarded", [True, False])
def test_a_link_farm_gives_its_first_links_only(guarded: bool) -> None:
    """One page of 400,000 links would queue them all at once: a page gives the crawl its
    first `MAX_PAGE_LINKS`, in document order, and is flagged ``links-cut``."""
    farm = "".join(f'<a href="/l{n}">l</a>' for n in range(MAX_PAGE_LINKS + 500))
    page = parse_html(f"<html><body>{farm}</body></html>".encode(), PAGE, guarded=guarded)
    assert len(page.links) == MAX_PAGE_LINKS
    assert page.links[-1].endswith(f"/l{MAX_PAGE_LINKS - 1}")
    assert "links-cut" in page.flags
    few = parse_html(b'<a href="/a">a</a><a href="/b">b</a>', PAGE, guarded=guarded)
    assert "links-cut" not in few.flags

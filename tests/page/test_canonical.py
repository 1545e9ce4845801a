"""Canonical links read from ``Link`` headers and ``<link rel=canonical>`` tags, resolved as
links are, and the judge of ``--canonical follow``: in scope, self, out of scope, failed
targets, loops."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from gossamer.page.canonical import MAX_WAITING, Canonicals, header_canonical, tag_canonical
from gossamer.parse.links import parse_html

PAGE = "http://site.test/dir/page.html?x=1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('<http://site.test/main>; rel="canonical"', "http://site.test/main"),
        ("<http://SITE.test:80/main>; rel=canonical", "http://site.test/main"),
        ('</main>; rel="canonical"', "http://site.test/main"),
        ('<other.html>; rel="canonical"', "http://site.test/dir/other.html"),
        ('<?y=2>; REL="Canonical"', "http://site.test/dir/page.html?y=2"),
        (
            '<http://site.test/a.pdf>; rel="alternate", <http://site.test/b>; rel="canonical"',
            "http://site.test/b",
        ),
        ('<http://site.test/c,d>; rel="canonical"', "http://site.test/c,d"),
        ('<http://site.test/e>; title="x"; rel="next canonical"', "http://site.test/e"),
        ('<http://site.test/f>; rel="alternate"', None),
        ('<mailto:a@b.test>; rel="canonical"', None),
        ("garbage", None),
        ("", None),
    ],
)
def test_link_header_forms(value: str, expected: str | None) -> None:
    assert header_canonical({"link": value}, PAGE) == expected


def test_no_link_header() -> None:
    assert header_canonical({}, PAGE) is None


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('<link rel="canonical" href="/main">', "http://site.test/main"),
        ('<link rel="Canonical" href="main#part">', "http://site.test/dir/main"),
        (
            '<base href="http://base.test/b/"><link rel="canonical" href="main">',
            "http://base.test/b/main",
        ),
        ('<link rel="canonical"><link rel="canonical" href="/second">', "http://site.test/second"),
        ('<link rel="alternate" href="/alt">', None),
        ('<link rel="canonical" href="javascript:void(0)">', None),
    ],
)
def test_tag_forms(head: str, expected: str | None) -> None:
    tree = LexborHTMLParser(f"<html><head>{head}</head><body></body></html>")
    base = tree.css_first("base")
    base_url = base.attributes["href"] if base is not None else PAGE
    assert tag_canonical(tree, base_url or PAGE) == expected


A, B, C = "http://site.test/a", "http://site.test/b", "http://site.test/c"


def test_follow_a_canonical_url_in_scope() -> None:
    judge = Canonicals(lambda url: url.startswith("http://site.test/"))
    assert judge.judge(A, None) == (None, None)
    assert judge.judge(A, A) == (None, None)  # the page itself: nothing to do
    assert judge.judge(A, B) == (B, "canonical-followed")
    assert judge.ended(B, failed=False) == (None, [])


def test_out_of_scope_is_ignored_and_flagged() -> None:
    judge = Canonicals(lambda url: url.startswith("http://site.test/"))
    assert judge.judge(A, "http://other.test/a") == (None, "canonical-offsite")


def test_loops_are_ignored_and_one_page_keeps_its_content() -> None:
    judge = Canonicals()
    assert judge.judge(A, B) == (B, "canonical-followed")
    assert judge.judge(B, A) == (None, "canonical-loop")  # A -> B -> A: B is kept
    assert judge.judge(C, A) == (None, "canonical-loop")  # A named another: a chain back


def test_a_failed_target_is_ignored_before_and_flagged_after() -> None:
    judge = Canonicals()
    assert judge.ended(C, failed=True) == (None, [])  # nobody named it yet
    assert judge.judge(A, C) == (None, "canonical-error")
    assert judge.judge(A, B) == (B, "canonical-followed")
    assert judge.ended(B, failed=True)[0] == "canonical-error"  # named by A, then failed


def test_a_redirect_back_hands_the_held_page_back_once() -> None:
    judge: Canonicals[str] = Canonicals()
    assert judge.judge(A, B) == (B, "canonical-followed")
    judge.hold(A, "page A", 10)
    assert judge.ended(A, failed=False, withheld="not-canonical") == (None, [])
    assert judge.redirected(B, A) == ("canonical-loop", ["page A"])  # B -> A: A is canonical
    assert judge.judge(A, B) == (None, "canonical-loop")  # A again: it keeps its content
    assert judge.redirected(B, A) == (None, [])  # handed back once


def test_longer_cycles_back_hand_the_held_page_back() -> None:
    judge: Canonicals[str] = Canonicals()
    judge.judge(A, B)  # A names B, B names C, C redirects to A
    judge.hold(A, "page A", 10)
    assert judge.judge(B, C) == (C, "canonical-followed")
    judge.hold(B, "page B", 10)
    assert judge.ended(B, failed=False, withheld="not-canonical") == (None, [])  # A held on
    assert judge.redirected(C, A) == ("canonical-loop", ["page A"])
    D = "http://site.test/d"  # D names B, B redirects to C, C redirects to D
    judge.judge(D, "http://site.test/e")
    judge.hold(D, "page D", 10)
    assert judge.redirected("http://site.test/e", C) == (None, [])  # handed on to C
    assert judge.redirected(C, D) == ("canonical-loop", ["page D"])


def test_a_cycle_back_to_a_page_not_held_is_an_error() -> None:
    judge: Canonicals[str] = Canonicals(held_bytes=15)
    judge.judge(A, B)
    judge.hold(A, "page A", 10)
    judge.judge(C, "http://site.test/d")
    judge.hold(C, "page C", 10)  # over the bound: A is dropped
    assert judge.redirected(B, A) == ("canonical-error", [])
    judge.hold("http://site.test/big", "big", 16)  # bigger than the bound: never held
    assert judge.redirected("http://site.test/d", C) == ("canonical-loop", ["page C"])


def test_a_held_page_is_dropped_once_its_canonical_url_is_stored() -> None:
    judge: Canonicals[str] = Canonicals()
    judge.judge(A, B)
    judge.hold(A, "page A", 10)
    assert judge.ended(B, failed=False) == (None, [])  # B stored: A's content is B's
    assert judge.redirected(B, A) == ("canonical-error", [])  # B revisited: A not held


def test_memory_is_bounded() -> None:
    judge = Canonicals(limit=10)
    for i in range(100):
        judge.judge(f"http://site.test/p{i}", f"http://site.test/c{i}")
        judge.ended(f"http://site.test/f{i}", failed=True)
    assert judge.judge("http://site.test/c0", "http://site.test/p0")[1] == "canonical-followed"
    assert judge.judge("http://site.test/x", "http://site.test/f99") == (None, "canonical-error")


def test_the_oldest_remembered_are_forgotten_first() -> None:
    """f0 failed again goes after f1 and f2: f3's failure forgets f1, not f0."""
    judge = Canonicals(limit=3)
    for name in ("f0", "f1", "f2", "f0", "f3"):
        judge.ended(f"http://site.test/{name}", failed=True)
    for name in ("f0", "f2", "f3"):
        assert judge.judge("http://site.test/x", f"http://site.test/{name}")[1] == (
            "canonical-error"
        ), name
    assert judge.judge("http://site.test/x", "http://site.test/f1")[1] == "canonical-followed"


def test_a_tag_in_the_body_or_without_href_names_nothing() -> None:
    body = '<html><head></head><body><link rel="canonical" href="/body"></body></html>'
    assert tag_canonical(LexborHTMLParser(body), PAGE) is None
    empty = '<html><head><link rel="canonical" href=""><link rel="x canonical" href="/y">'
    assert tag_canonical(LexborHTMLParser(empty), PAGE) == "http://site.test/y"


@pytest.mark.parametrize("pixel", ['<noscript><img src="/px.gif"></noscript>', "<img src=/px>"])
def test_a_tag_after_a_tracking_pixel_in_the_head_is_read(pixel: str) -> None:
    # a parser with scripting off ends the head at the pixel: the tag is in the body's start
    html = f'<html><head>{pixel}<meta charset=utf-8><link rel="canonical" href="/c"></head>'
    assert tag_canonical(LexborHTMLParser(html + "<body><p>x</p>"), PAGE) == "http://site.test/c"
    late = '<html><head><img src="/px"></head><body><p>x</p><link rel="canonical" href="/c">'
    assert tag_canonical(LexborHTMLParser(late), PAGE) is None


def test_another_scheme_on_the_same_port_is_recorded_not_followed() -> None:
    in_scope = Canonicals(lambda url: "127.0.0.1:8080" in url or "site.test" in url)
    page, https = "http://127.0.0.1:8080/a", "https://127.0.0.1:8080/a"
    assert in_scope.judge(page, https) == (None, "canonical-scheme")
    assert in_scope.judge(page, "https://127.0.0.1:8080/b") == (None, "canonical-scheme")
    assert in_scope.judge("https://site.test/a", "http://site.test:443/a")[1] == "canonical-scheme"
    # the usual move to https (each scheme on its own port) is followed when in scope
    assert in_scope.judge(A, "https://site.test/a") == ("https://site.test/a", "canonical-followed")
    assert in_scope.judge("https://site.test/b", B) == (B, "canonical-followed")


def test_another_scheme_is_followed_once_its_origin_served_a_page() -> None:
    judge = Canonicals()
    judge.judge("https://127.0.0.1:8443/", None)  # a page of https://127.0.0.1:8443 fetched
    target = "https://127.0.0.1:8443/a"
    assert judge.judge("http://127.0.0.1:8443/a", target) == (target, "canonical-followed")


@pytest.mark.parametrize(
    "markup",
    [
        '<head><link rel="canonical" href="/c"></head><body><a href="/a">a</a></body>',
        '<head><link rel="canonical" href=""><link rel="X CANONICAL" href="/y"></head>',
        '<head><link rel="canonical\x0b" href="/odd"><link rel=canonical href="/z"></head>',
        '<head><link rel="canonical\xa0" href="/nbsp"><link rel=canonical href="/z"></head>',
        '<head><link rel="canonical" href></head><body><p>x</p></body>',
        '<head></head><body><link rel="canonical" href="/body"></body>',
        '<head><noscript><img src="/px"></noscript><link rel=canonical href="/px-c"></head>',
        '<head><img src="/px"><link rel=canonical href="/late"><link rel=canonical href="/2">',
        "<head>" + '<link rel="alternate" href="/x">' * 1500 + '<link rel=canonical href="/f">',
        '<svg><link rel="canonical" xlink:href="/svg"></svg><link rel="canonical" href="/h">',
        "<head><title>no canonical link</title></head>",
    ],
)
def test_a_tag_read_from_the_parsed_links_is_the_one_the_search_finds(markup: str) -> None:
    page = parse_html(markup.encode(), PAGE)
    assert page.tree is not None
    searched = tag_canonical(page.tree, page.base_url)
    assert tag_canonical(page.tree, page.base_url, page.canonical_link) == searched


def test_a_page_naming_a_url_stored_before_is_not_held() -> None:
    """/ fetched first, then pages naming it: nothing they wait for is to come."""
    judge: Canonicals[str] = Canonicals()
    assert judge.ended(B, failed=False) == (None, [])  # B's page stored
    assert judge.judge(A, B) == (B, "canonical-followed")  # A's content is B's
    judge.hold(A, "page A", 10)
    assert judge.redirected(B, A) == ("canonical-error", [])  # never held
    assert judge._held_bytes == 0


def test_every_page_naming_one_url_is_released_when_it_is_stored() -> None:
    judge: Canonicals[str] = Canonicals()
    pages = [f"http://site.test/p{i}" for i in range(10)]
    for page in pages:
        assert judge.judge(page, B) == (B, "canonical-followed")
        judge.hold(page, page, 10)
    assert judge._held_bytes == 100
    assert judge.ended(B, failed=False) == (None, [])
    assert judge._held_bytes == 0


def test_pages_waiting_for_one_url_are_bounded() -> None:
    judge: Canonicals[str] = Canonicals()
    pages = [f"http://site.test/p{i}" for i in range(MAX_WAITING + 36)]
    for page in pages:
        judge.judge(page, B)
        judge.hold(page, page, 10)
    assert judge._held_bytes == 10 * MAX_WAITING  # the oldest released
    assert judge.redirected(B, pages[-1]) == ("canonical-loop", [pages[-1]])
    assert judge._held_bytes == 0  # the others' content is the page handed back


def test_a_page_noindex_before_it_is_named_leaves_the_page_its_content() -> None:
    judge: Canonicals[str] = Canonicals()
    assert judge.ended(B, failed=False, withheld="noindex") == (None, [])
    assert judge.judge(A, B) == (None, "canonical-error")


def test_pages_wait_on_along_a_chain_and_are_released_at_its_end() -> None:
    """A names B, B names C: A waits on for C; C stored releases both."""
    judge: Canonicals[str] = Canonicals()
    judge.judge(A, B)
    judge.hold(A, "page A", 10)
    assert judge.judge(B, C) == (C, "canonical-followed")
    judge.hold(B, "page B", 10)
    assert judge.ended(B, failed=False, withheld="not-canonical") == (None, [])
    assert judge._held_bytes == 20
    assert judge.ended(C, failed=False) == (None, [])
    assert judge._held_bytes == 0


def test_a_redirect_to_a_url_stored_before_releases_the_page() -> None:
    judge: Canonicals[str] = Canonicals()
    assert judge.ended(C, failed=False) == (None, [])
    judge.judge(A, B)
    judge.hold(A, "page A", 10)
    assert judge.redirected(B, C) == (None, [])  # A's content is C's, stored
    assert judge._held_bytes == 0


def test_pages_whose_canonical_url_fails_are_handed_back_to_keep_their_content() -> None:
    """A names B, B fails (a 404, a 5xx, noindex): nothing holds A's content but A itself."""
    for failed, withheld in ((True, None), (False, "noindex")):
        judge: Canonicals[str] = Canonicals()
        judge.judge(A, B)
        judge.hold(A, "page A", 10)
        judge.judge(C, B)
        judge.hold(C, "page C", 10)
        assert judge.ended(B, failed=failed, withheld=withheld) == (
            "canonical-error",
            ["page A", "page C"],
        )
        assert judge._held_bytes == 0
        assert judge.judge(A, B) == (None, "canonical-error")  # A again: it keeps its content


def test_pages_whose_canonical_url_redirects_out_of_scope_are_handed_back() -> None:
    judge: Canonicals[str] = Canonicals(lambda url: url.startswith("http://site.test/"))
    judge.judge(A, B)
    judge.hold(A, "page A", 10)
    assert judge.redirected(B, "http://other.test/") == ("canonical-error", ["page A"])
    assert judge.judge(A, B) == (None, "canonical-error")

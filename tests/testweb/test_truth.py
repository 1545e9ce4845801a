"""``reachable()`` agrees with an independent crawl of the served pages."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gossamer.testweb import QUICK_SPECIALS, LinkKind, Role, TestWebServer, Web, generate
from gossamer.testweb.truth import remove_dot_segments, split_url

from .support import client, crawl


def role_of(web: Web, url: str) -> Role:
    """The role of the normal page at ``url``."""
    found = web.page(url)
    assert found is not None
    return found[1].role


@pytest.fixture(scope="module")
def clean_web() -> Web:
    """A web whose pages link only to normal pages (no special endpoints)."""
    return generate(11, hosts=6, pages_per_host=30, specials=())


@pytest.fixture
async def clean_server(clean_web: Web) -> AsyncIterator[TestWebServer]:
    async with TestWebServer(clean_web) as running:
        yield running


@pytest.mark.parametrize(("obey_robots", "max_depth"), [(True, None), (False, None), (True, 2)])
async def test_reference_crawl_matches_ground_truth(
    clean_web: Web, clean_server: TestWebServer, obey_robots: bool, max_depth: int | None
) -> None:
    seeds = [clean_server.url(0)]
    async with client() as session:
        result = await crawl(session, seeds, obey_robots=obey_robots, max_depth=max_depth)
    expected = clean_web.reachable(seeds, obey_robots=obey_robots, max_depth=max_depth)
    assert result.pages == expected
    assert len(expected) > (20 if max_depth else 100)
    assert result.others == {}
    assert expected <= clean_web.page_urls(clean_server.port)
    fetched = {entry.url for entry in clean_server.log if not entry.path.endswith(".txt")}
    if obey_robots:
        assert not fetched & clean_web.disallowed_links(clean_server.port)


REFERENCE_SPECIALS = QUICK_SPECIALS - {"broken-chunked", "deep"}
"""The specials the reference crawler meets: not ``/hostile/deep``, whose 100,000 open
``<div>`` cost its unguarded lexbor parse 24 s of CPU (a loaded machine stretched it past three
minutes); gossamer's crawl of it is checked end to end (``tests/e2e``)."""


async def test_crawl_meets_linked_specials() -> None:
    web = generate(5, specials=REFERENCE_SPECIALS, crawl_delay=None)
    async with TestWebServer(web) as server, client() as session:
        seeds = web.root_urls(server.port)
        result = await crawl(session, seeds)
    assert result.pages & web.page_urls(server.port) == web.reachable(seeds)
    assert web.special_links(server.port) <= set(result.others) | result.pages
    codes = {split_url(url)[2]: code for url, code in result.others.items()}
    assert codes["/status/410"] == 410 and codes["/flaky/429"] == 429
    assert codes["/drop"] == 0 and codes["/redirect/chain/3"] == 302


def test_reachable_excludes_hidden_roles(clean_web: Web) -> None:
    port = 9000
    seeds = clean_web.root_urls(port)
    everything = clean_web.reachable(seeds, obey_robots=False)
    polite = clean_web.reachable(seeds)
    assert {role_of(clean_web, url) for url in everything} == {
        Role.PLAIN,
        Role.PRIVATE,
        Role.PRIVATE_CHILD,
        Role.META_NOFOLLOW,
        Role.AREA_ONLY,
        Role.NEXT_ONLY,
    }
    assert polite < everything
    assert not any(split_url(url)[0] == "site3.test" for url in polite)  # robots.txt 500
    assert not any("/shop/" in url for url in polite if "site4.test" in url)
    assert any("/private/" in url for url in polite if "site2.test" in url)  # no robots.txt
    lenient = clean_web.reachable(seeds, robots_error_disallows=False)
    assert any(split_url(url)[0] == "site3.test" for url in lenient)
    no_area = clean_web.reachable(seeds, link_kinds=[LinkKind.A, LinkKind.NEXT])
    assert Role.AREA_ONLY not in {role_of(clean_web, url) for url in no_area}
    other_agent = clean_web.reachable(seeds, user_agent="otherbot")
    assert not any(split_url(url)[0] == "site1.test" for url in other_agent)


def test_reachable_depth_and_seeds(clean_web: Web) -> None:
    root = "HTTP://SITE0.TEST:9000/./"
    assert clean_web.reachable([root], max_depth=0) == {"http://site0.test:9000/"}
    one = clean_web.reachable([root], max_depth=1)
    assert len(one) > 2 and one < clean_web.reachable([root], max_depth=2)
    assert clean_web.reachable(["http://site0.test:9000/nowhere/"]) == set()
    assert clean_web.reachable(["http://site0.test:9000/private/x/"]) == set()
    with pytest.raises(ValueError, match="ports"):
        clean_web.reachable(["http://site0.test:1/", "http://site1.test:2/"])


def test_disallowed_links(clean_web: Web) -> None:
    disallowed = clean_web.disallowed_links(9000)
    assert disallowed
    for url in disallowed:
        host, _, path = split_url(url)
        assert host in ("site1.test", "site3.test", "site4.test") or path.startswith("/private/")
    assert not disallowed & clean_web.reachable(clean_web.root_urls(9000))


def test_url_normalisation() -> None:
    assert remove_dot_segments("/a/./b/../c/") == "/a/c/"
    assert remove_dot_segments("/a/..") == "/"
    assert split_url("HTTP://Site0.TEST:80/%7estaff/x/#frag") == ("site0.test", 80, "/~staff/x/")
    assert split_url("http://site0.test:81/a?b=%2F") == ("site0.test", 81, "/a?b=%2F")

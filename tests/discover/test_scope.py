"""The sitemap scope rule: a sitemap's own directory, its site when robots.txt names it, other
sites whose robots.txt names it."""

from __future__ import annotations

from gossamer.discover import SitemapScope

SITEMAP = "http://h/a/sitemap.xml"


def test_a_sitemap_lists_its_own_directory_only() -> None:
    grant = SitemapScope().grant(SITEMAP)
    assert grant.allows("http://h/a/x")
    assert grant.allows("http://h/a/b/c?q=1")
    assert grant.allows("https://h/a/x")  # http and https of one host are one site
    assert not grant.allows("http://h/b/x")
    assert not grant.allows("http://h/ab")
    assert not grant.allows("http://h/a")
    assert not grant.allows("http://h:8080/a/x")  # another port, another site
    assert not grant.allows("http://other/a/x")
    assert not grant.allows("http://sub.h/a/x")


def test_a_sitemap_at_the_root_lists_its_whole_site() -> None:
    grant = SitemapScope().grant("http://h/sitemap.xml")
    assert grant.allows("http://h/")
    assert grant.allows("http://h/any/path")
    assert not grant.allows("http://other/")


def test_an_entry_with_credentials_is_never_listed() -> None:
    scope = SitemapScope({"http://h": ["http://h/sitemap.xml"]})
    grant = scope.grant("http://h/sitemap.xml")
    assert not grant.allows("http://user:pw@h/page")
    assert not grant.allows("http://user@h/page")
    assert grant.allows("http://h/page?at=a@b")  # an @ past the host is no credential


def test_robots_txt_of_its_site_opens_the_whole_site() -> None:
    scope = SitemapScope({"http://h": ["HTTP://H:80/a/./sitemap.xml"]})  # compared canonical
    grant = scope.grant(SITEMAP)
    assert grant.allows("http://h/b/x")
    assert grant.allows("https://h/")
    assert not grant.allows("http://other/x")
    assert not scope.grant("http://h/a/other.xml").allows("http://h/b/x")


def test_cross_site_only_where_the_listed_sites_robots_txt_names_the_sitemap() -> None:
    scope = SitemapScope(
        {
            "http://other": [SITEMAP],
            "https://third:8443": [SITEMAP],
            "http://fourth": ["http://h/a/another.xml"],
        }
    )
    grant = scope.grant(SITEMAP)
    assert grant.allows("http://other/anything")
    assert grant.allows("https://third:8443/x")
    assert not grant.allows("http://third/x")
    assert not grant.allows("http://fourth/x")
    assert not grant.allows("http://h/b/x")  # h's own robots.txt did not name it
    assert grant.allows("http://h/a/x")


def test_a_child_inherits_its_index_sites_only_on_the_index_site() -> None:
    scope = SitemapScope(
        {"http://h": ["http://h/sitemap_index.xml"], "http://o": ["http://h/sitemap_index.xml"]}
    )
    index = scope.grant("http://h/sitemap_index.xml")
    assert index.sites == {"h", "o"}
    child = scope.grant("http://h/sitemaps/posts.xml", index.sites)
    assert child.allows("http://h/2024/post")
    assert child.allows("http://o/x")
    elsewhere = scope.grant("http://o/sitemaps/posts.xml", {"h"})
    assert not elsewhere.allows("http://h/2024/post")
    assert not scope.grant("http://h/sitemaps/posts.xml").allows("http://h/2024/post")


def test_bad_robots_values_are_ignored() -> None:
    scope = SitemapScope({"not a url": [SITEMAP], "http://h": ["ftp://h/x", "", SITEMAP]})
    assert scope.grant(SITEMAP).allows("http://h/z")
    assert scope.canonical("javascript:alert(1)") is None
    assert scope.canonical(" http://H/a/../b ") == "http://h/b"

"""Which URLs a sitemap may list (the sitemaps protocol's rule, with robots.txt's word).

A sitemap lists URLs of its own site under its own directory: ``http://h/a/sitemap.xml`` may
list ``http://h/a/page``, not ``http://h/b/page``. When robots.txt of its site points to it
(a ``Sitemap:`` line), it may list any URL of the site; when robots.txt of another site
points to it, it may list that site's URLs too (the cross-site submission of the protocol).
A site is a host and port: ``http`` and ``https`` of one host are one site, as sites moved to
https keep sitemaps written for http. A sitemap an index lists inherits the index's sites
when it lives on the index's own site (``/sitemap_index.xml`` named by robots.txt, listing
``/sitemaps/posts.xml`` of pages at ``/2024/...``).

The rule is pure: :class:`SitemapScope` takes what robots.txt said, a set of sitemap URLs per
site, and answers with a :class:`Grant` per sitemap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from gossamer.urls import InvalidURL, canonicalize, host_key

__all__ = ["Grant", "SitemapScope", "site_of"]


def site_of(canonical_url: str) -> str:
    """The site of a canonical URL: ``host[:port]``, the scheme left out."""
    return host_key(canonical_url).partition("://")[2]


def _path(canonical_url: str) -> str:
    rest = canonical_url.partition("://")[2]
    slash = rest.find("/")
    path = "/" if slash < 0 else rest[slash:]
    return path.split("?", 1)[0]


def _canonical(url: str) -> str | None:
    try:
        return canonicalize(url.strip())
    except InvalidURL:
        return None


class Grant(msgspec.Struct, frozen=True):
    """What one sitemap may list."""

    site: str
    """The sitemap's own site."""
    prefix: str
    """Its directory: the path up to its last ``/``."""
    sites: frozenset[str]
    """Sites any of whose URLs it may list (their robots.txt named it, or its index's)."""

    def allows(self, canonical_url: str) -> bool:
        """May the sitemap list ``canonical_url``? Never a URL with a user name or password:
        a sitemap's word sends no credentials."""
        if "@" in canonical_url.partition("://")[2].partition("/")[0]:
            return False
        site = site_of(canonical_url)
        if site in self.sites:
            return True
        return site == self.site and _path(canonical_url).startswith(self.prefix)


class SitemapScope:
    """The scope rule over what robots.txt said: ``robots_sitemaps`` maps a site's origin
    (``scheme://host[:port]``, or any URL of it) to the sitemap URLs of its ``Sitemap:``
    lines."""

    def __init__(self, robots_sitemaps: Mapping[str, Iterable[str]] | None = None) -> None:
        self._named_by: dict[str, set[str]] = {}
        for origin, sitemaps in (robots_sitemaps or {}).items():
            site = _canonical(origin)
            if site is None:
                continue
            for sitemap in sitemaps:
                url = _canonical(sitemap)
                if url is not None:
                    self._named_by.setdefault(url, set()).add(site_of(site))

    def grant(self, sitemap_url: str, inherited: Iterable[str] = ()) -> Grant:
        """What the sitemap at canonical ``sitemap_url`` may list; ``inherited``: the sites of
        the index that listed it (kept only if it lives on the index's site)."""
        site = site_of(sitemap_url)
        path = _path(sitemap_url)
        sites = set(self._named_by.get(sitemap_url, ()))
        inherited = frozenset(inherited)
        if site in inherited:
            sites |= inherited
        return Grant(site, path[: path.rfind("/") + 1], frozenset(sites))

    def canonical(self, url: str) -> str | None:
        """``url`` in canonical form, None if it is no valid http(s) URL."""
        return _canonical(url)

"""Canonical links: ``Link: <URL>; rel="canonical"`` response headers and ``<link
rel=canonical>`` tags, and what ``--canonical follow`` does with them.

A page names its canonical URL in a header (any content type: a PDF too) or in its HTML.
Both are resolved as the page's links are (:class:`gossamer.urls.Resolver`: the header
against the page URL, the tag against the document's base) and canonicalized; when both are
given and disagree, the header wins, as search engines have it, and the record is flagged
``canonical-conflict``. The record's ``canonical`` field holds the result.

With ``--canonical record`` (the default) that is all. With ``follow``, :class:`Canonicals`
judges a page whose canonical URL is another one:

* in scope, neither known to have failed nor itself a page that named another canonical URL:
  the canonical URL is queued (at the page's depth) and the page's record is flagged
  ``canonical-followed``: it keeps its status, links and ``canonical`` field, but no content
  is stored for it (the canonical page's is), as for ``noindex``;
* out of the crawl's scope: ignored, flagged ``canonical-offsite``;
* the page's host and port under another scheme (``https://h:8080/a`` named by
  ``http://h:8080/a``): one port speaks one protocol, so unless that origin has served a page
  of the crawl already it is recorded, not followed, and flagged ``canonical-scheme`` (a
  change of scheme with the scheme's own port, ``http://h/a`` to ``https://h/a``, is the
  usual move to https and followed when in scope);
* a URL whose fetch failed (a 4xx, a 5xx, a network error): ignored, ``canonical-error``;
* a page that named another canonical URL itself (A -> B -> A, or a longer chain back):
  ignored, ``canonical-loop``, and the page keeps its content, so one page of a loop always
  does;
* the page itself: nothing to do (most pages name themselves).

A canonical URL fetched after the page that named it and found failing is flagged
``canonical-error`` on its own record (the page that named it has no content stored; the log
names it). What the judge remembers (pages that named another canonical URL, URLs that
failed) is bounded (`MAX_REMEMBERED` each, oldest forgotten first) and per process: in a
cluster job it sees the pages its worker fetched, which holds a host's pages, and canonical
links mostly stay on their host.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from gossamer.page.directives import head_first
from gossamer.redact import redact_url
from gossamer.urls import Resolver, canonicalize, explicit_port, host_key, host_of

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

__all__ = ["FLAGS", "MAX_REMEMBERED", "Canonicals", "header_canonical", "tag_canonical"]

log = logging.getLogger(__name__)

MAX_LINK_CHARS = 8192
"""A ``Link`` header is read up to this many characters."""
MAX_REMEMBERED = 100_000
FLAGS = (
    "canonical-conflict",
    "canonical-followed",
    "canonical-offsite",
    "canonical-scheme",
    "canonical-loop",
    "canonical-error",
)
"""The record flags of canonical links (see the module docstring)."""
_LINK = re.compile(r"<([^<>]*)>([^<]*)")
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]*))', re.IGNORECASE)
_CANONICAL_TAG = 'link[rel~="canonical" i][href]:not([href=""])'
_V = TypeVar("_V")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def header_canonical(headers: Mapping[str, str], url: str) -> str | None:
    """The canonical URL a ``Link`` header names for the page at ``url``, if any."""
    value = headers.get("link")
    if not value:
        return None
    for href, params in _LINK.findall(value[:MAX_LINK_CHARS]):
        rel = _REL.search(params)
        if rel is not None and "canonical" in (rel[1] or rel[2] or "").lower().split():
            return _absolute(url, href)
    return None


def tag_canonical(tree: LexborHTMLParser, base_url: str) -> str | None:
    """The canonical URL the first ``<link rel=canonical href>`` of the document's head names
    (search engines ignore one in the body; see :func:`head_first`)."""
    node = head_first(tree, _CANONICAL_TAG)
    href = None if node is None else node.attributes.get("href")
    return None if not href else _absolute(base_url, href)


def _absolute(base: str, href: str) -> str | None:
    """``href`` resolved against ``base`` and canonicalized; None if it makes no http(s) URL."""
    try:
        resolved = Resolver(base).resolve(href.strip())
        return None if resolved is None else canonicalize(resolved)
    except ValueError:  # InvalidURL, or a base no resolver takes
        return None


class Canonicals:
    """``--canonical follow``: which canonical URLs to queue (see the module docstring).

    ``in_scope`` tells whether the crawl may visit a URL (None: every URL)."""

    def __init__(
        self, in_scope: Callable[[str], bool] | None = None, limit: int = MAX_REMEMBERED
    ) -> None:
        self._in_scope = in_scope
        self._limit = limit
        self._named: dict[str, str] = {}
        """Pages that named another canonical URL and were not stored: page -> canonical."""
        self._awaited: dict[str, str] = {}
        """Canonical URLs queued and not fetched yet: canonical -> the page that named it."""
        self._failed: dict[str, None] = {}
        self._origins: dict[str, None] = {}
        """Origins (``scheme://host[:port]``) that served a page judged here."""

    def judge(self, url: str, canonical: str | None) -> tuple[str | None, str | None]:
        """The canonical URL to queue for the page at ``url`` (None: none) and the record's
        flag (None: none)."""
        origin = host_key(url)
        if origin not in self._origins:
            self._remember(self._origins, origin, None)
        if canonical is None or canonical == url:
            return None, None
        if self._in_scope is not None and not self._in_scope(canonical):
            return None, "canonical-offsite"
        if _scheme_only(url, canonical) and host_key(canonical) not in self._origins:
            return None, "canonical-scheme"
        if canonical in self._failed:
            return None, "canonical-error"
        if canonical in self._named:
            return None, "canonical-loop"
        self._remember(self._named, url, canonical)
        self._remember(self._awaited, canonical, url)
        return canonical, "canonical-followed"

    def ended(self, url: str, failed: bool) -> str | None:
        """``url``'s fetch ended (``failed``: with no page); the flag of its record when a
        page named it canonical and it failed."""
        named_by = self._awaited.pop(url, None)
        if not failed:
            return None
        self._remember(self._failed, url, None)
        if named_by is None:
            return None
        log.warning(
            "canonical URL %s failed; %s named it and has no content stored",
            redact_url(url),
            redact_url(named_by),
            extra={"event": "canonical-error"},
        )
        return "canonical-error"

    def _remember(self, table: dict[str, _V], key: str, value: _V) -> None:
        table.pop(key, None)
        table[key] = value
        if len(table) > self._limit:
            del table[next(iter(table))]


def _scheme_only(url: str, canonical: str) -> bool:
    """Whether ``canonical`` names the host and port of ``url`` under another scheme."""
    scheme, other = url.partition(":")[0], canonical.partition(":")[0]
    if scheme == other or host_of(url) != host_of(canonical):
        return False
    return _port(url, scheme) == _port(canonical, other)


def _port(url: str, scheme: str) -> int | None:
    port = explicit_port(url)
    return port if port is not None else _DEFAULT_PORTS.get(scheme)

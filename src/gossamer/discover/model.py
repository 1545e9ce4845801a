"""The values the sitemap and feed readers give: entries, child sitemaps, flags, limits, a
file's result record."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

import msgspec

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_URLS",
    "Child",
    "Entry",
    "FileResult",
    "Flag",
    "Format",
    "Item",
    "Limits",
]

MAX_FILE_URLS = 50_000
"""The sitemaps protocol's limit of URLs (or child sitemaps) per file."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""The sitemaps protocol's limit of a file's uncompressed size (50 MiB)."""


class Format(StrEnum):
    """What a file turned out to be, told from its content (never from its URL)."""

    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    RSS = "rss"
    ATOM = "atom"
    UNKNOWN = "unknown"
    """XML of another kind (an HTML error page, say), or nothing read at all."""


class Flag(StrEnum):
    """What went wrong in a file; its entries before the trouble are kept."""

    TOO_MANY_URLS = "too-many-urls"
    """More entries than ``Limits.max_urls``: the rest is cut."""
    TOO_LARGE = "too-large"
    """More than ``Limits.max_bytes`` (uncompressed, or as received): the rest is cut."""
    GZIP_BOMB = "gzip-bomb"
    """Gzip that inflated past ``Limits.max_bytes`` at more than ``Limits.bomb_ratio`` to 1."""
    BROKEN_GZIP = "broken-gzip"
    """Gzip that fails to inflate: the entries before the fault are kept."""
    BROKEN_XML = "broken-xml"
    """Not well-formed XML: the entries before the fault are kept."""
    ENTITIES = "entities"
    """A DTD declaring entities (billion laughs, external entities): refused, reading stops."""
    DEEP_XML = "deep-xml"
    """Elements nested deeper than ``Limits.max_xml_depth``: reading stops."""
    HUGE_TOKEN = "huge-token"
    """One XML token (a tag, a comment) longer than ``Limits.max_token_bytes``: reading stops."""
    LONG_URL = "long-url"
    """Entries whose URL exceeded ``Limits.max_url_chars`` were dropped."""
    NOT_A_SITEMAP = "not-a-sitemap"
    """XML whose root is none of urlset, sitemapindex, rss, RDF, feed."""
    DEPTH = "depth"
    """A sitemap index nested deeper than the depth limit: its children are not read."""
    TOO_MANY_FILES = "too-many-files"
    """The walk's file budget ran out: this index's remaining children are not read."""
    HTTP_ERROR = "http-error"
    """No 2xx answer (or no answer at all): nothing read."""
    OUT_OF_SCOPE = "out-of-scope"
    """Entries the scope rule dropped (counted in ``FileResult.dropped``)."""


class Limits(msgspec.Struct, frozen=True):
    """Bounds of one file and of one walk over sitemap indexes."""

    max_urls: int = MAX_FILE_URLS
    """Entries (URLs or child sitemaps) read from one file; more are cut."""
    max_bytes: int = MAX_FILE_BYTES
    """Uncompressed bytes read from one file (and bytes received for it); more are cut."""
    bomb_ratio: float = 100.0
    """Inflation ratio past which gzip cut at ``max_bytes`` is flagged a bomb."""
    max_url_chars: int = 8192
    """Characters of one URL or text field; longer ones are dropped (no buffer grows past)."""
    max_token_bytes: int = 1024 * 1024
    """Bytes of one XML token (a tag with its attributes, a comment) before reading stops."""
    max_xml_depth: int = 64
    """Levels of nested XML elements (a sitemap needs 3, a feed 4, extensions a few more)."""
    max_depth: int = 3
    """Levels of sitemap indexes below a start URL whose children are still read."""
    max_files: int = 1000
    """Files fetched in one walk (start URLs, children, redirects)."""
    max_redirects: int = 5
    """Redirects followed from one sitemap URL."""

    def at_most(self, files: int) -> Limits:
        """These limits, with at most ``files`` files fetched in a walk."""
        return msgspec.structs.replace(self, max_files=min(self.max_files, files))


class Entry(NamedTuple):
    """A page URL a sitemap or feed lists, with its hints."""

    url: str
    lastmod: float | None
    """When the page last changed (epoch seconds): ``lastmod``, ``pubDate``, ``updated``."""
    changefreq: str | None
    """The sitemap's ``changefreq`` hint, lower-cased (``always`` ... ``never``), if valid."""
    priority: float | None
    """The sitemap's ``priority`` hint in [0, 1], if valid."""
    source: str
    """The sitemap or feed that listed it."""
    published: bool = False
    """``lastmod`` is when the page was published (a feed's ``pubDate``, ``published`` or
    ``dc:date``), not when it last changed: a page fetched before it has changed since, but
    one fetched after it may have changed too (a sitemap's ``lastmod`` and an Atom
    ``updated`` say it has not)."""


class Child(NamedTuple):
    """A sitemap a sitemap index lists; the caller fetches it."""

    url: str
    lastmod: float | None
    source: str


Item = Entry | Child


class FileResult(msgspec.Struct, frozen=True):
    """What reading one sitemap or feed file came to (recorded as kind ``sitemap``)."""

    url: str
    status: int | None
    """The HTTP status (None: no answer)."""
    format: Format
    count: int
    """Entries (or child sitemaps) read and kept in scope."""
    dropped: int = 0
    """Entries the scope rule dropped."""
    flags: tuple[Flag, ...] = ()
    depth: int = 0
    """Levels of sitemap indexes above this file (0: a start URL)."""
    bytes_read: int = 0
    """Uncompressed bytes read."""

"""Sitemaps and feeds: URLs a site announces, read streaming and bounded, for admission.

The pieces, lowest first:

- :mod:`~gossamer.discover.model`: the values (:class:`Entry`, :class:`Child`,
  :class:`FileResult`, :class:`Flag`, :class:`Format`, :class:`Limits`);
- :mod:`~gossamer.discover.dates`: W3C and RFC 822 dates to epoch seconds;
- :mod:`~gossamer.discover.encoding`: an XML document's encoding from its first bytes;
- :mod:`~gossamer.discover.xmlfeed` (XML ``urlset``, ``sitemapindex``, RSS 2.0 and 1.0, Atom)
  and :mod:`~gossamer.discover.text` (one URL per line): the format readers;
- :mod:`~gossamer.discover.reader`: :class:`SitemapReader`, one file fed chunk by chunk,
  gzip told by its magic bytes and the format by the content, the protocol's limits held
  (50,000 URLs, 50 MiB uncompressed; more is cut and flagged);
- :mod:`~gossamer.discover.scope`: which URLs a sitemap may list, given what robots.txt said;
- :mod:`~gossamer.discover.driver`: :func:`read_sitemaps`, the walk over indexes with an
  injected fetch, yielding entries and one :class:`FileResult` per file.

Hostile input ends here as a flagged result: XML is read by expat with entity declarations
refused and no DTD or network access, every buffer is bounded, and a reader that hits a limit
says so (``done``) so its caller stops receiving the body.

The crawl calls it so::

    scope = SitemapScope({"https://h": ["https://h/sitemap.xml"]})  # robots.txt's lines
    async for item in read_sitemaps(urls, fetch, scope=scope):
        if isinstance(item, FileResult):
            ...  # record it (kind ``sitemap``): url, status, format, count, dropped, flags
        else:
            ...  # hand item.url to admission, with item.lastmod, changefreq, priority

This package may import the standard library and ``gossamer.urls``; the crawl wires the
fetch, robots.txt and admission to it.
"""

from gossamer.discover.driver import Body, Reply, SitemapFetch, read_sitemaps
from gossamer.discover.model import (
    MAX_FILE_BYTES,
    MAX_FILE_URLS,
    Child,
    Entry,
    FileResult,
    Flag,
    Format,
    Item,
    Limits,
)
from gossamer.discover.reader import SitemapReader, read_file
from gossamer.discover.scope import Grant, SitemapScope

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_URLS",
    "Body",
    "Child",
    "Entry",
    "FileResult",
    "Flag",
    "Format",
    "Grant",
    "Item",
    "Limits",
    "Reply",
    "SitemapFetch",
    "SitemapReader",
    "SitemapScope",
    "read_file",
    "read_sitemaps",
]

"""WACZ packaging (``--wacz``, ``gossamer wacz OUT``): a crawl's WARC files, a CDXJ index of
its captures and the list of its HTML pages in one WACZ 1.1.1 file, which replay tools
(ReplayWeb.page, pywb) open as it is.

``surt`` gives the index keys, ``index`` reads the WARC files and writes the sorted index,
``pages`` the pages list, ``package`` the ZIP and its datapackage, ``cli`` the command.
See docs/wacz.md.

This package may import the standard library, fastwarc and ``gossamer.errors``; it reads what
a crawl left in its output directory, never the engine, the sinks or the crawl's wiring.
"""

from __future__ import annotations

from gossamer.wacz.package import WACZ_VERSION, WaczSummary, package_crawl, write_wacz

__all__ = ["WACZ_VERSION", "WaczSummary", "package_crawl", "write_wacz"]

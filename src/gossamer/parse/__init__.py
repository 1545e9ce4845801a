"""Parsing fetched pages: character decoding and link extraction.

``charset`` picks a body's encoding in a browser's order (BOM, header, ``<meta>``, a guess)
and decodes it; ``guard`` makes hostile markup safe for lexbor in one linear pass (nesting,
attribute counts, formatting elements), flagging what it changed; ``sandbox`` parses big
pages as they are in worker processes under a CPU budget and a memory limit instead
(``worker``: their side); ``links`` parses a page with lexbor and returns its title, robots
directives and outlinks, resolved by ``gossamer.urls.Resolver`` (for a crawl that needs no
tree, read from lexbor's tokens alone: ``parse_tokens``). The extractors
(``gossamer.extract``) reuse the parsed tree.

This package may import the standard library, selectolax, numpy, w3lib, charset_normalizer and
``gossamer.urls``; nothing else of gossamer: every stage above it reads its ``ParsedPage``.
"""

from gossamer.parse.charset import DetectedEncoding, decode_body, detect_encoding
from gossamer.parse.links import ParsedPage, parse_html

__all__ = ["DetectedEncoding", "ParsedPage", "decode_body", "detect_encoding", "parse_html"]

"""Parsing fetched pages: character decoding and link extraction."""

from gossamer.parse.charset import DetectedEncoding, decode_body, detect_encoding
from gossamer.parse.links import ParsedPage, parse_html

__all__ = ["DetectedEncoding", "ParsedPage", "decode_body", "detect_encoding", "parse_html"]

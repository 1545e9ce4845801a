"""The guard's tokenizer as regular expressions: what the HTML Standard's tokenizer reads as a
tag, and the attributes inside one (see :mod:`gossamer.parse.guard`)."""

from __future__ import annotations

import re

__all__ = ["ATTRIBUTE", "ATTRIBUTE_BYTES", "SPACE", "TOKEN", "TOKEN_BYTES"]

SPACE = r"\t\n\f\r "
"""The characters the tokenizer takes for white space, in a character class."""
_S = SPACE
# One alternative per tokenizer state that can hide markup; every alternative that starts
# matching succeeds, so a failed attempt never rescans the document, and possessive
# quantifiers keep the regex engine from saving backtracking points per attribute. Groups:
# end-tag slash, tag name, attributes, closing ">" (missing when the document ends inside
# the tag).
_TOKEN = (
    r"<(?:!--(?:-?>|.*?(?:--!?>|\Z))"
    r"|[!?][^>]*>?"
    r"|/(?![A-Za-z>])[^>]*>?"
    rf"|(/?)([A-Za-z][^{_S}/>]*+)"
    rf"((?:[{_S}/]++|[^{_S}/>][^{_S}/>=]*+"
    rf"(?:[{_S}]*=[{_S}]*+(?:\"[^\"]*+\"?|'[^']*+'?|[^{_S}>]*+))?)*+)(>?))"
)
_ATTRIBUTE = (
    rf"([^{_S}/>][^{_S}/>=]*+)"
    rf"(?:[{_S}]*=[{_S}]*+(?:\"[^\"]*+\"?|'[^']*+'?|[^{_S}>]*+))?"
)
TOKEN = re.compile(_TOKEN, re.DOTALL)
"""A comment, a bogus comment, or a tag: (end-tag slash, name, attributes, closing ``>``)."""
TOKEN_BYTES = re.compile(_TOKEN.encode(), re.DOTALL)
ATTRIBUTE = re.compile(_ATTRIBUTE)
"""One attribute of a tag's attribute text; its group is the attribute's name."""
ATTRIBUTE_BYTES = re.compile(_ATTRIBUTE.encode())

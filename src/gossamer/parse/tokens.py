"""The guard's tokenizer as regular expressions: what the HTML Standard's tokenizer reads as a
tag, and the attributes inside one (see :mod:`gossamer.parse.guard`)."""

from __future__ import annotations

import re

from gossamer.parse.lazy import LazyPattern

__all__ = [
    "ATTRIBUTE",
    "ATTRIBUTE_BYTES",
    "ATTRIBUTE_PAIR",
    "LONG_TAG_CHARS",
    "MAX_ATTRIBUTE_NAMES",
    "MAX_TAG_ATTRIBUTES",
    "SPACE",
    "TAG_ATTRIBUTES_BYTES",
    "TOKEN",
    "TOKEN_BYTES",
    "more_attributes",
    "script_end",
]

MAX_TAG_ATTRIBUTES = 256
"""Attributes of one tag past this many are dropped by the guard."""
MAX_ATTRIBUTE_NAMES = 16_384
"""Attributes with a new name once the document has this many distinct names are dropped by
the guard. Lexbor keeps attribute names in a hash table that never grows: 15,000 distinct names
cost it 0.016 s, 61,000 1.1 s, 123,000 6 s."""
LONG_TAG_CHARS = 2 * MAX_TAG_ATTRIBUTES
"""A tag shorter than this cannot hold `MAX_TAG_ATTRIBUTES` attributes (two characters
each at least: a name and a separator, or a value's two quotes)."""

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
# compiled on first use (`LazyPattern`): a crawl of ordinary pages never reads a page with them
TOKEN = LazyPattern(_TOKEN, re.DOTALL)
"""A comment, a bogus comment, or a tag: (end-tag slash, name, attributes, closing ``>``)."""
TOKEN_BYTES = LazyPattern(_TOKEN.encode(), re.DOTALL)
ATTRIBUTE = LazyPattern(_ATTRIBUTE)
"""One attribute of a tag's attribute text; its group is the attribute's name."""
ATTRIBUTE_PAIR = LazyPattern(f"({_ATTRIBUTE})")
"""`ATTRIBUTE` with the whole attribute as a group before its name's."""
ATTRIBUTE_BYTES = LazyPattern(_ATTRIBUTE.encode())
TAG_ATTRIBUTES_BYTES = LazyPattern(
    _TOKEN.replace("(/?)([A-Za-z]", "(?:/?)(?:[A-Za-z]", 1).replace("(>?))", "(?:>?))", 1).encode(),
    re.DOTALL,
)
"""`TOKEN_BYTES` with its attributes' group alone: what ``findall`` gives is each token's
attribute text (empty for a comment), one bytes object a token instead of a tuple of four."""


def more_attributes(attributes: bytes, count: int) -> bool:
    """Whether a tag's attribute text (as `TOKEN` reads it) holds more than ``count``
    attributes; it stops reading at the one past ``count``, each attribute read whole (an
    atomic group: no backtracking, linear in the text)."""
    return _many_attributes(count + 1).match(attributes) is not None


_MANY: dict[int, re.Pattern[bytes]] = {}


def _many_attributes(count: int) -> re.Pattern[bytes]:
    pattern = _MANY.get(count)
    if pattern is None:
        unit = rf"(?>[{_S}/]*+{_ATTRIBUTE})".encode()
        pattern = _MANY[count] = re.compile(unit + b"{%d}" % count)
    return pattern


# What changes the state of a script's text: an escape's start and end, a script's start tag
# (double escape) and end tag.
_SCRIPT_MARK = LazyPattern(rf"<!--|-->|<(/?)[Ss][Cc][Rr][Ii][Pp][Tt](?=[{_S}/>])")


def script_end(text: str, start: int) -> int:
    """Where the text of a ``<script>`` that starts at ``start`` ends (the ``<`` of the end tag
    that closes it, or the end of ``text``), following the HTML Standard's script data states:
    after ``<!--`` a ``<script>`` tag escapes the text again, and its ``</script>`` then ends
    the double escape, not the script, until ``-->``. A regex for the first ``</script>`` ends
    some scripts earlier than lexbor does, and reads as tags what lexbor reads as text."""
    state = "data"
    position = start
    search = _SCRIPT_MARK.compiled.search
    while (mark := search(text, position)) is not None:
        token = mark[0]
        position = mark.end()
        if token == "<!--":
            if state == "data":
                state = "escaped"
            position = mark.start() + 2  # "<!-->" closes at once: its "--" may start "-->"
        elif token == "-->":
            state = "data"
        elif mark[1]:  # </script
            if state != "double":
                return mark.start()
            state = "escaped"
        elif state == "escaped":  # <script
            state = "double"
    return len(text)

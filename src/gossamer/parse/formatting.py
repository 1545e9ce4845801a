"""What lexbor's list of active formatting elements could cost on a document parsed as it is.

Lexbor rebuilds every entry of the list (since its last marker) that a block closed, at the
next text or start tag ("reconstruct the active formatting elements"), each a copy of the
start tag that made it, attributes and values too: one ``<b>`` costs about 390 bytes a copy,
each attribute 195 more, each byte of a value one. So ``<p><b c=N>x`` repeated (4,096 ``<``,
27 KB) cost it 0.55 s and 770 MB, but so did ten ``<b>`` of 200 attributes each, then 1,500
``<p>x`` (12 KB, 1,511 ``<``: 0.28 s, 460 MB), and one ``<b>`` whose value is 60 KB, then
1,000 ``<p>x`` (62 MB): the ``<`` alone bound nothing. `rebuilt_bytes` bounds it: a token
rebuilds the list at most once (a ``<nobr>`` after an open one twice), after which all it holds
is open until a tag closes some, and a tag starts at a ``<``, so the copies cost at most the
``<`` plus one (and the ``<nobr>``) times what one copy of the list costs; the list holds at
most the formatting start tags that are not closed at once (`_OPEN`; one ``<a>`` of them since
the last marker), each copying its tag.

A start tag is *closed at once* when its own end tag follows with only text between, or
``<span>`` elements holding text (or spans of text), formatting elements closed at once the
same way, or void ``<br>``, ``<img>``, ``<wbr>``, every tag written plainly (`_ATTRIBUTES`:
names and unquoted values without quotes, ``<``, ``=`` or a backquote, a space or ``/`` before
each attribute): lexbor's tokenizer reads such tags as the regex does, so if the start tag is
one for lexbor (its ``<`` read in the data state), lexbor reads what follows as the regex does
and its end tag removes it from the list (no block can stand between them). Every ``<`` is
tried on its own (the regex takes the name only), so no match hides another start tag; every
start tag not closed at once counts, wherever it is (in a comment, a script, a value: only
more), its copy's cost read from its tag if that is written plainly, else from the rest of the
document.

What runs: the C scan (``parse/_formatscan.c``, :data:`gossamer.parse.native.FORMATSCAN`) where
it is built, which reads what the regexes `_OPEN_BYTES` and `_TAG_BYTES` read on the document's
lower-case copy without making it (every ``<`` tried, names compared case-insensitively, each
part of the regex matching one way or not at all, as its possessive quantifiers do; it counts
the ``<`` as it goes); else, and with ``GOSSAMER_NATIVE=0`` or past 256 MiB, the regexes
(`_rebuilt_bytes_regex`, the reference: tests compare the two on generated markup, hostile
shapes and python3-doc). Over the 2,360 pages of python3-doc, postgresql-doc, sqlite3-doc and
git-doc a crawl scans in-process (3 to 64 KiB, at most 4,096 ``<``: 36.6 MB), the C scan costs
an eighth of lexbor's parse (22 ms against 180), the regex four fifths (140 ms; numpy's
positions of every ``<`` cost no less, and its import more than a crawl can spare). What the
guard adds to lexbor's parse a page (`bench_realpages.guard_ms`, 2,708 pages) fell from 0.070 ms
to 0.023, and a links-only crawl of python3-doc from 7.35 to 6.77 billion instructions
(``benchmarks/callgrind_crawl.py --real --only links``). Measured with ``MALLOC_TOP_PAD_=67108864
python benchmarks/bench_formatscan.py DIR ...``, run alternately with and without
``GOSSAMER_NATIVE=0``, medians of three.
"""

from __future__ import annotations

from gossamer.parse.lazy import LazyPattern
from gossamer.parse.native import FORMATSCAN

__all__ = [
    "AS_IS_MAX_REBUILT",
    "MAX_FORMATTING_BYTES",
    "SMALL_CHARS",
    "entry_bytes",
    "rebuilt_bytes",
    "too_heavy",
]

AS_IS_MAX_REBUILT = 32 * 1024 * 1024
"""A document is parsed as it is (:func:`gossamer.parse.scan.route`) only if lexbor's copies
of its formatting elements could cost at most this many bytes (`rebuilt_bytes`; the costliest
left measured 0.03 s and 55 MB at its peak, 21 MB more than before the parse)."""
SMALL_CHARS = 3 * 1024
"""Documents this small are not read: the worst measured cost lexbor 0.02 s and 25 MB (one
``<b>`` of 300 attributes, then ``<p>x``; 2 KiB: 13 MB, 4 KiB: 37 MB)."""

MAX_FORMATTING_BYTES = 10 * 1024
"""The guard (:mod:`gossamer.parse.guard`) drops a formatting start tag (closes an ``<a>`` at
once) that would make the list of active formatting elements since its last marker cost lexbor
more than this a copy (`entry_bytes` of its entries, its ``<a>`` apart, whose own copy is bounded
by this too): sixteen ``<b c=N>`` cost 9.2 KiB, an ``<a>`` of 50 attributes 10 KiB, of 250
attributes 50 KiB."""

_ELEMENT_BYTES = 390
_ATTRIBUTE_BYTES = 195
_S = r"\t\n\f\r "
_NAMES = "b|big|code|em|font|i|nobr|s|small|strike|strong|tt|u"
_ATTRIBUTES = (
    rf"(?:[{_S}/]++(?:[^{_S}/>\"'<=][^{_S}/>\"'<=]*+"
    rf"(?:[{_S}]*+=[{_S}]*+(?:\"[^\"]*+\"|'[^']*+'|[^{_S}>\"'<=`]++))?)?)*+"
)
_VOID = rf"<(?:br|img|wbr){_ATTRIBUTES}>"
_SPAN = rf"<span{_ATTRIBUTES}>[^<]*+</span[{_S}]*+>"
_TEXT = rf"[^<]++|{_VOID}|<span{_ATTRIBUTES}>(?:[^<]++|{_SPAN})*+</span[{_S}]*+>"
_NESTED = rf"<(?P<inner>a|{_NAMES}){_ATTRIBUTES}>(?:{_TEXT})*+</(?P=inner)[{_S}]*+>"
_OPEN = (
    rf"<(?P<name>a|{_NAMES})(?=[{_S}/>])"
    rf"(?!{_ATTRIBUTES}>(?:{_TEXT}|{_NESTED})*+</(?P=name)[{_S}]*+>)"
)
# the reference regexes, compiled only where the C scan is not used
_OPEN_BYTES = LazyPattern(_OPEN.encode())
_TAG_BYTES = LazyPattern(f"{_ATTRIBUTES}>".encode())
_SEPARATORS = b" \t\n\f\r/"
_A = ord("a")
_NATIVE_MOST_BYTES = 1 << 28  # past this, the C scan's sums could pass 64 bits


def rebuilt_bytes(document: str | bytes, tags: int | None = None) -> int:
    """A bound on the bytes lexbor's copies of ``document``'s formatting elements could take
    (see the module doc); ``tags``: its ``<``, counted here if None. The C scan
    (:data:`gossamer.parse.native.FORMATSCAN`) reads it where it is built, else the regex
    (`_rebuilt_bytes_regex`, the reference)."""
    # UTF-8 is as long as the text, or longer; the scan lower-cases names as it reads them
    data = document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")
    if FORMATSCAN is None or len(data) > _NATIVE_MOST_BYTES:
        return _rebuilt_bytes_regex(data, tags)
    listed, anchor, nobr, counted = FORMATSCAN.scan(data)
    return _bound(data, counted if tags is None else tags, listed + anchor, nobr)


def _rebuilt_bytes_regex(document: str | bytes, tags: int | None = None) -> int:
    """`rebuilt_bytes` read by the regexes `_OPEN_BYTES` and `_TAG_BYTES`."""
    # lower case, ASCII only, as lexbor reads names; UTF-8 is as long as the text, or longer
    data = document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")
    data = data.lower()
    size = len(data)
    listed = anchor = nobr = 0
    for start in _OPEN_BYTES.finditer(data):
        at = start.start()
        end = _TAG_BYTES.match(data, start.end())
        if end is None:  # not written plainly: its tag could hold the rest of the document
            attributes = length = size - at
        else:
            text = data[at : end.end()]
            length = len(text)
            attributes = sum(map(text.count, _SEPARATORS))
        cost = _ELEMENT_BYTES + _ATTRIBUTE_BYTES * attributes + length
        if data[at + 1] == _A:
            anchor = max(anchor, cost)
        else:
            listed += cost
            nobr += data.startswith(b"nobr", at + 1)
    return _bound(data, tags, listed + anchor, nobr)


def _bound(data: bytes, tags: int | None, weight: int, nobr: int) -> int:
    """What ``weight`` bytes of a list copied at every token cost (``tags`` ``<``, counted
    in ``data`` if None; ``nobr`` ``<nobr>`` left open)."""
    if not weight:
        return 0
    if tags is None:
        tags = data.count(b"<")
    # a token rebuilds the list once (a <nobr> with one open before it, twice)
    return (tags + 1 + nobr) * weight


def entry_bytes(name: str, attributes: str) -> int:
    """What one copy of a formatting element costs lexbor, about, at most: ``name`` its name,
    ``attributes`` its tag's text after the name (an attribute after each separator or two
    quotes, and one more)."""
    separators = sum(map(attributes.count, " \t\n\f\r/\"'"))
    return _ELEMENT_BYTES + _ATTRIBUTE_BYTES * (separators + 1) + len(name) + len(attributes)


def too_heavy(section: list[tuple[str, str, int]], entry: tuple[str, str, int]) -> bool:
    """Whether the guard's list of active formatting elements since its last marker
    (``section``: names, attributes, `entry_bytes`) would cost lexbor more than
    `MAX_FORMATTING_BYTES` a copy with ``entry`` added: its ``<a>`` (one at most) apart."""
    if entry[0] == "a":
        return entry[2] > MAX_FORMATTING_BYTES
    listed = sum(cost for name, _, cost in section if name != "a")
    return listed + entry[2] > MAX_FORMATTING_BYTES

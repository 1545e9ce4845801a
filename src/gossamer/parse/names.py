"""The element names the guard's simplified tree builder (:mod:`gossamer.parse.guard`) treats
apart, as the HTML Standard's tree construction does."""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    """Element names written as words, a few to a line (as the Standard lists them)."""
    return frozenset(text.split())


__all__ = [
    "BUTTON_SCOPE",
    "CLOSES_P",
    "CLOSES_SIBLING",
    "CLOSING_START",
    "DEFAULT_SCOPE",
    "FORMATTING",
    "HEADINGS",
    "KNOWN_NAMES",
    "LISTED",
    "LIST_ITEM_STOP",
    "MARKERS",
    "NOT_NESTING",
    "NO_PUSH",
    "RAW_TEXT",
    "SPECIAL",
    "SPECIAL_START",
    "TABLE_SCOPE",
    "VOID",
]

RAW_TEXT = frozenset(
    {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"}
)
NOT_NESTING = frozenset({"html", "head", "body"})
VOID = _names(
    """
    area base basefont bgsound br col embed frame hr image img input keygen link meta param
    source track wbr
    """
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
FORMATTING = _names(
    """
    a b big code em font i nobr s small strike strong tt u
    """
)
SPECIAL = HEADINGS | _names(
    """
    address applet area article aside base basefont bgsound blockquote body br button
    caption center col colgroup dd details dir div dl dt embed fieldset figcaption figure
    footer form frame frameset head header hgroup hr html iframe img input keygen li link
    listing main marquee menu meta nav noembed noframes noscript object ol p param plaintext
    pre script search section select source style summary table tbody td template textarea
    tfoot th thead title tr track ul wbr xmp mi mo mn ms mtext annotation-xml foreignobject
    desc
    """
)
DEFAULT_SCOPE = _names(
    """
    applet caption html table td th marquee object template mi mo mn ms mtext annotation-xml
    foreignobject desc
    """
)
BUTTON_SCOPE = DEFAULT_SCOPE | {"button"}
MARKERS = frozenset({"applet", "object", "marquee", "template", "td", "th", "caption"})
LISTED = FORMATTING | MARKERS
TABLE_SCOPE = frozenset({"table", "template", "html"})
LIST_ITEM_STOP = SPECIAL - {"address", "div", "p"}
# Start tags that close an open <p> in button scope (<table> only in no-quirks mode, which
# pages without a doctype are not in: left out, erring towards depth).
CLOSES_P = HEADINGS | _names(
    """
    address article aside blockquote center details dialog dir div dl fieldset figcaption
    figure footer header hgroup main menu nav ol p search section summary ul pre listing
    form plaintext hr xmp li dd dt
    """
)
# A start tag of these closes the nearest open element among the first set, looking down the
# stack no further than an element of the second.
CLOSES_SIBLING: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "li": (("li",), LIST_ITEM_STOP),
    "dd": (("dd", "dt"), LIST_ITEM_STOP),
    "dt": (("dd", "dt"), LIST_ITEM_STOP),
    "button": (("button",), DEFAULT_SCOPE),
    "tr": (("tr",), TABLE_SCOPE),
    "td": (("td", "th"), TABLE_SCOPE),
    "th": (("td", "th"), TABLE_SCOPE),
    "tbody": (("tbody", "thead", "tfoot"), TABLE_SCOPE),
    "thead": (("tbody", "thead", "tfoot"), TABLE_SCOPE),
    "tfoot": (("tbody", "thead", "tfoot"), TABLE_SCOPE),
    "option": (("option",), frozenset({"select", "datalist"})),
    "optgroup": (("option", "optgroup"), frozenset({"select", "datalist"})),
}
NO_PUSH = VOID | NOT_NESTING
SPECIAL_START = NO_PUSH | RAW_TEXT | {"plaintext", "form"}
CLOSING_START = CLOSES_P | HEADINGS | set(CLOSES_SIBLING) | {"a", "nobr"}
_OTHER_NAMES = """abbr audio bdi bdo canvas cite data datalist del dfn dialog ins kbd label
legend map mark meter optgroup option output picture progress q rb rp rt rtc ruby samp select
slot span sub sup time var video svg math path g use rect circle line polygon polyline ellipse
text tspan defs symbol mrow msup msub mfrac semantics annotation menuitem"""
# Element names of the HTML Standard (and common SVG/MathML ones): never counted against
# MAX_TAG_NAMES, so a page of many custom names keeps its scripts, tables and links.
KNOWN_NAMES = (
    SPECIAL
    | FORMATTING
    | VOID
    | RAW_TEXT
    | CLOSING_START
    | MARKERS
    | NOT_NESTING
    | frozenset(_OTHER_NAMES.split())
)

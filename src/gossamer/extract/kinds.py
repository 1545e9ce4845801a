"""What an element is to the walk of the tree model (`gossamer.extract.walk`), and the scan
that tells whether a box can be read whole.

One lookup by lexbor's ``tag_id`` (`KINDS`, built once) tells the walk what an element is, at
less cost than reading its ``tag``; a tag without a kind (custom ones too) is inline.
`scan_whole` scans a paragraph, cell or heading for anything but text and inline elements
(then it is not read whole) and finds its links: in C (``extract/_whole.c``: each element's
tag id read, a LexborNode made for the links alone) where it is built, else by
`scan_whole_reference`, the reference (``GOSSAMER_NATIVE=0``). With the C squash of the
blocks' spaces (`gossamer.extract.spaces`) it takes the tree extractor from 885 to 754 M
instructions over every tenth real page (``benchmarks/bench_walk.py --callgrind --every 10``,
``GOSSAMER_NATIVE=0`` against the default). The walk in C (``extract/_walk.c``) reads `KINDS`
and `WHOLE_KINDS` as tables by tag id and scans a box in its own loop; `scan_whole` serves the
Python walk (where that one is not built or does not bind).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser, LexborNode, create_tag

from gossamer.extract.density import BLOCK_TAGS, SKIP_TAGS
from gossamer.parse.native import bound, load

__all__ = [
    "BOX",
    "BOX_TAGS",
    "BR",
    "IMG",
    "INLINE",
    "KINDS",
    "LINK",
    "SKIP",
    "TAG_NAMES",
    "TEXT_ID",
    "WHOLE_KINDS",
    "scan_whole",
    "scan_whole_reference",
]

BOX_TAGS = BLOCK_TAGS | {"body", "tfoot", "footer", "nav", "aside", "form", "fieldset", "menu"}
TEXT_ID = 2
"""lexbor's id of a text node (``-text``)."""
_STANDARD_IDS = 1 << 16
"""lexbor numbers the tags it knows below this; other tags get an id per document."""
INLINE, LINK, IMG, BR, SKIP, BOX = range(6)
"""What an element is to the walk."""
_INLINE_KINDS = {"a": LINK, "img": IMG, "br": BR} | dict.fromkeys(SKIP_TAGS, SKIP)


def _tag_kinds() -> tuple[dict[int, int], dict[int, str], dict[int, int]]:
    """The kind of every tag the walk tells apart, by lexbor's id (standard tags have the
    same id in every document); the names of the box tags; and the kinds of tags inside a
    box read whole (`scan_whole`): a comment holds no text there, while an ``<applet>`` or a
    ``<marquee>`` may hold a link inside a link (as a cell may)."""
    kinds: dict[int, int] = {}
    names: dict[int, str] = {}
    for name in BOX_TAGS:
        tag_id = create_tag(name).tag_id
        kinds[tag_id], names[tag_id] = BOX, name
    comment = LexborHTMLParser("<p><!----></p>").css_first("p")
    comment_id = -1
    for name, kind in _INLINE_KINDS.items():
        if name != "-comment":
            kinds[create_tag(name).tag_id] = kind
        elif comment is not None and comment.first_child is not None:
            comment_id = comment.first_child.tag_id
            kinds[comment_id] = kind
    if len(kinds) != len(BOX_TAGS) + len(_INLINE_KINDS) or max(kinds) >= _STANDARD_IDS:
        raise RuntimeError("lexbor has no standard id for a tag the walk tells apart")
    whole = {tag_id: kind for tag_id, kind in kinds.items() if tag_id != comment_id}
    whole |= {create_tag(name).tag_id: SKIP for name in ("applet", "marquee")}
    return kinds, names, whole


KINDS, TAG_NAMES, WHOLE_KINDS = _tag_kinds()


def scan_whole_reference(box: LexborNode, budget: int) -> tuple[int, list[LexborNode]] | None:
    """The number of elements below ``box`` and its links, if they are all inline or links
    and at most ``budget``; else None (the box is not read whole)."""
    elements = 0
    links: list[LexborNode] = []
    kinds = WHOLE_KINDS
    scan = box.traverse()
    next(scan)  # the box itself
    for element in scan:
        kind = kinds.get(element.tag_id, INLINE)
        if kind == LINK:
            links.append(element)
        elif kind:
            return None
        elements += 1
    return None if elements > budget else (elements, links)


def _bound(module: ModuleType | None) -> ModuleType | None:
    """``extract/_whole.c`` bound to selectolax's lexbor and told the kinds, or None."""
    if module is None:
        return None
    table = bytearray(max(WHOLE_KINDS) + 1)
    for tag_id, kind in WHOLE_KINDS.items():
        table[tag_id] = kind
    return bound(module, bytes(table))


_WHOLE = _bound(load("gossamer.extract._whole"))
scan_whole: Callable[[LexborNode, int], tuple[int, list[LexborNode]] | None] = (
    scan_whole_reference if _WHOLE is None else _WHOLE.scan
)
"""`scan_whole_reference`, in C where it is built and binds."""

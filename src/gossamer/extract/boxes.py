"""What the walk of the tree model (`gossamer.extract.walk`) records, and what tells it a box.

A *box* (`Box`) is a block-level element with its totals; a *block* (`Block`) the text between
two block-level tags. Which box tags are boilerplate, have names worth reading, open an
article or may be read whole is said here once, for the Python walk and for the tables
(`walk_tables`) the walk in C (``extract/_walk.c``) reads by tag id.
"""

from __future__ import annotations

import msgspec
from selectolax.lexbor import LexborNode

from gossamer.extract.kinds import KINDS, TAG_NAMES, WHOLE_KINDS
from gossamer.extract.names import read_names

__all__ = [
    "ARTICLE_TAGS",
    "BOILERPLATE_ROLES",
    "BOILERPLATE_TAGS",
    "NAMED_TAGS",
    "STOPS",
    "WHOLE_TAGS",
    "Block",
    "Box",
    "box_names",
    "walk_tables",
]

# A caption annotates an image (its alt text in `images`), it is not a paragraph.
BOILERPLATE_TAGS = frozenset(["nav", "aside", "footer", "form", "menu", "fieldset", "figcaption"])
NAMED_TAGS = frozenset(
    [
        "div",
        "section",
        "article",
        "main",
        "aside",
        "header",
        "footer",
        "nav",
        "ul",
        "ol",
        "dl",
        "table",
        "form",
        "figure",
        "p",
        "li",
        "center",
        "details",
    ]
)
"""Boxes whose class, id and role are read."""
BOILERPLATE_ROLES = frozenset(
    ["navigation", "banner", "contentinfo", "complementary", "menu", "menubar", "search"]
)
ARTICLE_TAGS = frozenset(["article", "main"])
WHOLE_TAGS = frozenset(
    ["p", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "td", "th", "caption", "address"]
)
"""Boxes that most often hold text and inline elements alone, read whole when they do. Not
``dd`` (on the real pages 98% of them open with a paragraph, and the scan that finds it costs
more than the whole reads of the others spare) nor ``li`` (most hold one link or a list)."""
STOPS = frozenset(".!?\u3002\uff01\uff1f")
"""Full stops of a sentence (blocks end without spaces)."""


# Boxes and blocks are msgspec Structs, built in C: a page's walk makes some 170 boxes and
# 110 blocks, which as slotted dataclasses took a fifth of its time. Untracked by the garbage
# collector (``gc=False``): they hold numbers, strings and a list of nodes, never a cycle.


class Box(msgspec.Struct, gc=False):
    """A block-level element: where it sits, what its name says, what it holds."""

    tag: str
    parent: int
    names: str
    weight: float
    boilerplate: bool
    skimmed: bool = False
    """Only the length of its text was read (see `read_boxes`)."""
    chars: int = 0
    link_chars: int = 0
    commas: int = 0
    blocks: int = 0
    ends_sentence: bool = False
    paragraphs: int = 0
    items: int = 0
    images: int = 0

    def link_density(self) -> float:
        return min(self.link_chars, self.chars) / self.chars if self.chars else 0.0


class Block(msgspec.Struct, gc=False):
    """The text between two block-level tags, in its innermost box."""

    tag: str
    box: int
    text: str
    link_chars: int
    """Characters of the text inside links (at most all of them)."""
    images: list[LexborNode]
    density: float
    """Share of the text inside links."""
    commas: int

    def link_density(self) -> float:
        return self.density


def box_names(attributes: dict[str, str | None]) -> tuple[str, float, bool]:
    """A named box's ``class`` and ``id``, its weight and whether it is boilerplate by its
    names, ``role`` or being hidden."""
    names = attributes.get("class") or ""
    if (name := attributes.get("id")) is not None:
        names = f"{names} {name}"
    weight, boilerplate = read_names(names) if names else (0.0, False)
    if attributes.get("role") in BOILERPLATE_ROLES:
        boilerplate = True
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        boilerplate = True
    return names, weight, boilerplate


def walk_tables() -> tuple[bytes, bytes, bytes, tuple[str | None, ...]]:
    """What ``extract/_walk.c`` reads by tag id: each tag's kind, its kind in a box read
    whole, each box tag's flags (`_FLAGS`: bit n set if in the n-th set) and name."""
    top = max(KINDS) + 1
    kinds, whole, flags = bytearray(top), bytearray(top), bytearray(top)
    names: list[str | None] = [None] * top
    for tag_id, kind in KINDS.items():
        kinds[tag_id] = kind
    for tag_id, kind in WHOLE_KINDS.items():
        whole[tag_id] = kind
    for tag_id, name in TAG_NAMES.items():
        names[tag_id] = name
        flags[tag_id] = sum(1 << bit for bit, tags in enumerate(_FLAGS) if name in tags)
    return bytes(kinds), bytes(whole), bytes(flags), tuple(names)


_FLAGS = (BOILERPLATE_TAGS, {"header"}, NAMED_TAGS, ARTICLE_TAGS, WHOLE_TAGS, {"p"}, {"li"})
"""The sets of box tags ``extract/_walk.c`` tells apart, in the order of its ``F_`` flags."""

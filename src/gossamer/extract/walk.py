"""The walk of the tree model (`gossamer.extract.tree`): the page's boxes and blocks.

One depth-first pass over the parsed page (bounded by `MAX_DEPTH` and `MAX_NODES`) records
every block-level element as a *box* (its tag, its parent box, what its ``class``, ``id`` and
``role`` say) and cuts the text into *blocks*: the text between block-level tags, each knowing
its innermost box, how much of it sits in links and which images it holds. Then each box is
totalled with what its descendants hold. Scoring them is `gossamer.extract.tree`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborNode

from gossamer.extract.density import BLOCK_TAGS, MAX_DEPTH, MAX_NODES, SKIP_TAGS

__all__ = [
    "MAX_BOILERPLATE_SHARE",
    "MAX_DEPTH",
    "MAX_NODES",
    "STOPS",
    "Block",
    "Box",
    "forget_names",
    "read_boxes",
]

# MAX_DEPTH and MAX_NODES (re-exported): the walk reads a page within the bounds the density
# model reads it in.
SKIMMED_LINK_SHARE = 0.5
"""Share of a skimmed box's text counted as links (boilerplate is mostly links)."""
MAX_BOILERPLATE_SHARE = 0.4
"""A box named like boilerplate that holds more of the page's text than this is kept."""
_BOX_TAGS = BLOCK_TAGS | {"body", "tfoot", "footer", "nav", "aside", "form", "fieldset", "menu"}
# A caption annotates an image (its alt text in `images`), it is not a paragraph.
_BOILERPLATE_TAGS = frozenset(["nav", "aside", "footer", "form", "menu", "fieldset", "figcaption"])
_NAMED_TAGS = frozenset(
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
_BOILERPLATE_ROLES = frozenset(
    ["navigation", "banner", "contentinfo", "complementary", "menu", "menubar", "search"]
)
# What class and id names say, read word by word (``article-body__text`` is three words;
# camelCase stays one word), each word as a substring: readability's lists, with the names of
# consent banners, paywalls and newsletters added.
_NEGATIVE = [
    "hidden",
    "banner",
    "combx",
    "comment",
    "contact",
    "foot",
    "masthead",
    "media",
    "meta",
    "outbrain",
    "promo",
    "related",
    "scroll",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "sponsor",
    "shopping",
    "tags",
    "tool",
    "widget",
]
_POSITIVE = [
    "article",
    "body",
    "content",
    "entry",
    "hentry",
    "main",
    "page",
    "post",
    "text",
    "blog",
    "story",
]
_UNLIKELY = [
    "agegate",
    "banner",
    "breadcrumb",
    "combx",
    "comment",
    "community",
    "consent",
    "cookie",
    "disqus",
    "extra",
    "footer",
    "gdpr",
    "header",
    "legends",
    "menu",
    "navigation",
    "navbar",
    "newsletter",
    "pager",
    "pagination",
    "popup",
    "promo",
    "related",
    "remark",
    "replies",
    "rss",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "social",
    "sponsor",
    "subscribe",
    "supplemental",
]
_MAYBE = ["and", "article", "body", "column", "content", "main", "shadow"]
_WORD = re.compile(r"[a-z0-9]+")
_NEG, _POS, _UNL, _MAY = 1, 2, 4, 8
_EXACT = {
    "ad": _NEG | _UNL,
    "ads": _NEG | _UNL,
    "advert": _NEG | _UNL,
    "advertisement": _NEG | _UNL,
    "hid": _NEG | _UNL,
    "nav": _UNL,
}
"""Words that say something only on their own (``ad`` is in ``header``)."""
_MASKS = {
    key: sum(
        flag
        for flag, words in ((_NEG, _NEGATIVE), (_POS, _POSITIVE), (_UNL, _UNLIKELY), (_MAY, _MAYBE))
        if any(word in key for word in words)
    )
    for key in {*_NEGATIVE, *_POSITIVE, *_UNLIKELY, *_MAYBE}
}
"""Each keyword's flags, with those of the keywords inside it (``footer`` is ``foot`` too)."""
_KEYWORDS = re.compile("|".join(sorted(_MASKS, key=len, reverse=True)))
_ARTICLE_TAGS = frozenset(["article", "main"])
_TEXT_ID = 2
"""lexbor's id of a text node (``-text``)."""
_STANDARD_IDS = 1 << 16
"""lexbor numbers the tags it knows below this; other tags get an id per document."""
_TAG_NAMES: dict[int, str] = {}
"""Names of the standard tags by id, learnt as met: ``tag_id`` costs less than ``tag``."""
STOPS = frozenset(".!?\u3002\uff01\uff1f")
"""Full stops of a sentence (blocks end without spaces)."""


@dataclass(slots=True)
class Box:
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


@dataclass(slots=True)
class Block:
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


def read_boxes(body: LexborNode, *, skim: bool) -> tuple[list[Box], list[Block]]:
    """The boxes and blocks of ``body``, totalled. With ``skim``, the text of a box that is
    boilerplate is only measured, not cut into blocks (most of a page's markup can be menus
    and footers)."""
    walker = _Walker(skim)
    walker.run(body)
    _total(walker.boxes, walker.blocks)
    _unflag_big_boilerplate(walker.boxes)
    return walker.boxes, walker.blocks


class _Walker:
    """One depth-first pass recording boxes and blocks."""

    def __init__(self, skim: bool) -> None:
        self.skim = skim
        self.boxes: list[Box] = []
        self.blocks: list[Block] = []
        self.nodes = 0
        # the block being read
        self.tag = "div"
        self.box = 0
        self.parts: list[str] = []
        self.link_chars = 0
        self.images: list[LexborNode] = []
        self.quiet = False  # inside boilerplate

    def run(self, body: LexborNode) -> None:
        self.boxes.append(Box("body", -1, "", 0.0, False))
        self._visit(body, 0, 0, False, False)
        self._close("div", 0)

    def _close(self, next_tag: str, box: int) -> None:
        parts, images = self.parts, self.images
        if parts:
            text = " ".join((parts[0] if len(parts) == 1 else "".join(parts)).split())
            parts.clear()  # in place: the walk holds this list
            if text:
                links = min(self.link_chars, len(text))
                self.blocks.append(
                    Block(self.tag, self.box, text, links, images, links / len(text), _commas(text))
                )
                self.images = []
            elif images and self.quiet:
                images.clear()
        elif images and self.quiet:  # a logo or an icon
            images.clear()
        # else an image between paragraphs belongs with the text after it
        self.tag, self.box, self.link_chars = next_tag, box, 0

    def _visit(
        self, node: LexborNode, depth: int, box: int, in_link: bool, in_article: bool
    ) -> None:
        if depth > MAX_DEPTH:
            return
        parts = self.parts
        names = _TAG_NAMES
        for child in node.iter(include_text=True):
            tag_id = child.tag_id
            if tag_id == _TEXT_ID:
                text = child.text_content
                # spaces opening a block are dropped by `_close` anyway (the lines between
                # tags): without them most boxes close with nothing to read
                if text and (parts or not text.isspace()):
                    parts.append(text)
                    if in_link:
                        self.link_chars += len(text.strip())
                continue
            self.nodes += 1
            if self.nodes > MAX_NODES:
                return
            tag = names.get(tag_id) or _tag_name(child, tag_id)
            if tag not in _BOX_TAGS:  # no box is in SKIP_TAGS
                if tag == "img":
                    self.images.append(child)
                elif tag == "br":
                    parts.append(" ")
                elif tag in SKIP_TAGS or (first := child.first_child) is None:
                    pass
                elif first.next is None and first.tag_id == _TEXT_ID:  # <a>words</a>: no walk
                    text = first.text_content
                    if text:
                        parts.append(text)
                        if in_link or tag == "a":
                            self.link_chars += len(text.strip())
                else:
                    self._visit(child, depth + 1, box, in_link or tag == "a", in_article)
                continue
            # a box: recursed into here, so that a level of the page costs one frame
            inner = self._enter(child, tag, box, in_article)
            if inner < 0:
                continue
            quiet = self.quiet
            self.quiet = quiet or self.boxes[inner].boilerplate
            self._visit(child, depth + 1, inner, in_link, in_article or tag in _ARTICLE_TAGS)
            self._close("div", box)  # back to the text of ``box``
            self.quiet = quiet

    def _enter(self, node: LexborNode, tag: str, parent: int, in_article: bool) -> int:
        """Open a box for the block-level ``node`` inside box ``parent``: its index, to walk
        it; or -1 when it was skimmed (only the length of its text measured)."""
        boilerplate = tag in _BOILERPLATE_TAGS or (tag == "header" and not in_article)
        weight = 0.0
        names = ""
        if tag in _NAMED_TAGS:  # not paragraphs, items, cells: their names rarely tell
            attributes = node.attributes
            names = attributes.get("class") or ""
            if (name := attributes.get("id")) is not None:
                names = f"{names} {name}"
            if names:
                weight, unlikely = _read_names(names)
                boilerplate = boilerplate or unlikely
            if attributes.get("role") in _BOILERPLATE_ROLES:
                boilerplate = True
            if "hidden" in attributes or attributes.get("aria-hidden") == "true":
                boilerplate = True
        opened = Box(tag, parent, names, weight, boilerplate)
        self.boxes.append(opened)
        inner = len(self.boxes) - 1
        if self.parts or self.images:
            self._close(tag, inner)
        else:
            self.tag, self.box = tag, inner
        if not (boilerplate and self.skim):
            return inner
        opened.skimmed = True
        opened.chars = len(" ".join(node.text(deep=True).split()))
        opened.link_chars = int(opened.chars * SKIMMED_LINK_SHARE)
        self._close("div", parent)
        return -1


def _tag_name(node: LexborNode, tag_id: int) -> str:
    """``node``'s tag name, remembered when lexbor knows the tag."""
    name = node.tag or ""
    if tag_id < _STANDARD_IDS:
        _TAG_NAMES[tag_id] = name
    return name


_WORDS: dict[str, int] = {}
_NAMES: dict[str, tuple[float, bool]] = {}
_CACHE_MAX = 50_000
MAX_NAMES_CHARS = 256
MAX_WORD_CHARS = 40


def forget_names() -> None:
    """Forget the class and id names read so far, so that the next page is read as a crawl's
    first page of a site is (benchmarks time it so)."""
    _WORDS.clear()
    _NAMES.clear()


def _read_names(names: str) -> tuple[float, bool]:
    """What a box's class and id say: its weight, and whether it is unlikely to be content.
    Remembered by name and by word, as a site repeats its names on every page; only the first
    `MAX_NAMES_CHARS` characters and words of at most `MAX_WORD_CHARS` are read."""
    names = names[:MAX_NAMES_CHARS]
    known = _NAMES.get(names)
    if known is not None:
        return known
    flags = 0
    for word in _WORD.findall(names.lower()):
        word = word[:MAX_WORD_CHARS]
        mask = _WORDS.get(word)
        if mask is None:
            mask = _read_word(word)
            if len(_WORDS) >= _CACHE_MAX:
                _WORDS.clear()
            _WORDS[word] = mask
        flags |= mask
    weight = (25.0 if flags & _POS else 0.0) - (25.0 if flags & _NEG else 0.0)
    known = (weight, bool(flags & _UNL) and not flags & _MAY)
    if len(_NAMES) >= _CACHE_MAX:
        _NAMES.clear()
    _NAMES[names] = known
    return known


def _read_word(word: str) -> int:
    exact = _EXACT.get(word)
    if exact is not None:
        return exact
    mask = 0
    for key in _KEYWORDS.findall(word):
        mask |= _MASKS[key]
    return mask


def _total(boxes: list[Box], blocks: list[Block]) -> None:
    """Each box's totals: its own blocks', then its descendants' (boxes are in pre-order, so a
    reverse pass adds every box into its parent after its children were added into it)."""
    for block in blocks:
        box = boxes[block.box]
        box.chars += len(block.text)
        box.link_chars += block.link_chars
        box.commas += block.commas
        box.images += len(block.images)
        box.blocks += 1
        box.ends_sentence = block.text[-1] in STOPS
    for box in boxes:
        if box.tag == "p":
            box.paragraphs = 1
        elif box.tag == "li":
            box.items = 1
    for index in range(len(boxes) - 1, 0, -1):
        box = boxes[index]
        parent = boxes[box.parent]
        parent.chars += box.chars
        parent.link_chars += box.link_chars
        parent.commas += box.commas
        parent.paragraphs += box.paragraphs
        parent.blocks += box.blocks
        parent.items += box.items
        parent.images += box.images


def _unflag_big_boilerplate(boxes: list[Box]) -> None:
    """A class such as ``with-sidebar`` or a page-wide ``<form>`` must not hide the article."""
    limit = MAX_BOILERPLATE_SHARE * boxes[0].chars
    for box in boxes:
        if box.boilerplate and box.chars > limit:
            box.boilerplate = False


def _commas(text: str) -> int:
    """Commas, Arabic, full-width and ideographic ones too."""
    count = text.count(",")
    if not text.isascii():
        count += text.count("\u060c") + text.count("\uff0c") + text.count("\u3001")
    return count

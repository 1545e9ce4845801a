"""The tree model: score the page's boxes by the prose they hold, keep the best box's text.

One depth-first pass over the parsed page (bounded by `MAX_DEPTH` and `MAX_NODES`) records
every block-level element as a *box* (its tag, its parent box, what its ``class``, ``id`` and
``role`` say) and cuts the text into *blocks*: the text between block-level tags, each knowing
its innermost box, how much of it sits in links and which images it holds.

Then, as Arc90's readability does on a tree it rewrites, but here on those few small records:

1. Every block of prose (at least `MIN_PARAGRAPH` characters, mostly outside links) scores
   ``1 + commas + min(chars / 100, 3)``; the score goes to its box's parent in full, the
   grandparent by half and the next ancestor by a sixth. A box's own score starts from its tag
   (a ``div`` is a likely container, a list or a heading is not) and its class and id
   (``article``, ``content``, ``post`` count for it; ``comment``, ``share``, ``sidebar``
   against it), and is scaled by the share of its text outside links.
2. The best box wins. It moves up the tree when boxes of its tag and class in other branches
   score near it (an article cut into parts by pictures and advertisements) or when it is its
   parent's only child. It gives way to the box whose prose, discounted by the square of the
   share of its text that is prose, is worth twice as much (an article of many small
   sections, each too small to score).
3. Its siblings join when they score near it, hold prose worth a fifth of its own with few
   links, or are paragraphs of linkless prose (an article whose paragraphs sit loose next to
   its first section).
4. Inside what was kept, boilerplate is left out: boxes that are navigation, headers, footers,
   asides, forms, captions, banners, comment sections and share or related-link boxes by tag,
   role or name; boxes that are mostly links, galleries or lists of short cards; blocks that
   are mostly links, have no letter (pagers, arrows) or are a lone label ("Advertisement").

When that finds less than `MIN_TEXT` characters, it is done again counting prose inside
boilerplate too (an article inside an ``<aside>``). A page with no prose at all (a list of
links, a table of figures) keeps the body's text less its boilerplate. The text-density model
(`gossamer.extract.density`) reads the page as a flat sequence of blocks instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.extract.density import BLOCK_TAGS, HEADINGS, SKIP_TAGS
from gossamer.parse.guard import MAX_DEPTH as GUARD_DEPTH

__all__ = ["MAX_DEPTH", "MAX_NODES", "MIN_PARAGRAPH", "Block", "forget_names", "main_blocks"]

MAX_DEPTH = GUARD_DEPTH + 16
"""Content nested deeper than this is not read: deeper than the parser guard lets a crawled
page be (`gossamer.parse.guard.MAX_DEPTH`, plus the document's own levels)."""
MAX_NODES = 200_000
"""The walk stops after this many nodes."""
MIN_PARAGRAPH = 25
"""Characters a block needs to count as prose."""
SKIMMED_LINK_SHARE = 0.5
"""Share of a skimmed box's text counted as links (boilerplate is mostly links)."""
MIN_TEXT = 250
"""A main text shorter than this is looked for again, inside boilerplate too."""
LINK_DENSITY_MAX = 0.5
"""Kept blocks and boxes with more of their text in links than this are left out."""
MAX_BOILERPLATE_SHARE = 0.4
"""A box named like boilerplate that holds more of the page's text than this is kept."""
SIBLING_MIN = 10.0
SIBLING_SHARE = 0.2
"""A sibling of the best box joins when it scores at least max(SIBLING_MIN, SIBLING_SHARE x
the best score)."""
MASS_MIN = 5.0
"""...or when the prose they hold scores at least max(MASS_MIN, SIBLING_SHARE x the best
box's) with few links (a page of sections)."""
PROSE_LINK_DENSITY = 0.25
COMPACT_GAIN = 2.0
"""The box holding the most prose for its size replaces the best-scoring box when it is worth this
much more (an article of many small sections)."""
RIVAL_SHARE = 0.2
RIVAL_STEPS = 2
MAX_PARTS = 8

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
_TAG_SCORE = {
    "div": 5.0,
    "article": 5.0,
    "main": 5.0,
    "section": 2.0,
    "pre": 3.0,
    "td": 3.0,
    "blockquote": 3.0,
    "ol": -3.0,
    "ul": -3.0,
    "dl": -3.0,
    "dd": -3.0,
    "dt": -3.0,
    "li": -3.0,
    "address": -3.0,
    "form": -3.0,
    "h1": -5.0,
    "h2": -5.0,
    "h3": -5.0,
    "h4": -5.0,
    "h5": -5.0,
    "h6": -5.0,
    "th": -5.0,
}
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
_CELLS = frozenset(["td", "th", "pre"])
_LABELLED = _CELLS | HEADINGS | {"li", "dt", "dd", "caption", "summary"}
MAX_LABEL = 20
_ARTICLE_TAGS = frozenset(["article", "main"])
_TEXT_ID = 2
"""lexbor's id of a text node (``-text``)."""
_STANDARD_IDS = 1 << 16
"""lexbor numbers the tags it knows below this; other tags get an id per document."""
_TAG_NAMES: dict[int, str] = {}
"""Names of the standard tags by id, learnt as met: ``tag_id`` costs less than ``tag``."""
_STOPS = frozenset(".!?\u3002\uff01\uff1f")
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
    """Only the length of its text was read (see `_read`)."""
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


def main_blocks(tree: LexborHTMLParser) -> list[Block]:
    """The blocks of the main text of ``tree``, in document order (maybe none)."""
    body = tree.body
    if body is None:
        return []
    boxes, blocks = _read(body, skim=True)
    if any(box.skimmed for box in boxes if box.boilerplate):
        # a box named like boilerplate that holds most of the text is read after all
        limit = MAX_BOILERPLATE_SHARE * boxes[0].chars
        if any(box.skimmed and box.chars > limit for box in boxes):
            boxes, blocks = _read(body, skim=False)
    found = _select(boxes, blocks, strict=True) if blocks else []
    if sum(len(block.text) for block in found) < MIN_TEXT:
        # the article may sit in a box named or tagged like boilerplate (an <aside>, a
        # "teaser" section): read and score every box
        if any(box.skimmed for box in boxes):
            boxes, blocks = _read(body, skim=False)
        again = _select(boxes, blocks, strict=False) if blocks else []
        if sum(len(b.text) for b in again) > sum(len(b.text) for b in found):
            return again
    return found


def _read(body: LexborNode, *, skim: bool) -> tuple[list[Box], list[Block]]:
    """The boxes and blocks of ``body``, totalled. With ``skim``, the text of a box that is
    boilerplate is only measured, not cut into blocks (most of a page's markup can be menus
    and footers)."""
    walker = _Walker(skim)
    walker.run(body)
    _total(walker.boxes, walker.blocks)
    _unflag_big_boilerplate(walker.boxes)
    return walker.boxes, walker.blocks


def _select(boxes: list[Box], blocks: list[Block], *, strict: bool) -> list[Block]:
    chosen, parent = _choose(boxes, blocks, strict=strict)
    kept = _keep(boxes, chosen)
    found = [
        block
        for block in blocks
        if block.density <= LINK_DENSITY_MAX
        and (kept[block.box] or (block.box == parent and _is_prose_text(block)))
        and (_has_word(block.text) or boxes[block.box].tag in _CELLS)
    ]
    said = [block for block in found if not _label(block, boxes[block.box].tag)]
    return said or found  # a page of one word keeps it


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

    def _open(self, node: LexborNode, tag: str, parent: int, in_article: bool) -> int:
        boilerplate = tag in _BOILERPLATE_TAGS or (tag == "header" and not in_article)
        if tag not in _NAMED_TAGS:  # paragraphs, items, cells: their names rarely tell
            self.boxes.append(Box(tag, parent, "", 0.0, boilerplate))
            return len(self.boxes) - 1
        attributes = node.attributes
        weight = 0.0
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
        self.boxes.append(Box(tag, parent, names, weight, boilerplate))
        return len(self.boxes) - 1

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
                if text:
                    parts.append(text)
                    if in_link:
                        self.link_chars += len(text.strip())
                continue
            self.nodes += 1
            if self.nodes > MAX_NODES:
                return
            known = names.get(tag_id)
            if known is None:
                known = child.tag or ""
                if tag_id < _STANDARD_IDS:
                    names[tag_id] = known
            tag = known
            if tag in SKIP_TAGS:
                continue
            if tag not in _BOX_TAGS:
                if tag == "img":
                    self.images.append(child)
                    continue
                if tag == "br":
                    parts.append(" ")
                    continue
                first = child.first_child
                if first is None:
                    continue
                if first.next is None and first.tag == "-text":  # <a>words</a>: no walk
                    text = first.text_content
                    if text:
                        parts.append(text)
                        if in_link or tag == "a":
                            self.link_chars += len(text.strip())
                    continue
                self._visit(child, depth + 1, box, in_link or tag == "a", in_article)
                continue
            inner = self._open(child, tag, box, in_article)
            if parts or self.images:
                self._close(tag, inner)
            else:
                self.tag, self.box = tag, inner
            quiet = self.quiet
            opened = self.boxes[inner]
            if opened.boilerplate and self.skim:
                opened.skimmed = True
                opened.chars = len(" ".join(child.text(deep=True).split()))
                opened.link_chars = int(opened.chars * SKIMMED_LINK_SHARE)
                if parts or self.images:
                    self._close("div", box)
                else:
                    self.tag, self.box = "div", box
                continue
            self.quiet = quiet or opened.boilerplate
            self._visit(child, depth + 1, inner, in_link, in_article or tag in _ARTICLE_TAGS)
            if parts or self.images:
                self._close("div", box)
            else:
                self.tag, self.box = "div", box
            self.quiet = quiet


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
        box.ends_sentence = block.text[-1] in _STOPS
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


def _in_boilerplate(boxes: list[Box], index: int) -> bool:
    while index >= 0:
        box = boxes[index]
        if box.boilerplate:
            return True
        index = box.parent
    return False


def _choose(boxes: list[Box], blocks: list[Block], *, strict: bool) -> tuple[set[int], int]:
    """The boxes whose text is the main text: the best-scoring box and the siblings that join
    it (the body when no block is prose); and their parent, whose loose prose joins too.
    ``strict``: prose inside boilerplate does not count."""
    flagged: dict[int, bool] = {}
    scores: dict[int, float] = {}
    mass = [0.0] * len(boxes)  # the prose scores of all a box holds, undivided
    prose = [0] * len(boxes)  # and the characters of that prose
    for block in blocks:
        chars = len(block.text)
        if chars < MIN_PARAGRAPH or block.density > LINK_DENSITY_MAX:
            continue
        if strict:
            inside = flagged.get(block.box)
            if inside is None:
                inside = flagged[block.box] = _in_boilerplate(boxes, block.box)
            if inside:
                continue
        score = 1.0 + block.commas + min(chars // 100, 3)
        mass[block.box] += score
        prose[block.box] += chars
        index = boxes[block.box].parent
        for divider in (1.0, 2.0, 6.0):
            if index < 0:
                break
            box = boxes[index]
            known = scores.get(index)
            if known is None:
                known = _TAG_SCORE.get(box.tag, 0.0) + box.weight
            scores[index] = known + score / divider
            index = box.parent
    if not scores:
        return {0}, -1
    final = {i: score * (1.0 - boxes[i].link_density()) for i, score in scores.items()}
    ranked = sorted(final, key=final.__getitem__, reverse=True)
    top = _climb(boxes, ranked, final)
    for index in range(len(boxes) - 1, 0, -1):
        parent = boxes[index].parent
        mass[parent] += mass[index]
        prose[parent] += prose[index]
    dense = _densest(boxes, mass, prose)
    if dense > 0 and _worth(boxes, dense, mass, prose) >= COMPACT_GAIN * _worth(
        boxes, top, mass, prose
    ):
        top = _unwrap(boxes, dense)
    if top == 0:
        return {0}, -1
    parent = boxes[top].parent
    threshold = max(SIBLING_MIN, SIBLING_SHARE * final.get(top, 0.0))
    enough = max(MASS_MIN, SIBLING_SHARE * mass[top])
    chosen = {top}
    for index, box in enumerate(boxes):
        if box.parent != parent or index == top or box.boilerplate:
            continue
        score = final.get(index, 0.0)
        if box.weight and box.weight == boxes[top].weight:
            score += 0.2 * final.get(top, 0.0)
        if (
            score >= threshold
            or _is_prose(box)
            or (mass[index] >= enough and box.link_density() < PROSE_LINK_DENSITY)
        ):
            chosen.add(index)
    return chosen, parent


def _worth(boxes: list[Box], index: int, mass: list[float], prose: list[int]) -> float:
    """The prose a box holds, discounted by the share of its text that is not prose."""
    box = boxes[index]
    if not box.chars:
        return 0.0
    return mass[index] * (prose[index] / box.chars) ** 2


def _densest(boxes: list[Box], mass: list[float], prose: list[int]) -> int:
    best, best_worth = 0, 0.0
    for index in range(1, len(boxes)):
        if mass[index] > best_worth:  # worth <= mass: most boxes are passed over at once
            worth = _worth(boxes, index, mass, prose)
            if worth > best_worth:
                best, best_worth = index, worth
    return best


def _climb(boxes: list[Box], ranked: list[int], final: dict[int, float]) -> int:
    """The best box, moved up to take in its parts: the best boxes of other branches that have
    its tag and class, score at least `RIVAL_SHARE` of it and meet it at most `RIVAL_STEPS`
    levels up (an article cut into parts by pictures and advertisements); and past wrappers
    holding nothing else."""
    best = ranked[0]
    top = _unwrap(boxes, best)
    rivals: list[int] = []
    kind = (boxes[best].tag, boxes[best].names)
    for index in ranked[1:]:
        if final[index] < RIVAL_SHARE * final[best] or len(rivals) == MAX_PARTS:
            break
        if (boxes[index].tag, boxes[index].names) != kind or any(
            _descends(boxes, index, r) or _descends(boxes, r, index) for r in [best, *rivals]
        ):
            continue
        rivals.append(index)
    for rival in rivals:
        if _descends(boxes, rival, top):
            continue
        ancestor, steps = _meet(boxes, top, rival)
        if ancestor > 0 and steps <= RIVAL_STEPS and boxes[ancestor].link_density() <= 0.3:
            top = _unwrap(boxes, ancestor)
    return top


def _unwrap(boxes: list[Box], index: int) -> int:
    while index > 0:
        parent = boxes[index].parent
        if parent <= 0 or boxes[parent].chars > boxes[index].chars:
            break
        index = parent
    return index


def _meet(boxes: list[Box], top: int, other: int) -> tuple[int, int]:
    """The nearest common ancestor of ``top`` and ``other``, and how many levels up from
    ``top`` it is, counting only levels that add text."""
    ancestors = set()
    index = other
    while index >= 0:
        ancestors.add(index)
        index = boxes[index].parent
    steps = 0
    index = top
    while index not in ancestors:
        parent = boxes[index].parent
        if parent < 0:
            return 0, steps
        if boxes[parent].chars > boxes[index].chars:
            steps += 1
        index = parent
    return index, steps


def _descends(boxes: list[Box], index: int, ancestor: int) -> bool:
    while index >= 0:
        if index == ancestor:
            return True
        index = boxes[index].parent
    return False


def _commas(text: str) -> int:
    """Commas, Arabic, full-width and ideographic ones too."""
    count = text.count(",")
    if not text.isascii():
        count += text.count("\u060c") + text.count("\uff0c") + text.count("\u3001")
    return count


def _has_word(text: str) -> bool:
    """Whether ``text`` has a letter: pager digits, arrows and bullets have none."""
    return any(c.isalpha() for c in text)


def _label(block: Block, tag: str) -> bool:
    """A lone word that is not a heading, an item or a cell: "Advertisement", "Share"."""
    text = block.text
    return (
        len(text) <= MAX_LABEL
        and " " not in text
        and tag not in _LABELLED
        and text[-1] not in _STOPS
    )


def _is_prose(box: Box) -> bool:
    if box.tag != "p" or not box.chars:
        return False
    density = box.link_density()
    return (box.chars > 80 and density < 0.25) or (density == 0 and box.ends_sentence)


def _is_prose_text(block: Block) -> bool:
    chars = len(block.text)
    density = block.link_density()
    return (chars > 80 and density < 0.25) or (density == 0 and block.text[-1] in _STOPS)


def _keep(boxes: list[Box], chosen: set[int]) -> list[bool]:
    """For each box, whether its own blocks are main text: it is inside a chosen box, and
    neither it nor a box between is boilerplate or a link list."""
    kept = [False] * len(boxes)
    for index, box in enumerate(boxes):
        parent = box.parent
        if index in chosen:
            kept[index] = True
        elif parent >= 0 and kept[parent]:
            kept[index] = not box.boilerplate and not _clutter(box)
    return kept


def _clutter(box: Box) -> bool:
    """A box inside the main text that is a link list, a gallery or a widget, not prose."""
    if box.tag not in ("div", "section", "ul", "ol", "dl", "table", "figure"):
        return False
    if box.commas >= 10 or not box.chars:
        return False
    if box.images > 1 and 2 * box.paragraphs < box.images:
        return True  # a gallery, a carousel: captions and their controls
    density = box.link_density()
    if density > (0.5 if box.weight >= 25 else 0.25 if box.weight >= 0 else 0.2):
        return True
    if box.weight < 0 and box.chars < 200:
        return True
    if box.paragraphs == 0 and box.blocks >= 8 and box.chars < 40 * box.blocks:
        return box.tag in ("div", "section")  # cards, teasers, a playlist: many short lines
    return box.tag not in ("ul", "ol") and box.items > box.paragraphs + 10

"""The tree model: score the page's boxes by the prose they hold, keep the best box's text.

One depth-first pass over the parsed page (`gossamer.extract.walk`) records every block-level
element as a *box* (its tag, its parent box, what its ``class``, ``id`` and ``role`` say) and
cuts the text into *blocks*: the text between block-level tags, each knowing its innermost
box, how much of it sits in links and which images it holds.

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

from selectolax.lexbor import LexborHTMLParser

from gossamer.extract.density import HEADINGS
from gossamer.extract.walk import (
    MAX_BOILERPLATE_SHARE,
    MAX_DEPTH,
    MAX_NODES,
    STOPS,
    Block,
    Box,
    Reading,
    forget_names,
)

__all__ = ["MAX_DEPTH", "MAX_NODES", "MIN_PARAGRAPH", "Block", "forget_names", "main_blocks"]

MIN_PARAGRAPH = 25
"""Characters a block needs to count as prose."""
MIN_TEXT = 250
"""A main text shorter than this is looked for again, inside boilerplate too."""
LINK_DENSITY_MAX = 0.5
"""Kept blocks and boxes with more of their text in links than this are left out."""
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
_CELLS = frozenset(["td", "th", "pre"])
_LABELLED = _CELLS | HEADINGS | {"li", "dt", "dd", "caption", "summary"}
MAX_LABEL = 20
_DIVIDERS = (1.0, 2.0, 6.0)
_CLUTTER_TAGS = frozenset(["div", "section", "ul", "ol", "dl", "table", "figure"])
"""Boxes that may be clutter inside the main text (`_clutter`)."""
_ASCII_LETTER = re.compile("[A-Za-z]")


def main_blocks(tree: LexborHTMLParser) -> list[Block]:
    """The blocks of the main text of ``tree``, in document order (maybe none)."""
    body = tree.body
    if body is None:
        return []
    reading = Reading(body, skim=True)
    skimmed = reading.skimmed_boxes()
    if any(box.boilerplate for box in skimmed):
        # a box named like boilerplate that holds most of the text is read after all
        limit = MAX_BOILERPLATE_SHARE * reading.boxes[0].chars
        if any(box.chars > limit for box in skimmed):
            reading = reading.unskimmed()
    boxes, blocks = reading.boxes, reading.blocks
    found = _select(boxes, blocks, strict=True) if blocks else []
    if sum(len(block.text) for block in found) < MIN_TEXT:
        # the article may sit in a box named or tagged like boilerplate (an <aside>, a
        # "teaser" section): read and score every box
        reading = reading.unskimmed()
        boxes, blocks = reading.boxes, reading.blocks
        again = _select(boxes, blocks, strict=False) if blocks else []
        if sum(len(b.text) for b in again) > sum(len(b.text) for b in found):
            return again
    return found


def _select(boxes: list[Box], blocks: list[Block], *, strict: bool) -> list[Block]:
    chosen, parent = _choose(boxes, blocks, strict=strict)
    kept = _keep(boxes, chosen)
    found = [
        block
        for block in blocks
        if block.density <= LINK_DENSITY_MAX
        and (kept[block.box] or (block.box == parent and _is_prose_text(block)))
        # most blocks open with a letter: the search for one is spared them
        and (block.text[0].isalpha() or _has_word(block.text) or boxes[block.box].tag in _CELLS)
    ]
    said = [
        block
        for block in found
        if len(block.text) > MAX_LABEL or not _label(block, boxes[block.box].tag)
    ]
    return said or found  # a page of one word keeps it


def _in_boilerplate(boxes: list[Box]) -> list[bool]:
    """For each box, whether it or a box it sits in is boilerplate (one pass: boxes are in
    pre-order, a parent before its children)."""
    inside: list[bool] = []
    for box in boxes:
        parent = box.parent
        inside.append(box.boilerplate or (parent >= 0 and inside[parent]))
    return inside


def _choose(boxes: list[Box], blocks: list[Block], *, strict: bool) -> tuple[set[int], int]:
    """The boxes whose text is the main text: the best-scoring box and the siblings that join
    it (the body when no block is prose); and their parent, whose loose prose joins too.
    ``strict``: prose inside boilerplate does not count."""
    scores, mass, prose = _score(boxes, blocks, strict=strict)
    if not scores:
        return {0}, -1
    final = {i: score * (1.0 - boxes[i].link_density()) for i, score in scores.items()}
    ranked = sorted(final, key=final.__getitem__, reverse=True)
    top = _climb(boxes, ranked, final)
    for index in range(len(boxes) - 1, 0, -1):
        if prose[index]:  # (as mass: a box holds prose or scores none)
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
    return _join(boxes, top, final, mass), boxes[top].parent


def _score(
    boxes: list[Box], blocks: list[Block], *, strict: bool
) -> tuple[dict[int, float], list[float], list[int]]:
    """Each box's score from the prose below it (see the module docstring); and the prose
    scores and characters of each box's own blocks."""
    quiet = _in_boilerplate(boxes) if strict else None
    scores: dict[int, float] = {}
    mass = [0.0] * len(boxes)  # the prose scores of all a box holds, undivided
    prose = [0] * len(boxes)  # and the characters of that prose
    tag_score = _TAG_SCORE.get
    for block in blocks:
        chars = len(block.text)
        owner = block.box
        if chars < MIN_PARAGRAPH or block.density > LINK_DENSITY_MAX:
            continue
        if quiet is not None and quiet[owner]:
            continue
        score = 1.0 + block.commas + (chars // 100 if chars < 300 else 3)
        mass[owner] += score
        prose[owner] += chars
        # the parent in full, the grandparent by half, the next ancestor by a sixth
        index = boxes[owner].parent
        for divider in _DIVIDERS:
            if index < 0:
                break
            known = scores.get(index)
            box = boxes[index]
            if known is None:
                known = tag_score(box.tag, 0.0) + box.weight
            scores[index] = known + score / divider
            index = box.parent
    return scores, mass, prose


def _join(boxes: list[Box], top: int, final: dict[int, float], mass: list[float]) -> set[int]:
    """``top`` and the siblings that join it: those scoring near it, paragraphs of prose, and
    boxes holding enough prose with few links."""
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
    return chosen


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


def _has_word(text: str) -> bool:
    """Whether ``text`` has a letter: pager digits, arrows and bullets have none."""
    if text.isascii():  # most blocks: one search in C
        return _ASCII_LETTER.search(text) is not None
    return any(c.isalpha() for c in text)


def _label(block: Block, tag: str) -> bool:
    """A lone word that is not a heading, an item or a cell: "Advertisement", "Share"."""
    text = block.text
    return (
        len(text) <= MAX_LABEL
        and " " not in text
        and tag not in _LABELLED
        and text[-1] not in STOPS
    )


def _is_prose(box: Box) -> bool:
    if box.tag != "p" or not box.chars:
        return False
    density = box.link_density()
    return (box.chars > 80 and density < 0.25) or (density == 0 and box.ends_sentence)


def _is_prose_text(block: Block) -> bool:
    chars = len(block.text)
    density = block.link_density()
    return (chars > 80 and density < 0.25) or (density == 0 and block.text[-1] in STOPS)


def _keep(boxes: list[Box], chosen: set[int]) -> list[bool]:
    """For each box, whether its own blocks are main text: it is inside a chosen box, and
    neither it nor a box between is boilerplate or a link list.

    Only the boxes from the first chosen one to the end of the last one's are read (boxes are
    in pre-order: a box's descendants follow it, and a box after the last chosen whose parent
    comes before the first is in no chosen box, nor is any box after it)."""
    kept = [False] * len(boxes)
    first, last = min(chosen), max(chosen)
    for index in range(first, len(boxes)):
        box = boxes[index]
        parent = box.parent
        if index in chosen:
            kept[index] = True
        elif index > last and parent < first:
            break
        elif kept[parent]:
            kept[index] = not box.boilerplate and (
                box.tag not in _CLUTTER_TAGS or not _clutter(box)
            )
    return kept


def _clutter(box: Box) -> bool:
    """A box inside the main text that is a link list, a gallery or a widget, not prose."""
    if box.tag not in _CLUTTER_TAGS:
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

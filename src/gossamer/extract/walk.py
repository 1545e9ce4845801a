"""The walk of the tree model (`gossamer.extract.tree`): the page's boxes and blocks.

One depth-first pass over the parsed page (bounded by `MAX_DEPTH` and `MAX_NODES`) records
every block-level element as a *box* (its tag, its parent box, what its ``class``, ``id`` and
``role`` say) and cuts the text into *blocks*: the text between block-level tags, each knowing
its innermost box, how much of it sits in links and which images it holds. Each box is
totalled with what its descendants hold as it closes. A paragraph, cell, heading or term that
holds only text and inline elements is read whole (`_Walker._read_whole`): its elements are
scanned, its text joined by lexbor, its text nodes never met one by one. Scoring the boxes is
`gossamer.extract.tree`'s, and reading what names say `gossamer.extract.names`'.

A walk may skim boxes that are boilerplate (their text only measured); when the page must be
read in full after all, `Reading.unskimmed` walks only those boxes and puts their boxes and
blocks in place, as a walk that skims nothing would have found them.

The walk runs in C where it is built and binds (``extract/_walk.c``: lexbor's tree read
directly, a Python object made only for what the result holds: boxes, blocks and their text,
images, skims; its levels an array, not the C stack); `_Walker` is the reference and runs
where it is not, or with ``GOSSAMER_NATIVE=0``. Tests compare the two on edge cases,
generated markup and the real pages (``tests/extract/test_walk.py``). It takes the tree
extractor from 1,641 M to 839 M instructions over every tenth real page
(``benchmarks/bench_walk.py --callgrind --every 10``; 0.73 to 0.40 ms a page over all of
them, ``--rounds 3``, pinned, alternated) and the whole-job crawl of python3-doc
from 18,207 M to 14,099 M (-22.6%, ``benchmarks/callgrind_crawl.py --real --only content
--sites python3-doc``), its records identical field by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.extract.boxes import ARTICLE_TAGS as _ARTICLE_TAGS
from gossamer.extract.boxes import BOILERPLATE_TAGS as _BOILERPLATE_TAGS
from gossamer.extract.boxes import NAMED_TAGS as _NAMED_TAGS
from gossamer.extract.boxes import STOPS, Block, Box, walk_tables
from gossamer.extract.boxes import WHOLE_TAGS as _WHOLE_TAGS
from gossamer.extract.boxes import box_names as _named
from gossamer.extract.density import MAX_DEPTH, MAX_NODES
from gossamer.extract.kinds import BOX as _BOX
from gossamer.extract.kinds import IMG as _IMG
from gossamer.extract.kinds import INLINE as _INLINE
from gossamer.extract.kinds import KINDS as _KINDS
from gossamer.extract.kinds import LINK as _LINK
from gossamer.extract.kinds import SKIP as _SKIP
from gossamer.extract.kinds import TAG_NAMES as _TAG_NAMES
from gossamer.extract.kinds import TEXT_ID as _TEXT_ID
from gossamer.extract.kinds import WHOLE_KINDS as _WHOLE_KINDS
from gossamer.extract.kinds import scan_whole
from gossamer.extract.names import forget_names
from gossamer.extract.spaces import squash, squashed_length
from gossamer.parse.native import bound, load

__all__ = [
    "MAX_BOILERPLATE_SHARE",
    "MAX_DEPTH",
    "MAX_NODES",
    "STOPS",
    "Block",
    "Box",
    "Reading",
    "forget_names",
    "read_boxes",
]

# MAX_DEPTH and MAX_NODES (re-exported): the walk reads a page within the bounds the density
# model reads it in.
SKIMMED_LINK_SHARE = 0.5
"""Share of a skimmed box's text counted as links (boilerplate is mostly links)."""
MAX_BOILERPLATE_SHARE = 0.4
"""A box named like boilerplate that holds more of the page's text than this is kept."""


def read_boxes(body: LexborNode, *, skim: bool) -> tuple[list[Box], list[Block]]:
    """The boxes and blocks of ``body``, totalled. With ``skim``, the text of a box that is
    boilerplate is only measured, not cut into blocks (most of a page's markup can be menus
    and footers)."""
    reading = Reading(body, skim=skim)
    return reading.boxes, reading.blocks


class Reading:
    """The boxes and blocks of one walk of ``body``, totalled (see `read_boxes`); a skimming
    walk can then be completed (`unskimmed`) by walking only what it skimmed."""

    def __init__(self, body: LexborNode, *, skim: bool) -> None:
        boxes, blocks, flagged, self._nodes, self._skims = _walk(body, skim)
        self._body = body
        self._set(boxes, blocks, flagged)

    def _set(self, boxes: list[Box], blocks: list[Block], flagged: list[int]) -> None:
        self.boxes = boxes
        self.blocks = blocks
        self._unflagged = _unflag_big_boilerplate(boxes, flagged)

    @property
    def skimmed(self) -> bool:
        """Whether some box was only measured."""
        return bool(self._skims)

    def skimmed_boxes(self) -> list[Box]:
        """The boxes only measured, in page order."""
        return [self.boxes[skim.index] for skim in self._skims]

    def unskimmed(self) -> Reading:
        """This reading as a walk that skims nothing (``skim=False``) gives it, found by
        walking only the skimmed boxes: a page read again is most often a long list of links
        whose menus alone were skimmed."""
        if not self._skims:
            return self
        walks: list[tuple[list[Box], list[Block]]] = []
        nodes = self._nodes
        for skim in self._skims:
            inner_boxes, inner_blocks, inner_nodes = _walk_skimmed(self.boxes[skim.index], skim)
            nodes += inner_nodes
            if skim.images_pending or nodes > MAX_NODES:  # a walk would go otherwise
                return Reading(self._body, skim=False)
            walks.append((inner_boxes, inner_blocks))
        for index in self._unflagged:
            self.boxes[index].boilerplate = True
        boxes, blocks = _splice(self.boxes, self.blocks, self._skims, walks)
        _total(boxes, blocks)
        self._skims = []
        self._nodes = nodes
        self._set(boxes, blocks, [i for i, box in enumerate(boxes) if box.boilerplate])
        return self


@dataclass(slots=True)
class _Skim:
    """A box whose text was only measured, and where the walk stood when it met it."""

    index: int
    node: LexborNode
    blocks: int
    """Blocks read before it."""
    depth: int
    in_link: bool
    in_article: bool
    images_pending: bool
    """Images met before it with no text yet to join (its walk would take them in)."""


def _walk(
    body: LexborNode, skim: bool
) -> tuple[list[Box], list[Block], list[int], int, list[_Skim]]:
    """The boxes, blocks, boxes flagged as boilerplate, nodes read and skims of a walk of
    ``body``: in C where it is built and binds, else by `_Walker`, the reference."""
    if _WALK is not None:
        boxes, blocks, flagged, nodes, skims = _WALK.walk(body, skim, 0, False, False, None)
        return boxes, blocks, flagged, nodes, [_Skim(*found) for found in skims]
    walker = _Walker(skim)
    walker.run(body)
    return walker.boxes, walker.blocks, walker.flagged, walker.nodes, walker.skims


def _walk_skimmed(box: Box, skim: _Skim) -> tuple[list[Box], list[Block], int]:
    """A walk of a skimmed box alone, as the walk of the page would have gone through it:
    its boxes (the box is index 0), blocks and nodes read."""
    if _WALK is not None:
        first = (box.tag, box.names, box.weight)
        boxes, blocks, _, nodes, _ = _WALK.walk(
            skim.node, False, skim.depth, skim.in_link, skim.in_article, first
        )
        return boxes, blocks, nodes
    walker = _Walker(False)
    walker.boxes.append(Box(box.tag, -1, box.names, box.weight, True))
    walker.tag, walker.box, walker.quiet = box.tag, 0, True
    walker.visit(skim.node, skim.depth, skim.in_link, skim.in_article)
    walker.close_box()
    return walker.boxes, walker.blocks, walker.nodes


def _splice(
    boxes: list[Box],
    blocks: list[Block],
    skims: list[_Skim],
    walks: list[tuple[list[Box], list[Block]]],
) -> tuple[list[Box], list[Block]]:
    """Fresh boxes and blocks (totals not added) with each skimmed box's walk put in its
    place: boxes in pre-order, blocks in document order."""
    new_boxes: list[Box] = []
    new_blocks: list[Block] = []
    where = [0] * len(boxes)
    pending = {skim.index: (skim, walk) for skim, walk in zip(skims, walks, strict=True)}
    done = 0
    for index, box in enumerate(boxes):
        at = where[index] = len(new_boxes)
        parent = where[box.parent] if box.parent >= 0 else -1
        new_boxes.append(Box(box.tag, parent, box.names, box.weight, box.boilerplate))
        found = pending.get(index)
        if found is None:
            continue
        skim, (inner_boxes, inner_blocks) = found
        done = _move_blocks(blocks, done, skim.blocks, where, new_blocks)
        for inner in inner_boxes[1:]:
            new_boxes.append(
                Box(inner.tag, inner.parent + at, inner.names, inner.weight, inner.boilerplate)
            )
        for block in inner_blocks:
            block.box += at
            new_blocks.append(block)
    _move_blocks(blocks, done, len(blocks), where, new_blocks)
    return new_boxes, new_blocks


def _move_blocks(
    blocks: list[Block], start: int, end: int, where: list[int], out: list[Block]
) -> int:
    for block in blocks[start:end]:
        block.box = where[block.box]
        out.append(block)
    return end


class _Walker:
    """One depth-first pass recording boxes and blocks, each box totalled as it closes."""

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
        self.skims: list[_Skim] = []
        self.flagged: list[int] = []  # the boxes that are boilerplate

    def run(self, body: LexborNode) -> None:
        self.boxes.append(Box("body", -1, "", 0.0, False))
        self.visit(body, 0, False, False)
        self.close_box()

    def visit(self, node: LexborNode, depth: int, in_link: bool, in_article: bool) -> None:
        """Walk the children of ``node``, the first box (boxes[0])."""
        self._visit(node, depth, 0, in_link, in_article)

    def close_box(self) -> None:
        """Close the text of the first box."""
        self._close("div", 0)

    def _close(self, next_tag: str, box: int) -> None:
        parts, images = self.parts, self.images
        if parts:
            text = squash(parts)
            parts.clear()  # in place: the walk holds this list
            if text:
                size = len(text)
                links = self.link_chars if self.link_chars < size else size
                commas = text.count(",") if text.isascii() else _commas(text)
                self.blocks.append(
                    Block(self.tag, self.box, text, links, images, links / size, commas)
                )
                # its own blocks' totals, here at once; a field is written only when it
                # changes (a Struct's attribute store costs some 200 instructions)
                owner = self.boxes[self.box]
                owner.chars += size
                owner.blocks += 1
                if links:
                    owner.link_chars += links
                if commas:
                    owner.commas += commas
                if images:
                    owner.images += len(images)
                if (ends := text[-1] in STOPS) is not owner.ends_sentence:
                    owner.ends_sentence = ends
                self.images = []
            elif images and self.quiet:
                images.clear()
        elif images and self.quiet:  # a logo or an icon
            images.clear()
        # else an image between paragraphs belongs with the text after it
        self.tag, self.box, self.link_chars = next_tag, box, 0

    def _visit(  # noqa: C901, PLR0912, PLR0915 (one frame a level: see below)
        self,
        node: LexborNode,
        depth: int,
        box: int,
        in_link: bool,
        in_article: bool,
        tag: str = "",
    ) -> None:
        """Walk the children of ``node`` in box ``box``. With ``tag``, ``node`` is block-level
        and opens a box of its own inside ``box`` first: its text walked, read whole
        (`_read_whole`) or skimmed (`_skim`), the walk quiet inside boilerplate; then the walk
        goes back to the text of ``box``, the box's totals added into ``box``'s. All in one
        frame: a level of the page costs one (`MAX_DEPTH` levels within Python's recursion
        limit) and a box one call."""
        if tag:
            boilerplate = tag in _BOILERPLATE_TAGS or (tag == "header" and not in_article)
            names = ""
            weight = 0.0
            # not read: paragraphs, items, cells (their names rarely tell), unnamed boxes
            if tag in _NAMED_TAGS and (attributes := node.attributes):
                names, weight, named = _named(attributes)
                boilerplate = boilerplate or named
            parent = box
            if tag == "p":
                opened = Box(tag, parent, names, weight, boilerplate, paragraphs=1)
            elif tag == "li":
                opened = Box(tag, parent, names, weight, boilerplate, items=1)
            else:
                opened = Box(tag, parent, names, weight, boilerplate)
            boxes = self.boxes
            box = len(boxes)
            boxes.append(opened)
            if boilerplate:
                self.flagged.append(box)
            if self.parts or self.images:
                self._close(tag, box)
            else:
                self.tag, self.box = tag, box
            quiet = self.quiet
            in_article = in_article or tag in _ARTICLE_TAGS
            if boilerplate and self.skim:
                self._skim(opened, box, node, depth, in_link, in_article)
                walk = False
            else:
                self.quiet = quiet or boilerplate
                walk = not (tag in _WHOLE_TAGS and self._read_whole(node, in_link))
        else:
            walk = True
        if walk and depth <= MAX_DEPTH:
            parts = self.parts
            kinds = _KINDS
            for child in node.iter(True):
                tag_id = child.tag_id
                if tag_id == _TEXT_ID:
                    # spaces opening a block are dropped by `_close` anyway (the lines between
                    # tags): without them most boxes close with nothing to read; lexbor tells
                    # ASCII spaces without the text read
                    if not parts and child.is_empty_text_node:
                        continue
                    text = child.text_content
                    if text and (parts or not text.isspace()):
                        parts.append(text)
                        if in_link:
                            self.link_chars += len(text.strip())
                    continue
                self.nodes += 1
                if self.nodes > MAX_NODES:
                    break
                kind = kinds.get(tag_id, _INLINE)
                if kind <= _LINK:  # most elements: spans, links, code
                    if (first := child.first_child) is None:
                        pass
                    elif first.tag_id == _TEXT_ID and first.next is None:  # <a>words</a>
                        text = first.text_content
                        if text:
                            parts.append(text)
                            if in_link or kind:
                                self.link_chars += len(text.strip())
                    else:
                        self._visit(child, depth + 1, box, in_link or kind == _LINK, in_article)
                elif kind == _BOX:
                    tag_name = _TAG_NAMES[tag_id]
                    self._visit(child, depth + 1, box, in_link, in_article, tag_name)
                elif kind != _SKIP:
                    self._mark(child, kind)
        if tag:
            if self.parts or self.images:
                self._close("div", parent)
            else:  # nothing to read: no link characters either
                self.tag, self.box = "div", parent
            self.quiet = quiet
            # the box's totals added into its parent's (`_add_into`, inline), but for zeros:
            # most boxes hold no images, commas or items, and many no text
            into = boxes[parent]
            if chars := opened.chars:
                into.chars += chars
                if links := opened.link_chars:
                    into.link_chars += links
                if commas := opened.commas:
                    into.commas += commas
                if blocks := opened.blocks:
                    into.blocks += blocks
                if images := opened.images:
                    into.images += images
            if paragraphs := opened.paragraphs:
                into.paragraphs += paragraphs
            if items := opened.items:
                into.items += items

    def _mark(self, node: LexborNode, kind: int) -> None:
        """An image joins the block, a line break spaces it."""
        if kind == _IMG:
            self.images.append(node)
        else:
            self.parts.append(" ")

    def _skim(
        self, box: Box, index: int, node: LexborNode, depth: int, in_link: bool, in_article: bool
    ) -> None:
        """Only the length of the text of ``box`` (boxes[``index``]) measured, and where the
        walk stands kept, to walk it if the page must be read in full."""
        box.skimmed = True
        box.chars = squashed_length(node.text(deep=True))
        box.link_chars = int(box.chars * SKIMMED_LINK_SHARE)
        images = bool(self.images)
        self.skims.append(_Skim(index, node, len(self.blocks), depth, in_link, in_article, images))

    def _read_whole(self, node: LexborNode, in_link: bool) -> bool:
        """Read the text of box ``node`` in one piece, as lexbor joins it, if it holds only
        text and inline elements (no box, image, line break or skipped element): a scan of
        its elements costs a fraction of their walk, their text nodes are not met at all.
        Whether it did."""
        first = node.first_child
        if first is None:
            return True  # an empty box
        first_id = first.tag_id
        if first_id == _TEXT_ID:
            if first.next is None:
                # text alone (a third of these boxes): read as the walk would, without its frame
                text = first.text_content
                if text:
                    self.parts.append(text)
                    if in_link:
                        self.link_chars += len(text.strip())
                return True
        elif _WHOLE_KINDS.get(first_id, _INLINE) > _LINK:
            return False  # a box first (a term's paragraph): the scan would stop there
        # (not whole, or the walk stops inside: None)
        if (scanned := scan_whole(node, MAX_NODES - self.nodes)) is None:
            return False
        elements, links = scanned
        self.nodes += elements
        text = node.text()
        if text:
            self.parts.append(text)
            if in_link:
                self.link_chars += len(node.text(True, "", True))
            elif links:  # (a link holds no link: it would need a box in between)
                chars = 0
                for link in links:
                    chars += len(link.text(True, "", True))
                self.link_chars += chars
        return True


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
        _add_into(boxes[box.parent], box)


def _add_into(into: Box, box: Box) -> None:
    """``box``'s totals added into ``into``'s."""
    into.chars += box.chars
    into.link_chars += box.link_chars
    into.commas += box.commas
    into.paragraphs += box.paragraphs
    into.blocks += box.blocks
    into.items += box.items
    into.images += box.images


def _unflag_big_boilerplate(boxes: list[Box], flagged: list[int]) -> list[int]:
    """A class such as ``with-sidebar`` or a page-wide ``<form>`` must not hide the article:
    the boxes unflagged, of those ``flagged`` as boilerplate."""
    limit = MAX_BOILERPLATE_SHARE * boxes[0].chars
    unflagged = [index for index in flagged if boxes[index].chars > limit]
    for index in unflagged:
        boxes[index].boilerplate = False
    return unflagged


def _commas(text: str) -> int:
    """Commas, Arabic, full-width and ideographic ones too."""
    count = text.count(",")
    if not text.isascii():
        count += text.count("\u060c") + text.count("\uff0c") + text.count("\u3001")
    return count


def _bound() -> ModuleType | None:
    """``extract/_walk.c`` bound to selectolax's lexbor and told what it reads, or None."""
    sample = LexborHTMLParser("<p>gossamer \u00e9\u00e8</p>").css_first("p")
    text = None if sample is None else sample.first_child
    if text is None or text.text_content is None:
        return None
    told = (text, text.text_content.encode(), *walk_tables(), Box, Block)
    named = _names_of
    return bound(
        load("gossamer.extract._walk"), *told, named, squash, squashed_length, MAX_NODES, MAX_DEPTH
    )


def _names_of(node: LexborNode) -> tuple[str, float, bool]:
    return _named(node.attributes)


_WALK = _bound()
"""The walk in C (``extract/_walk.c``), or None: `_Walker`, the reference."""

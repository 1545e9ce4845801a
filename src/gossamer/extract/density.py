"""The text-density model: pick the main text of a page as its densest run of blocks.

The page is read once, depth first, as a sequence of *blocks* (the text between block-level
tags: paragraphs, headings, list items, table cells, the loose text of a ``<div>``). Each block
scores its text characters outside links, less a penalty per tag it holds, so menus (all
links) and markup-heavy widgets score near zero and prose scores high. The scores are smoothed
with a Gaussian over neighbouring blocks, and the main text is the contiguous run of blocks
whose smoothed score minus `THRESHOLD` has the maximum sum (Kadane's algorithm), as the
general parser of a crawler built on text density does per line of markup. Within that run,
blocks that are mostly links are dropped.

Containers that are boilerplate by their tag or role (navigation, page headers and footers,
asides, forms, cookie and consent banners, comment sections, share and related-link lists) and
non-text elements are skipped before scoring. The walk is bounded: at most `MAX_DEPTH` levels
and `MAX_NODES` nodes are read, so hostile pages cost bounded time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from gossamer.parse.guard import MAX_DEPTH as GUARD_DEPTH

__all__ = [
    "BLOCK_TAGS",
    "HEADINGS",
    "MAX_DEPTH",
    "MAX_NODES",
    "SKIP_TAGS",
    "THRESHOLD",
    "Block",
    "main_blocks",
]

MAX_DEPTH = GUARD_DEPTH + 16
"""Content nested deeper than this is not read: deeper than the parser guard lets a crawled
page be (`gossamer.parse.guard.MAX_DEPTH`, plus the document's own levels)."""
MAX_NODES = 200_000
"""The walk stops after this many nodes."""
THRESHOLD = 40.0
"""Smoothed score a block needs to add to the main run (about one short sentence)."""
TAG_PENALTY = 4.0
"""Characters one tag inside a block costs its score."""
LINK_DENSITY_MAX = 0.5
"""Blocks of the main run with more of their text in links than this are left out."""
MAX_BOILERPLATE_SHARE = 0.4
"""A boilerplate container holding more of the body's text than this is read anyway."""
MAX_BOILERPLATE_NODES = 500
_KERNEL = (0.1, 0.2, 0.4, 0.2, 0.1)  # Gaussian, sigma ~1 block, radius 2, sums to 1

SKIP_TAGS = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "iframe",
        "svg",
        "math",
        "canvas",
        "object",
        "embed",
        "video",
        "audio",
        "select",
        "option",
        "button",
        "input",
        "textarea",
        "dialog",
        "head",
        "title",
        "-comment",
    ]
)
BLOCK_TAGS = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "main",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "pre",
        "blockquote",
        "table",
        "tr",
        "td",
        "th",
        "tbody",
        "thead",
        "caption",
        "figure",
        "figcaption",
        "address",
        "hr",
        "center",
        "details",
        "summary",
        "header",
    ]
)
HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
# Boilerplate found by attribute, in one query per page. Substring matches on class and id are
# case sensitive in CSS; the common spellings are listed.
_BOILERPLATE_SELECTOR = ", ".join(
    [
        "nav",
        "aside",
        "footer",
        "form",
        "menu",
        "[role=navigation]",
        "[role=banner]",
        "[role=contentinfo]",
        "[role=complementary]",
        "[aria-hidden=true]",
        "[hidden]",
        "body > header",
        "header:not(article header):not(main header)",
        *(
            f'[{attr}*="{word}"]'
            for attr in ("class", "id")
            for word in (
                "cookie",
                "Cookie",
                "consent",
                "gdpr",
                "comments",
                "Comments",
                "comment-",
                "disqus",
                "related",
                "Related",
                "share",
                "social",
                "newsletter",
                "breadcrumb",
                "sidebar",
                "promo",
                "advert",
                "paywall",
                "subscribe",
            )
        ),
    ]
)


@dataclass(slots=True)
class Block:
    """The text between two block-level tags, and what scoring needs to know of it."""

    tag: str
    parts: list[str] = field(default_factory=list)
    link_chars: int = 0
    tags: int = 0
    images: list[LexborNode] = field(default_factory=list)
    text: str = ""

    def finish(self) -> None:
        self.text = " ".join("".join(self.parts).split())

    def score(self) -> float:
        chars = len(self.text)
        if chars == 0:
            return 0.0
        return max(0.0, chars - min(self.link_chars, chars) - TAG_PENALTY * self.tags)

    def link_density(self) -> float:
        return min(self.link_chars, len(self.text)) / max(1, len(self.text))


def main_blocks(tree: LexborHTMLParser) -> list[Block]:
    """The blocks of the main text of ``tree``, in document order (maybe none)."""
    root = tree.body
    if root is None:
        return []
    blocks = _Walker(_boilerplate_ids(tree, root)).run(root)
    if not blocks:
        return []
    smoothed = _smooth([b.score() for b in blocks])
    # A short page whose best block is under THRESHOLD still has a main text: its best run.
    start, end = _best_run(smoothed, min(THRESHOLD, 0.5 * max(smoothed)))
    if start > end:
        return []
    return [b for b in blocks[start : end + 1] if b.link_density() <= LINK_DENSITY_MAX]


def _boilerplate_ids(tree: LexborHTMLParser, body: LexborNode) -> set[int]:
    """Boilerplate containers, less those holding most of the page's text: a class such as
    ``with-sidebar`` or a page-wide ``<form>`` must not hide the article."""
    try:
        nodes = tree.css(_BOILERPLATE_SELECTOR)
    except Exception:  # a selector lexbor cannot run must not stop the extraction
        return set()
    limit = MAX_BOILERPLATE_SHARE * len(body.text(deep=True))
    return {
        node.mem_id for node in nodes[:MAX_BOILERPLATE_NODES] if len(node.text(deep=True)) <= limit
    }


class _Walker:
    """One depth-first pass that cuts the body into blocks."""

    def __init__(self, skip_ids: set[int]) -> None:
        self.skip_ids = skip_ids
        self.blocks: list[Block] = []
        self.current = Block("div")
        self.nodes = 0

    def run(self, root: LexborNode) -> list[Block]:
        self._visit(root, 0, False)
        self._close("div")
        return self.blocks

    def _close(self, next_tag: str) -> None:
        block = self.current
        block.finish()
        self.current = Block(next_tag)
        if block.text:
            self.blocks.append(block)
        elif block.images:  # an image between paragraphs belongs with the text after it
            self.current.images.extend(block.images)

    def _visit(self, node: LexborNode, depth: int, in_link: bool) -> None:
        if depth > MAX_DEPTH:
            return
        skip_ids = self.skip_ids
        for child in node.iter(include_text=True):
            self.nodes += 1
            if self.nodes > MAX_NODES:
                return
            tag = child.tag
            if tag == "-text":
                text = child.text_content or ""
                self.current.parts.append(text)
                if in_link:
                    self.current.link_chars += len(text.strip())
                continue
            if tag in SKIP_TAGS or child.mem_id in skip_ids:
                continue
            if tag in BLOCK_TAGS:
                self._close(tag)
                self._visit(child, depth + 1, in_link)
                self._close("div")
                continue
            if tag == "img":
                self.current.images.append(child)
            elif tag == "br":
                self.current.parts.append(" ")
            else:
                self.current.tags += 1
            self._visit(child, depth + 1, in_link or tag == "a")


def _smooth(scores: list[float]) -> list[float]:
    n = len(scores)
    radius = len(_KERNEL) // 2
    out = []
    for i in range(n):
        total = 0.0
        weight = 0.0
        for k, w in enumerate(_KERNEL):
            j = i + k - radius
            if 0 <= j < n:
                total += w * scores[j]
                weight += w
        out.append(total / weight)
    return out


def _best_run(scores: list[float], threshold: float) -> tuple[int, int]:
    """Kadane: the run of ``scores`` whose sum minus ``threshold`` each is largest."""
    best, best_start, best_end = 0.0, 0, -1
    total, start = 0.0, 0
    for i, score in enumerate(scores):
        if total <= 0:
            total, start = 0.0, i
        total += score - threshold
        if total > best:
            best, best_start, best_end = total, start, i
    return best_start, best_end

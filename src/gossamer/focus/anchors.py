"""What a page says about each of its links: the anchor text and the text around it.

Read from the ``<a href>`` elements the link extractor found (``ParsedPage.anchors``, kept with
their ``href`` in a focused crawl: each element's attributes are read once), else from the tree
it parsed; only in a focused crawl: a plain crawl never walks its anchors twice.
"""

from __future__ import annotations

import time
from collections.abc import Container
from typing import NamedTuple

from selectolax.lexbor import LexborNode, create_tag

from gossamer.parse.links import ParsedPage
from gossamer.urls import Resolver

MAX_ANCHOR_CHARS = 200
MAX_CONTEXT_CHARS = 400
MAX_ANCHORS = 2_000
"""Links of one page read for their text; the rest are scored from their URL alone."""
MAX_READ_SECONDS = 0.1
"""CPU a page's links may take to be read for their text (the rest are scored from their URL
alone): a link's anchor and block are read whole before they are cut, so links nested in one
another (500 ``<div>`` each holding a link and the next, or 500 ``<a>`` nested in an
``<svg>``) over 9 MB of text or a million empty elements read them 500 times: 6 to 11 s for
one page. A page of 5,000 links in lists takes 12 ms."""
_CHECK_EVERY = 8
"""Links read between two looks at the clock: past the budget by at most this many links'
reads (a few of the document's size each). The look is at the wall clock (45 ns, read without
a system call); the thread's CPU clock (a system call, 0.56 µs: 2 % of the focus's time when
read every 8 links) only once the wall clock says the budget may be spent."""
_OUTWARD = 'a[href]:not([href^="#"])'
"""Links within the page are left to lexbor: a reference page holds a thousand of them."""
_GROUPS = frozenset(create_tag(t).tag_id for t in ("ul", "ol", "dl", "table", "nav", "menu"))
_GROUP_LEVELS = 6
_CONTEXT_LEVELS = 3
_TOP = frozenset({create_tag("body").tag_id, create_tag("html").tag_id})
_SAYS_LITTLE = 60
"""A link's context shorter than this (a navigation's "Next") gives way to a later link's
longer one (the same URL's entry in a table of contents)."""
_BLOCKS = frozenset(
    create_tag(t).tag_id
    for t in ("p", "li", "td", "dd", "dt", "section", "div", "article", "blockquote")
)
"""Tags by lexbor's ids (a standard tag's is the same in every document): an element's
``tag_id`` is read for a third of the cost of its name."""


class LinkText(NamedTuple):
    """The words a page gives one of its links (a named tuple: a page makes one for each of
    its links, and a dataclass's ``__init__`` cost some ten times more)."""

    anchor: str
    """The link's text (its ``title`` or an image's ``alt`` when it has none)."""
    context: str
    """The text of the block holding the link (paragraph, list item, cell), cut."""
    group: int = 0
    """Which list or table of the page holds the link (1, 2...; 0 none): a documentation
    site lists a section's pages together, so links that share a list tend to share a
    topic."""


def link_texts(
    page: ParsedPage, wanted: set[str], grouped_only: Container[str] = ()
) -> dict[str, LinkText]:
    """The ``<a href>`` of ``page`` that lead to ``wanted`` URLs (resolved as the link
    extractor resolves them), with their text; a URL linked several times keeps its anchor
    texts joined (while short) and the context (and list) of its first link, or of its second
    when that one's block says more and the first's says little. Of the URLs in
    ``grouped_only`` only the list holding them is read (their words are not needed: reading
    them is most of the cost). Links within the page (``#...``) are skipped unread. A page a
    parse worker read has no tree here: its texts are the worker's (`given`)."""
    if not wanted:
        return {}
    if page.tree is None:
        return given(page.texts, wanted, grouped_only)
    return _link_texts(page, wanted, grouped_only, {}, {})


def _link_texts(
    page: ParsedPage,
    wanted: set[str],
    grouped_only: Container[str],
    found: dict[str, LinkText],
    groups: dict[int, int],
) -> dict[str, LinkText]:
    """`link_texts` into ``found``, the lists numbered in ``groups`` (by their identity)."""
    tree = page.tree
    assert tree is not None
    resolve = Resolver(page.base_url).resolve
    targets: dict[str, str | None] = {}
    """An ``href`` -> the wanted URL it leads to (None: none): one look-up a link."""
    blocks: dict[int, str] = {}
    """A block's text by its node's identity: a list of many links is read once."""
    again: set[str] = set()
    """URLs whose later link was read for a better context (once a URL: an index of terms
    links one page from many short entries)."""
    anchors = page.anchors
    if anchors is None:
        anchors = _read(tree.css(_OUTWARD))
    outward = 0
    started = time.thread_time()
    deadline = time.perf_counter() + MAX_READ_SECONDS
    for node, href in anchors:
        if href[:1] == "#":
            continue
        outward += 1
        if outward > MAX_ANCHORS:
            break
        if (
            not outward % _CHECK_EVERY
            and time.perf_counter() > deadline
            and time.thread_time() - started > MAX_READ_SECONDS
        ):
            break
        url = targets.get(href, "")  # "" no URL resolves to
        if url == "":
            url = resolve(href)
            url = targets[href] = url if url is not None and url in wanted else None
        if url is None:
            continue
        before = found.get(url)
        if url in grouped_only:
            if before is None or not before.group:
                found[url] = LinkText("", "", _group(node, groups))
        elif before is None:
            found[url] = LinkText(_anchor(node), *_context_and_group(node, blocks, groups))
        else:
            found[url] = _again(before, node, url not in again, blocks, groups)
            again.add(url)
    return found


Read = tuple[dict[str, tuple[str, str, int]], list[tuple[str, int]]]
"""What a parse worker read of a page's links (`read_whole`, :attr:`ParsedPage.texts`): each
URL's texts, its list by the number the reading gave it, and each list the reading of a URL's
link numbered (the URL, the list), in the order read."""


class _Lists(dict[int, int]):
    """Lists numbered as they are read (`_link_texts`'s ``groups``), each number asked for
    kept until the link it was read for is known (`_Reading`)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def setdefault(self, key: int, default: int) -> int:
        number = super().setdefault(key, default)
        self.asked.append(number)
        return number


class _Reading(dict[str, LinkText]):
    """`_link_texts`'s ``found`` for `read_whole`: each URL's texts, and the lists read for it
    (``asked``), in order. Every list is read for a link whose texts are then set."""

    def __init__(self, lists: _Lists) -> None:
        super().__init__()
        self.lists = lists
        self.asked: list[tuple[str, int]] = []

    def __setitem__(self, url: str, text: LinkText) -> None:
        for number in self.lists.asked:
            if not self.asked or self.asked[-1] != (url, number):
                self.asked.append((url, number))
        self.lists.asked.clear()
        super().__setitem__(url, text)


def read_whole(page: ParsedPage, wanted: set[str]) -> Read:
    """The texts of the links of ``page`` to ``wanted`` URLs, every one's read (a parse
    worker's, which cannot know which URLs the focus will ask only the list of), and what
    `given` needs to number the lists as `link_texts` would for any of those."""
    lists = _Lists()
    found = _link_texts(page, wanted, (), _Reading(lists), lists)
    assert isinstance(found, _Reading)
    texts = {url: (text.anchor, text.context, text.group) for url, text in found.items()}
    return texts, found.asked


def given(
    read: Read | None, wanted: set[str], grouped_only: Container[str] = ()
) -> dict[str, LinkText]:
    """The texts a parse worker read of a page's links (`read_whole`) as `link_texts` gives
    them from the tree: those of the ``wanted`` URLs, in the order found, each of
    ``grouped_only`` with its list alone, the lists numbered as that reading numbers them
    (a URL of ``grouped_only`` reads the list of its first link in one, no other)."""
    if read is None:
        return {}
    texts, asked = read
    numbers: dict[int, int] = {}
    grouped: dict[str, int] = {}
    for url, number in asked:
        if url not in wanted:
            continue
        if url not in grouped_only:
            numbers.setdefault(number, len(numbers) + 1)
        elif not grouped.get(url):
            grouped[url] = numbers.setdefault(number, len(numbers) + 1)
    return {
        url: LinkText("", "", grouped.get(url, 0))
        if url in grouped_only
        else LinkText(anchor, context, numbers[group] if group else 0)
        for url, (anchor, context, group) in texts.items()
        if url in wanted
    }


def _read(nodes: list[LexborNode]) -> list[tuple[LexborNode, str]]:
    """Links with their ``href``, for a page parsed without them
    (:attr:`ParsedPage.anchors`)."""
    found = []
    for node in nodes:
        try:  # indexed, not ``get``: its exception caught in C, a third of a link's cost
            href = node.attrs["href"] or ""
        except KeyError:  # matched by a prefixed name alone (``xlink:href``)
            href = ""
        found.append((node, href))
    return found


def _again(
    before: LinkText,
    node: LexborNode,
    first: bool,
    blocks: dict[int, str],
    groups: dict[int, int],
) -> LinkText:
    """A URL's texts once ``node`` links to it again: the anchors joined (while short); the
    context and list of its second link (``first`` time again) when its block says more,
    while the first's says little (a page's navigation links to its next page, "Next",
    before its table of contents describes that page)."""
    anchor = before.anchor
    if len(anchor) >= MAX_ANCHOR_CHARS // 2 and (not first or len(before.context) >= _SAYS_LITTLE):
        return LinkText(anchor, before.context, before.group or _group(node, groups))
    text = _anchor(node)
    if len(anchor) < MAX_ANCHOR_CHARS // 2:  # its first texts say enough
        anchor = f"{anchor} {text}"[:MAX_ANCHOR_CHARS]
    if first and len(before.context) < _SAYS_LITTLE and text not in before.anchor:
        context, group = _context_and_group(node, blocks, groups)
        if len(context) > len(before.context):
            return LinkText(anchor, context, group or before.group)
    return LinkText(anchor, before.context, before.group or _group(node, groups))


def _anchor(node: LexborNode) -> str:
    text = " ".join(node.text(deep=True)[: MAX_ANCHOR_CHARS * 2].split())
    if not text:
        text = node.attributes.get("title") or ""
        image = node.css_first("img[alt]")
        if not text and image is not None:
            text = image.attributes.get("alt") or ""
    return text[:MAX_ANCHOR_CHARS]


def _group(node: LexborNode, groups: dict[int, int]) -> int:
    """The ordinal of the list or table holding ``node`` (0 none), by its identity."""
    parent = node.parent
    for _ in range(_GROUP_LEVELS):
        tag = parent.tag_id if parent is not None else None
        if parent is None or tag in _TOP:
            return 0
        if tag in _GROUPS:
            return groups.setdefault(parent.mem_id, len(groups) + 1)
        parent = parent.parent
    return 0


def _context_and_group(
    node: LexborNode, blocks: dict[int, str], groups: dict[int, int]
) -> tuple[str, int]:
    """The text of the block holding ``node`` (see ``_context``) and the ordinal of the list
    or table holding it (see ``_group``), found in one walk up its parents: each parent is
    made and its tag read once, not once for each (a link's parents are most of its cost)."""
    block: LexborNode | None = None
    block_tag: int | None = None
    group = -1  # -1: not found yet
    parent, level, placed = node.parent, 1, False
    while True:
        tag = parent.tag_id if parent is not None else None
        if not placed and (parent is None or tag in _BLOCKS or level == _CONTEXT_LEVELS + 1):
            block, block_tag, placed = parent, tag, True
        if group < 0:
            if parent is None or tag in _TOP:
                group = 0
            elif tag in _GROUPS:
                group = groups.setdefault(parent.mem_id, len(groups) + 1)
            elif level == _GROUP_LEVELS:
                group = 0
        if placed and group >= 0:
            return _block_text(block, block_tag, blocks), group
        assert parent is not None  # a missing parent settles both
        parent, level = parent.parent, level + 1


def _block_text(parent: LexborNode | None, tag: int | None, blocks: dict[int, str]) -> str:
    """The text of a link's block (none from the whole body), cut; read once a block."""
    if parent is None or tag in _TOP:
        return ""
    key = parent.mem_id
    text = blocks.get(key)
    if text is None:
        text = parent.text(deep=True)[: MAX_CONTEXT_CHARS * 2]
        text = blocks[key] = " ".join(text.split())[:MAX_CONTEXT_CHARS]
    return text

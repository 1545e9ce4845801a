"""Variants of one page a trap makes by growing a URL rather than naming a new one: paths
grown by empty segments, page file names or re-encoding, path parameters on a page of the same
path, queries reordered or with pairs repeated, query values that append to their page's,
paths grown by the same relative links on every page below one (:class:`Echoes`)
(:mod:`gossamer.frontier.traps` turns them away)."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence

from gossamer.urls import fingerprint

__all__ = [
    "Echoes",
    "appends",
    "folded",
    "grows_a_value",
    "odd_path",
    "reordered",
    "swaps_an_item",
    "variant",
]

_PAGE_DIR = re.compile(r"\.(?:s?html?|php[0-9]?|aspx?|jsp|cgi)(?:/|$)", re.IGNORECASE)
"""A page's file name (``index.html``): a segment with more path below it grows the path."""


def odd_path(tail: str) -> bool:
    """Whether a path grows by the empty segments or page file names it holds above its last
    segment, two or more of them (``/a//b//``, ``/a/index.html/index.html/``, ``/a/x.php//``):
    a relative link resolved against a path the server answers whatever it holds below. Also a
    percent sign encoded three times over (``%252520``: each page quotes its own name)."""
    path = tail.partition("?")[0]
    if "%2525" in path:
        return True
    if "//" not in path and (path.rfind(".") < 0 or path.rfind(".") > path.rfind("/")):
        return False  # most paths: no empty segment, no dot above the last segment
    if "//" not in path and _PAGE_DIR.search(path) is None:
        return False
    above = path.split("/")[:-1]
    return (
        sum(
            1
            for segment in above
            if not segment or _PAGE_DIR.fullmatch(segment, segment.rfind("."))
        )
        >= 2
    )


_PARAMETERS = re.compile(r";[^/]*")


def appends(longer: str, shorter: str) -> bool:
    """Whether ``longer`` is ``shorter`` with more after a separator (``red`` then
    ``red,blue``, never ``1`` then ``12``: another value, not one grown)."""
    size = len(shorter)
    return len(longer) > size and longer.startswith(shorter) and not longer[size].isalnum()


def grows_a_value(mine: str, theirs: str) -> bool:
    """Whether a value of the query ``mine`` appends to a value of the query ``theirs``,
    under whatever name (``?tags=red`` then ``?q=red+blue``), or swaps the last item of a
    list for another (``?q=red+blue`` then ``?q=red+green``: a results page linking more
    of itself)."""
    values = [v for _, _, v in (part.partition("=") for part in theirs.split("&")) if v]
    return any(
        appends(value, old) or swaps_an_item(value, old)
        for value in (part.partition("=")[2] for part in mine.split("&"))
        for old in values
    )


_LIST = re.compile(r"[,+|]|%2[0Cc]")
"""A separator of a list in a query value: a comma, a plus sign (a space), a bar."""


def swaps_an_item(value: str, old: str) -> bool:
    """Whether ``value`` is the list ``old`` with its last item swapped for another."""
    ends = [match.end() for match in _LIST.finditer(old)]
    if not ends or value == old:
        return False
    head = old[: ends[-1]]
    return (
        len(value) > len(head) and value.startswith(head) and _LIST.search(value, len(head)) is None
    )


def variant(tail: str, source: str) -> bool:
    """Whether a path with path parameters is one of its page's, whose path has some too
    (``docs/guide;v=7`` found on ``/docs/guide;state=9f3a``): a page linking variants of
    itself."""
    theirs = source.partition("://")[2].partition("/")[2].partition("?")[0]
    if ";" not in theirs:
        return False
    return _PARAMETERS.sub("", tail.partition("?")[0]) == _PARAMETERS.sub("", theirs)


def reordered(tail: str) -> bool:
    """Whether the query of a URL (its ``tail`` after the host) has its pairs out of order or
    one of them twice (``?b=2&a=1``, ``?a=1&b=2&a=1``): one of the endless spellings of the
    query in order (which servers mostly read alike), each pair once."""
    if "&" not in tail:
        return False  # most URLs: one scan
    pairs = tail.partition("?")[2].split("&")
    return len(pairs) > 1 and pairs != sorted(set(pairs))


def folded(tail: str) -> str:
    """What the spellings of one page share (a URL's ``tail`` after the host): letter case
    folded, the query's pairs in order, each once."""
    tail = tail.lower()
    path, _, query = tail.partition("?")
    if "&" not in query:
        return tail
    return f"{path}?{'&'.join(sorted(set(query.split('&'))))}"


class Echoes:
    """Pages linking the same subdirectories (``name/`` below the page's own directory) as
    the page they were found on, which did so too: a server answering every path below a
    page with one set of relative links (a soft 404: ``news/ blog/ team/``) makes paths
    without end (``/news/blog/team/jobs/about/news/...``) that no run of segments repeats
    in. The subdirectories of a page whose set is its parent's, past ``steps`` pages in a
    row, are turned away; the sets of at most ``limit`` pages are remembered (oldest
    forgotten first). A real tree's directories name subdirectories of their own."""

    __slots__ = ("_limit", "_sets", "_steps")

    def __init__(self, steps: int, limit: int) -> None:
        self._steps = steps
        self._limit = limit
        self._sets: OrderedDict[int, tuple[frozenset[str], int]] = OrderedDict()
        """A page's fingerprint -> the subdirectories its parent linked, and how many pages
        in a row above it linked the same."""

    def __len__(self) -> int:
        return len(self._sets)

    def echoing(self, urls: Sequence[tuple[str, str, int]], source: str) -> set[int]:
        """The positions of ``urls`` (host key, canonical URL and depth of the URLs new to
        the crawl the page ``source`` links) to turn away: its subdirectories, when it echoes
        its parent's."""
        path = source.partition("?")[0]
        base = path[: path.rfind("/") + 1]
        size = len(base)
        children = [
            (at, url[size:-1])
            for at, (_, url, _) in enumerate(urls)
            if url.endswith("/")
            and url.startswith(base)
            and url.find("/", size) == len(url) - 1 > size
        ]
        if not children:
            return set()
        names = frozenset(name for _, name in children)
        known = self._sets.get(fingerprint(source))
        steps = known[1] + 1 if known is not None and known[0] == names else 0
        if steps > self._steps:
            return {at for at, _ in children}
        sets = self._sets
        for at, _ in children:
            if len(sets) >= self._limit:
                sets.popitem(last=False)
            sets[fingerprint(urls[at][1])] = (names, steps)
        return set()

"""Big HTML pages read in the parse sandbox (:mod:`gossamer.parse.sandbox`).

A page of more than `MIN_TAGS` ``<``, or longer than `MIN_BYTES`, is parsed as it is in a
worker process, under the sandbox's CPU budget and memory limit, instead of in-process behind
the guard (`weigh`): the worker
reads everything the page stage needs (from lexbor's tokens alone when no step needs the
tree, `read_tokens`; else from the tree) (:class:`Reading`: the links as
:func:`gossamer.parse.links.parse_html` gives them, title, flags, base URL, encoding, the
robots meta directives, the ``<link rel=canonical>`` tag, when the crawl keeps text or judges
pages the extracted :class:`gossamer.extract.Content`, and for a focus the texts of the page's
links, :attr:`gossamer.parse.links.ParsedPage.texts`) and sends it back, marshal-encoded.
Smaller pages stay in-process behind the guard, which bounds them at about the cost of a
second parse, less than a round trip to a worker costs a small page. The tree itself
stays in the worker; the stage builds one in-process (guarded) for a page handler that asks
for it.

Run as a worker: ``python -m gossamer.page.sandboxed MEMORY_BYTES BUDGET_FACTOR PAGES_FD
[EXTRACTOR]``
(the extractor's libraries and the language model are loaded before the first page's budget
runs). The parse, with the robots meta tags and the canonical tag, has one parse budget; the
extraction (and a focus's reading of the link texts, itself bounded by
:data:`gossamer.focus.anchors.MAX_READ_SECONDS`) the rest of `TEXT_BUDGET_FACTOR` parse
budgets, so a hostile page's parse ends at the one budget whether the crawl keeps text or not.
"""

from __future__ import annotations

import contextlib
import marshal
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from gossamer.page.canonical import first_canonical, tag_canonical
from gossamer.page.directives import (
    MAX_META_TAGS,
    NONE,
    Directives,
    listed_directives,
    meta_directives,
)
from gossamer.parse.links import ParsedPage, parse_html, parse_tokens
from gossamer.parse.native import FORMATSCAN
from gossamer.parse.scan import GUARD_MIN_CHARS
from gossamer.parse.worker import rest_of_budget, serve

if TYPE_CHECKING:
    from gossamer.extract import Content

__all__ = [
    "FOCUS_MIN_BYTES",
    "FOCUS_MIN_TAGS",
    "MIN_BYTES",
    "MIN_TAGS",
    "TEXT_BUDGET_FACTOR",
    "TOKENS_HERE_BUDGET_S",
    "TOKENS_HERE_BYTES",
    "Reading",
    "Weight",
    "answer",
    "budget_factor",
    "read_tokens",
    "reading",
    "request",
    "wanted",
    "weigh",
    "worker_args",
]

MIN_TAGS = 4096
"""Pages with more ``<`` than this are parsed in the sandbox (`weigh`)."""
MIN_BYTES = 64 * 1024
"""So are pages longer than this, whatever they hold. Shorter ones the guard parses
in-process: pages of at most 3 KiB as they are, unread (25 MB at worst,
:data:`gossamer.parse.formatting.SMALL_CHARS`), longer ones once it has read them
(:func:`gossamer.parse.scan.left_alone`: the formatting elements lexbor copies at every
paragraph could cost it 770 MB in 27 KB), which costs about lexbor's parse again. The sandbox
costs fewer instructions (a links-only crawl of the real pages: 14,162 M with every page past
3 KiB in the worker, 15,623 M with those up to 64 KiB read in-process) but more CPU: a page's
round trip to the worker is two context switches and a cold cache on a busy core, some
0.1-0.5 ms of CPU a page whatever its size. Crawls pinned to one core (2026-11-30, medians of
3-6 alternated runs): the real pages links-only 2.25 s with 64 KiB against 2.46 s with 3 KiB,
the whole job even (6.99 s, 6.92 s); the generated web of 10-60 KB articles 2.20 s against
2.61 s links-only, 7.70 s against 9.15 s for the whole job; 20,000 pages of 2-4 KB with text
19.7 s against 25.5 s (19.2 s with every page in-process)."""
TOKENS_HERE_BYTES = 4 << 20
"""A crawl that reads pages from their tokens alone (no text kept, no focus) reads a big page
(`weigh`) of at most this many bytes in-process, under `TOKENS_HERE_BUDGET_S`, and sends it
to the sandbox only past that budget (or when its tokens cannot say): the tokenizer's linear
cost without the worker's start (some 50 ms of CPU: a second interpreter and its imports) or
a page's round trip (its body copied out, the answer marshalled back, two context switches).
A links-only crawl pinned to one core, 8 alternated runs (2026-12-02): the real pages 1.448 s
against 1.592 s, CMake, Django, Boost and the Rust book's documentation 6-10% less CPU. The
biggest real pages cost it 4-18 ms (python3-doc's ``genindex.html``, 2.7 MB: 17.6 ms)."""
TOKENS_HERE_BUDGET_S = 0.025
"""The CPU seconds a big page's tokens may take in-process, checked every
:data:`gossamer.parse.links.TOKENS_PIECE` bytes: the longest the page stage holds the event
loop on one page, whatever its markup (4 MB of distinct attribute names, ``<br aN=1>``, would
cost lexbor 11 s)."""
TEXT_BUDGET_FACTOR = 4.0
"""A page's budget when its content is extracted too: the main text's Python work costs
about three parses on big real pages (python3-doc's ``genindex-all.html``, 1.7 MB: parse
0.05 s, text 0.17 s; its parse budget, 0.39 s, ended it on a loaded machine)."""
_ANSWER_FIELDS = 13
_COUNT_STEP = 16 * 1024
_LT = ord("<")


class Reading(NamedTuple):
    """What the stage needs of a page the sandbox parsed; ``parsed`` has no tree."""

    parsed: ParsedPage
    content: Content | None
    """The extracted content, when the crawl keeps text."""
    robots: Directives
    """The robots meta tags' directives (:func:`gossamer.page.directives.meta_directives`)."""
    canonical: str | None
    """The canonical URL the head's ``<link rel=canonical>`` names, resolved."""


class Weight(NamedTuple):
    """Where a body is parsed (`weigh`), and its ``<`` for the guard's route."""

    big: bool
    """In the sandbox, when the crawl has one."""
    tags: int | None
    """Its ``<`` (:func:`gossamer.parse.guard.parse` reuses them), 0 for a body too short for
    the guard to read them (:data:`gossamer.parse.scan.GUARD_MIN_CHARS`), None when not
    counted (a page for the sandbox: the guard counts them if it parses the page after all)."""


def wanted(body: bytes) -> bool:
    """Whether ``body`` goes to the sandbox: longer than `MIN_BYTES`, or more than
    `MIN_TAGS` ``<``."""
    return weigh(body).big


FOCUS_MIN_TAGS = 16_384
"""In a focused crawl, pages of more ``<`` than this (the guard's ordinary limit,
:data:`gossamer.parse.scan.ORDINARY_MAX_TAGS`) are parsed in the sandbox, or longer than
`FOCUS_MIN_BYTES`; smaller ones in-process behind the guard, whose routes bound them. A page
the sandbox reads is judged later (its link texts and main text read in the worker, behind the
pages before it), and the focus's choice of what to fetch next is poorer meanwhile: with 30 ms
more a page over 4,096 tags, a crawl of 16 requests in flight reached 0.25-1.00 of a topic's
pages at 200 pages, against 1.00 in-process (``benchmarks/bench_focus_real.py``,
concurrency)."""
FOCUS_MIN_BYTES = 1 << 20
"""See `FOCUS_MIN_TAGS`."""


def weigh(body: bytes, most_tags: int = MIN_TAGS, most_bytes: int = MIN_BYTES) -> Weight:
    """Whether ``body`` goes to the sandbox (`wanted`): more ``<`` than ``most_tags`` or
    longer than ``most_bytes`` (a focused crawl's are `FOCUS_MIN_TAGS` and `FOCUS_MIN_BYTES`);
    and its ``<`` when counted: those of a body between
    :data:`gossamer.parse.scan.GUARD_MIN_CHARS` and ``most_bytes`` (a focused crawl's), counted
    in C up to the step past ``most_tags`` (`_COUNT_STEP` bytes a step, no copy).

    ``bytes.count`` of one byte is a loop a byte at a time (some 6 instructions, 0.3 ns a
    byte: 3% of a links-only crawl's instructions on real pages when every body was counted
    from 4 KiB on); numpy's compare and count run on vectors, 2.5 to 3 times faster on real
    bodies: numpy counts once something else has loaded it (a crawl keeping text does), this
    never loads it."""
    size = len(body)
    if size <= min(GUARD_MIN_CHARS, most_bytes):
        return Weight(False, 0)
    if size > most_bytes:
        return Weight(True, None)
    tags = _count(body, most_tags)
    return Weight(tags > most_tags, tags if tags <= most_tags else None)


def _count(body: bytes, most: int) -> int:
    """The ``<`` of ``body``, counted up to the step past ``most`` at least: in C
    (:data:`gossamer.parse.native.FORMATSCAN`, eight bytes a step) where it is built."""
    if FORMATSCAN is not None:
        return int(FORMATSCAN.count(body, most))
    numpy = sys.modules.get("numpy")
    count = start = 0
    if numpy is None:
        while start < len(body) and count <= most:
            count += body.count(b"<", start, start + _COUNT_STEP)
            start += _COUNT_STEP
        return count
    marks = numpy.frombuffer(body, numpy.uint8)
    return int(numpy.count_nonzero(marks == _LT))


def worker_args(extractor: str | None) -> tuple[str, ...]:
    """The worker's arguments after its memory limit and budget: the extractor to load."""
    return () if extractor is None else (extractor,)


def budget_factor(extractor: str | None) -> float:
    """The budget of a worker's page, in parse budgets (:func:`gossamer.parse.worker.budget`)."""
    return 1.0 if extractor is None else TEXT_BUDGET_FACTOR


def request(
    url: str,
    charset: str | None,
    follow_nofollow: bool,
    extractor: str | None,
    content_language: str | None,
    robots_token: str,
    fetched_at: float,
    texts: int = 0,
    tokens: bool = False,
) -> bytes:
    """The request of a page (its body goes apart); ``texts``: read the texts of the page's
    first so many links for a focus (:attr:`gossamer.parse.links.ParsedPage.texts`);
    ``tokens``: read a page that needs no tree from its tokens (`read_tokens`)."""
    fields = (url, charset, follow_nofollow, extractor, content_language, robots_token)
    return marshal.dumps((*fields, fetched_at, texts, tokens))


def read_tokens(
    body: bytes,
    url: str,
    charset: str | None,
    follow_nofollow: bool,
    token: str,
    fetched_at: float,
    budget: float = 0.0,
) -> Reading | None:
    """What the stage reads of an HTML page that needs no tree (a crawl keeping no text, no
    focus), read from its tokens (:func:`gossamer.parse.links.parse_tokens`): its links,
    title, robots meta directives (``token`` the crawl's robots token) and head's canonical
    URL, as the tree gives them; None where the tree must be read (the tokens could not say,
    more than `MAX_META_TAGS` meta tags, a canonical link the head's search decides). For a
    body lexbor's tokenizer can read as it is (in a worker, or in-process one too small to be
    hostile), or read under a ``budget`` of CPU seconds (None past it: see
    :func:`gossamer.parse.links.parse_tokens`)."""
    found = parse_tokens(
        body, url, header_charset=charset, follow_nofollow=follow_nofollow, budget=budget
    )
    if found is None:
        return None
    page = found.page
    metas = page.metas or ()
    if len(metas) > MAX_META_TAGS:
        return None
    canonical = None
    if found.canonical is not None:
        try:
            canonical = first_canonical(page.base_url, found.canonical)
        except LookupError:
            return None
    return Reading(page, None, listed_directives(metas, token, fetched_at), canonical)


def answer(request: bytes, body: bytes) -> bytes:
    """The worker's job: the page parsed as it is, and all the stage reads of its tree (of
    its tokens alone when it needs no tree: `read_tokens`)."""
    url, charset, nofollow, extractor, language, token, fetched_at, texts, tokens = marshal.loads(
        request
    )
    if tokens and extractor is None and texts == 0:
        read = read_tokens(body, url, charset, nofollow, token, fetched_at)
        if read is not None:
            return _answered(read.parsed, tuple(read.robots), read.canonical, None, None)
    page = parse_html(
        body,
        url,
        header_charset=charset,
        follow_nofollow=nofollow,
        guarded=False,
        anchors=texts > 0,
    )
    del body
    tree, robots, canonical, content = page.tree, tuple(NONE), None, None
    if tree is not None:
        robots = tuple(meta_directives(tree, token, fetched_at, page.metas))
        if page.names_canonical is not False:
            canonical = tag_canonical(tree, page.base_url, page.canonical_link)
    if extractor is not None:
        rest_of_budget()
        content = _content(page, url, extractor, language)
    read = _texts(page, texts) if texts > 0 else None  # within the extraction's budget
    return _answered(page, robots, canonical, content, read)


def _answered(
    page: ParsedPage, robots: tuple[Any, ...], canonical: str | None, content: Any, read: Any
) -> bytes:
    fields: tuple[Any, ...] = (page.title, page.links, page.nofollow_links, page.meta_nofollow)
    fields += (page.meta_noindex, page.base_url, page.text_encoding, page.flags)
    return marshal.dumps((*fields, page.names_canonical, robots, canonical, content, read))


def _texts(page: ParsedPage, count: int) -> Any:
    """The texts a focus reads of the page's first ``count`` links, every one's whole (which
    of them it reads only the list of is its to say, later)."""
    from gossamer.focus.anchors import read_whole

    return read_whole(page, set(page.links[:count]))


def _content(page: ParsedPage, url: str, extractor: str, language: str | None) -> tuple[Any, ...]:
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.extract import extract

    tree = page.tree
    if not isinstance(tree, LexborHTMLParser):
        return ("", None, None, None, None, (), ())
    found = extract(tree, url, extractor, content_language=language, parsed=page)
    images = tuple((image.src, image.alt) for image in found.images)
    head = (found.text, found.lang, found.description, found.canonical, found.published)
    return (*head, tuple(found.authors), images)


def reading(encoded: bytes) -> Reading:
    """The worker's answer decoded (marshal builds values only, never runs code)."""
    fields = marshal.loads(encoded)
    if not isinstance(fields, tuple) or len(fields) != _ANSWER_FIELDS:
        raise ValueError("a parse worker's answer is malformed")
    title, links, skipped, nofollow, noindex, base, encoding, flags, names_canonical = fields[:9]
    robots, canonical, content, texts = fields[9:]
    parsed = ParsedPage(
        title,
        links,
        skipped,
        nofollow,
        noindex,
        base,
        encoding,
        flags=tuple(flags),
        names_canonical=names_canonical,
        texts=texts,
    )
    return Reading(parsed, _decoded(content), Directives(*robots), canonical)


def _decoded(content: Any) -> Content | None:
    if content is None:
        return None
    from gossamer.extract import Content
    from gossamer.extract.meta import Image

    text, lang, description, canonical, published, authors, images = content
    found = tuple(Image(src, alt) for src, alt in images)
    return Content(text, lang, description, canonical, published, tuple(authors), found)


def _warm(extractor: str) -> None:
    """Load what the first page's extraction would (its libraries, the language model)."""
    from gossamer.extract import extract
    from gossamer.extract.lang import load_model

    with contextlib.suppress(Exception):  # a missing library fails the page, as in-process
        load_model()
        extract("<html><body><p>A page.</p></body></html>", "http://localhost/", extractor)


if __name__ == "__main__":
    if len(sys.argv) > 4:
        _warm(sys.argv[4])
    serve(answer)

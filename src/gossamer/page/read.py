"""Reading a body: HTML parsed (links, title, the tree) and its content extracted, plain text
decoded, and what extraction found turned into the record's content fields.

:class:`HtmlReader` parses a stored page: one of more than 4,096 ``<`` or 64 KiB in the parse
sandbox (:mod:`gossamer.page.sandboxed`) when the crawl has one, else in-process behind the
guard (a large body in a worker thread, so that the event loop, and with it a cluster worker's
claim renewals, keeps running). A page whose sandbox worker died on it (its CPU budget spent, its
memory exhausted) is parsed the guarded way, in a thread, and flagged `SANDBOX_KILLED`; so is
one lexbor refused in its worker (out of the worker's memory, lexbor fails the parse instead of
raising: a page the crawler's memory holds would otherwise lose all its links). Such a page is
always rewritten by the guard before lexbor reads it (``hostile``): the guard's cheaper routes
parse an ordinary-looking document as it is first, which a page shaped to exhaust the worker's
memory would do to the crawler's.

The extractors (:mod:`gossamer.extract`) are imported on first use: a ``--no-text`` crawl
never loads them.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from w3lib.encoding import to_unicode

from gossamer.page import sandboxed
from gossamer.page.state import Aside, Fetched, TextFields
from gossamer.parse.charset import detect_encoding
from gossamer.parse.guard import PARSE_ERROR
from gossamer.parse.guard import parse as guarded_parse
from gossamer.parse.links import ParsedPage, parse_html
from gossamer.parse.sandbox import Unavailable

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.extract import Content
    from gossamer.parse.sandbox import Sandbox

_T = TypeVar("_T")
SANDBOX_KILLED = "html-sandbox-killed"
"""The flag of a page whose sandbox worker died on it, or whose lexbor refused it there (parsed
the guarded way instead)."""
_PARSE_IN_THREAD_BYTES = 512 * 1024
"""Bodies from this size on are parsed off the event loop: a worst-case 10 MB page takes the
guarded parser a few seconds, and lexbor lets the loop run meanwhile (it releases the GIL)."""
_BIG_PARSES = 2
"""Large bodies parsed at once in-process: each costs up to some 25 times its size in memory."""
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
UNREAD = frozenset({"decompression-bomb", "unsupported-encoding"})
"""Fetch errors whose body is not the page: one cut where it compressed beyond any page's
ratio (a bomb, its capped output mostly filler), or still encoded. The record keeps the
error; no text, title or links are read from it."""


def is_html(result: Fetched) -> bool:
    """An HTML answer: by its Content-Type, or without one by how the body starts."""
    if result.content_type is not None:
        return result.content_type in _HTML_TYPES
    head = result.body[:256].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


_RESTRICTIVE = re.compile(rb"(?i)noindex|none|noarchive|unavailable_after")
"""The words a robots meta tag withholds a page (or its archived payload) with: a body without
any has none to read."""


def names_robots(body: bytes) -> bool:
    """Whether ``body`` may hold a robots meta tag that withholds it, or its archived payload
    (a search in C)."""
    return _RESTRICTIVE.search(body) is not None


def tree_of(body: bytes, charset: str | None) -> LexborHTMLParser | None:
    """An HTML body's tree (the guarded parse), decoded as :func:`parse` decodes it."""
    detected = detect_encoding(body, charset)
    payload = body[detected.bom_length :]
    document: str | bytes = payload
    if detected.encoding != "utf-8":
        document = to_unicode(payload, detected.encoding)
    return guarded_parse(document).tree


def parse(
    url: str,
    body: bytes,
    charset: str | None,
    follow_nofollow: bool,
    extractor: str | None,
    content_language: str | None = None,
    tags: int | None = None,
    anchors: bool = False,
    hostile: bool = False,
) -> tuple[ParsedPage, Content | None]:
    """Parse an HTML body; with an ``extractor`` (a crawl keeping text) extract its content
    (its language, when the markup states none, from the ``Content-Language`` header).
    ``tags``: the body's ``<``, if counted (:func:`gossamer.page.sandboxed.weigh`);
    ``anchors``: keep the ``<a href>`` elements (:attr:`ParsedPage.anchors`); ``hostile``:
    the body's sandbox worker died on it (always guarded, never parsed as it is first)."""
    page = parse_html(
        body,
        url,
        header_charset=charset,
        follow_nofollow=follow_nofollow,
        tags=tags,
        anchors=anchors,
        hostile=hostile,
    )
    if extractor is None:
        return page, None
    from gossamer.extract import Content, extract

    if page.tree is None:
        return page, Content(text="")
    found = extract(page.tree, url, extractor, content_language=content_language, parsed=page)
    return page, found


def plain_text(result: Fetched) -> Content:
    """The content of a ``text/plain`` body: its text, decoded, and its language (the
    ``Content-Language`` header's, else the one detected in the text)."""
    from gossamer.extract import Content
    from gossamer.extract.lang import detect_language
    from gossamer.extract.meta import language_code
    from gossamer.extract.text import plain_text as clean

    detected = detect_encoding(result.body, result.charset)
    body = result.body[detected.bom_length :]
    text = clean(body.decode(detected.encoding, "replace"))
    stated = language_code(result.headers.get("content-language"))
    return Content(text=text, lang=stated or detect_language(text))


def text_fields(content: Content, limit: int) -> tuple[TextFields, tuple[str, ...]]:
    """The record's content fields, and ``("text-cut",)`` if the text was over ``limit``."""
    text = content.text
    cut: tuple[str, ...] = ("text-cut",) if len(text) > limit else ()
    fields = TextFields(
        text=text[:limit],
        lang=content.lang,
        description=content.description,
        canonical=content.canonical,
        published=content.published,
        authors=tuple(content.authors),
        images=tuple({"src": i.src, "alt": i.alt} for i in content.images),
        text_chars=len(text),
    )
    return fields, cut


class Html(NamedTuple):
    """A stored HTML page read: its parse, its content (when the crawl keeps text), what the
    sandbox read of its tree (when it parsed it) and the flags of how it was read."""

    parsed: ParsedPage
    content: Content | None
    aside: Aside | None
    flags: tuple[str, ...]


class HtmlReader:
    """Parses HTML bodies for the page stage (see the module docstring); ``sandbox`` is
    None when the crawl parses every page in-process (``--parse-sandbox off``, or a hook,
    which reads every page's tree). With a focus (``focus_extractor``, its extractor), each
    page's ``<a href>`` elements are kept (it reads their texts), only pages past
    :data:`gossamer.page.sandboxed.FOCUS_MIN_TAGS` ``<`` or ``FOCUS_MIN_BYTES`` go to the
    sandbox (a page read there is judged later), and those have the texts of their first
    ``focus_links`` links read there, and its main text
    extracted there even when the crawl keeps none (:attr:`Aside.content`): its tree, and all a
    hostile tree could cost, stays in the worker.

    A crawl with a sandbox that needs no page's tree (no text kept, no focus: no step reads
    it) reads a page's tokens alone (:func:`gossamer.page.sandboxed.read_tokens`), in-process,
    where it costs lexbor's tokenizer only: linear on the markup the guard bounds for the
    tree, at most 64 KiB of any other, and a big page (up to
    :data:`gossamer.page.sandboxed.TOKENS_HERE_BYTES`) under a CPU budget
    (:data:`gossamer.page.sandboxed.TOKENS_HERE_BUDGET_S`; lexbor's tokenizer is superlinear
    in distinct names alone). A page whose tokens cannot say is parsed as before: a small one
    behind the guard, a big one (or one past its budget) in the sandbox, where its tokens are
    read again and, if need be, its tree."""

    def __init__(
        self,
        sandbox: Sandbox | None,
        *,
        follow_nofollow: bool,
        extractor: str | None,
        robots_token: str,
        focus_extractor: str | None = None,
        focus_links: int = 0,
        tokens: bool = True,
    ) -> None:
        """``tokens``: read a page that needs no tree from its tokens (False: parse its tree,
        as a crawl keeping text does)."""
        self._sandbox = sandbox
        self._anchors = focus_extractor is not None
        self._focus_extractor = focus_extractor
        self._focus_links = focus_links if focus_extractor is not None else 0
        self._follow_nofollow = follow_nofollow
        self._extractor = extractor
        self._robots_token = robots_token
        self._tokens = tokens and extractor is None and focus_extractor is None
        self._big_parses = asyncio.Semaphore(_BIG_PARSES)

    async def page(self, url: str, result: Fetched) -> Html:
        """The page at ``url`` read from its answer (see :class:`Html`)."""
        language = result.headers.get("content-language")
        flags: tuple[str, ...] = ()
        if self._anchors:  # a focus: only the biggest pages (see FOCUS_MIN_TAGS)
            weight = sandboxed.weigh(
                result.body, sandboxed.FOCUS_MIN_TAGS, sandboxed.FOCUS_MIN_BYTES
            )
        else:
            weight = sandboxed.weigh(result.body)
        tokens_here = self._sandbox is not None and self._tokens
        if tokens_here and len(result.body) <= sandboxed.TOKENS_HERE_BYTES:
            found = sandboxed.read_tokens(  # no tree, no guard: see the class doc
                result.body,
                url,
                result.charset,
                self._follow_nofollow,
                self._robots_token,
                result.fetched_at,
                sandboxed.TOKENS_HERE_BUDGET_S if weight.big else 0.0,
            )
            if found is not None:
                return Html(found.parsed, None, Aside(found.robots, found.canonical), ())
        if self._sandbox is not None and weight.big:
            ask = sandboxed.request(
                url,
                result.charset,
                self._follow_nofollow,
                self._extractor or self._focus_extractor,
                language,
                self._robots_token,
                result.fetched_at,
                self._focus_links,
                self._tokens,
            )
            try:
                answer = await self._sandbox.ask(ask, result.body)
            except Unavailable:  # no worker ran: the page is read here, as without a sandbox
                pass
            else:
                found = None if answer is None else sandboxed.reading(answer)
                if found is not None and PARSE_ERROR not in found.parsed.flags:
                    if self._extractor is None:  # read for the focus alone
                        aside = Aside(found.robots, found.canonical, found.content)
                        return Html(found.parsed, None, aside, ())
                    aside = Aside(found.robots, found.canonical)
                    return Html(found.parsed, found.content, aside, ())
                flags = (SANDBOX_KILLED,)
        body, nofollow = result.body, self._follow_nofollow
        work = functools.partial(
            parse,
            url,
            body,
            result.charset,
            nofollow,
            self._extractor,
            language,
            weight.tags,
            self._anchors,
            bool(flags),
        )
        parsed, content = await self._off_loop(work, len(result.body), bool(flags))
        return Html(parsed, content, None, flags)

    async def tree(self, body: bytes, charset: str | None) -> LexborHTMLParser | None:
        """The guarded tree of an HTML body (:func:`tree_of`), off the loop if large."""
        return await self._off_loop(functools.partial(tree_of, body, charset), len(body))

    async def _off_loop(self, work: Callable[[], _T], size: int, slow: bool = False) -> _T:
        if size < _PARSE_IN_THREAD_BYTES and not slow:
            return work()
        async with self._big_parses:
            return await asyncio.to_thread(work)

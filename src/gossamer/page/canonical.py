"""Canonical links: ``Link: <URL>; rel="canonical"`` response headers and ``<link
rel=canonical>`` tags, and what ``--canonical follow`` does with them.

A page names its canonical URL in a header (any content type: a PDF too) or in its HTML.
Both are resolved as the page's links are (:class:`gossamer.urls.Resolver`: the header
against the page URL, the tag against the document's base) and canonicalized; when both are
given and disagree, the header wins, as search engines have it, and the record is flagged
``canonical-conflict``. The record's ``canonical`` field holds the result.

With ``--canonical record`` (the default) that is all. With ``follow``, :class:`Canonicals`
judges a page whose canonical URL is another one once stripped of the parameters admission
strips (``/a?utm_source=feed`` and ``/a;jsessionid=X`` name ``/a`` itself):

* in scope, one admission and robots.txt would let the crawl fetch, neither known to have
  failed nor itself a page that named another canonical URL: the canonical URL is queued
  (one level deeper than the page, as its links are, so ``--max-depth`` ends a chain of pages
  each naming a new canonical URL; never as a seed: a user name or password of its own is
  refused) and
  the page's record is flagged ``canonical-followed``: it keeps its status, links and
  ``canonical`` field, but no content is stored for it (the canonical page's is), as for
  ``noindex``;
* out of the crawl's scope: ignored, flagged ``canonical-offsite``;
* the page's host and port under another scheme (``https://h:8080/a`` named by
  ``http://h:8080/a``): one port speaks one protocol, so unless that origin has served a page
  of the crawl already it is recorded, not followed, and flagged ``canonical-scheme`` (a
  change of scheme with the scheme's own port, ``http://h/a`` to ``https://h/a``, is the
  usual move to https and followed when in scope);
* a URL admission would turn away (:func:`gossamer.frontier.admission.refusal`: the
  scope's guards, credentials that are not the page's own), robots.txt disallows (when its
  rules are known), or whose fetch failed (a 4xx, a 5xx, a network error) or whose page was
  ``noindex``: ignored, ``canonical-error``, the page keeps its content;
* a page that named another canonical URL itself (A -> B -> A, or a longer chain back), or
  a URL that redirects back to the page, at once or through other redirects: ignored,
  ``canonical-loop``, and the page keeps its content, so one page of a loop always does;
* the page itself: nothing to do (most pages name themselves).

A page whose content is withheld for its canonical URL is held (:meth:`Canonicals.hold`)
until that URL's fetch tells where it leads. When a redirect comes back to a held page
through the canonical URLs and redirects it led to (A names B and B redirects to A; A names
B, B names C and C redirects to A; A names B, B redirects to C and C to A), that page is the
canonical page in fact: it is handed back (:meth:`Canonicals.redirected`) for its content to
be stored after all, under its own URL, in a second record flagged ``canonical-loop`` (its
first, ``canonical-followed``, has none), and the redirect closing the cycle is flagged
``canonical-loop`` too. Nothing is fetched again for it: the redirect's target is a URL the
crawl has seen. Held pages are bounded (`MAX_HELD_BYTES` of bodies, a rendered page's served
body counted beside its rendered one: :func:`gossamer.page.state.held_bytes`; oldest
forgotten first; `MAX_WAITING` for one canonical URL, newest kept) and dropped once the
canonical URL they wait for is stored, fails or leads elsewhere (pages waiting for a URL
that names a canonical URL of its own wait on for that one); a page naming a canonical URL
whose page is stored already is not held at all. A cycle back to a page no longer held (or
``noindex``) is flagged ``canonical-error`` and named in a warning.

A canonical URL fetched after the page that named it and found failing, ``noindex``, or
redirecting out of scope or back to a page not held is flagged ``canonical-error`` on its own
record, and the pages still held that named it are handed back (:meth:`Canonicals.ended`,
:meth:`Canonicals.redirected`) for their content to be stored after all, each under its own
URL in a second record flagged ``canonical-error``, as nothing else holds it; a page no
longer held has no content stored (a warning names it). One redirecting elsewhere in scope
hands the wait on to its target. What the judge remembers (pages that
named another canonical URL, URLs that failed or redirected) is bounded (`MAX_REMEMBERED`
each, oldest forgotten first) and per process: in a cluster job it sees the pages its worker
fetched, which holds a host's pages, and canonical links mostly stay on their host. The
record's ``canonical`` field shows a password in it as ``***``.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from gossamer.page.directives import head_first
from gossamer.redact import redact_url
from gossamer.urls import Resolver, canonicalize, explicit_port, host_key, host_of

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = [
    "FLAGS",
    "MAX_HELD_BYTES",
    "MAX_REMEMBERED",
    "Canonicals",
    "Checks",
    "first_canonical",
    "header_canonical",
    "tag_canonical",
]

log = logging.getLogger(__name__)

MAX_LINK_CHARS = 8192
"""A ``Link`` header is read up to this many characters."""
MAX_REMEMBERED = 100_000
MAX_HELD_BYTES = 32 * 1024 * 1024
"""The bodies of pages held while their canonical URL is awaited, at most (oldest dropped)."""
MAX_WAITING = 64
"""Pages held waiting for one canonical URL's fetch, at most (the newest kept)."""
MAX_CHAIN = 16
"""Steps (canonical URLs named, redirects) a walk follows looking for a way back."""
FLAGS = (
    "canonical-conflict",
    "canonical-followed",
    "canonical-offsite",
    "canonical-scheme",
    "canonical-loop",
    "canonical-error",
)
"""The record flags of canonical links (see the module docstring)."""
_LINK = re.compile(r"<([^<>]*)>([^<]*)")
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]*))', re.IGNORECASE)
_CANONICAL_TAG = 'link[rel~="canonical" i][href]:not([href=""])'
_ODD_REL = re.compile(r"[^\x20-\x7e\t\n\r\f]")
"""Characters of a ``rel`` that Python's ``lower`` and ``split`` may read otherwise than
the CSS ``~= i`` of `_CANONICAL_TAG` (anything but printable ASCII and CSS's whitespace)."""
_V = TypeVar("_V")
_P = TypeVar("_P")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def header_canonical(headers: Mapping[str, str], url: str) -> str | None:
    """The canonical URL a ``Link`` header names for the page at ``url``, if any."""
    value = headers.get("link")
    if not value:
        return None
    for href, params in _LINK.findall(value[:MAX_LINK_CHARS]):
        rel = _REL.search(params)
        if rel is not None and "canonical" in (rel[1] or rel[2] or "").lower().split():
            return _absolute(url, href)
    return None


def tag_canonical(
    tree: LexborHTMLParser, base_url: str, first: LexborNode | None = None
) -> str | None:
    """The canonical URL the first ``<link rel=canonical href>`` of the document's head names
    (search engines ignore one in the body; see :func:`head_first`). ``first``: the first
    ``<link href>`` of the document with ``canonical`` among its rels as Python splits them,
    if the parse found it (:attr:`gossamer.parse.links.ParsedPage.canonical_link`)."""
    node = head_first(tree, _CANONICAL_TAG) if first is None else _first_in_head(tree, first)
    href = None if node is None else node.attributes.get("href")
    return None if not href else _absolute(base_url, href)


def first_canonical(base_url: str, found: tuple[str | None, str | None, bool]) -> str | None:
    """What :func:`tag_canonical` finds, from what a page's tokens gave of its first ``<link
    href>`` naming ``canonical`` (:attr:`gossamer.parse.links.Tokens.canonical`: its
    ``href``, ``rel`` and whether it is in the head): its ``href`` resolved. Raises
    LookupError where the search of the head's tree decides (the link outside the head, its
    ``href`` empty, its ``rel`` one CSS splits otherwise), as `_first_in_head` searches."""
    href, rel, in_head = found
    if not in_head or not href or _ODD_REL.search(rel or "") is not None:
        raise LookupError("the head's canonical link is the tree's to find")
    return _absolute(base_url, href)


def _first_in_head(tree: LexborHTMLParser, first: LexborNode) -> LexborNode | None:
    """What ``head_first(tree, _CANONICAL_TAG)`` finds, without a search (a CSS query costs
    some 40,000 instructions before it reads a node): ``first`` if it is in the head, else
    (a link in the body, a ``rel`` spelt with characters Python and CSS split differently,
    an empty ``href``) the search itself."""
    attributes = first.attributes
    if _ODD_REL.search(attributes.get("rel") or "") is None and attributes.get("href"):
        head = tree.head
        if head is not None and _within(first, head.mem_id):
            return first
    return head_first(tree, _CANONICAL_TAG)


def _within(node: LexborNode, ancestor: int) -> bool:
    """Whether the element whose ``mem_id`` is ``ancestor`` holds ``node``."""
    parent = node.parent
    while parent is not None:
        if parent.mem_id == ancestor:
            return True
        parent = parent.parent
    return False


def _absolute(base: str, href: str) -> str | None:
    """``href`` resolved against ``base`` and canonicalized; None if it makes no http(s) URL."""
    try:
        resolved = Resolver(base).resolve(href.strip())
        return None if resolved is None else canonicalize(resolved)
    except ValueError:  # InvalidURL, or a base no resolver takes
        return None


class Checks(NamedTuple):
    """What a crawl would do with a canonical URL, asked before a page's content is withheld
    for it: ``strip`` makes it the URL admission would queue (tracking and session
    parameters stripped); ``refusal`` tells why admission would turn it away when found on
    a page at a depth (None: it would not); ``allowed`` is robots.txt's verdict when known
    (None: not known yet, so followed)."""

    strip: Callable[[str], str] | None = None
    refusal: Callable[[str, int, str], str | None] | None = None
    allowed: Callable[[str], bool | None] | None = None


class Canonicals(Generic[_P]):
    """``--canonical follow``: which canonical URLs to queue, and which held pages (``_P``:
    what the stage needs to store one) to store after all (see the module docstring).

    ``in_scope`` tells whether the crawl may visit a URL (None: every URL); ``checks`` what
    admission and robots.txt would say of it; ``held_bytes`` bounds the pages held
    (`MAX_HELD_BYTES` by default)."""

    def __init__(
        self,
        in_scope: Callable[[str], bool] | None = None,
        limit: int = MAX_REMEMBERED,
        checks: Checks | None = None,
        held_bytes: int | None = None,
    ) -> None:
        self._in_scope = in_scope
        self._limit = limit
        self._checks = checks or Checks()
        self._held: OrderedDict[str, tuple[_P, int]] = OrderedDict()
        """Pages withheld for their canonical URL, kept until it is fetched: page -> (what
        stores it, its size)."""
        self._held_bytes = 0
        self._held_limit = MAX_HELD_BYTES if held_bytes is None else held_bytes
        self._named: OrderedDict[str, str] = OrderedDict()
        """Pages that named another canonical URL and were not stored: page -> canonical."""
        self._awaited: OrderedDict[str, list[str]] = OrderedDict()
        """Canonical URLs queued and not fetched yet: canonical -> the pages that named it
        (at most `limit`), oldest first."""
        self._failed: OrderedDict[str, None] = OrderedDict()
        """URLs whose fetch failed or whose page was ``noindex``: no content of theirs is
        stored, so a page naming one keeps its own."""
        self._stored: OrderedDict[str, None] = OrderedDict()
        """URLs whose page was stored: a page naming one later is not held, as nothing it
        waits for is to come."""
        self._redirects: OrderedDict[str, str] = OrderedDict()
        """URLs that redirected: URL -> its target."""
        self._origins: OrderedDict[str, None] = OrderedDict()
        """Origins (``scheme://host[:port]``) that served a page judged here."""

    def judge(
        self, url: str, canonical: str | None, depth: int = 0
    ) -> tuple[str | None, str | None]:
        """The canonical URL to queue for the page at ``url`` (at ``depth``; None: none), one
        level deeper, and the record's flag (None: none)."""
        origin = host_key(url)
        if origin not in self._origins:
            self._remember(self._origins, origin, None)
        if canonical is None:
            return None, None
        strip = self._checks.strip
        queued = canonical if strip is None else strip(canonical)
        if queued == url:
            return None, None
        if self._in_scope is not None and not self._in_scope(canonical):
            return None, "canonical-offsite"
        if _scheme_only(url, canonical) and host_key(canonical) not in self._origins:
            return None, "canonical-scheme"
        if queued in self._failed or not self._may_queue(url, queued, depth):
            return None, "canonical-error"
        if queued in self._named or self._leads_back(queued, url):
            return None, "canonical-loop"
        self._remember(self._named, url, queued)
        if queued not in self._stored:
            self._await(queued, [url])
        return queued, "canonical-followed"

    def _may_queue(self, url: str, queued: str, depth: int) -> bool:
        """Whether admission and robots.txt would let the crawl fetch ``queued``, named by
        the page ``url``: a page whose canonical URL will not be fetched keeps its content."""
        refusal, allowed = self._checks.refusal, self._checks.allowed
        reason = None if refusal is None else refusal(queued, depth + 1, url)
        if reason is None and allowed is not None and allowed(queued) is False:
            reason = "robots"
        if reason is None:
            return True
        log.info(
            "canonical URL %s of %s not followed (%s); the page keeps its content",
            redact_url(queued),
            redact_url(url),
            reason,
            extra={"event": "canonical-error"},
        )
        return False

    def _leads_back(self, start: str, url: str) -> bool:
        """Whether ``start`` leads to ``url`` through the canonical URLs pages named and the
        redirects met (at most `MAX_CHAIN` steps)."""
        step = start
        for _ in range(MAX_CHAIN):
            if step == url:
                return True
            step = self._named.get(step) or self._redirects.get(step) or ""
            if not step:
                return False
        return False

    def hold(self, url: str, page: _P, size: int) -> None:
        """Keep ``page``, withheld for its canonical URL, until that URL's fetch tells
        where it leads (``size``: its bytes; `MAX_HELD_BYTES` in all, oldest dropped). Not
        held when that URL's page is stored already (fetched before this page named it)."""
        self._drop(url)
        if size > self._held_limit or self._named.get(url) in self._stored:
            return
        self._held[url] = (page, size)
        self._held_bytes += size
        while self._held_bytes > self._held_limit or len(self._held) > self._limit:
            self._held_bytes -= self._held.popitem(last=False)[1][1]

    def _drop(self, url: str) -> None:
        held = self._held.pop(url, None)
        if held is not None:
            self._held_bytes -= held[1]

    def redirected(self, url: str, target: str | None) -> tuple[str | None, list[_P]]:
        """``url`` redirected to ``target`` (None: a bad or one redirect too many): the flag
        of its record, and the held pages to store after all: the one the redirect comes back
        to (``canonical-loop``), or (``canonical-error``) those that named ``url`` when the
        redirect leads nowhere new (back to a page not held, out of the crawl's scope,
        nowhere): their content is stored after all, as nothing else holds it."""
        self._remember(self._redirects, url, target or "")
        named_by = self._awaited.pop(url, None)
        back = None if target is None else self._named.get(target)
        if back is not None and target is not None and self._leads_back(back, target):
            flag, found = self._back(url, target)  # the cycle comes back to a page
            self._drop_all(named_by)  # their content is that page's
            return flag, [] if found is None else [found]
        if not named_by:
            return None, []
        out = target is None or (self._in_scope is not None and not self._in_scope(target))
        if not out and target not in named_by:
            if target in self._stored:  # their content is its, stored already
                self._drop_all(named_by)
            else:
                self._await(target or "", named_by)  # its target's fetch decides
            return None, []
        self._remember(self._failed, url, None)  # a page naming it again keeps its content
        way = "back to it" if target in named_by else "away"
        return "canonical-error", self._release(url, f"redirects {way}", named_by)

    def _release(self, url: str, why: str, pages: list[str]) -> list[_P]:
        """The held ones of ``pages``, whose canonical URL ``url`` holds no content (``why``):
        to store after all, each under its own URL; those no longer held are named in a
        warning (no content stored for them)."""
        found: list[_P] = []
        lost: list[str] = []
        for page in pages:
            held = self._held.pop(page, None)
            if held is None:
                lost.append(page)
                continue
            self._held_bytes -= held[1]
            self._named.pop(page, None)  # stored after all: no more a page that named another
            found.append(held[0])
        if found:
            log.info(
                "canonical URL %s %s: %d page(s) that named it are stored after all",
                redact_url(url),
                why,
                len(found),
                extra={"event": "canonical-error"},
            )
        if lost:
            log.warning(
                "canonical URL %s %s; %s named it and has no content stored (no longer held)",
                redact_url(url),
                why,
                _pages(lost),
                extra={"event": "canonical-error"},
            )
        return found

    def _back(self, url: str, target: str) -> tuple[str | None, _P | None]:
        """``url`` redirected to ``target``, a page withheld for a canonical URL that led
        here: the page held, to store (None, and a warning, if it is not held)."""
        held = self._held.pop(target, None)
        if held is None:
            log.warning(
                "canonical URL %s leads back to %s, which has no content stored (noindex, "
                "or its page no longer held)",
                redact_url(url),
                redact_url(target),
                extra={"event": "canonical-error"},
            )
            return "canonical-error", None
        self._held_bytes -= held[1]
        del self._named[target]  # stored after all: no more a page that named another
        log.info(
            "canonical URL %s leads back to %s: its content is stored after all",
            redact_url(url),
            redact_url(target),
            extra={"event": "canonical-loop"},
        )
        return "canonical-loop", held[0]

    def ended(
        self, url: str, failed: bool, withheld: str | None = None
    ) -> tuple[str | None, list[_P]]:
        """``url``'s fetch ended (``failed``: with no page; ``withheld``: why the content
        of its page is not stored): the flag of its record when a page named it canonical and
        it failed or was ``noindex``, and the held pages that named it, then to store after
        all. The pages that named it are held on while ``url`` waits for a canonical URL of
        its own (``not-canonical``): the chain may come back to them."""
        named_by = self._awaited.pop(url, None)
        lost = failed or withheld == "noindex"
        if lost:
            self._remember(self._failed, url, None)
        elif withheld is None:
            self._remember(self._stored, url, None)
        if not named_by:
            return None, []
        if withheld == "not-canonical":  # they wait on for the canonical URL it named
            onward = self._named.get(url)
            if onward is not None and onward not in self._stored:
                self._await(onward, named_by)
                return None, []
        if not lost:
            self._drop_all(named_by)
            return None, []
        return "canonical-error", self._release(url, "failed or is noindex", named_by)

    def _await(self, url: str, pages: list[str]) -> None:
        """``pages`` wait for ``url``'s fetch: the newest `MAX_WAITING`; older ones are
        released (no longer held: a way back to one finds no content to store)."""
        waiting = self._awaited.pop(url, None)
        if waiting is None:
            waiting = pages
        else:
            waiting.extend(page for page in pages if page not in waiting)
        if len(waiting) > MAX_WAITING:
            self._drop_all(waiting[:-MAX_WAITING])
            del waiting[:-MAX_WAITING]
        self._remember(self._awaited, url, waiting)

    def _drop_all(self, pages: list[str] | None) -> None:
        for page in pages or ():
            self._drop(page)

    def _remember(self, table: OrderedDict[str, _V], key: str, value: _V) -> None:
        """Keep ``key`` in ``table`` as its newest, forgetting its oldest past the limit (an
        ``OrderedDict``: a dict finds its oldest key by scanning past every key deleted
        before it)."""
        table.pop(key, None)
        table[key] = value
        if len(table) > self._limit:
            table.popitem(last=False)


def _pages(pages: list[str]) -> str:
    """The pages of a warning: the first, and how many more."""
    first = redact_url(pages[0])
    return first if len(pages) == 1 else f"{first} and {len(pages) - 1} more pages"


def _scheme_only(url: str, canonical: str) -> bool:
    """Whether ``canonical`` names the host and port of ``url`` under another scheme."""
    scheme, other = url.partition(":")[0], canonical.partition(":")[0]
    if scheme == other or host_of(url) != host_of(canonical):
        return False
    return _port(url, scheme) == _port(canonical, other)


def _port(url: str, scheme: str) -> int | None:
    port = explicit_port(url)
    return port if port is not None else _DEFAULT_PORTS.get(scheme)

"""The page stage's values: what it reads (a finished fetch), the state its steps fill in,
and what it hands back to the engine (the record, the links, the outcome)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec

from gossamer.frontier.base import Candidate, Lease
from gossamer.outcomes import Outcome
from gossamer.page.directives import Directives
from gossamer.parse.links import ParsedPage
from gossamer.sinks.base import Archivable, Item, PageRecord

if TYPE_CHECKING:
    from gossamer.extract import Content
    from gossamer.fetch.exchange import Exchange


class Fetched(Archivable, Protocol):
    """The parts of a fetch result the engine and the page stage read."""

    @property
    def status(self) -> int | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str | None: ...
    @property
    def charset(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def location(self) -> str | None: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def started_at(self) -> float: ...
    @property
    def sent_by(self) -> float: ...
    @property
    def fetched_at(self) -> float: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def latency(self) -> float: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def flags(self) -> tuple[str, ...]: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def proxy(self) -> str | None: ...
    @property
    def rendered(self) -> bool: ...
    @property
    def served(self) -> bytes | None: ...
    @property
    def served_charset(self) -> str | None: ...


class TextFields(NamedTuple):
    """The record's content fields: main text (cut to ``--max-text-chars``) and metadata.
    (The stage's small values are named tuples: a frozen dataclass takes several times as
    long to define, which every crawl pays at start-up.)"""

    text: str | None = None
    lang: str | None = None
    description: str | None = None
    canonical: str | None = None
    published: str | None = None
    authors: tuple[str, ...] = ()
    images: tuple[dict[str, str | None], ...] = ()
    text_chars: int | None = None
    """Characters of the text before it was cut."""


class RuleFields(NamedTuple):
    """The record's rule fields: the rule read on the page and what it found."""

    rule: str | None = None
    items: int = 0
    errors: tuple[str, ...] = ()
    found: tuple[Item, ...] = ()


class Aside(NamedTuple):
    """What the parse sandbox read of a page's tree besides its `ParsedPage`."""

    robots: Directives
    """The robots meta tags' directives."""
    canonical: str | None
    """The canonical URL the ``<link rel=canonical>`` of the head names."""
    content: Content | None = None
    """The main text a focus judges, extracted there for it alone (a crawl keeping no text)."""


NO_TEXT = TextFields()
NO_RULES = RuleFields()


class PageState(msgspec.Struct, eq=False):
    """One page on its way through the stage's steps; each step reads and sets its fields."""

    lease: Lease
    result: Fetched
    error: str | None
    """The page's error so far (the first one a step met is kept)."""
    flags: tuple[str, ...]
    outcome: Outcome | None = None
    """Set by a step whose failure the record counts as its own kind (the hook's)."""
    parsed: ParsedPage | None = None
    aside: Aside | None = None
    """For a page parsed in the parse sandbox (``parsed`` then has no tree, unless a step
    built one): what was read of its tree there."""
    content: Content | None = None
    """What the extractor read (HTML, plain text), before it becomes `text`."""
    links: list[str] = msgspec.field(default_factory=list)
    """The links to follow, as the parse, the rules and the hook leave them."""
    title: str | None = None
    text: TextFields | None = None
    rules: RuleFields | None = None
    extra: dict[str, Any] | None = None
    duplicate_of: str | None = None
    outlinks: int = 0
    relevance: float | None = None
    redirect_to: str | None = None
    candidates: Sequence[Candidate] = ()
    """What goes back to the frontier: the outlinks, or the redirect's target."""
    canonical: str | None = None
    """The canonical URL the page names (``Link`` header, else ``<link rel=canonical>``)."""
    withheld: str | None = None
    """Why no content of the page is stored (``noindex``, ``not-canonical``), if so."""
    unarchived: str | None = None
    """Why the page's payload is not archived though its content is stored (``noarchive``)."""
    canonical_link: Candidate | None = None
    """The canonical URL to queue (``--canonical follow``), one level deeper than the page."""
    change: str | None = None
    """What changed since the URL's last fetch (:mod:`gossamer.page.freshness`)."""
    previous_fetched_at: float | None = None
    revisit: Archivable | None = None
    """An unchanged page's WARC revisit record (instead of its response)."""


class Kept(NamedTuple):
    """A page stored after all while another URL's fetch is handled (``--canonical follow``:
    its canonical URL led back to it): its record, with its content, and what to archive."""

    record: PageRecord
    archive: Archivable


class PageResult(NamedTuple):
    """What the stage hands back: the URL's record, the candidates it leads to, how the
    record counts, what of the fetch an archive keeps (None: all of it), and the pages stored
    after all (`Kept`), if the fetch led back to one or failed pages that named it."""

    record: PageRecord
    links: Sequence[Candidate]
    outcome: Outcome
    archive: Archivable | None = None
    kept: tuple[Kept, ...] = ()


class Withheld(NamedTuple):
    """A fetch whose body an archive does not keep: the response with its headers and an
    empty payload, ``WARC-Truncated`` giving the reason (``noindex``, ``noarchive``,
    ``not-canonical``)."""

    url: str
    fetched_at: float
    exchange: Exchange | None

    @classmethod
    def of(cls, result: Archivable, reason: str) -> Withheld:
        """``result`` without its body."""
        exchange = result.exchange
        if exchange is not None:
            exchange = replace(exchange, body=b"", cut=reason)
        return cls(result.url, result.fetched_at, exchange)


def internal_error(lease: Lease, result: Fetched) -> PageRecord:
    """The record of a URL whose answer could not be handled (a bug the input revealed)."""
    return PageRecord(
        lease.url,
        result.status,
        lease.depth,
        bytes=len(result.body),
        fetched_at=round(result.fetched_at, 3),
        elapsed_ms=round(result.elapsed * 1000, 1),
        error="internal-error",
        attempts=lease.attempts + 1,
        truncated=result.truncated,
        proxy=result.proxy,
    )


HELD_OVERHEAD = 2048
"""What a fetch result kept in memory costs beyond its bytes (its objects), about."""


def held_bytes(result: Fetched) -> int:
    """What keeping ``result`` costs in memory, about: its body, a rendered page's served
    body (``served``, kept beside the rendered one; the same bytes when the render gave no
    DOM), the archive's copy of the body as received, its headers twice (decoded, and as
    received) and `HELD_OVERHEAD`."""
    exchange = result.exchange
    received = len(result.body) if exchange is None else len(exchange.body)
    served = result.served
    kept = 0 if served is None or served is result.body else len(served)
    head = sum(len(name) + len(value) for name, value in result.headers.items())
    return len(result.body) + kept + received + 2 * head + HELD_OVERHEAD

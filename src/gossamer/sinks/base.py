"""The contract of the sinks: the page record every sink stores (one per finished URL) and the
protocols the engine writes through.

A checkpoint stages records in the crawl's :class:`Journal` (crawl.db) with the frontier's
state, commits both in one transaction, then hands the same records to each
:class:`RecordSink` in turn (pages.jsonl, items.jsonl, the ``--store`` table). The
:class:`Item` values a rule read from a page travel in its record (``found``), so they are
committed, and reach each sink, in the same step as the record; an :class:`Archive` (WARC)
receives every fetch as it arrives and is flushed before the journal commits. The engine knows
these protocols only; ``crawl.py`` builds the concrete sinks and passes them in.

Every text a record holds is made safe when the record is built (:func:`safe_text`): values
taken from the network (headers, titles, URLs) may carry lone surrogates (aiohttp decodes
header bytes with ``surrogateescape``) that no UTF-8 sink could write, so no value one page
sends can make a sink fail.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec
from msgspec.structs import astuple, force_setattr

from gossamer.redact import redact_authority
from gossamer.safe import json_line, safe_text

if TYPE_CHECKING:
    from gossamer.fetch.exchange import Exchange

_TEXT_FIELDS = (
    "url",
    "content_type",
    "title",
    "redirect_to",
    "error",
    "text",
    "lang",
    "description",
    "canonical",
    "published",
    "rule",
    "warc_file",
    "proxy",
    "duplicate_of",
    "change",
    "kind",
)
"""Every field of one text (a test makes sure): made safe when a record is built."""


class Item(msgspec.Struct, frozen=True):
    """One item a rule read from a page: the ``index``-th of the page's items."""

    url: str
    rule: str
    index: int
    fetched_at: float | None
    fields: dict[str, Any]
    """The item's fields in document order (JSON values), made safe when the item is built."""

    def __post_init__(self) -> None:
        force_setattr(self, "fields", _safe_json(self.fields))
        if _has_userinfo(self.url):
            force_setattr(self, "url", redact_authority(self.url))
        if not self.url.isascii():
            force_setattr(self, "url", safe_text(self.url))

    def as_json(self) -> dict[str, Any]:
        """The line of items.jsonl, as a dict."""
        return {
            "url": self.url,
            "rule": self.rule,
            "fetched_at": self.fetched_at,
            "fields": self.fields,
        }

    def to_json(self) -> str:
        """One JSON line (no newline; no raw line break either: `json_line`)."""
        return json_line(_ENCODER.encode(self.as_json()))


def _safe_json(value: Any) -> Any:
    """A JSON value with every text safe to write (:func:`safe_text`); a JSON-LD string may
    hold lone surrogates (``"\\ud800"``)."""
    if isinstance(value, str):
        return value if value.isascii() else safe_text(value)
    if isinstance(value, dict):
        return {_safe_json(str(k)): _safe_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe_json(v) for v in value]
    return value


class PageRecord(msgspec.Struct, frozen=True):
    """The outcome of one URL: fetched, redirected, failed or skipped by robots.txt.

    A frozen msgspec struct, not a dataclass: one is built per page, and a struct of this
    many fields is built in C several times faster than a frozen dataclass's ``__init__``
    sets them one by one (``msgspec.structs.replace`` makes a changed copy). ``found`` is
    left out of equality, as it is of the row and the line."""

    url: str
    status: int | None
    depth: int
    content_type: str | None = None
    bytes: int = 0
    fetched_at: float | None = None
    """Unix seconds when the response ended (None when no request was made)."""
    elapsed_ms: float | None = None
    title: str | None = None
    outlinks: int = 0
    redirect_to: str | None = None
    error: str | None = None
    attempts: int = 1
    truncated: bool = False
    flags: tuple[str, ...] = ()
    """What was cut, repaired or fallen back on while handling the page (e.g.
    ``deflate-raw-fallback``, ``html-flattened``); empty when nothing was."""
    extra: dict[str, Any] | None = None
    """The fields a ``--hook`` added (JSON), or None."""
    warc_file: str | None = None
    """With ``--warc``: the file under ``OUT/warc/`` holding the response record."""
    warc_offset: int | None = None
    """The offset of the response record's gzip member in ``warc_file``."""
    warc_length: int | None = None
    """The length in bytes of that gzip member."""
    text: str | None = None
    """The main text of an HTML, plain-text or PDF page (``--no-text``: None): paragraphs
    separated by blank lines, boilerplate left out."""
    lang: str | None = None
    """ISO 639-1 language code: from the markup, else detected from the text (None when
    unsure)."""
    description: str | None = None
    canonical: str | None = None
    """The page's ``<link rel=canonical>``, absolute."""
    published: str | None = None
    """ISO 8601 publication date or date-time the page states."""
    authors: tuple[str, ...] = ()
    images: tuple[dict[str, str | None], ...] = ()
    """``{src, alt}`` of the images in the main content, absolute, at most 50."""
    text_chars: int | None = None
    """Characters of ``text`` (before ``--max-text-chars`` cut it, flagged ``text-cut``)."""
    rule: str | None = None
    """With ``--rules``: the name of the rule read on the page, or None when none matched."""
    items: int = 0
    """How many items the rule read (each one in ``found``)."""
    rule_errors: tuple[str, ...] = ()
    """What went wrong reading the rule on the page (short lines; empty when nothing did)."""
    proxy: str | None = None
    """With proxies: the proxy that fetched the page, ``scheme://host:port`` (no
    credentials)."""
    rendered: bool = False
    """Whether the page's links, text and rule fields were read from the DOM a browser
    rendered (``--render``) rather than from the HTTP answer."""
    relevance: float | None = None
    """With a focused crawl (``--focus-phrase``, ``--focus-example``): how well the page's
    main text matches the topic, 0..1 (on-topic from ``--focus-threshold`` on); None for
    pages not judged (no focus, not HTML, not 2xx)."""
    duplicate_of: str | None = None
    """The URL whose main text this page repeats (exactly or nearly, see
    :mod:`gossamer.digests`), the first the crawl met; None when no page did."""
    change: str | None = None
    """``new`` (the URL's first fetch), ``changed``, ``unchanged`` (a 304, or the same payload
    or main text as the last fetch) or ``gone`` (a 404, 410 or redirect of a URL fetched
    before: a tombstone); None when no answer came (see :mod:`gossamer.page.freshness`)."""
    previous_fetched_at: float | None = None
    """When the URL was fetched before (a revisit), unix seconds; None on a first fetch."""
    kind: str = "page"
    """``page``, or ``sitemap`` for a sitemap or feed file read for its URLs (``outlinks``:
    the entries it listed in scope; ``extra``: its ``format``, ``entries`` and ``dropped``;
    ``flags``: what cut or spoilt it, see :class:`gossamer.discover.Flag`)."""
    found: tuple[Item, ...] = ()
    """The items themselves: not a field of the record's row or line, they travel with the
    record to the sinks, which keep them in their items table or file."""

    def __post_init__(self) -> None:
        for name, value in zip(_URL_FIELDS, _urls(self), strict=True):
            # credentials in a URL are shown as ***
            if value and "@" in value and _has_userinfo(value):
                force_setattr(self, name, redact_authority(value))
        if not all(map(str.isascii, filter(None, _texts(self)))):  # seldom: one C pass
            for name, value in zip(_TEXT_FIELDS, _texts(self), strict=True):
                if value is not None and not value.isascii():
                    force_setattr(self, name, safe_text(value))
        if self.rule_errors:
            force_setattr(self, "rule_errors", tuple(_safe_json(self.rule_errors)))
        # a page's metadata: author names and image texts from its JSON-LD or markup
        if self.authors and not all(map(str.isascii, self.authors)):
            force_setattr(self, "authors", tuple(_safe_json(self.authors)))
        if self.flags and not all(map(str.isascii, self.flags)):
            force_setattr(self, "flags", tuple(_safe_json(self.flags)))
        if self.images:
            force_setattr(self, "images", tuple(_safe_json(self.images)))

    def __eq__(self, other: object) -> bool:
        if type(other) is not PageRecord:
            return NotImplemented
        return _values(self) == _values(other)

    def __hash__(self) -> int:
        return hash(_values(self))

    def to_json(self) -> str:
        """One JSON line (no newline; no raw line break either: `json_line`)."""
        try:
            return json_line(self._fast_json())
        except (msgspec.EncodeError, TypeError, ValueError):
            return json_line(_ENCODER.encode(self._stored()))

    def json_into(self, buffer: bytearray) -> None:
        """Append the record's JSON to ``buffer``, UTF-8, with no newline: the bytes of
        :meth:`to_json` but for the line breaks `json_line` escapes, which `json_lines`
        escapes in the whole buffer (no text decoded from the encoder's bytes, then encoded
        again for the file)."""
        start = len(buffer)
        try:
            if self.found:
                _FAST_ENCODER.encode_into(self._stored(), buffer, -1)
            else:  # the struct's own fields, ``found`` (the last, empty) cut off
                _FAST_ENCODER.encode_into(self, buffer, -1)
                buffer[len(buffer) - len(_NO_ITEMS) :] = b"}"
        except (msgspec.EncodeError, TypeError, ValueError):
            del buffer[start:]
            buffer += _ENCODER.encode(self._stored()).encode("utf-8")

    def _fast_json(self) -> str:
        """The line from msgspec's encoder (which may refuse a hook's value)."""
        if self.found:
            return _FAST_ENCODER.encode(self._stored()).decode()
        return _FAST_ENCODER.encode(self)[: -len(_NO_ITEMS)].decode() + "}"

    def _stored(self) -> dict[str, Any]:
        """The fields of the row and the line, by name."""
        return dict(zip(FIELD_NAMES, _values(self), strict=True))

    def values(self) -> tuple[Any, ...]:
        """The values in field order, as they are (``flags`` a tuple)."""
        return _values(self)

    def as_row(self) -> tuple[Any, ...]:
        """The values in field order for SQLite (``flags`` as one space-separated text,
        ``extra`` as JSON text)."""
        values = list(astuple(self))
        values.pop()  # ``found``, the last
        values[_FLAGS] = " ".join(self.flags)
        for i in _JSON_FIELDS:
            values[i] = _sqlite_value(values[i])
        return tuple(values)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> PageRecord:
        """Inverse of :meth:`as_row`."""
        values = dict(zip(FIELD_NAMES, row, strict=True))
        values["truncated"] = bool(values["truncated"])
        values["rendered"] = bool(values["rendered"])
        values["flags"] = tuple((values["flags"] or "").split())
        if values["extra"] is not None:
            values["extra"] = json.loads(values["extra"])
        values["authors"] = tuple(json.loads(values["authors"] or "[]"))
        values["images"] = tuple(json.loads(values["images"] or "[]"))
        values["rule_errors"] = tuple(json.loads(values["rule_errors"] or "[]"))
        values["items"] = values["items"] or 0
        return cls(**values)


def _values(record: PageRecord) -> tuple[Any, ...]:
    """The stored fields' values, in order: the struct's own tuple (read in C, faster than
    an attribute getter) but ``found``, the last."""
    return astuple(record)[:-1]


def _sqlite_value(value: Any) -> Any:
    if not isinstance(value, tuple | dict):
        return value
    if not value:
        return "[]" if isinstance(value, tuple) else "{}"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_URL_FIELDS = ("url", "redirect_to", "duplicate_of", "canonical")
"""The record's URL fields: a seed's credentials, or a page's (a canonical URL it names),
are shown as ``***`` in them."""


def _has_userinfo(url: str) -> bool:
    return "@" in url.partition("://")[2].partition("/")[0]


FIELD_NAMES = PageRecord.__struct_fields__[:-1]
"""The fields a record's row and line hold (not ``found``, the last: items are kept apart)."""
_urls = operator.attrgetter(*_URL_FIELDS)
_texts = operator.attrgetter(*_TEXT_FIELDS)
_FLAGS = FIELD_NAMES.index("flags")
_JSON_FIELDS = tuple(
    i
    for i, name in enumerate(FIELD_NAMES)
    if name != "flags" and PageRecord.__annotations__[name].startswith(("tuple", "dict"))
)
"""The fields stored as JSON text (tuples and dicts), ``flags`` aside."""
_NO_ITEMS = b',"found":[]}'
"""How a record's JSON ends when it carries no items: the struct's last field, empty."""
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_FAST_ENCODER = msgspec.json.Encoder()
"""Records' lines: msgspec's encoder writes the same JSON in a third of the time of
`_ENCODER`, which takes over for a value it refuses (a hook's field of a type JSON lacks)."""


class Journal(Protocol):
    """The crawl's own durable store (crawl.db): records are staged next to the frontier's
    state and committed with it in one transaction, so a resumed crawl finds both or neither."""

    def stage(self, records: list[PageRecord]) -> None:
        """Stage records, and the items each one carries (``found``), for the next commit."""
        ...

    def stage_sitemaps(self, host: str, urls: Sequence[str]) -> None:
        """Stage the ``Sitemap:`` lines of ``host``'s robots.txt."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Stage a small fact about the crawl."""
        ...

    async def commit(self) -> None:
        """Make everything staged durable, the frontier's state included."""
        ...

    def outcome_counts(self) -> list[tuple[int | None, str | None, int]]:
        """``(status, error, records)`` over the committed records (``--resume``)."""
        ...

    def rule_counts(self) -> tuple[int, int, int, int]:
        """``(pages a rule matched, items, items dropped, rule errors)`` over the committed
        records (``--resume`` with ``--rules``)."""
        ...


class RecordSink(Protocol):
    """Where a checkpoint's records go once the journal has committed them, in its order.
    Raising stops the crawl (every record stays in the journal). A sink keeps a record's
    items (``found``) with the record, or writes none of them (pages.jsonl)."""

    async def write(self, records: list[PageRecord]) -> None:
        """Take the records of one checkpoint."""
        ...


class Archivable(Protocol):
    """The parts of a fetch result an archive reads."""

    @property
    def url(self) -> str: ...
    @property
    def fetched_at(self) -> float: ...
    @property
    def exchange(self) -> Exchange | None: ...


IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
"""The WARC revisit profiles: the same payload as an earlier capture, or a 304 answer."""


class Revisit(NamedTuple):
    """A fetch an archive keeps as a ``revisit`` record (``profile``), referring to the
    capture of the same URL at ``refers_to_date`` (unix seconds): its headers, not its body."""

    url: str
    fetched_at: float
    exchange: Exchange | None
    profile: str
    refers_to_date: float


class WarcLocation(msgspec.Struct, frozen=True):
    """Where a response record lies: its file (name only, under ``OUT/warc/``), the offset of
    its gzip member and the member's length in bytes."""

    file: str
    offset: int
    length: int


class Archive(Protocol):
    """Where every fetch is archived as it arrives (``--warc``)."""

    async def write(self, result: Archivable) -> WarcLocation | None:
        """Archive one fetch; where its response lies, or None when there was no response."""
        ...

    def flush(self) -> None:
        """Hand what is buffered to the OS (before the journal commits)."""
        ...


__all__ = [
    "FIELD_NAMES",
    "IDENTICAL_PAYLOAD",
    "NOT_MODIFIED",
    "Archivable",
    "Archive",
    "Item",
    "Journal",
    "PageRecord",
    "RecordSink",
    "Revisit",
    "WarcLocation",
    "safe_text",
]

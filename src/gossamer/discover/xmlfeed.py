"""The streaming XML reader of sitemaps, sitemap indexes, RSS and Atom feeds (expat).

Bytes go in as they arrive; each record (a sitemap's ``url``, an index's ``sitemap``, a
feed's ``item`` or ``entry``) comes out as an :class:`~gossamer.discover.model.Entry` or
:class:`~gossamer.discover.model.Child` when its end tag is read, so memory holds one record,
never the document. Names are matched by their local part and namespace prefixes are not
resolved: sitemaps in the wild use the wrong namespace, none, or a prefix they never declared.
Only direct children of a record count, so an image sitemap's ``image:loc`` or an XHTML
alternate ``xhtml:link`` inside a ``url`` is not taken for the page's ``loc``.

Hostile XML stops here. A DTD that declares any entity is refused at the declaration (billion
laughs, external entities, XXE): nothing is expanded, no file or URL is read; an external DTD
is never loaded. Text is kept only inside the fields read, each cut at ``max_url_chars``. Expat
before 2.6 scans a token that spans many feeds again on each feed (quadratic in its length),
so input is handed to it in blocks of at least ``BLOCK_BYTES`` and a token longer than
``max_token_bytes`` stops the reading. Expat, not lxml: it reads a 50,000-URL sitemap in
about half lxml's pull parser's time here (0.27 s against 0.49 s) and hands the text to
Python as it goes, so every buffer is ours to bound.
"""

from __future__ import annotations

import codecs
import pyexpat
from urllib.parse import urljoin

from gossamer.discover.dates import parse_date, parse_w3c
from gossamer.discover.encoding import xml_decoder
from gossamer.discover.model import Child, Entry, Flag, Format, Item, Limits

__all__ = ["BLOCK_BYTES", "XmlReader"]

BLOCK_BYTES = 64 * 1024
"""Input is handed to expat in blocks at least this long (the last one aside)."""

_FORMATS = {
    "urlset": Format.URLSET,
    "sitemapindex": Format.INDEX,
    "rss": Format.RSS,
    "RDF": Format.RSS,  # RSS 1.0
    "feed": Format.ATOM,
}
_RECORDS = {
    Format.URLSET: "url",
    Format.INDEX: "sitemap",
    Format.RSS: "item",
    Format.ATOM: "entry",
}
_SITEMAP_FIELDS = frozenset({"loc", "lastmod", "changefreq", "priority"})
_FEED_FIELDS = frozenset({"link", "guid", "pubDate", "date", "updated", "published"})
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_ATOM_PAGE_RELS = (None, "alternate")
_ABSOLUTE = ("http://", "https://")


class _Stop(Exception):
    """Raised in a handler to end the parse (a limit, a refused DTD)."""

    def __init__(self, flag: Flag | None) -> None:
        super().__init__(flag)
        self.flag = flag


class XmlReader:
    """Reads one XML sitemap or feed fed in chunks; records go to ``out`` as they end."""

    def __init__(self, source: str, limits: Limits, out: list[Item]) -> None:
        self.source = source
        self.format = Format.UNKNOWN
        self.flags: list[Flag] = []
        self.count = 0
        self.stopped = False
        self._limits = limits
        self._out = out
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._fed = 0
        self._depth = 0
        self._record_depth = 0  # 0: outside a record
        self._record_tag = ""
        self._wanted = _SITEMAP_FIELDS
        self._fields: dict[str, str | None] = {}
        self._field: str | None = None
        self._text: list[str] = []
        self._text_chars = 0
        self._decoder: codecs.IncrementalDecoder | None = None
        self._parser = self._make_parser()

    def _make_parser(self) -> pyexpat.XMLParserType:
        parser = pyexpat.ParserCreate("utf-8")  # decoded here first, whatever it declares
        parser.buffer_text = True
        parser.SetParamEntityParsing(pyexpat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        parser.EntityDeclHandler = self._refuse_entity
        parser.UnparsedEntityDeclHandler = self._refuse_entity
        return parser

    def feed(self, data: bytes) -> None:
        """Reads ``data``, the document's next bytes."""
        if self.stopped or not data:
            return
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= BLOCK_BYTES:
            self._parse(final=False)

    def close(self, *, cut: bool = False) -> None:
        """Reads what is pending; ``cut``: the document was cut short on purpose (a limit),
        so its missing end is no fault."""
        if not self.stopped:
            self._parse(final=not cut)
        self.stopped = True

    def _parse(self, *, final: bool) -> None:
        block = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        if self._decoder is None:
            self._decoder = xml_decoder(block)
        block = self._decoder.decode(block, final).encode("utf-8")
        self._fed += len(block)
        try:
            self._parser.Parse(block, final)
        except _Stop as stop:
            self._stop(stop.flag)
        except (pyexpat.ExpatError, LookupError, ValueError):  # ValueError: a bad encoding
            self._stop(Flag.BROKEN_XML)
        else:
            if self._fed - max(self._parser.CurrentByteIndex, 0) > self._limits.max_token_bytes:
                self._stop(Flag.HUGE_TOKEN)

    def _stop(self, flag: Flag | None) -> None:
        self.stopped = True
        if flag is not None and flag not in self.flags:
            self.flags.append(flag)
        self._parser.StartElementHandler = None
        self._parser.EndElementHandler = None
        self._parser.CharacterDataHandler = None

    def _refuse_entity(self, *_: object) -> None:
        raise _Stop(Flag.ENTITIES)

    def _start(self, name: str, attributes: dict[str, str]) -> None:
        self._depth += 1
        if self._depth > self._limits.max_xml_depth:
            raise _Stop(Flag.DEEP_XML)
        local = name.rpartition(":")[2]
        if self._depth == 1:
            self._root(local)
        elif self._record_depth == 0:
            if local == self._record_tag:
                self._record_depth = self._depth
                self._fields = {}
        elif self._depth == self._record_depth + 1:
            self._field_start(local, attributes)

    def _root(self, local: str) -> None:
        self.format = _FORMATS.get(local, Format.UNKNOWN)
        if self.format is Format.UNKNOWN:
            raise _Stop(Flag.NOT_A_SITEMAP)
        self._record_tag = _RECORDS[self.format]
        self._wanted = (
            _SITEMAP_FIELDS if self.format in (Format.URLSET, Format.INDEX) else _FEED_FIELDS
        )

    def _field_start(self, local: str, attributes: dict[str, str]) -> None:
        if local not in self._wanted:
            return
        if local == "link" and "href" in attributes:  # Atom's, or an atom:link in RSS
            rel = attributes.get("rel")
            if rel in _ATOM_PAGE_RELS:
                self._fields.setdefault("href", attributes["href"][: self._limits.max_url_chars])
            return
        if local == "guid" and attributes.get("isPermaLink", "true").strip() == "false":
            return
        self._field = local
        self._text = []
        self._text_chars = 0

    def _chars(self, text: str) -> None:
        if self._field is None or self._text_chars > self._limits.max_url_chars:
            return
        self._text.append(text)
        self._text_chars += len(text)

    def _end(self, name: str) -> None:
        depth = self._depth
        self._depth -= 1
        if self._record_depth == 0:
            return
        if depth == self._record_depth:
            self._record_depth = 0
            self._record_end()
        elif self._field is not None and depth == self._record_depth + 1:
            too_long = self._text_chars > self._limits.max_url_chars
            self._fields.setdefault(self._field, None if too_long else "".join(self._text).strip())
            self._field = None

    def _record_end(self) -> None:
        fields = self._fields
        self._fields = {}
        url = _record_url(self.format, fields)
        if url is None:
            if any(fields.get(key, "") is None for key in ("loc", "link", "guid")):
                self._flag(Flag.LONG_URL)
            return
        if not url.startswith(_ABSOLUTE):
            url = urljoin(self.source, url)  # Atom's relative links; lenient for the rest
            if not url.startswith(_ABSOLUTE):
                return
        if self.count >= self._limits.max_urls:
            raise _Stop(Flag.TOO_MANY_URLS)
        self.count += 1
        self._out.append(self._item(url, fields))

    def _item(self, url: str, fields: dict[str, str | None]) -> Item:
        if self.format is Format.INDEX:
            return Child(url, parse_w3c(fields.get("lastmod") or ""), self.source)
        if self.format is Format.URLSET:
            return Entry(
                url,
                parse_w3c(fields.get("lastmod") or ""),
                _changefreq(fields.get("changefreq")),
                _priority(fields.get("priority")),
                self.source,
            )
        lastmod, published = _feed_date(fields)
        return Entry(url, lastmod, None, None, self.source, published)

    def _flag(self, flag: Flag) -> None:
        if flag not in self.flags:
            self.flags.append(flag)


def _record_url(format: Format, fields: dict[str, str | None]) -> str | None:
    """The page URL of a record: ``loc``; an Atom entry's alternate link; an RSS item's
    ``link`` (else an alternate ``atom:link``, else its permalink ``guid`` if it is a URL:
    many feeds leave ``isPermaLink`` out of guids that are plain ids)."""
    if format in (Format.URLSET, Format.INDEX):
        return fields.get("loc") or None
    if format is Format.ATOM:
        return fields.get("href") or fields.get("link") or None
    guid = fields.get("guid") or ""
    return (
        fields.get("link") or fields.get("href") or (guid if guid.startswith(_ABSOLUTE) else None)
    )


def _feed_date(fields: dict[str, str | None]) -> tuple[float | None, bool]:
    """A feed record's date, and whether it is one of publication (not of its last change:
    :attr:`~gossamer.discover.model.Entry.published`)."""
    for key in ("updated", "pubDate", "date", "published"):
        text = fields.get(key)
        if text:
            date = parse_date(text)
            return date, date is not None and key != "updated"
    return None, False


def _changefreq(text: str | None) -> str | None:
    value = (text or "").lower()
    return value if value in _CHANGEFREQS else None


def _priority(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None

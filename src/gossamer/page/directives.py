"""Robots directives of a page: ``X-Robots-Tag`` response headers and ``<meta>`` tags.

The syntax is Google's and Bing's: a header holds comma-separated directives, for every
crawler or, after a ``name:`` prefix, for the crawler of that user agent only
(``X-Robots-Tag: gossamer: noindex``); a prefix holds until the next one or the end of the
header, and a response may carry several headers. The crawler's name is its robots token
(``--robots-token``, ``gossamer`` by default), matched without regard to case; values for
other crawlers are passed over. In HTML, ``<meta name="robots">`` speaks to every crawler and
``<meta name="gossamer">`` (the token) to this one.

Directives read: ``noindex``, ``nofollow``, ``none`` (both), ``all``, ``index`` and
``follow`` (nothing to restrict), and ``unavailable_after: DATE``, honoured: a date in the
past when the page was fetched is ``noindex`` (an RFC 822/850 or ISO 8601 date; one that
cannot be read is ignored). Every rule addressed to the crawler counts and the most
restrictive wins: a ``noindex`` anywhere is not undone by an ``index`` elsewhere. Other
directives (``noarchive``, ``max-snippet: N`` ...) concern search results and are ignored.

A header is read up to `MAX_HEADER_CHARS` characters and `MAX_DIRECTIVES` directives: a
hostile value costs bounded time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping

    from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "MAX_DIRECTIVES",
    "MAX_HEADER_CHARS",
    "Directives",
    "header_directives",
    "meta_directives",
]

MAX_HEADER_CHARS = 8192
MAX_DIRECTIVES = 100
_AGENT = re.compile(r"\s*([a-z0-9_.-]+)\s*:\s*(.*)\Z", re.DOTALL)
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
"""Directives that take a value after a colon: their names are no user agents."""
_HEADER = "x-robots-tag"
_WEEKDAY = re.compile(r"(unavailable_after\s*:\s*)[a-z]+\s*,")
"""The weekday of an RFC 822 or 850 date (``Wed, 25 Jun 2010 ...``): its comma would split the
date, and the date is the same without it."""


class Directives(NamedTuple):
    """What a page's robots rules ask of the crawler."""

    noindex: bool = False
    """Store no content of the page (its record keeps status, links and flags)."""
    nofollow: bool = False
    """Follow none of the page's links."""

    def merge(self, other: Directives) -> Directives:
        """Both rules at once: the most restrictive of each."""
        return Directives(self.noindex or other.noindex, self.nofollow or other.nofollow)

    @property
    def flags(self) -> tuple[str, ...]:
        """The record's flags: ``noindex``, ``nofollow``."""
        return ("noindex",) * self.noindex + ("nofollow",) * self.nofollow


NONE = Directives()


def header_directives(headers: Mapping[str, str], token: str, fetched_at: float) -> Directives:
    """The directives of the ``X-Robots-Tag`` headers addressed to every crawler or to
    ``token``; headers the fetcher joined are one per line."""
    value = headers.get(_HEADER)
    if not value:
        return NONE
    token = token.lower()
    found = NONE
    for line in value[:MAX_HEADER_CHARS].lower().splitlines():
        found = found.merge(_line_directives(line, token, fetched_at))
    return found


def _line_directives(line: str, token: str, fetched_at: float) -> Directives:
    """One header's directives for ``token``: a ``name:`` prefix addresses those after it."""
    agent: str | None = None  # None: every crawler
    found = NONE
    for part in _WEEKDAY.sub(r"\1", line).split(",")[:MAX_DIRECTIVES]:
        match = _AGENT.match(part)
        if match is not None and match[1] not in _VALUED:
            agent, part = match[1], match[2]
        if agent is None or agent == token:
            found = found.merge(_directive(part.strip(), fetched_at))
    return found


def _directive(word: str, fetched_at: float) -> Directives:
    """What one directive asks (nothing for those that do not restrict a crawler)."""
    if word in ("noindex", "nofollow", "none"):
        return Directives(word != "nofollow", word != "noindex")
    name, _, value = word.partition(":")
    if name.strip() == "unavailable_after" and _is_past(value.strip(), fetched_at):
        return Directives(noindex=True)
    return NONE


def _is_past(value: str, now: float) -> bool:
    """Whether the date ``value`` is before ``now`` (unix seconds); False if unreadable."""
    moment: datetime | None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        try:
            moment = datetime.fromisoformat(value.upper())
        except ValueError:
            return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() < now


def meta_directives(tree: LexborHTMLParser, token: str, fetched_at: float) -> Directives:
    """The directives of the ``<meta name="robots">`` and ``<meta name=TOKEN>`` tags of the
    document's head."""
    names = ("robots", token.lower())
    found = NONE
    head = tree.head  # where the tags belong (and are read by search engines): a tenth of
    if head is None:  # the time of a search of the whole document
        return NONE
    for meta in head.css("meta")[:1000]:
        attributes = meta.attributes
        if (attributes.get("name") or "").strip().lower() not in names:
            continue
        content = (attributes.get("content") or "")[:MAX_HEADER_CHARS].lower()
        for word in _WEEKDAY.sub(r"\1", content).split(",")[:MAX_DIRECTIVES]:
            found = found.merge(_directive(word.strip(), fetched_at))
    return found

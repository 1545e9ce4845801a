"""Dates of sitemaps and feeds to epoch seconds: W3C datetime (sitemap ``lastmod``, Atom's
RFC 3339) and RFC 822 (RSS ``pubDate``). A malformed date is None, never an error; so is one
whose moment in UTC falls outside years 1 to 9999 (``9999-12-31T23:00-01:00``), which no
``datetime`` downstream could hold."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache

__all__ = ["parse_date", "parse_rfc822", "parse_w3c"]

MAX_DATE_CHARS = 64
"""Longer text is no date (and is not handed to a parser)."""
_EARLIEST = datetime.min.replace(tzinfo=UTC).timestamp()
_BEYOND = _EARLIEST + (datetime.max - datetime.min).days * 86_400.0 + 86_400.0
"""10000-01-01T00:00Z (``datetime.max`` would round to it as a float)."""

_W3C = re.compile(
    r"(?P<y>\d{4})(?:-(?P<m>\d{2})(?:-(?P<d>\d{2})"
    r"(?:[T ](?P<H>\d{2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:[.,](?P<f>\d{1,9}))?)?"
    r"\s*(?P<tz>Z|z|[+-]\d{2}:?\d{2})?)?)?)?"
)


@lru_cache(maxsize=4096)  # a sitemap repeats its dates; the text is at most 64 characters
def parse_w3c(text: str) -> float | None:
    """A W3C datetime (``2024``, ``2024-05``, ``2024-05-06``, ``2024-05-06T07:08Z``,
    ``...T07:08:09.5+02:00``) as epoch seconds. A time without a zone is taken as UTC, as
    sites that leave it out mostly mean."""
    match = _W3C.fullmatch(text.strip()) if len(text) <= MAX_DATE_CHARS else None
    if match is None:
        return None
    parts = match.groupdict()
    fraction = parts["f"] or "0"
    try:
        moment = datetime(
            int(parts["y"]),
            int(parts["m"] or 1),
            int(parts["d"] or 1),
            int(parts["H"] or 0),
            int(parts["M"] or 0),
            int(parts["S"] or 0),
            int(fraction[:6].ljust(6, "0")),
            tzinfo=_zone(parts["tz"]),
        )
    except ValueError:  # month 13, hour 25, a zone past a day
        return None
    return _held(moment.timestamp())


def _held(seconds: float) -> float | None:
    """``seconds`` if its moment has a year from 1 to 9999 in UTC, else None."""
    return seconds if _EARLIEST <= seconds < _BEYOND else None


def _zone(text: str | None) -> timezone:
    if text is None or text in ("Z", "z"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


@lru_cache(maxsize=4096)
def parse_rfc822(text: str) -> float | None:
    """An RFC 822 / 2822 date (``Mon, 06 May 2024 07:08:09 GMT``) as epoch seconds."""
    if len(text) > MAX_DATE_CHARS or not text.strip():
        return None
    from email.utils import parsedate_to_datetime  # loaded by the first RSS date, not at start

    try:
        moment = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return _held(moment.timestamp())
    except (ValueError, OverflowError):
        return None


def parse_date(text: str) -> float | None:
    """Either form: feeds write RFC 822 where W3C belongs and the other way round."""
    return parse_w3c(text) if _W3C.match(text.strip()) else parse_rfc822(text)

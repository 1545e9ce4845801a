"""The parts of a continuous crawl (``--recrawl``) built from its settings: the revisit state
over crawl.db with each URL's bounds (``[[revisit]]`` tables), and the page fetcher that sends
a revisit's validators."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gossamer.crawldb import CrawlDB
from gossamer.fetch.headers import conditional_headers
from gossamer.frontier.revisit import Bounds
from gossamer.frontier.revisits import BoundsOf, RevisitBook, Revisits
from gossamer.settings import CrawlSettings, SettingsError
from gossamer.settings.revisit import RevisitRule, rule_intervals, url_regex


class _HeadersFetch(Protocol):
    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> Any: ...


class ConditionalFetch:
    """``fetcher`` for pages, a revisit's request carrying its stored validators
    (``If-None-Match``, ``If-Modified-Since``) where they are valid to send
    (:func:`~gossamer.fetch.headers.conditional_headers`)."""

    def __init__(self, fetcher: _HeadersFetch, revisits: RevisitBook) -> None:
        self._fetcher = fetcher
        self._revisits = revisits

    async def fetch(self, url: str) -> Any:
        """Fetch ``url``, conditionally when it is a revisit with validators."""
        headers = conditional_headers(self._revisits.validators(url))
        return await self._fetcher.fetch(url, headers=headers)


def revisit_bounds(settings: CrawlSettings) -> BoundsOf:
    """Each URL's revisit bounds: the first ``[[revisit]]`` table matching it (its URL pattern,
    or its content type: exact, or a prefix ending in ``/``), else the crawl's."""
    crawl = (settings.revisit_initial, settings.revisit_min, settings.revisit_max)
    least, most = settings.revisit_min, settings.revisit_max
    default = Bounds(min(max(settings.revisit_initial, least), most), least, most)
    rules = [(_matcher(rule), Bounds(*rule_intervals(rule, *crawl))) for rule in settings.revisit]

    def bounds(url: str, content_type: str | None) -> Bounds:
        for matches, found in rules:
            if matches(url, content_type):
                return found
        return default

    return bounds


def _matcher(rule: RevisitRule) -> Callable[[str, str | None], bool]:
    pattern = None
    if rule.url is not None:
        import re2  # only a crawl with [[revisit]] URL patterns pays for its import

        options = re2.Options()
        options.log_errors = False
        try:
            pattern = re2.compile(url_regex(rule.url), options)
        except re2.error as exc:
            problem = f"{rule.url!r}: RE2 does not run it ({exc})"
            raise SettingsError(f"invalid setting 'revisit': {problem}") from None
    kind = rule.content_type

    def matches(url: str, content_type: str | None) -> bool:
        if pattern is not None and pattern.search(url) is None:
            return False
        if kind is None:
            return True
        if content_type is None:
            return False
        return content_type == kind or (kind.endswith("/") and content_type.startswith(kind))

    return matches


def open_revisits(settings: CrawlSettings, db: CrawlDB) -> Revisits | None:
    """The revisit state of a continuous crawl; None for a crawl that ends."""
    if not settings.recrawl:
        return None
    return Revisits(db, revisit_bounds(settings), spare=settings.revisit_spare)


__all__ = ["ConditionalFetch", "open_revisits", "revisit_bounds"]

"""The settings of a continuous crawl (``--recrawl``): how often each URL is fetched again.

Every fetched URL starts at ``revisit_initial`` seconds and its interval moves between
``revisit_min`` and ``revisit_max`` as changes are seen (:mod:`gossamer.frontier.revisit`).
``[[revisit]]`` tables of the TOML file override the three for the URLs they match: by a glob
(``url = "*/feed*"``), a regular expression (``url = "re:/news/\\d+"``, run by RE2 in linear
time) or a content type (``content_type = "application/pdf"``); the first table that matches
wins. Values are seconds, at least 1, so tests can run on a short clock, and numbers in a
table (``min = "5"`` is refused, although the environment's and flags' strings are numbers: a
table comes from the TOML file only). A pattern or content type is at most
``MAX_PATTERN_CHARS`` characters.

Defaults: a day to start (what a site's most-linked pages change by, and what Nutch and
StormCrawler start a page at), an hour at least (a news front page changes more often than
that, but an hour keeps a single page's revisits from eating a host's politeness budget), 30
days at most (a page that never changes is still checked monthly, so a change or a removal is
seen within a month).
"""

import re
from typing import Annotated

from msgspec import Meta

from gossamer.settings.base import FieldError, InvalidSetting, SettingsModel

DEFAULT_INITIAL = 86_400.0
DEFAULT_MIN = 3_600.0
DEFAULT_MAX = 30 * 86_400.0
REGEX_PREFIX = "re:"
MAX_PATTERN_CHARS = 2_000
"""The longest ``url`` or ``content_type`` of a ``[[revisit]]`` table: a pattern is compiled
when the settings load and matched against every URL fetched."""
_INTERVALS = ("initial", "min", "max")

Seconds = Annotated[float, Meta(ge=1, le=10 * 365 * 86_400, description="Seconds (at least 1).")]


class RevisitRule(SettingsModel, frozen=True, kw_only=True):
    """One ``[[revisit]]`` table: the intervals of the URLs it matches (unset ones are the
    crawl's own)."""

    url: (
        Annotated[
            str,
            Meta(
                max_length=MAX_PATTERN_CHARS,
                description="A glob of URLs (*, ?), or a regular expression after 're:'.",
            ),
        ]
        | None
    ) = None
    content_type: (
        Annotated[
            str,
            Meta(
                max_length=MAX_PATTERN_CHARS,
                description="A content type (application/pdf), or a prefix (text/).",
            ),
        ]
        | None
    ) = None
    initial: Seconds | None = None
    min: Seconds | None = None
    max: Seconds | None = None

    def _check(self) -> None:
        if self.url is None and self.content_type is None:
            raise FieldError("url", "a [[revisit]] table needs url or content_type")
        if self.url is not None:
            try:
                url_regex(self.url)  # a bad pattern fails when the settings load
            except ValueError as exc:
                raise FieldError("url", str(exc)) from None
        if self.min is not None and self.max is not None and self.min > self.max:
            raise FieldError("min", f"[[revisit]] {self.url or self.content_type}: min > max")


def check_tables(tables: object) -> None:
    """Raise `InvalidSetting` for a ``[[revisit]]`` table whose interval is not a number
    (the settings are converted leniently, for the strings of the environment and flags)."""
    if not isinstance(tables, list):
        return  # not a list of tables: its conversion says so
    for index, table in enumerate(tables):
        if not isinstance(table, dict):
            continue
        for key in _INTERVALS:
            value = table.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                kind = type(value).__name__
                raise InvalidSetting(
                    f"revisit.{index}.{key}", f"Expected `float` (seconds), got `{kind}`"
                )


def url_regex(pattern: str) -> str:
    """The regular expression of a rule's ``url``: a glob translated, or the text after
    ``re:``. Raises ``ValueError`` for a regular expression that does not compile."""
    if not pattern.startswith(REGEX_PREFIX):
        parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
        return "^" + "".join(parts) + "$"
    regex = pattern[len(REGEX_PREFIX) :]
    try:
        re.compile(regex)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return regex


def rule_intervals(
    rule: RevisitRule, initial: float, least: float, most: float
) -> tuple[float, float, float]:
    """(initial, min, max) of the URLs ``rule`` matches: its own values, else the crawl's
    (moved to fit the rule's own bounds)."""
    if rule.min is not None:
        least = rule.min
        most = rule.max if rule.max is not None else max(most, least)
    elif rule.max is not None:
        most = rule.max
        least = min(least, most)
    initial = rule.initial if rule.initial is not None else initial
    return min(max(initial, least), most), least, most


def check_intervals(initial: float, least: float, most: float) -> None:
    """Raise ``ValueError`` unless ``least <= most`` (an initial interval outside them is
    moved to the nearer bound: ``--revisit-min 1 --revisit-max 5`` starts at 5)."""
    if least > most:
        raise ValueError(f"revisit_min ({least:g}) is more than revisit_max ({most:g})")


__all__ = [
    "DEFAULT_INITIAL",
    "DEFAULT_MAX",
    "DEFAULT_MIN",
    "MAX_PATTERN_CHARS",
    "RevisitRule",
    "Seconds",
    "check_intervals",
    "check_tables",
    "rule_intervals",
    "url_regex",
]

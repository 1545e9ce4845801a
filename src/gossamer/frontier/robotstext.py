"""How a robots.txt body is read before protego parses it, and what is read of its rules
afterwards: the first ``MAX_ROBOTS_BYTES`` cut at a line break, endless ``Crawl-delay``
values made finite, groups written with a version read as their name; ``Sitemap:`` URLs with
credentials left out; the wildcards of the group that applies counted (see
:mod:`gossamer.frontier.robots`)."""

from __future__ import annotations

import math
import re

from protego import Protego

MAX_ROBOTS_BYTES = 500 * 1024
"""Parsing limit (RFC 9309 §2.5: at least 500 kibibytes). Fetchers may stop reading here."""


_AUTHORITY = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*:[/\\]*([^/\\?#]*)")


def names_a_user(url: str) -> bool:
    """Whether a ``Sitemap:`` URL carries a user name (a password): a site may name any
    URL, and credentials are only the user's to give (its seeds, ``--sitemap``)."""
    match = _AUTHORITY.match(url)
    return match is not None and "@" in match[1]


_WILDCARDS = re.compile(r"\*+")


def wildcard_count(rules: Protego, token: str) -> int:
    """The wildcards (runs of ``*``) in the rules of the group of ``rules`` that applies to
    ``token`` (protego 0.7's rule set, as pinned: a test fails if its shape changes)."""
    group = rules._get_matching_rule_set(token)
    if group is None:
        return 0
    return sum(len(_WILDCARDS.findall(rule.value._pattern)) for rule in group._rules)


def robots_text(body: bytes, cut: bool = False) -> str:
    """Decode the first ``MAX_ROBOTS_BYTES`` as UTF-8, dropping a line cut by the limit (or
    by the fetcher, which says so with ``cut``: ``Disallow: /private`` cut to ``Disallow: /``
    would block the whole site)."""
    if cut or len(body) > MAX_ROBOTS_BYTES:
        body = body[:MAX_ROBOTS_BYTES]
        body = body[: max(map(body.rfind, _LINE_BREAKS)) + 1]
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    lower = text.lower()
    delays, versions = "delay" in lower, "/" in text and "agent" in lower
    if not (delays or versions):
        return text
    # lines as protego splits them (every line break str.splitlines knows), spaces as it strips
    text = "\n".join(text.splitlines())
    if versions:  # "User-agent: Gossamer/1.0", as owners copy it from their logs
        text = _VERSIONED_AGENT.sub(r"\1", text)
    return _ENDLESS_DELAY.sub(_finite_delay, text) if delays else text


_LINE_BREAKS = (b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
"""Bytes ending a line as protego splits them (not NEL: ``\x85`` ends other characters)."""
_VERSIONED_AGENT = re.compile(
    r"^([^\S\n]*user-agent[^\S\n]*:?[^\S\n]*[A-Za-z_][A-Za-z0-9_-]*)/[^#\n]*",
    re.IGNORECASE | re.MULTILINE,
)
"""A group's user agent written with its version: its product token is the name before the
slash (RFC 9309 section 2.2.1; Google's parser reads it so), which protego would not match."""


_ENDLESS_DELAY = re.compile(
    r"^([^\S\n]*crawl(?:-|[^\S\n]+)delay[^\S\n]*:?[^\S\n]*)([^\s#]+)(?=[^\S\n]*(?:#|$))",
    re.IGNORECASE | re.MULTILINE,
)
_LONGEST_DELAY = "1e308"
"""The value an endless ``Crawl-delay`` is read as (a 500 KiB file without one is not
searched: its lower-case copy is a tenth of the search's cost)."""


def _finite_delay(line: re.Match[str]) -> str:
    """A ``Crawl-delay`` line as protego should read it: an endless delay (``inf``,
    ``Infinity``, ``1e400``), which protego drops as no delay at all, as the longest finite
    one (`_LONGEST_DELAY`), which the politeness policy caps at ``--max-crawl-delay``. Any
    other value is left as it is (protego drops a negative one and ``NaN``)."""
    try:
        delay = float(line[2])
    except ValueError:
        return line[0]
    return line[1] + _LONGEST_DELAY if delay == math.inf else line[0]

"""Regular expressions a user gives for URLs (``--render-url``), compiled with RE2.

They are matched against every URL a crawl meets, and pages choose those URLs: Python's
``re`` backtracks (``(a+)+$`` against ``/aaaa...!`` takes exponential time, and froze a crawl's
loop), RE2 (``google-re2``) runs in time linear in the URL for every pattern it accepts. What it
cannot run so (backreferences, lookaround, possessive and atomic groups) it refuses, and the
setting is refused with the reason when it is read.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

__all__ = ["UrlPattern", "compile_url_regex"]


class UrlPattern(Protocol):
    """A compiled pattern: RE2's, searched as ``re.Pattern.search`` is."""

    @property
    def pattern(self) -> str: ...
    def search(self, text: str, /) -> Any: ...


def compile_url_regex(text: str) -> UrlPattern:
    """``text`` compiled by RE2; raises ``ValueError`` saying why it is refused."""
    import re2  # a crawl without such patterns does not load it

    options = re2.Options()
    options.log_errors = False
    try:
        return cast(UrlPattern, re2.compile(text, options))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"{text[:200]!r} is not a regular expression RE2 runs: {reason}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{text[:200]!r} is not a regular expression: {exc}") from None

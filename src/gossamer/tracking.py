"""Tracking and session parameters, stripped from canonical URLs (``--strip-params``):
campaign tags and session ids make endless spellings of one page."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["TRACKING_PARAMS", "ParamStripper"]

TRACKING_PARAMS = ("utm_*", "gclid", "fbclid", "sid", "jsessionid", "phpsessid")
"""Query (and ``;name=`` path) parameters :class:`ParamStripper` removes by default: campaign
tracking and session ids, which make endless spellings of one page. ``*`` ends a prefix."""


class ParamStripper:
    """Removes tracking and session parameters from canonical URLs: ``?utm_source=x``,
    ``&gclid=...``, ``;jsessionid=...`` in the path. Names match without regard to case; a
    name ending in ``*`` is a prefix. What is left keeps its order and spelling."""

    __slots__ = ("_exact", "_prefixes")

    def __init__(self, names: Iterable[str] = TRACKING_PARAMS) -> None:
        wanted = [name.strip().lower() for name in names if name.strip()]
        self._exact = frozenset(name for name in wanted if not name.endswith("*"))
        self._prefixes = tuple(name[:-1] for name in wanted if name.endswith("*"))

    def __bool__(self) -> bool:
        return bool(self._exact or self._prefixes)

    def strip(self, canonical_url: str) -> str:
        """``canonical_url`` without the parameters named (itself when it has none)."""
        if "?" not in canonical_url and ";" not in canonical_url:
            return canonical_url  # most URLs: one scan each
        base, _, query = canonical_url.partition("?")
        if ";" in base:
            base = self._strip_path(base)
        if query:
            parts = query.split("&")
            kept = [part for part in parts if not self._named(part.partition("=")[0])]
            if len(kept) < len(parts):  # empty parts left around a removed one mean nothing
                query = "&".join(part for part in kept if part)
        return f"{base}?{query}" if query else base

    def _strip_path(self, base: str) -> str:
        scheme, _, rest = base.partition("://")
        authority, slash, path = rest.partition("/")
        segments = []
        for segment in path.split("/"):
            if ";" in segment:
                name, *params = segment.split(";")
                kept = [p for p in params if not self._named(p.partition("=")[0])]
                segment = ";".join([name, *kept])
            segments.append(segment)
        return f"{scheme}://{authority}{slash}{'/'.join(segments)}"

    def _named(self, name: str) -> bool:
        name = name.lower()
        return name in self._exact or (bool(self._prefixes) and name.startswith(self._prefixes))

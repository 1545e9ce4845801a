"""Where on-topic pages live: judged and relevant pages counted per URL path prefix.

Sites keep a topic's pages together (a documentation section, a blog category, an archive
year), so where a link points among the URLs already judged says something before it is
fetched. Every judged page counts, under each leading run of its path's segments
(``docs.example/reference``, ``docs.example/reference/storage``...; the host alone is the
empty run), as one page judged below it and, when on-topic, one relevant; and under its
directory (the run without its last segment) as a child judged and relevant. The example
pages count as relevant.

A link scores (0..1) the larger of two shares, each with two judged pages more in the
denominator, so that a lucky page or two prove little:

* it leads into a section: the relevant share of the pages judged below its own path (a link
  to ``/reference/storage/`` when on-topic pages were found under it);
* it is a sibling: the relevant share of the pages judged in its directory, once two or more
  of them were on-topic (a link to ``/reference/storage/engine/concurrency/7/`` when
  ``.../concurrency/0/`` and ``.../5/`` were). One on-topic section page among its
  directory's does not make the other sections likely.

A link elsewhere on the site scores 0, however many on-topic pages its site holds: a site's
or a top-level section's share alone says little about one more of its pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

MAX_SEGMENTS = 8
"""Path segments counted (deeper pages count under their first eight)."""
MAX_PREFIXES = 100_000
"""Prefixes counted (each a hash and four counts, some 200 bytes); once reached, pages count
only under prefixes already known."""
_SIBLINGS_FROM = 2
"""On-topic pages in a directory before its other pages count as likely."""


def prefixes(host: str, path: str) -> list[str]:
    """The keys of a URL's path prefixes, the host alone first, the whole path last."""
    keys = [host]
    for segment in _segments(path):
        keys.append(f"{keys[-1]}/{segment}")
    return keys


def _segments(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment][:MAX_SEGMENTS]


def place_keys(host: str, path: str) -> tuple[int, int] | None:
    """The keys a link's place is scored by: those of its whole path and of its directory
    (the last two of ``prefixes``' keys); None for a link to a site's root."""
    segments = _segments(path)
    if not segments:
        return None
    directory = "/".join((host, *segments[:-1]))
    return hash(f"{directory}/{segments[-1]}"), hash(directory)


class PathEvidence:
    """Judged and relevant pages per path prefix (see the module docstring)."""

    def __init__(self) -> None:
        self._counts: dict[int, list[int]] = {}
        """hash(prefix) -> [relevant below, judged below, relevant children, judged children,
        children linked] (hashes: a hostile site's long paths cost no more than short ones)"""

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, url: str, relevant: bool) -> None:
        """Count a judged page below each of its path's prefixes and in its directory."""
        parts = urlsplit(url)
        keys = prefixes(parts.hostname or "", parts.path)
        for key in keys[1:]:
            entry = self._entry(key)
            if entry is not None:
                entry[0] += relevant
                entry[1] += 1
        if len(keys) > 1 and (entry := self._entry(keys[-2])) is not None:
            entry[2] += relevant
            entry[3] += 1

    def score(self, host: str, path: str) -> float:
        """How strongly where a link points says it leads to on-topic pages, 0..1."""
        return self.score_keys(place_keys(host, path))

    def score_keys(self, keys: tuple[int, int] | None) -> float:
        """``score`` of a link by its :func:`place_keys` (a link waiting is scored again and
        again: its keys are computed once)."""
        if keys is None:
            return 0.0
        counts = self._counts
        below = counts.get(keys[0])
        into = below[0] / (below[1] + 2) if below is not None else 0.0
        siblings = counts.get(keys[1])
        if siblings is None or siblings[2] < _SIBLINGS_FROM:
            return into
        return max(into, siblings[2] / (max(siblings[3], siblings[4]) + 2))

    def scores_keys(self, places: Iterable[tuple[int, int] | None]) -> list[float]:
        """``score_keys`` of many links (re-scoring reads every waiting URL's)."""
        score = self.score_keys
        return [score(keys) for keys in places]

    def _entry(self, prefix: str) -> list[int] | None:
        key = hash(prefix)
        entry = self._counts.get(key)
        if entry is None and len(self._counts) < MAX_PREFIXES:
            entry = self._counts[key] = [0, 0, 0, 0, 0]
        return entry

    def linked(self, keys: tuple[int, int] | None) -> None:
        """Count a URL first met as a link (by its :func:`place_keys`) among its directory's
        children: a directory's share is of all the pages it is known to hold, not only of
        those judged, which the crawl chose because they looked on-topic."""
        if keys is None:
            return
        entry = self._counts.get(keys[1])
        if entry is None and len(self._counts) < MAX_PREFIXES:
            entry = self._counts[keys[1]] = [0, 0, 0, 0, 0]
        if entry is not None:
            entry[4] += 1

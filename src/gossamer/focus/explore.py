"""Exploration: which waiting URL goes first, whatever its priority, so that one dead end
cannot hold a focused crawl (``FocusConfig.explore_share`` bounds how often).

Two kinds of place the crawl has not looked into yet, each with its own share:

* a section of a site (host and first path segment) where no page was judged: its best
  waiting URL (while these stay within ``explore_share`` of the pages judged);
* a hub: a page judged off-topic whose links are mostly unexplored (at least
  ``HUB_LINKS`` of them not judged, at most a quarter judged), the one with the most such
  links first (a contents or index page), its best waiting link (while these stay within
  half of ``explore_share``). On a flat site (every page in one directory, one section)
  this is the only exploration there is: the chapter pages a site's front page lists
  behind words the topic never says lead to pages no other judged page links to. Each hub
  is explored once. Sharing one budget, the hubs took turns from the sections and a
  generated web's topic section was found 60 pages later.

Each is a scan of the waiting URLs (a section's) or of the hubs (at most one list a judged
page, :mod:`gossamer.focus.lists`' bounds), made at most once a re-scoring.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from gossamer.focus.lists import ListEvidence
from gossamer.focus.waiting import Waiting

HUB_LINKS = 10
"""Waiting (unjudged) links a hub needs to be explored."""


def in_new_section(waiting: Mapping[str, Waiting], sections: Container[str]) -> str | None:
    """The best waiting URL (by the priority last sent) in a section where no page was
    judged; None when there is none."""
    best: tuple[float, str] | None = None
    for url, entry in waiting.items():
        if entry.explore or entry.section in sections:
            continue
        if best is None or entry.sent > best[0]:
            best = (entry.sent, url)
    return None if best is None else best[1]


def in_new_hub(
    waiting: Mapping[str, Waiting], hubs: ListEvidence, explored: set[int]
) -> str | None:
    """The best waiting link of the mostly unexplored hub with the most unjudged links (not
    explored before: it joins ``explored``); None when there is none."""
    for _, index in sorted(hubs.unexplored(HUB_LINKS), reverse=True):
        if index in explored:
            continue
        explored.add(index)
        best: tuple[float, str] | None = None
        for url in hubs.members(index):
            entry = waiting.get(url)
            if entry is not None and not entry.explore and (best is None or entry.sent > best[0]):
                best = (entry.sent, url)
        if best is not None:
            return best[1]
    return None

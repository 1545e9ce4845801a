"""Where on-topic pages are listed: judged pages counted per list or table of the page that
links to them.

A documentation site lists a chapter's sections together (a table of contents, an index of
modules, a chapter's own list of its pages), so once some pages of one list are judged
on-topic, the others of that list are likely to be too, whatever their anchors say and
wherever their URLs point (a flat site keeps every page in one directory, where
:mod:`gossamer.focus.paths` can say nothing). Every list (``LinkText.group``) of a judged
page with at least ``MIN_MEMBERS`` links is kept with its members; each member judged (before
or after the list was met; the examples count as on-topic) counts in it. A link scores (0..1)
the best of its lists' shares: its on-topic members over the members judged, plus two, plus a
tenth of the list's size, so that a long list (a reference's index of 200 commands, two of
them on the topic) says little of its other members.

Bounded: ``MAX_LISTS`` lists holding ``MAX_KEPT`` members in all (then new ones are not
kept; some 60 MB at most), ``MAX_MEMBERS`` members a list (longer lists are not kept: a
site's index of everything says nothing), ``MAX_OF`` lists a URL counts in (the first met).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MIN_MEMBERS = 3
MAX_MEMBERS = 300
MAX_LISTS = 20_000
MAX_KEPT = 300_000
MAX_OF = 8
_SAYS_SOMETHING = 0.1
"""A share below this says nothing (the first tenth of :mod:`gossamer.focus.calibration`)."""


class _List:
    __slots__ = ("judged", "members", "relevant")

    def __init__(self, members: tuple[str, ...]) -> None:
        self.members = members
        self.relevant = 0
        self.judged = 0

    def share(self) -> float:
        return self.relevant / (self.judged + 2 + len(self.members) / 10)


class ListEvidence:
    """Judged and on-topic members per list of links (see the module docstring)."""

    def __init__(self) -> None:
        self._lists: list[_List] = []
        self._kept = 0
        self._of: dict[int, list[int]] = {}
        """hash(URL) -> the indices of the lists it is a member of."""

    def __len__(self) -> int:
        return len(self._lists)

    def add(
        self, groups: Iterable[tuple[str, ...]], outcome: Callable[[int], bool | None]
    ) -> list[tuple[str, ...]]:
        """Keep the lists of a judged page (each its members' URLs); ``outcome`` tells
        whether a member (by its hash) was judged on-topic, None when not judged yet. Returns
        the members of the lists kept that hold an on-topic page."""
        lists, of = self._lists, self._of
        rose = []
        for members in groups:
            if not MIN_MEMBERS <= len(members) <= MAX_MEMBERS:
                continue
            if len(lists) >= MAX_LISTS or self._kept + len(members) > MAX_KEPT:
                break
            self._kept += len(members)
            index = len(lists)
            entry = _List(members)
            lists.append(entry)
            for url in members:
                key = hash(url)
                known = of.get(key)
                if known is None:
                    of[key] = [index]
                elif len(known) < MAX_OF:
                    known.append(index)
                relevant = outcome(key)
                if relevant is not None:
                    entry.judged += 1
                    entry.relevant += relevant
            if entry.relevant:
                rose.append(members)
        return rose

    def judged(self, url: str, relevant: bool) -> list[tuple[str, ...]]:
        """Count a judged page in its lists; the members of those whose share rose, or fell
        below a tenth, where it says nothing (a long list with one on-topic member, whose
        next members proved off-topic, no longer lifts the rest: its members waiting are
        scored again, once)."""
        moved = []
        for index in self._of.get(hash(url), ()):
            entry = self._lists[index]
            said = entry.share() >= _SAYS_SOMETHING
            entry.judged += 1
            entry.relevant += relevant
            if relevant or (said and entry.share() < _SAYS_SOMETHING):
                moved.append(entry.members)
        return moved

    def unexplored(self, least: int) -> list[tuple[int, int]]:
        """(members not judged, index) of the lists with ``least`` or more such members and
        at most a quarter of their members judged."""
        return [
            (len(entry.members) - entry.judged, index)
            for index, entry in enumerate(self._lists)
            if len(entry.members) - entry.judged >= least and 4 * entry.judged <= len(entry.members)
        ]

    def members(self, index: int) -> tuple[str, ...]:
        """The members of the list ``index`` (of ``unexplored``)."""
        return self._lists[index].members

    def score(self, url: str) -> float:
        """The best share of the lists ``url`` is a member of (0 for none)."""
        indices = self._of.get(hash(url))
        if indices is None:  # most links are in no list
            return 0.0
        lists = self._lists
        return max(lists[i].share() for i in indices)

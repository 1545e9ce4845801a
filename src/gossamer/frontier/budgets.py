"""Per-host page budgets: a host stops at N recorded pages.

A budget counts the page leases of a host's URLs that are new (first attempt), and gives one
back when such a lease is released (it goes back to the queue unfetched): a URL leased as a
page ends as one record, whatever retries it takes, so a host with budget N ends with at most
N page records. Once a host's budget is spent its queued URLs go out as ``budget`` leases
(recorded once with the ``budget`` outcome, never fetched) and admission turns its new URLs
away (``budget``). Limits come from ``--max-pages-per-host`` and, per host pattern (a glob
matched against the bare host name, the first match wins), from ``host_page_budgets``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

import msgspec

from gossamer.urls import host_of


class BudgetLimits(msgspec.Struct, frozen=True):
    """How many pages a host may have recorded: ``per_host`` for every host (None: no limit)
    unless a pattern of ``patterns`` matches its name first."""

    per_host: int | None = None
    patterns: Mapping[str, int] = msgspec.field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.per_host is not None or bool(self.patterns)

    def limit(self, key: str) -> int | None:
        """The budget of host key ``key`` (``scheme://host[:port]``); None: unlimited."""
        host = host_of(key + "/")
        for pattern, limit in self.patterns.items():
            if fnmatch.fnmatchcase(host, pattern.lower()):
                return limit
        return self.per_host


class BudgetStats(msgspec.Struct, frozen=True):
    """A frozen snapshot of a :class:`HostBudget`."""

    hosts: int
    """Hosts with a budget that had a page leased."""
    spent: int
    """Hosts whose budget is spent."""


class HostBudget:
    """The page count of each host with a budget (see the module docstring)."""

    __slots__ = ("_limits", "_of", "_pages", "_spent")

    def __init__(self, limits: BudgetLimits) -> None:
        self._limits = limits
        self._of: dict[str, int | None] = {}
        self._pages: dict[str, int] = {}
        self._spent: set[str] = set()

    def _limit(self, key: str) -> int | None:
        try:
            return self._of[key]
        except KeyError:
            limit = self._of[key] = self._limits.limit(key)
            return limit

    def limited(self, key: str) -> bool:
        """Whether host ``key`` has a budget."""
        return self._limit(key) is not None

    def known(self, key: str) -> bool:
        """Whether host ``key`` was asked about here before (its count is this object's)."""
        return key in self._of

    def take(self, key: str) -> bool:
        """One more page of host ``key``, if its budget allows (True, counted)."""
        limit = self._limit(key)
        if limit is None:
            return True
        pages = self._pages.get(key, 0)
        if pages >= limit:
            self._spent.add(key)
            return False
        self._pages[key] = pages + 1
        if pages + 1 >= limit:
            self._spent.add(key)
        return True

    def give_back(self, key: str) -> None:
        """A page taken for host ``key`` went back to its queue unfetched."""
        pages = self._pages.get(key, 0)
        if pages > 0:
            self._pages[key] = pages - 1
            self._spent.discard(key)

    def preset(self, counts: Mapping[str, int]) -> None:
        """Pages recorded by hosts before (``--resume``)."""
        for key, pages in counts.items():
            if self._limit(key) is not None:
                self._pages[key] = pages
                limit = self._of[key]
                if limit is not None and pages >= limit:
                    self._spent.add(key)

    def spent(self, key: str) -> bool:
        """Whether host ``key`` may take no more pages."""
        return key in self._spent

    def stats(self) -> BudgetStats:
        """A frozen snapshot."""
        return BudgetStats(len(self._pages), len(self._spent))

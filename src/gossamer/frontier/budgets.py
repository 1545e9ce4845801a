"""Per-host page budgets: a host stops at N recorded pages.

A budget counts the page leases of a host's URLs that are new (first attempt), and gives one
back when such a lease is released (it goes back to the queue unfetched): a URL leased as a page
ends as one record, whatever retries it takes, so a host with budget N ends with at most N page
records. Once a host's budget is spent its queued URLs go out as ``budget`` leases (recorded
once with the ``budget`` outcome, never fetched) and admission turns its new URLs away
(``budget``). In a continuous crawl a revisit is a first attempt too: once its host's budget is
spent it goes out as a ``budget`` lease, recorded once, and is no longer revisited (it would
never be fetched; both backends). Limits come from ``--max-pages-per-host`` and, per host
pattern (a glob matched against the bare host name, the first match wins), from
``host_page_budgets``. A pattern with a wildcard is one budget for all the hosts it matches
(``*.example.org = 500``: 500 pages over its subdomains, however many a site makes up: a
wildcard DNS names endless hosts, each a host of its own to every per-host bound); a host name,
like ``--max-pages-per-host``, one budget for each host (each scheme and port). An IPv6
literal's host under ``--max-pages-per-host`` is its /64 network, as for the working set's
domain share (:func:`gossamer.addresses.address_domain`): one server may name itself by 2**64
addresses, each a host of its own to every per-host bound. In a cluster, a budget of several
hosts (a pattern's, a /64's) counts, on each worker, the pages of the hosts that worker has met
(:mod:`gossamer.frontier.redis.pages`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import NamedTuple

import msgspec

from gossamer.addresses import address_domain
from gossamer.urls import host_of


class BudgetLimits(msgspec.Struct, frozen=True):
    """How many pages a host may have recorded: ``per_host`` for every host (None: no limit)
    unless a pattern of ``patterns`` matches its name first."""

    per_host: int | None = None
    patterns: Mapping[str, int] = msgspec.field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.per_host is not None or bool(self.patterns)

    def rule(self, key: str) -> Rule:
        """The budget of host key ``key`` (``scheme://host[:port]``) and what counts it."""
        host = host_of(key + "/")
        for pattern, limit in self.patterns.items():
            if fnmatch.fnmatchcase(host, pattern.lower()):
                shared = any(char in pattern for char in "*?[")
                return Rule(pattern if shared else key, limit)
        return Rule(_account(key, host), self.per_host)


def _account(key: str, host: str) -> str:
    """The account of host key ``key`` (its bare host ``host``) under ``per_host``: the key,
    but an IPv6 literal's counts in its /64 network (`address_domain`)."""
    if ":" not in host:
        return key  # a name or an IPv4 address
    domain = address_domain(host)
    if domain is None or domain == host:
        return key
    return key.replace(f"[{host}]", f"[{domain}]", 1)


class Rule(NamedTuple):
    """The budget of a host: the ``account`` its pages count in (the host key, or a pattern
    with a wildcard that matched it: one count for all its hosts) and its ``limit`` (None:
    unlimited)."""

    account: str
    limit: int | None


_ACCOUNTS = 100_000
"""Hosts whose account :meth:`HostBudget.spent` remembers at most (all forgotten past it)."""


class BudgetStats(msgspec.Struct, frozen=True):
    """A frozen snapshot of a :class:`HostBudget`."""

    hosts: int
    """Budgets (hosts, patterns shared by their hosts) that had a page leased."""
    spent: int
    """Budgets spent."""


class HostBudget:
    """The page count of each budget: a host's, or a pattern's shared by its hosts (see the
    module docstring)."""

    __slots__ = ("_accounts", "_limits", "_of", "_pages", "_spent")

    def __init__(self, limits: BudgetLimits) -> None:
        self._limits = limits
        self._of: dict[str, Rule] = {}
        """Hosts met here (their counts are this object's): their rules."""
        self._accounts: dict[str, str] = {}
        """Hosts asked about by :meth:`spent`: their accounts."""
        self._pages: dict[str, int] = {}
        """Accounts: their pages."""
        self._spent: set[str] = set()
        """Accounts spent."""

    def _rule(self, key: str) -> Rule:
        try:
            return self._of[key]
        except KeyError:
            rule = self._of[key] = self._limits.rule(key)
            return rule

    def limited(self, key: str) -> bool:
        """Whether host ``key`` has a budget."""
        return self._rule(key).limit is not None

    def known(self, key: str) -> bool:
        """Whether host ``key`` was asked about here before (its count is this object's)."""
        return key in self._of

    def take(self, key: str) -> bool:
        """One more page of host ``key``, if its budget allows (True, counted)."""
        account, limit = self._rule(key)
        if limit is None:
            return True
        pages = self._pages.get(account, 0)
        if pages >= limit:
            self._spent.add(account)
            return False
        self._pages[account] = pages + 1
        if pages + 1 >= limit:
            self._spent.add(account)
        return True

    def give_back(self, key: str) -> None:
        """A page taken for host ``key`` went back to its queue unfetched."""
        account = self._rule(key).account
        pages = self._pages.get(account, 0)
        if pages > 0:
            self._pages[account] = pages - 1
            self._spent.discard(account)

    def preset(self, counts: Mapping[str, int]) -> None:
        """Pages recorded by hosts before, not counted here yet (``--resume``; a cluster
        worker meeting a host): added to their accounts."""
        for key, pages in counts.items():
            account, limit = self._rule(key)
            if limit is not None:
                total = self._pages[account] = self._pages.get(account, 0) + pages
                if total >= limit:
                    self._spent.add(account)

    def spent(self, key: str) -> bool:
        """Whether host ``key`` may take no more pages."""
        if not self._spent:
            return False
        account = self._accounts.get(key)
        if account is None:
            if len(self._accounts) >= _ACCOUNTS:
                self._accounts.clear()
            account = self._accounts[key] = self._limits.rule(key).account
        return account in self._spent

    def stats(self) -> BudgetStats:
        """A frozen snapshot."""
        return BudgetStats(len(self._pages), len(self._spent))

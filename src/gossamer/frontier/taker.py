"""The page taker of :class:`~gossamer.frontier.hosts.HostScheduler`: what a due host's
queued URLs go out as once its robots.txt rules are known (:mod:`.robotstage`).

Taking the host's next URL:

* the rules forbid it: a ``blocked`` lease (no slot), and the next one is looked at;
* it is new (first attempt) and its host's page budget is spent (:mod:`.budgets`): a
  ``budget`` lease (no slot: recorded, never fetched), and the next one is looked at;
* else a ``page`` lease, which takes the host's slot.
"""

from __future__ import annotations

from typing import Generic

from gossamer.frontier.base import Lease, Rules
from gossamer.frontier.budgets import HostBudget
from gossamer.frontier.hostqueue import E, Host, HostQueues
from gossamer.frontier.leases import LeaseTable
from gossamer.frontier.politeness import PolitenessPolicy

__all__ = ["PageTaker"]


class PageTaker(Generic[E]):
    """Takes a due host's URLs out of its queue as leases; see the module docstring.
    ``budget`` None: no host has a page budget."""

    __slots__ = ("_budget", "_leases", "_policy", "_queues")

    def __init__(
        self,
        policy: PolitenessPolicy,
        budget: HostBudget | None,
        queues: HostQueues[E],
        leases: LeaseTable[E],
    ) -> None:
        self._policy = policy
        self._budget = budget
        self._queues = queues
        self._leases = leases

    def take(
        self, key: str, host: Host[E], rules: Rules, now: float, out: list[Lease]
    ) -> Lease | None:
        """The ``page`` lease of host ``key``'s next URL the rules and its page budget allow
        (those met before it go to ``out``); None when its queue ran out first."""
        while host.queue:
            entry = self._queues.pop(host)
            if not rules.allowed(entry.url):
                out.append(self._leases.open(key, host, entry, now, "blocked"))
                continue
            if self._budget is not None and not entry.attempts and not self._budget.take(key):
                out.append(self._leases.open(key, host, entry, now, "budget"))
                continue
            self._policy.on_lease(host.slot, now)
            return self._leases.open(key, host, entry, now, "page")
        return None

    def skip_blocked(
        self, key: str, host: Host[E], rules: Rules, now: float, out: list[Lease]
    ) -> None:
        """The URLs at the head of host ``key``'s queue the rules forbid, to ``out`` as
        ``blocked`` leases."""
        queues, leases = self._queues, self._leases
        while host.queue and not rules.allowed(host.queue.peek().url):
            out.append(leases.open(key, host, queues.pop(host), now, "blocked"))

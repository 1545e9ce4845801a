"""Cluster-wide page counts for per-host page budgets (:mod:`gossamer.frontier.budgets`).

The worker holding a host's URLs counts its page leases in its own
:class:`~gossamer.frontier.budgets.HostBudget` (the scheduler asks it, with no I/O) and
mirrors every change into ``gs:{J:p}:pages`` (a HASH, host key -> pages, in the partition of
the host: ``lua/pages.lua``), in the pipeline of the lease's other calls. A worker meeting a
host for the first time (its entries claimed) reads the host's count from there first, so a
host's budget holds across partition moves, restarts and workers. With ``partition_by="host"``
one worker holds a host at a time and the count is exact; with ``"url"`` several workers lease
one host's URLs at once and each may take a page past the budget before it learns of the
others' (at most one lease round per worker).
"""

from __future__ import annotations

from collections.abc import Iterable

from redis.commands.core import AsyncScript

from gossamer.frontier.base import Lease
from gossamer.frontier.budgets import HostBudget
from gossamer.frontier.redis.keys import PartitionKeys, partition_of
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts


class PageCounts:
    """Mirrors a :class:`HostBudget` into Redis and loads it from there (module docstring)."""

    def __init__(
        self, budget: HostBudget, keys: PartitionKeys, script: AsyncScript, partitions: int
    ) -> None:
        self._budget = budget
        self._keys = keys
        self._script = script
        self._partitions = partitions

    def _call(self, key: str, change: int) -> ScriptCall:
        part = partition_of(key, self._partitions)
        return (self._script, self._keys.of(part, "pages"), [key, change])

    def taken(self, leases: Iterable[Lease]) -> list[ScriptCall]:
        """The calls counting the pages ``leases`` took (new URLs' page leases)."""
        budget = self._budget
        return [
            self._call(lease.host, 1)
            for lease in leases
            if lease.kind == "page" and not lease.attempts and budget.limited(lease.host)
        ]

    def given_back(self, lease: Lease) -> list[ScriptCall]:
        """Give back the page of a page lease released unfetched (calls to send)."""
        if lease.kind != "page" or lease.attempts or not self._budget.limited(lease.host):
            return []
        self._budget.give_back(lease.host)
        return [self._call(lease.host, -1)]

    async def load(self, redis: RedisClient, keys: Iterable[str]) -> None:
        """Read the counts of the hosts ``keys`` this worker has not met yet."""
        budget = self._budget
        new = sorted({key for key in keys if not budget.known(key) and budget.limited(key)})
        if not new:
            return
        counts = await run_scripts(redis, [self._call(key, 0) for key in new])
        budget.preset({key: int(count) for key, count in zip(new, counts, strict=True)})

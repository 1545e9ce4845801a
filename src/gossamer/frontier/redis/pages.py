"""Cluster-wide page counts for per-host page budgets (:mod:`gossamer.frontier.budgets`).

The worker holding a host's URLs counts its page leases in its own
:class:`~gossamer.frontier.budgets.HostBudget` (the scheduler asks it, with no I/O) and
mirrors every change into ``gs:{J:p}:pages`` (a HASH, host key -> pages, in the partition of
the host: ``lua/pages.lua``), in the pipeline of the lease's other calls. A worker meeting a
host for the first time (its entries claimed) reads the host's count from there first, so a
host's budget holds across partition moves, restarts and workers. With ``partition_by="host"``
one worker holds a host at a time and the count is exact; with ``"url"`` several workers lease
one host's URLs at once and each may take a page past the budget before it learns of the
others' (at most one lease round per worker). A ``pages`` key Redis refuses (of another type)
sets its partition aside (:mod:`.faults`); the hosts whose count could not be read start from
this worker's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis.commands.core import AsyncScript

from gossamer.frontier.base import Lease
from gossamer.frontier.budgets import HostBudget
from gossamer.frontier.redis.faults import Faults
from gossamer.frontier.redis.keys import PartitionKeys, partition_of
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts


class PageCounts:
    """Mirrors a :class:`HostBudget` into Redis and loads it from there (module docstring)."""

    def __init__(
        self,
        budget: HostBudget | None,
        keys: PartitionKeys,
        script: AsyncScript,
        partitions: int,
        faults: Faults,
    ) -> None:
        self._budget = budget
        self._faults = faults
        self._keys = keys
        self._script = script
        self._partitions = partitions

    def _call(self, key: str, change: int) -> ScriptCall:
        part = partition_of(key, self._partitions)
        return (self._script, self._keys.of(part, "pages"), [key, change])

    async def counted(self, redis: RedisClient, leases: list[Lease]) -> list[Lease]:
        """``leases``, once the pages they took (new URLs' page leases) are counted in Redis."""
        budget = self._budget
        if budget is not None:
            taken = [lease.host for lease in leases if lease.kind == "page" and not lease.attempts]
            hosts = [key for key in taken if budget.limited(key)]
            results = await run_scripts(redis, [self._call(key, 1) for key in hosts], check=0)
            await self._through(hosts, results)
        return leases

    def given_back(self, lease: Lease) -> list[ScriptCall]:
        """Give back the page of a page lease released unfetched (calls to send)."""
        budget = self._budget
        if budget is None or lease.kind != "page" or lease.attempts:
            return []
        if not budget.limited(lease.host):
            return []
        budget.give_back(lease.host)
        return [self._call(lease.host, -1)]

    async def answered(self, lease: Lease, results: list[Any]) -> None:
        """The answers of :meth:`given_back`'s calls for ``lease``, as Redis sent them."""
        await self._through([lease.host] * len(results), results)

    async def load(self, redis: RedisClient, keys: Iterable[str]) -> None:
        """Read the counts of the hosts ``keys`` this worker has not met yet."""
        budget = self._budget
        if budget is None:
            return
        new = sorted({key for key in keys if not budget.known(key) and budget.limited(key)})
        if not new:
            return
        counts = await run_scripts(redis, [self._call(key, 0) for key in new], check=0)
        budget.preset({key: int(count) for key, count in await self._through(new, counts)})

    async def _through(self, hosts: list[str], results: list[Any]) -> list[tuple[str, Any]]:
        """The (host, answer) of the calls of ``hosts`` that went through; the partition of a
        ``pages`` key Redis refused is set aside (another error raised)."""
        parts = [partition_of(key, self._partitions) for key in hosts]
        await self._faults.through(parts, results)
        return [(k, r) for k, r in zip(hosts, results, strict=True) if not isinstance(r, Exception)]

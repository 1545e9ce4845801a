"""The Redis frontier of a continuous crawl (``--recrawl``): every page fetched is revisited.

:class:`ContinuousFrontier` is the :class:`~.frontier.RedisFrontier` with its revisit state
(:mod:`.revisits`) hooked in:

* ``lease()`` first queues the owned partitions' due revisits in Redis (at the earliest due
  time each partition had at the last look, and every partition every few seconds), then
  claims them with the rest, so revisits and discovery share each host's pace; a revisit's
  state is read when it is leased (for its conditional request and its judgement);
* an ack stores the page's new state and due time in the same script that ends the claim;
* entries given back unfetched forget their state here (their next claim reads it again);
* ``next_ready()`` counts the next due revisit; ``done()`` is never True: the job ends on
  ``--max-duration``, ``cluster stop`` or a signal;
* :meth:`ContinuousFrontier.sooner` queues now the pages a sitemap lists with a newer
  ``lastmod``;
* with ``--revisit-spare``, ``lease()`` also looks for owned hosts whose politeness slot is
  free with nothing of theirs held (:meth:`HostScheduler.idle`, the embedded frontier's rule)
  every `SPARE_LOOK` seconds, and queues a spare revisit of each (:meth:`RedisRevisits.spare`).
  By host only: by URL a host's pages are spread over every partition (a job refuses it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gossamer.frontier.base import Lease
from gossamer.frontier.redis.frontier import RedisFrontier
from gossamer.frontier.redis.keys import Entry, Ownership
from gossamer.frontier.redis.revisits import RedisRevisits
from gossamer.frontier.redis.scripts import ScriptCall
from gossamer.frontier.revisits import SPARE_HOSTS, BoundsOf

__all__ = ["SPARE_HOSTS_A_LOOK", "SPARE_LOOK", "ContinuousFrontier"]

SPARE_LOOK = 0.25
"""Seconds between looks for idle hosts (work-conserving revisits) at least."""
SPARE_HOSTS_A_LOOK = 10_000
"""Hosts a look for idle hosts goes over per `SPARE_LOOK`: more hosts, rarer looks."""


class ContinuousFrontier(RedisFrontier):
    """A Redis frontier whose pages are revisited (module doc); :meth:`recrawl` before the
    first lease gives it its bounds."""

    revisits: RedisRevisits | None = None
    """The revisit state (the page stage's), once :meth:`recrawl` made it."""
    _spare = 0.0
    _spare_at = -math.inf

    def recrawl(self, bounds: BoundsOf, *, spare: float = 0.0) -> RedisRevisits:
        """Revisit every page fetched within ``bounds`` (its URL's revisit intervals), and
        with ``spare`` (``--revisit-spare``) fill that share of idle hosts' free slots with
        early revisits; returns the revisit state."""
        revisits = RedisRevisits(
            self._redis,
            self._keys,
            self._scripts,
            bounds,
            wall_clock=self._wall,
            faults=self._faults,
        )
        revisits.own(self._claims.owned)
        self.revisits = revisits
        self._spare = 0.0 if self._by_url else spare
        return revisits

    async def lease(self, n: int) -> list[Lease]:
        """Leases as the Redis frontier's, revisits among them with their state read."""
        leases = await super().lease(n)
        if self.revisits is not None:
            await self.revisits.load(leases, self._part)
        return leases

    def next_ready(self) -> float | None:
        """Seconds until a held URL may be leasable or an owned partition has revisits due
        (while there is room in memory for more: else an ended lease makes room)."""
        wait = super().next_ready()
        if self.revisits is None or self._hosts.queued >= self._config.memory_budget // 2:
            return wait
        due = self.revisits.next_due()
        if self._spare > 0:  # the next look for idle hosts
            due = min(due, max(self._spare_at - self._clock(), 0.0))
        return due if wait is None else min(wait, due)

    async def done(self) -> bool:
        """Never: a continuous crawl always has revisits to come."""
        return self.revisits is None and await super().done()

    async def own(self, ownership: Ownership) -> int:
        """As the Redis frontier's; the partitions gained are looked at for due revisits."""
        if self.revisits is not None:
            self.revisits.own(ownership.partitions)
        return await super().own(ownership)

    async def sooner(self, listed: Sequence[tuple[str, float]]) -> int:
        """Queue now the pages a sitemap or feed lists (URL, ``lastmod``) with a ``lastmod``
        newer than their last fetch; how many partitions got some."""
        if self.revisits is None or not listed:
            return 0
        parts = await self.revisits.sooner(listed, self._part)
        for part in parts:
            if part in self._claims.owned:
                self._claims.note([part])
            else:
                self._filled.add(part)  # its owner hears of it with the other hints
        return len(parts)

    async def _refill(self) -> None:
        if self.revisits is not None and (looking := self.revisits.looking()):
            self._claims.note(await self.revisits.queue_due(looking, self._claims.batch))
        if self.revisits is not None and self._spare > 0 and self._clock() >= self._spare_at:
            await self._queue_spare(self.revisits)
        await super()._refill()

    async def _queue_spare(self, revisits: RedisRevisits) -> None:
        """Queue a spare revisit for each owned host idle now or before the next look (the
        scheduler holds each until its host's slot is free); every `SPARE_HOSTS_A_LOOK` hosts
        known add a `SPARE_LOOK` to the wait for the next look, which goes over all of them."""
        every = SPARE_LOOK * max(1.0, self._hosts.hosts / SPARE_HOSTS_A_LOOK)
        self._spare_at = self._clock() + every
        owned, idle = self._claims.owned, []
        for key in self._hosts.idle(self._spare, SPARE_HOSTS, within=every):
            if (part := self._part(key, 0)) in owned:
                idle.append((part, key))
        self._claims.note(await revisits.spare(idle))

    async def _give_back(self, part: int, entries: list[Entry]) -> int:
        if self.revisits is not None:
            self.revisits.forget(entries)
        return await super()._give_back(part, entries)

    async def _send_acks(self, entries: list[Entry], extra: Iterable[ScriptCall] = ()) -> None:
        if self.revisits is not None:  # those of partitions set aside: no ack goes, no state
            self.revisits.forget(entry for entry in entries if entry.part in self._faults)
        await super()._send_acks(entries, extra)

    def _ack_call(self, entry: Entry) -> ScriptCall:
        call = None if self.revisits is None else self.revisits.ack_call(entry)
        return super()._ack_call(entry) if call is None else call

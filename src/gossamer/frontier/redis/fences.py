"""Hand-over fences: a partition given away is not claimed by its new owner too early.

A hand-over in host mode (:meth:`RedisFrontier.own` losing partitions) fences each partition
for its new owner: the claim script returns nothing while the old owner still has requests to
the partition's hosts in flight (a fence of ``lease_timeout``, so it lapses if that worker
dies) and, once the last ends, until those hosts' next start is due by the old owner's
politeness. A host never sees both owners' leased requests at once, nor a gap shorter than its
delay. A request through the host gate still in flight (:mod:`gossamer.frontier.gate`: a
sitemap's read, a robots.txt redirect's next hop inside the host's lease) is not waited for:
the gate gives its slot back to a host the scheduler has forgotten, so nothing would lift a
fence waiting for it before the fence lapsed (the new owner's claims held back a whole
``lease_timeout``); its start spaces the next all the same. The first fence call of a partition
also hands it over: it deletes the worker's holder record, without which a new owner that
learned of the assignment first claims nothing there (see :mod:`.holders`); a partition given
away with no host known gets that call alone.

Each worker's fence is its own field of ``gs:{J:p}:fence``, so a partition moved on again keeps
every previous owner's fence; a worker numbers its fence calls, so a late one (another
connection, a retry) never undoes a later one. In url mode no worker owns a host (the shared
limiter keeps their politeness) and nothing is fenced.
"""

from __future__ import annotations

import itertools
import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from redis.commands.core import AsyncScript

from gossamer.frontier.base import Lease
from gossamer.frontier.hosts import Host, HostScheduler
from gossamer.frontier.redis.config import RedisFrontierConfig
from gossamer.frontier.redis.holders import Holders
from gossamer.frontier.redis.keys import Entry, PartitionKeys, partition_of
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, refused, run_scripts

GiveBack = Callable[[int, list[Entry]], Awaitable[int]]
"""Gives held entries of a partition back to the front of its queue; how many went back."""

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Leaving:
    """A partition given away with requests to its hosts still in flight (host mode)."""

    in_flight: int
    hosts: dict[str, Host[Entry]]
    """Its hosts' politeness, kept until the last request ends."""
    version: int
    """The assignment version it was given away at."""


class Handover:
    """Takes given-away partitions out of the scheduler and fences them for their new owner;
    the fence calls wait for the frontier's next pipeline (:meth:`send`)."""

    def __init__(
        self,
        redis: RedisClient,
        keys: PartitionKeys,
        scripts: dict[str, AsyncScript],
        config: RedisFrontierConfig,
        holders: Holders,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._holders = holders
        """Which partitions this worker holds, and its name in their records."""
        self._fence_script = scripts["fence"]
        self._partitions = config.partitions
        self._by_url = config.partition_by == "url"
        self._lease_timeout = config.lease_timeout
        self._clock = clock
        self._id = uuid.uuid4().hex[:12]
        """This frontier's name in the fences of partitions it gave away."""
        self._leaving: dict[int, _Leaving] = {}
        """Host mode: partitions given away while requests to their hosts were in flight."""
        self._orphans: dict[int, int] = {}
        """Lease token -> partition, for leases out when their partition was given away."""
        self._seq = itertools.count(1)
        self._fences: list[ScriptCall] = []
        self._returning: dict[int, list[Entry]] = {}
        """Entries of partitions given away, taken out to go back to Redis, not yet gone."""

    def give_away(self, dropped: set[int], hosts: HostScheduler[Entry]) -> dict[int, list[Entry]]:
        """Take the partitions ``dropped`` out of ``hosts``: their queued entries (returned by
        partition, to go back to Redis), their hosts' politeness, and their leases out (each
        entry marked orphan, to go back when its lease ends); fence them and hand them over
        (those this worker holds with no host known: the hand-over only)."""
        holders = self._holders
        version = holders.version
        back: dict[int, list[Entry]] = {}
        for queued in hosts.remove(lambda entry: entry.part in dropped):
            back.setdefault(queued.part, []).append(queued)
        leaving: dict[int, dict[str, Host[Entry]]] = {}
        if not self._by_url:
            for key in hosts.host_keys():
                part = partition_of(key, self._partitions)
                host = hosts.forget(key) if part in dropped else None
                if host is not None:  # the host's new owner keeps its politeness now
                    leaving.setdefault(part, {})[key] = host
        in_flight: dict[int, int] = {}
        for lease, leased in hosts.out():
            if leased is not None:
                at = leased.part
            elif self._by_url:
                continue
            else:  # its host's robots.txt, in flight to a host of the partition
                at = partition_of(lease.host, self._partitions)
            if at in dropped:
                if leased is not None:
                    leased.orphan = True
                self._orphans[lease.token] = at
                in_flight[at] = in_flight.get(at, 0) + 1
        for part, held in leaving.items():
            if in_flight.get(part):
                self._leaving[part] = _Leaving(in_flight[part], held, version)
                self._fence(part, self._lease_timeout, version)  # until the last request ends
            else:
                self._fence(part, self._due_in(held.values()), version)
        for part in (holders.recorded & dropped) - leaving.keys():
            self._fence(part, -1.0, version)
        holders.recorded -= dropped
        return back

    def strays(self, owned: frozenset[int]) -> None:
        """Queue the calls handing over the partitions this worker holds but does not own (a
        claim that went out before they were given away recorded it)."""
        holders = self._holders
        gone = holders.recorded - owned
        holders.recorded -= gone
        for part in gone:
            self._fence(part, -1.0, holders.version)

    def ended(self, lease: Lease) -> None:
        """A lease ended: the last request to a partition given away lifts its fence down to
        the delay its hosts still need."""
        part = self._orphans.pop(lease.token, None)
        leaving = self._leaving.get(part) if part is not None else None
        if part is not None and leaving is not None:
            leaving.in_flight -= 1
            if leaving.in_flight <= 0:
                del self._leaving[part]
                self._fence(part, self._due_in(leaving.hosts.values()), leaving.version)

    async def hand_back(
        self, entries: Iterable[Entry], calls: list[ScriptCall], give_back: GiveBack
    ) -> int:
        """Give ``entries`` (of partitions given away) back to their queues with ``give_back``
        after ``calls`` and the fence calls waiting, and whatever an earlier hand-back left;
        how many went back. Resumable: what a cancel (the keeper stopping mid-duty, the
        engine's drain) or a Redis error kept from going back waits for the next hand-back
        (``close()`` makes one), rather than sitting claimed until the lease timeout."""
        for entry in entries:
            self._returning.setdefault(entry.part, []).append(entry)
        await self.send(calls)
        given = 0
        while self._returning:  # each batch taken out first: hand-backs may run at once
            part, batch = self._returning.popitem()
            try:
                given += await give_back(part, batch)
            except BaseException as exc:  # sent again by the next (unclaim skips claims gone)
                if not refused(exc):  # refused: forgotten, the claims lapse and are reclaimed
                    self._returning[part] = batch + self._returning.get(part, [])
                raise
        return given

    async def send(self, calls: list[ScriptCall], check: int | None = None) -> list[Any]:
        """``calls`` and the fence calls waiting, in one pipeline; the replies of ``calls``
        (their errors raised; of the first ``check`` only when given, the others' returned).
        Fence calls it did not surely send (it failed or was cancelled, or Redis answered an
        error that goes away) wait for the next: one that did run is numbered, so running it
        again never undoes a later one; one lost would leave the new owner fenced out until
        the fence lapses, a whole ``lease_timeout``. One Redis refuses (:func:`refused`) is
        logged and dropped: it would fail again."""
        fences, self._fences = self._fences, []
        try:
            checked = len(calls) if check is None else check
            results = await run_scripts(self._redis, calls + fences, check=checked)
        except BaseException:
            self._fences[:0] = fences
            raise
        kept = []
        for call, result in zip(fences, results[len(calls) :], strict=True):
            if not isinstance(result, Exception):
                continue
            if refused(result):
                log.warning("a hand-over fence refused by Redis: %s", result)
            else:
                kept.append(call)
        self._fences[:0] = kept
        return results[: len(calls)]

    def _due_in(self, hosts: Iterable[Host[Entry]]) -> float:
        """Seconds until the pace of every one of ``hosts`` allows its next start (0 if all
        may start now), their connections in use aside: those of requests through the host
        gate, which nothing would count down (see the module doc)."""
        now = self._clock()
        due = max((host.slot.next_start for host in hosts), default=now)
        return min(max(due - now, 0.0), self._lease_timeout)

    def _fence(self, part: int, seconds: float, version: int) -> None:
        """Queue a call fencing ``part`` for ``seconds`` (lifting this worker's fence if 0,
        none if below) and handing it over at ``version``."""
        keep = math.ceil(self._lease_timeout * 1000)
        ms = math.ceil(seconds * 1000) if seconds >= 0 else -1
        args = [self._id, ms, next(self._seq), keep, self._holders.name, version]
        keys = self._keys.of(part, "fence", "holder")
        self._fences.append((self._fence_script, keys, args))

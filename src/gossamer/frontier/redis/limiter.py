"""The shared per-host limiter of ``partition_by="url"``.

By URL, a URL's partition is its fingerprint modulo ``P``, so one host's URLs spread over every
worker (a crawl of few hosts uses many workers). No worker owns a host then, so on top of its
local :class:`~gossamer.frontier.politeness.HostSlot` each worker takes a slot of the host from
this limiter before leasing a URL or the robots.txt of it (``host_acquire.lua``, one pipeline
for every due host of a ``lease()`` call: the scheduler's ``due``, then ``take`` of what was
granted) and gives it back when the lease ends (``host_release.lua``, in the acks' pipeline
when acks are not deferred). Its keys (:func:`~.keys.host_keys`)::

    gs:{J:h:h}:slots    ZSET   holder (worker id:counter) -> deadline; at most per_host, or
                               one while the host has a delay or none has been reported yet
    gs:{J:h:h}:pace     HASH   next (earliest next request start), delay (the last delay a
                               worker reported: its policy's, robots Crawl-delay included)

Times there are the Redis server's (``TIME``), so workers' clocks need not agree. A worker
reports when its request really started (the engine's ``Feedback.started_at``) as an offset
from now, and the next start becomes that start plus the delay (or a Retry-After's end), so the
gap the server sees holds; an acquire also pushes it a delay ahead, in case the holder dies. A
slot lasts ``lease_timeout`` unless given back, as long as the worker's own lease of the URL: a
killed worker's slots expire with its leases. A host the limiter refuses waits in this worker's
ready heap until the limiter says a slot may be free. Both keys of an idle host expire after an
hour.

A sitemap's or a feed's fetch takes a slot here too (:class:`SharedSlots`, through the host
gate's ``aside`` pass), so one pace holds for a host's pages and its sitemaps over every worker.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Callable
from typing import Any

from redis.commands.core import AsyncScript

from gossamer.frontier.base import Feedback, Lease
from gossamer.frontier.hosts import HostScheduler
from gossamer.frontier.politeness import HostSlot, PolitenessPolicy
from gossamer.frontier.redis.keys import Entry, host_keys
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts

log = logging.getLogger(__name__)

_BUSY_RETRY = 0.05
"""Seconds before asking the limiter again for a host whose slots are all held."""


class HostLimiter:
    """Takes host slots from the shared limiter for leases, and gives them back."""

    def __init__(
        self,
        redis: RedisClient,
        job: str,
        scripts: dict[str, AsyncScript],
        policy: PolitenessPolicy,
        *,
        slot_timeout: float,
        clock: Callable[[], float],
    ) -> None:
        self._redis = redis
        self._job = job
        self._acquire = scripts["host_acquire"]
        self._release = scripts["host_release"]
        self._policy = policy
        self._slot_timeout = slot_timeout
        self._clock = clock
        self._id = uuid.uuid4().hex[:12]
        """This frontier's name among the holders (workers never share one)."""
        self._holders = itertools.count(1)
        self._keys: dict[str, list[str]] = {}
        self._slots: dict[int, str] = {}
        """Lease token -> the holder name its host slot is held under."""

    async def lease(self, hosts: HostScheduler[Entry], n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot of a due host, each slot also taken from the
        limiter (one pipeline for every due host), plus those that need none."""
        due = hosts.due(n)
        out = due.leases
        if not due.wants:
            return out
        asks = [self._ask(want.key, want.host.slot, want.count) for want in due.wants]
        answers = await run_scripts(self._redis, [call for call, _ in asks])
        now = self._clock()
        unused: list[ScriptCall] = []
        for want, (_, holders), (granted, wait_ms) in zip(due.wants, asks, answers, strict=True):
            if granted < want.count:
                hosts.defer(want.key, now + wait_ms / 1000)
            leases, used = hosts.take(want, granted)
            out += leases
            slotted = (lease.token for lease in leases if lease.kind in ("page", "robots"))
            self._slots.update(zip(slotted, holders[:used], strict=True))
            if used < granted:  # blocked by robots.txt, or given away meanwhile
                unused.append(self._give(want.key, holders[used:granted], None, now))
        await run_scripts(self._redis, unused)
        return out

    def release(
        self, lease: Lease, feedback: Feedback | None, hosts: HostScheduler[Entry]
    ) -> list[ScriptCall]:
        """The call giving a finished lease's host slot back (none if it held none)."""
        holder = self._slots.pop(lease.token, None)
        if holder is None:
            return []
        told = hosts.slot(lease.host) if feedback is not None else None
        return [self._give(lease.host, [holder], told, self._clock())]

    async def hold(self, key: str, slot: HostSlot) -> str:
        """Wait for a slot of host ``key`` (``slot``: its local politeness slot, whose delay
        counts) for a request outside the leases, and take it; returns its holder name, for
        :meth:`give_back`. The wait ends: a slot is freed when given back or when it expires
        (``slot_timeout``)."""
        while True:
            call, holders = self._ask(key, slot, 1)
            ((granted, wait_ms),) = await run_scripts(self._redis, [call])
            if granted:
                return holders[0]
            await asyncio.sleep(max(int(wait_ms) / 1000, _BUSY_RETRY))

    async def give_back(self, key: str, holder: str, told: HostSlot | None) -> None:
        """Give back a slot :meth:`hold` took; ``told``: as for :meth:`_give`."""
        await run_scripts(self._redis, [self._give(key, [holder], told, self._clock())])

    def _ask(self, key: str, slot: HostSlot, want: int) -> tuple[ScriptCall, list[str]]:
        """A call asking for ``want`` slots of host ``key``, and the holder names it offers.

        It answers ``[granted, wait_ms]``: the first ``granted`` holders hold a slot; the rest
        may ask again in ``wait_ms`` milliseconds.
        """
        holders = [f"{self._id}:{next(self._holders)}" for _ in range(want)]
        args: list[Any] = [
            self._policy.per_host,
            repr(self._policy.delay_of(slot)),
            repr(self._slot_timeout),
            repr(_BUSY_RETRY),
            *holders,
        ]
        return (self._acquire, self._keys_of(key), args), holders

    def _give(self, key: str, holders: list[str], told: HostSlot | None, now: float) -> ScriptCall:
        """A call giving ``holders`` of host ``key`` back.

        ``told`` is the host's local slot after the request's feedback (its next start is then
        spaced from the request's real start), None when no request told anything.
        """
        next_in = "" if told is None else repr(told.next_start - now)
        delay = "" if told is None else repr(self._policy.delay_of(told))
        return (self._release, self._keys_of(key), [next_in, delay, *holders])

    def _keys_of(self, key: str) -> list[str]:
        keys = self._keys.get(key)
        if keys is None:
            named = host_keys(self._job, key)
            keys = self._keys[key] = [named["slots"], named["pace"]]
        return keys


class SharedSlots:
    """The shared limiter's slots for requests outside the leases of ``hosts``' frontier (the
    host gate's aside pass: sitemaps and feeds); a host unknown to ``hosts`` counts with a
    slot of its own, of no delay but the one the limiter was last told."""

    def __init__(self, limiter: HostLimiter, hosts: HostScheduler[Entry]) -> None:
        self._limiter = limiter
        self._hosts = hosts

    async def hold(self, key: str) -> str:
        """Wait for a slot of host ``key`` and take it (:meth:`HostLimiter.hold`)."""
        return await self._limiter.hold(key, self._hosts.slot(key) or HostSlot())

    async def give_back(self, key: str, holder: str) -> None:
        """Give the slot back, the host's next start spaced as its local slot says (the gate
        has given that back already, with what the request told)."""
        try:
            await self._limiter.give_back(key, holder, self._hosts.slot(key))
        except Exception as exc:  # the slot expires on its own; the crawl goes on
            log.warning(
                "could not give back a shared slot of %s: %s (it expires)",
                key,
                exc,
                extra={"event": "limiter-give-back-failed", "host": key},
            )

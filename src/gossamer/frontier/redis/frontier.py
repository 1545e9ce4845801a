"""The Redis frontier: the contract's methods, and the upkeep its owner calls.

The frontier holds claimed entries in the host scheduler the embedded frontier uses too
(:mod:`gossamer.frontier.hosts`: per-host queues, ready heap, politeness slots, leases, the
robots.txt stage) and leases from that. Its Redis I/O is always awaited by the caller of one of
its methods; it starts no task of its own:

* ``lease()`` claims more entries from owned partitions believed to have some when fewer than
  half ``memory_budget`` URLs are held (one pipeline), and in url mode takes host slots from
  the shared limiter (one pipeline). Entries held for a retry wait in memory until their
  not-before time, their claim renewed.
* ``done()`` is True when this worker holds nothing and a look at every partition's counts
  finds nothing queued or claimed (outlinks are added before their page's ack, so a claim
  covers URLs still to come); see the method for how seldom it looks.
* The upkeep is its owner's (the cluster worker's keeper, or a test): :meth:`renew` before
  claims expire, :meth:`reclaim_expired` for dead workers' claims, :meth:`refresh` to find
  owned partitions others filled, :meth:`wake` with the partitions others say they filled,
  :meth:`filled` for the partitions this worker filled for others, :meth:`own` per ownership.
A continuous crawl's frontier (:mod:`.continuous`) hooks into ``_refill``, ``_give_back`` and
``_ack_call``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from gossamer.frontier.admission import Admission, Guards
from gossamer.frontier.base import AddResult, Candidate, Feedback, FrontierStats, Lease, Rules
from gossamer.frontier.hosts import HostScheduler, RulesLookup
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis.acks import DeferredAcks
from gossamer.frontier.redis.adds import Adds
from gossamer.frontier.redis.claims import RECLAIM_LIMIT, Claims
from gossamer.frontier.redis.config import RedisFrontierConfig
from gossamer.frontier.redis.counts import Looks
from gossamer.frontier.redis.fences import Handover
from gossamer.frontier.redis.holders import Peers
from gossamer.frontier.redis.keys import Entry, Ownership, PartitionKeys, partition_of
from gossamer.frontier.redis.limiter import HostLimiter, SharedSlots
from gossamer.frontier.redis.pages import PageCounts
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, register, run_scripts
from gossamer.frontier.slotclaims import SlotClaims
from gossamer.urls import Scope, host_key

if TYPE_CHECKING:
    from gossamer.frontier.base import HeldBack

_POLL = 0.2  # seconds between looks at Redis while nothing is held but the job is not done
log = logging.getLogger(__name__)


class RedisFrontier:
    """Frontier contract (see :mod:`gossamer.frontier.base`) over partitioned Redis queues;
    :mod:`gossamer.frontier.redis` holds the layout, this module what each method does."""

    def __init__(
        self,
        redis: RedisClient,
        job: str,
        scope: Scope,
        policy: PolitenessPolicy,
        *,
        config: RedisFrontierConfig | None = None,
        ownership: Ownership | None = None,
        rules: RulesLookup | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        guards: Guards | None = None,
    ) -> None:
        """A frontier for ``job`` on ``redis``, admitting what ``scope`` allows and leasing as
        ``policy`` lets; sized and timed by ``config``. It claims the partitions of
        ``ownership`` (all when None), asks ``rules`` for each host's robots.txt rules (None:
        no robots stage), and reads time from ``clock`` (deadlines) and ``wall_clock`` (what
        Redis stores)."""
        config = config or RedisFrontierConfig()
        keys = PartitionKeys(job)
        scripts = self._scripts = register(redis)
        partitions, lease_timeout = config.partitions, config.lease_timeout
        self._redis = redis
        self._job = job
        self._admission = admission = Admission(scope, guards)
        self.budget_spent = admission.spent  # the contract's (the counts of hosts it met)
        self._config = config
        self._by_url = config.partition_by == "url"
        self._clock = clock
        self._wall = wall_clock
        self._keys = keys
        ownership = ownership or Ownership.every(partitions)
        self._claims = Claims(
            redis, keys, scripts, config, admission, ownership, clock=clock, wall_clock=wall_clock
        )
        self._adds = Adds(redis, keys, scripts["add"], partitions, by_url=self._by_url)
        self._adds.faults = self._faults = faults = self._claims.faults  # partitions set aside
        self._pages = PageCounts(admission.budget, keys, scripts["pages"], partitions, faults)
        self._holders = self._claims.holders
        self._limiter = (
            HostLimiter(redis, job, scripts, policy, slot_timeout=lease_timeout, clock=clock)
            if self._by_url
            else None
        )
        self._handover = Handover(redis, keys, scripts, config, self._holders, clock=clock)
        self._hosts: HostScheduler[Entry] = HostScheduler(
            policy,
            admission.budget,
            rules=rules,
            lease_timeout=lease_timeout,
            slack=config.slack,
            clock=clock,
        )
        self._acks = DeferredAcks(self._send_acks)  # with defer_acks: those not sent yet
        self._looks = Looks(redis, job, partitions, faults)  # the last look at every partition
        self._finished = False  # the last look found nothing queued or claimed, nor added
        self._next_look = float("-inf")  # when ``done()`` may look again (its own looks only)
        self._filled: set[int] = set()

    # -- the contract ----------------------------------------------------------------------

    async def add(self, candidates: Sequence[Candidate]) -> AddResult:
        """Canonicalize, scope and dedup candidates; queue the new ones in their partitions."""
        admitted, rejected = self._admission.admit(candidates, self._adds.sent)  # + trap guards
        fresh, duplicates = await self._adds.send(admitted)
        for part, count in fresh.items():
            if count and part in self._claims.owned:
                self._claims.note([part])
            elif count:
                self._filled.add(part)
        added = sum(fresh.values())
        self._finished = self._finished and not added
        return AddResult(added, duplicates, rejected)

    async def reprioritize(self, priorities: Mapping[str, float]) -> int:
        """New priorities for URLs held here and queued in Redis (others' keep theirs)."""
        urls: dict[int, str] = {}
        wanted = self._admission.locate(priorities, urls)
        changed = self._hosts.rerank(wanted)
        held = {entry.fp for entry in changed}
        calls = [self._claims.update_call(entry) for entry in changed if not entry.orphan]
        queued = self._claims.rerank(wanted, urls, held, self._part)
        results = await run_scripts(self._redis, calls + queued)
        return len(changed) + sum(int(n) for n in results[len(calls) :])

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot of a due host, plus those that need none.

        Awaits a claim of more entries when fewer than half ``memory_budget`` are held and an
        owned partition is believed to have some; by URL, each lease that uses a slot also
        holds one of its host from the shared limiter. Starts no task.
        """
        for lease in self._hosts.expired():  # a stuck fetch: back to its host's front
            await self.release(lease, None)
        if self._hosts.queued < self._config.memory_budget // 2:
            await self._refill()
        if self._limiter is not None:
            return await self._pages.counted(self._redis, await self._limiter.lease(self._hosts, n))
        return await self._pages.counted(self._redis, self._hosts.lease(n).leases)

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease: its claim is removed and the URL counted finished (once)."""
        entry = self._finish(lease, feedback)
        slot = self._slot_release(lease, feedback)
        if entry is None or self._config.defer_acks:
            if entry is not None:
                self._acks.add(entry)  # its claim stays held (and renewed) until sent
            await self._handover.send(slot)  # the host's slot goes back at once
            return
        await self._send_acks([entry], slot)

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Count an attempt, store it with a not-before time in the claim; wait in memory (also
        when cancelled, the engine's drain: ``close()`` gives it back, as any held entry)."""
        entry = self._finish(lease, feedback)
        calls = self._slot_release(lease, feedback)
        if entry is None:
            await self._handover.send(calls)
            return
        entry.attempts += 1
        entry.not_before = self._wall() + after
        if entry.orphan:
            await self._handover.hand_back([entry], calls, self._give_back)
            return
        self._hosts.delay(lease.host, entry, self._clock() + after)  # a give-away finds it
        update = [] if entry.part in self._faults else [self._claims.update_call(entry)]
        results = await self._handover.send([*calls, *update], check=len(calls))
        if not (update and await self._faults.answered([entry.part], results[len(calls) :])):
            return  # its partition set aside: held here until fetched, its claim not written
        if not int(results[len(calls)]):  # reclaimed meanwhile: queued in Redis again
            self._hosts.remove(lambda held: held is entry)
            self._claims.forget(entry)

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted (claim kept); in
        memory again before the calls go (a cancel loses nothing, as in :meth:`retry`)."""
        entry = self._finish(lease, feedback)
        back = self._pages.given_back(lease) if entry is not None else []  # not fetched
        slot = self._slot_release(lease, feedback)
        if entry is not None and entry.orphan:
            await self._handover.hand_back([entry], slot, self._give_back)
            slot = []
        elif entry is not None:
            self._hosts.push(lease.host, entry, front=True)
        results = await self._handover.send([*slot, *back], check=len(slot))
        await self._pages.answered(lease, results[len(slot) :])

    async def rules(self, lease: Lease, rules: Rules, feedback: Feedback | None) -> None:
        """End a ``robots`` lease with its host's rules."""
        self._finish(lease, feedback, rules)
        await self._handover.send(self._slot_release(lease, feedback))

    def next_ready(self) -> float | None:
        """Seconds until a held URL may be leasable; a short poll while others hold work, None
        when the last look found the job finished."""
        wait = self._hosts.next_ready()
        if wait is not None:
            return wait
        return None if self._finished and not self._claims.held else _POLL

    async def done(self) -> bool:
        """Nothing held here nor queued or claimed anywhere (checked once per ``refresh_interval``
        at most, less often while busy, False in between; see ``counts.Looks``)."""
        now = self._clock()
        if self._claims.held or now < self._next_look:
            return False
        busy = await self._looks.still_busy(self._claims.owned, self._claims.looked)
        self._next_look = now + self._config.refresh_interval * self._looks.backoff
        if not busy:
            await self.refresh()
        return self._finished and not self._claims.held

    def stats(self) -> FrontierStats:
        """A frozen snapshot: ``queued`` and ``seen`` are job-wide (last look) plus the URLs
        this worker holds in memory; the rest is this worker's."""
        return FrontierStats(
            queued=self._looks.counts.queued + self._hosts.queued,
            leased=self._hosts.leased,
            delayed=self._hosts.delayed,
            hosts=self._hosts.hosts,
            seen=max(self._looks.counts.seen, len(self._adds.sent)),
            duplicates=self._adds.duplicates,
            rejected=self._admission.rejected,
            set_aside=self._claims.set_aside,
        )

    @property
    def in_memory(self) -> int:
        """Queued URLs held in memory, waiting to be leased."""
        return self._hosts.queued

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """The hosts politeness holds back now (:meth:`HostScheduler.held_back`)."""
        return self._hosts.held_back(most)

    @property
    def slots(self) -> SlotClaims[Entry]:
        """The scheduler's host slots the crawl's host gate takes (`HostGate.bind`)."""
        return self._hosts.claims

    def shared_slots(self) -> SharedSlots | None:
        """By URL, the shared limiter's slots for the gate's aside requests; else None."""
        return None if self._limiter is None else SharedSlots(self._limiter, self._hosts)

    # -- upkeep, called by the frontier's owner ----------------------------------------------

    async def own(self, ownership: Ownership) -> int:
        """Own ``ownership``'s partitions from now on; returns how many held entries went back
        to Redis now. Entries of partitions lost go back to the front of their queues (leased
        ones when their ack, retry or release arrives: an ack still finishes the URL), fenced
        for their new owner and handed over (see :mod:`.fences`); partitions gained are looked
        at at once (those only), and claimed from once handed over (see :mod:`.holders`)."""
        lost, gained = self._claims.own(ownership)
        given = await self._give_away(lost) if lost else 0
        if gained:  # those only: a look at every partition is not each worker's to make often
            self._claims.looked((await self._looks.of(gained)).waiting)
        return given

    def join(self, peers: Peers) -> None:
        """Hand partitions over among ``peers``, a cluster's workers (see :mod:`.holders`),
        from now on: call it before the first claim."""
        self._holders.peers = peers

    async def refresh(self, every: bool = True) -> None:
        """Take up the partitions set aside since mended (:meth:`Faults.retake`); look at every
        partition's counts: for ``done()``, ``stats()``, and the owned partitions with entries
        to claim (``every`` False: at the owned ones only, for those)."""
        await self._faults.retake(self._claims.owned, self._clock())
        counts = await (self._looks.every() if every else self._looks.of(self._claims.owned))
        self._claims.looked(counts.waiting)
        if every:
            self._finished = counts.queued == 0 and counts.claimed == 0

    async def renew(self) -> None:
        """Push the deadline of every claim this worker holds ``lease_timeout`` ahead (call it
        at least every ``lease_timeout / 3``)."""
        await self._claims.renew()

    async def reclaim_expired(self, limit: int = RECLAIM_LIMIT) -> int:
        """Return expired claims (their worker died) to their queues; any worker may call it.
        Looks at every partition first, then at those holding claims, at most ``limit`` claims
        per partition; returns how many were returned."""
        await self.refresh()
        return await self._claims.reclaim(sorted(self._looks.counts.holding), limit)

    def wake(self, parts: Iterable[int]) -> None:
        """Others filled ``parts``: those this worker owns are claimed from at the next
        ``lease()``."""
        self._claims.note(parts)

    def filled(self) -> set[int]:
        """The partitions owned elsewhere this worker's adds filled since the last call."""
        parts, self._filled = self._filled, set()
        return parts

    def take_acks(self) -> Callable[[], Awaitable[None]]:
        """With ``defer_acks``: the acks made so far, as a function sending them to Redis.
        Take them just before the commit that makes their records durable and call the
        function after it: a worker killed in between loses no record (its claims expire and
        the URLs are fetched again; :mod:`.acks`)."""
        return self._acks.take()

    async def close(self) -> None:
        """Give back every held claim that is not leased and the URLs of acks never sent
        (their records not durable: :mod:`.acks`), and hand over every partition this worker
        holds; the Redis client stays open."""
        await self._handover.hand_back(self._acks.unsent(), [], self._give_back)
        await self._give_away(set(self._claims.held) | self._holders.recorded)

    # -- internals -------------------------------------------------------------------------

    async def _claim(self, parts: list[int]) -> None:
        """Move entries from ``parts`` into memory, up to the memory budget."""
        room = self._config.memory_budget - self._hosts.queued
        batch = self._claims.batch
        if (self._adds.ranked or self._hosts.ranked) and len(parts) * batch > room:  # best of each
            batch = max(1, room // len(parts))
        claimed = await self._claims.claim(parts[: max(1, room // batch)], batch)
        await self._pages.load(self._redis, (host_key(entry.url) for entry in claimed))
        lost: list[Entry] = []
        for entry in claimed:
            if entry.part not in self._claims.owned:  # given away while the claim was out
                lost.append(entry)
                continue
            wait = entry.not_before - self._wall()
            if wait > 0:
                self._hosts.delay(host_key(entry.url), entry, self._clock() + wait)
            else:
                self._hosts.push(host_key(entry.url), entry)
        self._handover.strays(self._claims.owned)
        await self._handover.hand_back(lost, [], self._give_back)

    async def _give_away(self, parts: set[int]) -> int:
        """Hand ``parts`` over: fence them, give their held entries back (``Handover``)."""
        back = self._handover.give_away(parts, self._hosts)
        self._claims.disown(parts)
        entries = (entry for held in back.values() for entry in held)
        return await self._handover.hand_back(entries, [], self._give_back)

    async def _refill(self) -> None:  # hooks of a continuous crawl's frontier from here on
        """Claim more entries from owned partitions believed to have some."""
        if parts := self._claims.claimable(self._clock()):
            await self._claim(parts)

    async def _give_back(self, part: int, entries: list[Entry]) -> int:  # unfetched, to the front
        return await self._claims.give_back(part, entries)

    def _ack_call(self, entry: Entry) -> ScriptCall:  # the call finishing ``entry``
        return self._claims.ack(entry)

    async def _send_acks(self, entries: list[Entry], extra: Iterable[ScriptCall] = ()) -> None:
        """Acks (and ``extra`` calls, in the same pipeline) to Redis."""
        extra = list(extra)
        sent = [entry for entry in entries if entry.part not in self._faults]  # others: fetched
        calls = [*extra, *(self._ack_call(entry) for entry in sent)]
        results = await self._handover.send(calls, check=len(extra))
        await self._faults.answered([entry.part for entry in sent], results[len(extra) :])
        for entry in entries:
            self._claims.forget(entry)

    def _part(self, key: str, fp: int) -> int:  # a URL's partition
        partitions = self._config.partitions
        return fp % partitions if self._by_url else partition_of(key, partitions)

    def _slot_release(self, lease: Lease, feedback: Feedback | None) -> list[ScriptCall]:
        """The calls to send as a lease ends: its host slot back (url mode); the fences of
        partitions given away go with them (:meth:`Handover.send`)."""
        return [] if self._limiter is None else self._limiter.release(lease, feedback, self._hosts)

    def _finish(
        self, lease: Lease, feedback: Feedback | None, rules: Rules | None = None
    ) -> Entry | None:
        """End a lease in the scheduler (a ``robots`` one with ``rules``): its entry, None for
        a ``robots`` lease or one ended already."""
        if lease.kind == "robots":
            self._hosts.rules(lease, rules, feedback)
            entry = None
        else:
            entry = self._hosts.finish(lease, feedback)
        self._handover.ended(lease)
        return entry

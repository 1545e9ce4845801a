"""The host gate: one way into a host's politeness slot for requests outside the leases.

Pages and robots.txt go out under the frontier's leases, each of which takes its host's slot
(:mod:`gossamer.frontier.hosts`). Every other request gossamer sends to a host waits here for
the same slot, so one pace holds for all of them: proxy checks, focus examples, robots.txt
asked for outside a robots lease, a rendered page's subrequests, logins and token requests,
the rule editor's sample fetches. A request `enter`\\ s (waits until the host is due and takes
the slot), is sent, and `leave`\\ s with what it told about the host (when it really started,
whether it failed, a Retry-After), exactly as a lease ends. Sitemaps and feeds
(:mod:`gossamer.crawl.sitemaps`) come this way too, a full pass each, set aside for the
host's pages (``aside``): they take the slot in turn with the pages, one file, then a page
if one waits (:mod:`gossamer.frontier.slotclaims`).

Two ways in:

- a **full** pass waits until the host is due and one of its ``per_host`` connections is
  free;
- a **pace-only** pass (``pace_only=True``) waits until the host is due, but not for a free
  connection. It is for requests made *inside* a lease, whose own slot may be the one taken:
  a rendered page's subrequests and a login run while the page's lease holds its host, so
  waiting for room would wait for themselves. The pace holds all the same: each start is
  spaced from the one before by the host's delay.

While a request waits, the scheduler leases none of the host's URLs (`SlotClaims.hold`),
so a busy crawl cannot starve it. The gate sleeps until the host is due, and polls every
`_BUSY_POLL` seconds while its connections are all in use.

Before `bind` (the rule editor, which has no frontier) the gate keeps slots in a scheduler of
its own. In a crawl it is bound to the frontier's scheduler before the first request.

**Cluster mode.** The gate takes this worker's slots. With ``partition_by="host"`` a worker
owns the hosts of its partitions (`own`), so for those hosts the pace is exact. Sitemaps and
feeds are read by a host's owner only: an aside pass for a host owned elsewhere (its
partition given away, even while the pass waited) is refused (`NotOwned`) and takes no slot.
A new owner reads them from when it follows the assignment, with no hand-over: until the old
owner follows too (well under a second), both may send the host sitemap requests, each at
its own pace.
A host owned by another worker gets this worker's other out-of-band requests (its proxy
checks, focus examples, rendered subrequests, logins, and the robots.txt asked for before
them, once per host while the rules stay cached) at that host's pace on top of its owner's:
at most one more request per delay per worker. The pace holds across a hand-over: a host
whose partition this worker gives away keeps its slot here (``HostQueues.left``), so the
worker's next request to it is still spaced from its last one. With ``partition_by="url"``
page leases also take the shared limiter's slot (:mod:`gossamer.frontier.redis.limiter`), and
so do aside passes (sitemaps and feeds, whose files may be many: `share`), after their local
slot; the other out-of-band requests do not, and are bounded the same way. They are few next
to pages: proxy checks, one at a time and a tenth of the time at most
(`gossamer.fetch.proxies.CHECK_SHARE`), the examples before the crawl, a page's
subrequests and its logins.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import msgspec

from gossamer.frontier.base import Feedback, Rules
from gossamer.frontier.hosts import HostScheduler, Queued, RulesLookup
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.outcomes import is_failure
from gossamer.urls import host_key

__all__ = ["GateStats", "HostGate", "NotOwned", "Pass", "SharedSlots", "SlotKeeper", "SlotSource"]

log = logging.getLogger(__name__)

_BUSY_POLL = 0.05
"""Seconds between looks at a host whose connections are all in use."""


class NotOwned(Exception):
    """An aside pass (a sitemap's fetch) for a host this cluster worker does not own: no slot
    was taken, no request is to be sent (see the module doc)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class SlotKeeper(Protocol):
    """What holds the host slots (a `HostScheduler`'s `SlotClaims` is one)."""

    def claim(self, key: str, *, room: bool = True, aside: bool = False) -> float: ...
    def yields(self, key: str) -> bool: ...
    def unclaim(self, key: str, feedback: Feedback | None) -> None: ...
    def note(self, key: str, started_at: float) -> None: ...
    def hold(self, key: str, waiting: bool) -> None: ...


class SharedSlots(Protocol):
    """A cluster's shared host limiter, for the aside passes (`HostGate.share`)."""

    async def hold(self, key: str) -> str: ...
    async def give_back(self, key: str, holder: str) -> None: ...


class SlotSource(Protocol):
    """A frontier whose scheduler holds the host slots the gate takes (`HostGate.bind`)."""

    @property
    def slots(self) -> SlotKeeper: ...


class Pass(msgspec.Struct, frozen=True):
    """A slot taken by `HostGate.enter`: give it back with `HostGate.leave`."""

    key: str
    keeper: SlotKeeper
    shared: tuple[SharedSlots, str] | None = None
    """The shared limiter's slot taken with it (an aside pass by URL), and its holder."""


class GateStats(msgspec.Struct, frozen=True):
    """Requests that went through the gate, and those that had to wait."""

    requests: int
    waited: int
    waiting: int


class HostGate:
    """See the module doc. ``policy`` serves the gate's own slots until `bind`, and the
    robots.txt rules of `use_rules` (their Crawl-delay). ``clock`` is the slots' clock and
    ``sleep`` waits on it (both injected in tests)."""

    def __init__(
        self,
        policy: PolitenessPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._sleep = sleep
        self._rules: RulesLookup | None = None
        self._keeper: SlotKeeper = HostScheduler[Queued](
            policy or PolitenessPolicy(), rules=self._known, clock=clock
        ).claims
        self._clock = clock
        self._freed: Callable[[], None] | None = None
        self._shared: SharedSlots | None = None
        self._owns: Callable[[str], bool] | None = None
        self._giving: set[asyncio.Task[None]] = set()
        self._requests = self._waited = self._waiting = 0

    def on_free(self, freed: Callable[[], None]) -> None:
        """Call ``freed`` whenever a host may be leased again because of the gate: a request
        gave its slot back, or an aside request left its turn to the host's pages (the crawl
        loop leases the host then, not at its next look)."""
        self._freed = freed

    def use_rules(self, rules: RulesLookup) -> None:
        """The robots.txt rules known, by host key, for the gate's own slots (the frontier's
        scheduler knows them already)."""
        self._rules = rules

    def _known(self, key: str) -> Rules | None:
        return None if self._rules is None else self._rules(key)

    def share(self, shared: SharedSlots) -> None:
        """By URL in a cluster: an aside pass (a sitemap's fetch) takes a slot of ``shared``
        too, once it has its local one, so the host's pace holds over every worker."""
        self._shared = shared

    def own(self, owns: Callable[[str], bool]) -> None:
        """By host in a cluster: ``owns`` says, by host key, whether this worker owns the host
        (its partition) now; aside passes for the others are refused (`NotOwned`)."""
        self._owns = owns

    def owns(self, url: str) -> bool:
        """Whether this worker paces ``url``'s host (always, but in a cluster by host)."""
        return self._owns is None or self._owns(host_key(url))

    def bind(self, keeper: SlotKeeper) -> None:
        """Take slots from ``keeper`` (the frontier's scheduler's `SlotClaims`) from now on."""
        self._keeper = keeper

    async def enter(self, url: str, *, pace_only: bool = False, aside: bool = False) -> Pass:
        """Wait until ``url``'s host is due (and, unless ``pace_only``, has a free
        connection), then take its slot. An ``aside`` request (a sitemap's) takes turns with
        the host's pages (:mod:`gossamer.frontier.slotclaims`): it holds the host only while
        no page is owed the next slot, and raises `NotOwned` for a host this worker does not
        own (or no longer does once it is due)."""
        key = host_key(url)
        keeper = self._keeper
        self._refuse(url, aside)
        self._requests += 1
        wait = keeper.claim(key, room=not pace_only, aside=aside)
        if wait > 0:
            self._waited += 1
            self._waiting += 1
            held = False
            try:
                while wait > 0:
                    hold = not (aside and keeper.yields(key))
                    if hold != held:
                        keeper.hold(key, hold)
                        held = hold
                        if not hold and self._freed is not None:
                            self._freed()
                    await self._sleep(_BUSY_POLL if math.isinf(wait) else wait)
                    self._refuse(url, aside)  # the partition may have moved meanwhile
                    wait = keeper.claim(key, room=not pace_only, aside=aside)
            finally:
                if held:
                    keeper.hold(key, False)
                self._waiting -= 1
        if aside and self._shared is not None:
            return await self._share(Pass(key, keeper), self._shared)
        return Pass(key, keeper)

    def _refuse(self, url: str, aside: bool) -> None:
        if aside and not self.owns(url):
            raise NotOwned(url)

    async def _share(self, taken: Pass, shared: SharedSlots) -> Pass:
        """``taken`` with a slot of the shared limiter too (the local one given back if the
        wait for it is cut short)."""
        try:
            holder = await shared.hold(taken.key)
        except BaseException:
            taken.keeper.unclaim(taken.key, None)
            raise
        return Pass(taken.key, taken.keeper, (shared, holder))

    def leave(
        self,
        taken: Pass,
        started_at: float | None,
        *,
        elapsed: float = 0.0,
        status: int | None = None,
        error: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Give the slot back: the request started at ``started_at`` (the clock's time; None:
        none was sent) and got ``status`` or ``error`` after ``elapsed`` seconds."""
        # as for a leased page; a request stopped before any answer (cancelled) is no failure
        failed = (status is not None or error is not None) and is_failure(status, error)
        feedback = Feedback(
            started_at=started_at, elapsed=elapsed, failed=failed, retry_after=retry_after
        )
        taken.keeper.unclaim(taken.key, feedback if started_at is not None else None)
        if taken.shared is not None:  # after the local slot learnt the request's start
            shared, holder = taken.shared
            task = asyncio.create_task(shared.give_back(taken.key, holder))
            self._giving.add(task)
            task.add_done_callback(self._giving.discard)
        if self._freed is not None:
            self._freed()

    def started(self, url: str, at: float) -> None:
        """A request to ``url``'s host under a lease started ``at`` (the clock's time): the
        host's next start is spaced from it. A rendered page's document tells it before its
        subrequests, which go out while the page's lease is held, so they are spaced from
        the document's real start, not from the lease."""
        self._keeper.note(host_key(url), at)

    def now(self) -> float:
        """The gate's clock (for callers stamping a request they send themselves)."""
        return self._clock()

    def stats(self) -> GateStats:
        """A frozen snapshot."""
        return GateStats(self._requests, self._waited, self._waiting)

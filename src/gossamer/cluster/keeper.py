"""The keeper: a cluster worker's housekeeping, next to the crawl loop.

It runs every periodic duty of the worker in turn, each at its own pace: the leader's work
(:class:`~.leadership.Leadership`), following the assignment (:class:`~.assignment.Assignment`,
each new share handed to the frontier with :meth:`RedisFrontier.own`), the wake hints between
workers, the job's state (paused: the crawl leases nothing; stopped: it finishes its in-flight
URLs and ends), and the frontier's upkeep: renewing its claims, reclaiming dead workers'
expired claims (as leader), looking at its own partitions' counts for entries to claim, and
now and then at every partition's (for the job-wide figures of its stats). The frontier does none
of this itself: its ``lease()`` only awaits the I/O of getting URLs to hand out.

The heartbeat (:class:`~.membership.Membership`) and the leader lease (:meth:`Leadership.hold
<.leadership.Leadership.hold>`) run apart, in a task of their own (the pulse): after a duty
that takes seconds (a new leader computing the assignment of 1,000 workers, a reclaim, a
hand-over of partitions) a renewal would come seconds late, and the lease or the heartbeat
could run out under a live worker. Apart, they are late by the event loop's latency only. A
renewal that finds the lease lost ends the leadership at once; the leader's duties check it
before they act, and the assignment's publication checks the lease itself.

A duty failing with a Redis error is tried again at its next turn until such errors have
lasted the guard's budget (connection errors the guard waits out itself); then, or on any
other error, the keeper stops the crawl and :meth:`Keeper.raise_failure` raises it.

What the control plane announces (a new assignment, a new job state, partitions others
filled for this worker) the keeper hears as it happens (:mod:`.notices`) and runs the duty at
once; it still polls for the same, slowly, in case a notice was lost (fast while it cannot
subscribe). A follower tries the leader lease when the leader's could next run out, not every
turn. When each duty runs is :class:`Duties`' to say, on an injected clock (its tests run on a
fake one); the keeper only awaits them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass

from redis.exceptions import RedisError

from gossamer.cluster.assignment import Assignment
from gossamer.cluster.control import Control
from gossamer.cluster.leadership import Leadership
from gossamer.cluster.membership import Membership
from gossamer.cluster.notices import Notices, cancel_and_wait
from gossamer.cluster.resilient import RedisGuard, RedisUnavailable
from gossamer.engine import Crawler
from gossamer.frontier.redis import Ownership, RedisFrontier
from gossamer.redact import redact_text
from gossamer.retry import Outage

log = logging.getLogger(__name__)
_FOLLOW = 0.1
"""Seconds between looks at the assignment's version (one GET)."""
_HINTS = 0.05
"""Seconds between looks at the partitions other workers filled for this one."""
_STATE = 0.25
"""Seconds between looks at the job's state (``cluster pause|resume|stop``)."""
HEARD = 10.0
"""Seconds between the polls for what notices announce, while notices are heard: a notice is
lost only with its connection, and the keeper catches up when it subscribes again; the polls
are a last safety net."""
_NOTICE_DUTIES = {"assignment": "follow", "state": "state", "wake": "hints", "leader": "lead"}
"""The duty each notice runs (see :mod:`.notices`)."""
_POLLED_FOR = ("follow", "state", "hints")
"""The duties whose polls notices make rare (``lead`` keeps its pace: it renews the lease)."""
PULSE = ("beat", "lead")
"""The duties of the pulse, the keeper's second task: the heartbeat and the leader lease."""
_REFRESHES_PER_LOOK = 5
"""Refresh intervals between the keeper's looks at its own partitions: hints tell of new
entries at once, the look is the safety net for a hint lost in a hand-over."""
LOOK_BUDGET = 2_000
"""Partitions per second the whole job's keepers may read in their looks at every partition,
which only refresh the job-wide figures of a worker's stats (the leader's reclaims and an idle
worker's ``done()`` look for themselves): with many workers each looks less often (1,000
workers of 4,096 partitions: every 34 minutes rather than 5 s; a look costs the worker about
as much CPU as a thousand other commands, and Redis 4,096 reads)."""


@dataclass(frozen=True, slots=True)
class Pace:
    """How often the keeper runs each duty, from the job's settings."""

    heartbeat_ttl: float
    claim_timeout: float
    refresh_interval: float = 1.0
    partitions: int = 4096


def look_every(pace: Pace, workers: int) -> float:
    """Seconds between a keeper's looks at every partition in a job of ``workers`` workers:
    those at its own partitions' (``refresh_interval`` times :data:`_REFRESHES_PER_LOOK`), or
    more once the job's looks would read more than :data:`LOOK_BUDGET` partitions a second."""
    return max(_REFRESHES_PER_LOOK * pace.refresh_interval, workers * pace.partitions / LOOK_BUDGET)


def periods(pace: Pace) -> dict[str, float]:
    """Seconds between two runs of each duty, in the order the keeper runs them."""
    beat = pace.heartbeat_ttl / 3
    return {
        "beat": beat,
        "lead": min(0.5, beat),
        "rebalance": min(0.5, beat),
        "follow": min(_FOLLOW, beat),
        "hints": _HINTS,
        "renew": pace.claim_timeout / 3,
        "reclaim": max(1.0, min(pace.claim_timeout / 4, 10.0)),
        "refresh": _REFRESHES_PER_LOOK * pace.refresh_interval,
        "look": look_every(pace, 1),
        "observe": 1.0,
        "state": min(_STATE, beat),
    }


def heard_periods(pace: Pace) -> dict[str, float]:
    """The periods of the duties notices announce, while notices are heard."""
    fast = periods(pace)
    return {duty: max(fast[duty], HEARD) for duty in _POLLED_FOR}


@dataclass(slots=True)
class Duty:
    """One periodic duty: its name, its pace, what it runs and its run of errors."""

    name: str
    every: float
    run: Callable[[], Awaitable[object]]
    errors: Outage
    due: float = 0.0
    """When it next runs (after :meth:`Duties.start`)."""


class Duties:
    """The keeper's duties, each at its own pace, in the order given, on ``clock``.

    ``pace`` maps each duty's name to (seconds between runs, what it runs); ``budget`` is how
    long its Redis errors may last before one is given up on (:meth:`attempt`).
    """

    def __init__(
        self,
        pace: Mapping[str, tuple[float, Callable[[], Awaitable[object]]]],
        budget: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.duties = [
            Duty(name, seconds, run, _outage(name, seconds, budget, clock))
            for name, (seconds, run) in pace.items()
        ]

    def start(self) -> None:
        """Every duty runs first one period from now."""
        now = self._clock()
        for duty in self.duties:
            duty.due = now + duty.every

    def repace(self, name: str, every: float) -> None:
        """Run duty ``name`` every ``every`` seconds from its next run on."""
        for duty in self.duties:
            if duty.name == name and duty.every != every:
                duty.due += every - duty.every
                duty.every = every

    def nudge(self, name: str) -> None:
        """Run duty ``name`` at the next turn."""
        self.defer(name, 0.0)

    def defer(self, name: str, seconds: float) -> None:
        """Run duty ``name`` next ``seconds`` from now (instead of a period after its last run)."""
        for duty in self.duties:
            if duty.name == name:
                duty.due = self._clock() + seconds

    def wait(self) -> float:
        """Seconds until the next duty is due (0 when one is)."""
        return max(0.0, min(duty.due for duty in self.duties) - self._clock())

    def due(self) -> Iterator[Duty]:
        """The duties due, in order, each with its next run set a period from when it was
        found due; each is looked at after the one before it ran, on the clock then."""
        for duty in self.duties:
            now = self._clock()
            if now < duty.due:
                continue
            duty.due = now + duty.every
            yield duty

    @staticmethod
    async def attempt(duty: Duty) -> None:
        """Run one duty. The guard waits out connection errors; any other Redis error
        (``NOSCRIPT`` from a restarted server, say) is tolerated, the next turn running the
        duty again, until such errors have lasted the guard's budget."""
        try:
            await duty.run()
        except RedisUnavailable:
            raise
        except RedisError as error:
            if duty.errors.failed(error) <= 0:
                raise
        else:
            duty.errors.recovered()


class Keeper:
    """Runs the worker's duties in two tasks, the pulse and the rest (see the module
    docstring)."""

    def __init__(
        self,
        control: Control,
        name: str,
        frontier: RedisFrontier,
        crawler: Crawler,
        *,
        membership: Membership,
        leadership: Leadership,
        assignment: Assignment,
        guard: RedisGuard,
        pace: Pace,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._control = control
        self._name = name
        self._frontier = frontier
        self._crawler = crawler
        self._membership = membership
        self._leadership = leadership
        self._assignment = assignment
        run: dict[str, Callable[[], Awaitable[object]]] = {
            "beat": self._beat,
            "lead": self._hold,
            "rebalance": self._rebalance,
            "follow": self._follow,
            "hints": self._hints,
            "renew": frontier.renew,
            "reclaim": self._reclaim,
            "refresh": self._refresh,
            "look": frontier.refresh,
            "observe": membership.observe,
            "state": self._state,
        }
        self._pace = pace
        every = {name: (seconds, run[name]) for name, seconds in periods(pace).items()}
        pulse = {name: every.pop(name) for name in PULSE}
        self._pulse = Duties(pulse, guard.budget, clock)
        self._duties = Duties(every, guard.budget, clock)
        self._tasks: list[asyncio.Task[None]] = []
        self._failure: BaseException | None = None
        self._wake = {self._pulse: asyncio.Event(), self._duties: asyncio.Event()}
        self._notices = Notices(control, name, self._heard, self._subscribed)

    async def start(self) -> None:
        """Beat, lead and follow once (a worker that waited for the job is in the first
        assignment, and starts with its share), then run the duties in the background; the
        pulse runs from the first try at the lease on, however long the first rebalance takes
        (and stops with the start if the start fails)."""
        await self._beat()
        await self._state()
        await self._hold()
        self._spawn(self._pulse)
        try:
            await self._rebalance()
            await self._follow()
            self._notices.start()
            self._spawn(self._duties)
        except BaseException:
            await self.stop()
            raise

    def _spawn(self, duties: Duties) -> None:
        duties.start()
        task = asyncio.create_task(self._run(duties))
        task.add_done_callback(self._ended)
        self._tasks.append(task)

    async def stop(self) -> None:
        """Cancel the tasks; those that do not end within a second are cancelled again."""
        await self._notices.stop()
        await cancel_and_wait(self._tasks)

    async def leave(self) -> None:
        """Leave the job's registry."""
        await self._membership.leave(len(self._assignment.ownership.partitions))

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    async def _run(self, duties: Duties) -> None:
        task = asyncio.current_task()
        wake = self._wake[duties]
        while True:
            wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(duties.wait()):
                    await wake.wait()
            for duty in duties.due():
                await Duties.attempt(duty)
                if task is not None and task.cancelling():
                    # A cancel that a library turned into an error it then retried (asyncio
                    # timeouts can do that on 3.11) must still stop the loop.
                    raise asyncio.CancelledError

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if self._failure is None:
            self._failure = task.exception()
        for other in self._tasks:  # the pulse must not keep a failed keeper's lease
            other.cancel()
        self._crawler.stop()

    async def _beat(self) -> None:
        await self._membership.beat(len(self._assignment.ownership.partitions))

    def _heard(self, word: str) -> None:
        """A notice: its duty runs now."""
        self._nudge(_NOTICE_DUTIES[word])

    def _nudge(self, name: str) -> None:
        """Run duty ``name`` now, in whichever task runs it."""
        duties = self._pulse if name in PULSE else self._duties
        duties.nudge(name)
        self._wake[duties].set()

    def _subscribed(self, up: bool) -> None:
        """Notices heard: poll for what they announce slowly; not heard: at the fast pace.
        Back up, every such duty runs once for what was missed meanwhile."""
        fast = periods(self._pace)
        for duty, seconds in heard_periods(self._pace).items():
            self._duties.repace(duty, seconds if up else fast[duty])
            if up:
                self._duties.nudge(duty)
        self._wake[self._duties].set()

    async def _hold(self) -> None:
        """The pulse's turn at the lease: taken, the leader's work starts at once."""
        if await self._leadership.hold():
            self._nudge("rebalance")
        if not self._leadership.leading:  # try again when the leader's lease could run out
            self._pulse.defer("lead", self._leadership.free_in)

    async def _rebalance(self) -> None:
        if await self._leadership.rebalance():
            await self._follow()  # the leader's own share at once
        await self._leadership.train()

    async def _follow(self) -> None:
        """On a new assignment version: hand the new share to the frontier."""
        before = self._assignment.ownership
        after = await self._assignment.follow()
        if after is not None:
            given_back = await self._frontier.own(after)
            self._log_move(before, after, given_back)
            self._duties.repace("look", look_every(self._pace, self._assignment.workers))

    async def _refresh(self) -> None:
        """Look at this worker's own partitions for entries a lost hint did not announce (a
        worker owning every partition leaves that to its looks at every partition)."""
        if len(self._assignment.ownership.partitions) < self._pace.partitions:
            await self._frontier.refresh(every=False)

    async def _hints(self) -> None:
        """Wake the owners of partitions this worker filled; take the hints others left."""
        owners = await self._assignment.owners(self._frontier.filled())
        if owners:
            await self._control.wake(owners)
        self._frontier.wake(await self._control.woken(self._name))

    async def _state(self) -> None:
        """Follow the job's state: paused, lease nothing; stopped, finish and exit."""
        state = await self._control.state()
        if state == "stopped":
            if not self._crawler.stopping:
                log.info(
                    "%s stops: the job was stopped",
                    self._name,
                    extra={"event": "job-stopped", "worker": self._name},
                )
            self._crawler.stop()
            return
        paused = state == "paused"
        if paused != self._crawler.paused:
            log.info(
                "%s %s",
                self._name,
                "pauses" if paused else "resumes",
                extra={"event": "job-paused" if paused else "job-resumed", "worker": self._name},
            )
            self._crawler.pause(paused)

    async def _reclaim(self) -> None:
        await self._leadership.reclaim(self._frontier)

    def _log_move(self, before: Ownership, after: Ownership, given_back: int) -> None:
        gained = after.partitions - before.partitions
        lost = before.partitions - after.partitions
        if not gained and not lost:
            return
        owned, version = len(after.partitions), after.version
        log.info(
            "assignment v%d: %s owns %d partitions (%d gained, %d lost, %d URLs given back)",
            version,
            self._name,
            owned,
            len(gained),
            len(lost),
            given_back,
            extra={
                "event": "partitions-moved",
                "worker": self._name,
                "version": version,
                "partitions": owned,
                "gained": len(gained),
                "lost": len(lost),
                "given_back": given_back,
            },
        )


def _outage(name: str, seconds: float, budget: float, clock: Callable[[], float]) -> Outage:
    return Outage(
        budget,
        clock=clock,
        on_start=lambda error: log.warning(
            "%s failed (%s); trying again every %gs",
            name,
            redact_text(str(error)),
            seconds,
            extra={"event": "duty-failing", "duty": name},
        ),
    )

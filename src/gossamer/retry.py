"""Retrying through an outage: the one retry loop of the package.

An :class:`Outage` is a run of failures with a time budget: it starts at the first failure
(or when told) and ends at the first success. :func:`retry` runs an operation until it
succeeds, waiting :class:`Backoff` delays between attempts, and gives up once the outage has
lasted its budget: that call, and every later call through the same outage, raises what
``give_up`` makes of the error. Several callers may share one outage (every connection of a
Redis client does: see :mod:`gossamer.cluster.resilient`).

``clock``, ``sleep`` and ``rng`` are injectable, so tests of backoff run in no time.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
_RNG = random.Random()


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential delays: ``base``, twice that, ... at most ``cap``."""

    base: float
    cap: float
    jitter: float = 0.0
    """The share of each delay drawn at random: 0.5 waits between half the delay and all of
    it (workers that failed together do not all try again at the same instant)."""

    def delay(self, failures: int, rng: random.Random) -> float:
        """The wait after failure number ``failures`` (1 for the first)."""
        ceiling = min(self.cap, self.base * 2.0 ** min(failures - 1, 60))
        if not self.jitter:
            return ceiling
        return ceiling * (1 - self.jitter) + rng.uniform(0, ceiling * self.jitter)


class Outage:
    """A run of failures that may last ``budget`` seconds (see the module).

    ``on_start`` is called with the error that starts an outage, ``on_end`` with the seconds
    an outage lasted when a success ends it (to log both).
    """

    def __init__(
        self,
        budget: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        started: bool = False,
        on_start: Callable[[BaseException], None] | None = None,
        on_end: Callable[[float], None] | None = None,
    ) -> None:
        self.budget = budget
        self._clock = clock
        self._since: float | None = clock() if started else None
        self._reported = False
        self._last_failure = -math.inf
        self._on_start = on_start
        self._on_end = on_end
        self.final: BaseException | None = None
        """The error the outage gave up on; once set, every retry through it gives up."""

    def steady_for(self) -> float:
        """Seconds since the last failure (infinite if none)."""
        return self._clock() - self._last_failure

    def failed(self, error: BaseException) -> float:
        """Note a failure; the seconds left of the budget (none left: 0 or less)."""
        now = self._clock()
        self._last_failure = now
        if self._since is None:
            self._since = now
        if not self._reported:
            self._reported = True
            if self._on_start is not None:
                self._on_start(error)
        return self._since + self.budget - now

    def recovered(self) -> None:
        """Note a success: the outage, if any, is over."""
        since, self._since = self._since, None
        if self._reported:
            self._reported = False
            if self._on_end is not None and since is not None:
                self._on_end(self._clock() - since)


async def retry(
    attempt: Callable[[], Awaitable[T]],
    *,
    errors: tuple[type[BaseException], ...],
    outage: Outage,
    backoff: Backoff,
    give_up: Callable[[BaseException], BaseException],
    failed: Callable[[BaseException, int], Awaitable[None]] | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> T:
    """``await attempt()`` until it succeeds; an error of ``errors`` is tried again after a
    backoff delay while ``outage`` has budget left, then ``give_up(error)`` is raised. Other
    errors pass through. ``failed(error, failures)`` runs after each failure, before the wait
    (it may raise to stop)."""
    failures = 0
    while True:
        if outage.final is not None:
            raise give_up(outage.final)
        try:
            result = await attempt()
        except errors as error:
            failures += 1
            if failed is not None:
                await failed(error, failures)
            left = outage.failed(error)
            if left <= 0:
                outage.final = error
                raise give_up(error) from None
            await sleep(min(backoff.delay(failures, rng or _RNG), left))
        else:
            outage.recovered()
            return result

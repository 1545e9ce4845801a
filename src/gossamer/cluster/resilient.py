"""Riding out a Redis outage: a worker keeps its state and waits for Redis to come back.

A :class:`RedisGuard` is the worker's redis-py retry policy (``client.set_retry(guard)``):
every command, pipeline and connect that meets an outage (a restarted server, a refused
connection, ``LOADING`` while the server reads its AOF, a Redis Cluster failing over: the
errors :func:`~gossamer.cluster.redisretry.transient` names) is repeated with capped,
jittered exponential backoff. The outage is one state shared by every connection: it starts at
the first failure and ends at the first success. Once it has lasted ``budget`` seconds the
guard gives up: that call and every later one fail at once with :class:`RedisUnavailable`
("Redis at URL unreachable for 180 s: ..."), so the worker stops, commits what it fetched and
exits with status 75 (:data:`~gossamer.cluster.EXIT_REDIS_OUTAGE`). A Redis Cluster client
runs each call through the same guard (:class:`~gossamer.cluster.redisretry.GuardedCluster`).
A restarted server or a promoted replica has no scripts loaded: the frontier's
``run_scripts`` and redis-py's ``AsyncScript`` load a script again when Redis answers
``NOSCRIPT``, so the guard need not repeat that.

A repeated call may follow one whose reply was lost after Redis ran it. That is safe for
every call a worker makes (see ``frontier/redis/lua``):

- ``add``: the seen set guards the queue, so a repeated add queues nothing twice (the URLs
  are then counted as duplicates).
- ``claim``: the entries of a claim whose reply was lost stay in ``claimed`` with a deadline
  nobody renews; they expire and ``reclaim`` queues them again: late, never lost.
- ``ack``, ``update`` and ``unclaim`` do nothing to a claim that is no longer held, so the
  second run of one is a no-op; ``reclaim`` only moves expired claims, which the first run
  moved already.
- Renewing deadlines (``ZADD XX``), heartbeats and reads repeat harmlessly; a repeated
  ``SET NX`` of the leader lease answers "taken" and the holder's renewal takes it next round;
  a repeated assignment publish only bumps the version.

Claims are not renewed while Redis is away, so an outage longer than a claim's remaining time
lets their deadlines pass; see :mod:`gossamer.cluster.leadership` for how the leader
waits before it reclaims.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, RedisClusterException, RedisError, ResponseError

from gossamer import eventloop
from gossamer.cluster import DEFAULT_BUDGET, EXIT_REDIS_OUTAGE
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.redisretry import RETRIED, GuardedCluster, ReplicaWait, transient
from gossamer.frontier.redis import RedisClient
from gossamer.redact import redact_text, redact_url
from gossamer.retry import Backoff, Outage, retry
from gossamer.settings import SettingsError

T = TypeVar("T")
log = logging.getLogger(__name__)

_BASE = 0.05
_CAP = 1.0


class RedisUnavailable(RedisConnectionError):
    """Redis did not answer for the whole budget; the message is the one line to print."""


class RedisOutage(ClusterError):
    """A command gave up on Redis after its outage budget: exit status 75, not 1."""

    exit_status = EXIT_REDIS_OUTAGE


@dataclass(frozen=True, slots=True)
class GuardStats:
    """The worker's view of Redis outages (served on ``/metrics`` as ``gossamer_redis_*``)."""

    down: int
    """1 while an outage lasts (calls are waiting), else 0."""
    outages_total: int
    """Outages ridden through (or given up on) since the worker started."""
    down_seconds: float
    """Seconds the current outage has lasted (0 when Redis answers)."""
    last_outage_seconds: float
    """How long the last outage that ended lasted."""
    replica_waits_total: int = 0
    """WAITs sent after pipelined writes (a Redis Cluster with replicas)."""
    replica_waits_missed_total: int = 0
    """WAITs no replica answered in time: those writes may not survive a failover."""


class RedisGuard(Retry):
    """A redis-py retry policy with a time budget for the whole outage (see the module):
    every call retries through one shared :class:`~gossamer.retry.Outage`.

    ``clock``, ``sleep`` and ``rng`` are injectable so tests run in no time.
    """

    def __init__(
        self,
        url: str,
        budget: float = DEFAULT_BUDGET,
        *,
        base: float = _BASE,
        cap: float = _CAP,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(NoBackoff(), -1)
        self.url = redact_url(url)
        self.budget = budget
        self.cap = cap
        self._delays = Backoff(base, cap, jitter=0.5)
        self._outage = Outage(budget, clock=clock, on_start=self._down, on_end=self._back)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self._down_since: float | None = None
        self._outages = 0
        self._last = 0.0
        self.replica_wait: ReplicaWait | None = None
        """The client's waits for replicas, counted in :meth:`stats` (set by install_guard)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> RedisGuard:
        # Each new connection deep-copies its retry policy; the outage is one shared state.
        return self

    @property
    def gave_up(self) -> bool:
        """True once an outage outlasted the budget (every call now fails at once)."""
        return self._outage.final is not None

    def steady_for(self) -> float:
        """Seconds since the last failed call (infinite if none failed)."""
        return self._outage.steady_for()

    def stats(self) -> GuardStats:
        """A snapshot of the outages so far."""
        since = self._down_since
        waits = self.replica_wait.stats() if self.replica_wait is not None else None
        return GuardStats(
            down=int(since is not None),
            outages_total=self._outages,
            down_seconds=0.0 if since is None else self._clock() - since,
            last_outage_seconds=self._last,
            replica_waits_total=0 if waits is None else waits.waits,
            replica_waits_missed_total=0 if waits is None else waits.missed,
        )

    def delay(self, failures: int) -> float:
        """Backoff before repeat number ``failures``: exponential, capped, half jittered."""
        return self._delays.delay(failures, self._rng)

    async def call_with_retry(
        self,
        do: Callable[[], Awaitable[T]],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        """Run ``do`` until it succeeds or the outage outlasts the budget; an error that is
        not an outage (``is_retryable``, by default :func:`~.redisretry.transient`) passes."""
        retryable = is_retryable or transient

        async def failed(error: BaseException, failures: int) -> None:
            assert isinstance(error, Exception)
            if not retryable(error):
                raise error
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from error  # a cancel a timeout swallowed
            await (fail(error, failures) if with_failure_count else fail(error))

        return await retry(
            do,
            errors=self._supported_errors,
            outage=self._outage,
            backoff=self._delays,
            give_up=self._verdict,
            failed=failed,
            sleep=self._sleep,
            rng=self._rng,
        )

    def _verdict(self, error: BaseException) -> RedisUnavailable:
        reason = redact_text(str(error))
        return RedisUnavailable(f"Redis at {self.url} unreachable for {self.budget:g} s: {reason}")

    def _down(self, error: BaseException) -> None:
        self._outages += 1
        self._down_since = self._clock()
        log.warning(
            "Redis at %s unreachable (%s); retrying for up to %gs",
            self.url,
            redact_text(str(error)),
            self.budget,
            extra={"event": "redis-unreachable", "redis": self.url, "budget": self.budget},
        )

    def _back(self, seconds: float) -> None:
        self._down_since = None
        self._last = seconds
        log.info(
            "Redis at %s answers again after %.1fs",
            self.url,
            seconds,
            extra={"event": "redis-recovered", "redis": self.url, "outage_seconds": seconds},
        )


def install_guard(
    client: RedisClient, url: str, budget: float = DEFAULT_BUDGET, *, durable: bool = True
) -> RedisGuard:
    """A guard for ``client`` (connected to ``url``), installed as its retry policy.

    Either way the guard waits out the errors :func:`~gossamer.cluster.redisretry.transient`
    calls an outage. A single-server client takes it as redis-py's retry policy of every
    connection. A Redis Cluster client counts its attempts itself (with a policy of unlimited
    attempts it would make none), so it keeps its own policy and a :class:`GuardedCluster`
    runs each of its commands and pipelines through the guard instead; with ``durable``, its
    pipelines of adds wait for a replica to hold their writes on each master that has one
    (:class:`~gossamer.cluster.redisretry.ReplicaWait`).
    """
    guard = RedisGuard(url, budget)
    guard.update_supported_errors(cast(list[type[RedisError]], list(RETRIED)))
    if isinstance(client, Redis):
        client.set_retry(guard)
    elif isinstance(client, GuardedCluster):
        client.guard_with(guard)
        if durable:
            guard.replica_wait = ReplicaWait(1)
            client.wait_for_replicas(guard.replica_wait)
    return guard


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a cluster command's coroutine; a lost Redis becomes a one-line ClusterError."""
    try:
        return eventloop.run(coro)
    except RedisUnavailable as exc:
        raise RedisOutage(redact_text(str(exc))) from None
    except ResponseError as exc:
        if not forbidden(exc):
            raise ClusterError(f"Redis failed: {redact_text(str(exc))}") from None
        raise SettingsError(
            f"Redis refused a command ({redact_text(str(exc))}): the Redis user lacks a rule "
            "gossamer needs; see docs/security.md for the ACL rules"
        ) from None
    except (RedisError, RedisClusterException, OSError) as exc:
        log.debug("Redis failed", exc_info=True)  # where: the one line below does not say
        raise ClusterError(f"Redis failed: {redact_text(str(exc))}") from None


def forbidden(error: BaseException) -> bool:
    """True when Redis refused a command to the user (its ACL lacks a rule), also inside a
    script (where Redis answers with a plain error)."""
    text = str(error)
    return isinstance(error, NoPermissionError) or (
        isinstance(error, ResponseError)
        and ("can't run this command" in text or "no permissions" in text)
    )

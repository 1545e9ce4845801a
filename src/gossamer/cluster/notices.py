"""Notices: what the control plane announces, heard as it happens rather than polled for.

A worker subscribes to its job's channel (a new assignment version, a new job state, the
leader resigned) and to
its own (others filled its partitions) on a connection of its own (see :mod:`.control` for
the channels). Each notice calls ``heard`` with its word (``assignment``, ``state``,
``wake``, ``leader``), and the keeper runs the matching duty at once. With notices heard, the
keeper polls for the same things only slowly (a notice is lost while the subscription is down: a
reconnect, a failover); while the subscription is down it polls at the old fast pace, and
when it is back every duty runs once to catch up on what was missed.

On a Redis Cluster the subscription is held by the master of the channel's slot, as the
client's slot table names it. A pub/sub connection sends nothing that would refresh that
table, so after a failed subscription the table is read again before the next try (a read
that fails is one more failed try): after a failover the worker subscribes on the promoted
replica, not again and again on the dead master.

Redis' replies are hostile input: a message other than these words is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from redis.exceptions import RedisError

from gossamer.cluster.control import Control
from gossamer.cluster.redisretry import GuardedCluster

log = logging.getLogger(__name__)
WORDS = frozenset({"assignment", "state", "wake", "leader"})
"""What a notice may say."""
_RETRY = (0.5, 1.0, 2.0, 5.0)
"""Seconds before subscribing again after a failure, growing, then the last kept (a
subscription the ACL refuses fails at its reply: it is tried again every 5 s)."""
_CANCELS = 10
"""Cancels :func:`cancel_and_wait` sends, a second apart, before it leaves a task be."""


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait for their end, cancelling those still running again every
    second, at most :data:`_CANCELS` times: on Python 3.11 redis-py can lose a cancel
    (``asyncio.wait_for`` drops one that comes as its awaited write ends; see
    :meth:`Notices._listen`)."""
    running = {task for task in tasks if not task.done()}
    for _ in range(_CANCELS):
        if not running:
            return
        for task in running:
            task.cancel()
        await asyncio.wait(running, timeout=1.0)
        running = {task for task in running if not task.done()}


class Notices:
    """The subscription of worker ``name`` of ``control``'s job; ``heard(word)`` per notice,
    ``subscribed(flag)`` whenever the subscription comes up or goes down."""

    def __init__(
        self,
        control: Control,
        name: str,
        heard: Callable[[str], None],
        subscribed: Callable[[bool], None],
    ) -> None:
        self._control = control
        self._channels = (control.keys["notify"], control.keys["notify"] + ":" + name)
        self._heard = heard
        self._subscribed = subscribed
        self._task: asyncio.Task[None] | None = None
        self.up = False
        """The subscription holds now."""

    def start(self) -> None:
        """Listen in the background until :meth:`stop`."""
        self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        """Cancel the listener and wait for its end (:func:`cancel_and_wait`)."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait({task})

    async def _listen(self) -> None:
        """Subscribe and hear notices until cancelled. On Python 3.11 a cancel can be lost in
        redis-py (``asyncio.wait_for`` drops one that comes as its awaited write ends): the
        loop ends at its next failure still, and :meth:`stop` cancels again."""
        task = asyncio.current_task()
        failures = 0
        while True:
            pubsub = self._control.redis.pubsub(ignore_subscribe_messages=True)
            try:
                if failures:
                    await self._reload()
                await pubsub.subscribe(*self._channels)
                while True:
                    message = await pubsub.get_message(timeout=None)
                    self._set(True)  # confirmed (None: the subscription's reply) or heard
                    failures = 0
                    if message is not None:
                        self._hear(message)
            except Exception as exc:  # the listener never dies: polls stand in meanwhile
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError from exc
                self._set(False)
                wait = _RETRY[min(failures, len(_RETRY) - 1)]
                failures += 1
                level = logging.DEBUG if isinstance(exc, RedisError | OSError) else logging.WARNING
                log.log(level, "notices of job %s: %r; again in %gs", self._control.job, exc, wait)
                await asyncio.sleep(wait)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _reload(self) -> None:
        """Read a Redis Cluster's slot table again: the channel's master may have changed."""
        redis = self._control.redis
        if isinstance(redis, GuardedCluster):
            await redis.reload()

    def _hear(self, message: dict[str, Any]) -> None:
        data = message.get("data")
        word = data.decode("ascii", "replace") if isinstance(data, bytes) else data
        if isinstance(word, str) and word in WORDS:
            self._heard(word)

    def _set(self, up: bool) -> None:
        if up != self.up:
            self.up = up
            self._subscribed(up)

"""Leadership: the leader lease, and the leader's work.

One worker at a time holds the lease (a key with a TTL it renews). The others try for it when
it could next run out (:attr:`Leadership.free_in`), so a thousand followers cost Redis a try
each per lease TTL, and a dead leader's successor takes over moments after its lease ends. The
leader publishes the assignment of partitions to workers
(:class:`~gossamer.cluster.balancer.Balancer`), trains the balancer's model with
``bpnn-pso``, and returns dead workers' expired claims to their queues.

After a Redis outage the leader waits until it has been steady for one heartbeat TTL and one
claim renewal period before it rebalances or reclaims: by then every live worker has beaten
again (its heartbeat key may have expired during the outage) and pushed its claims' deadlines
past the outage, so neither a live worker's partitions nor its claims move.
"""

from __future__ import annotations

import logging

from gossamer.cluster.balancer import Balancer
from gossamer.cluster.control import Control
from gossamer.cluster.resilient import RedisGuard
from gossamer.frontier.redis import RedisFrontier

log = logging.getLogger(__name__)
_MARGIN = 0.01
"""Seconds after the leader's lease would run out that a follower tries for it."""


class Leadership:
    """Takes and keeps the leader lease; while it holds it, does the leader's work."""

    def __init__(
        self,
        control: Control,
        name: str,
        ttl: float,
        balancer: Balancer,
        guard: RedisGuard,
        *,
        settle: float,
        train: bool,
    ) -> None:
        self._control = control
        self._name = name
        self._ttl = ttl
        self._balancer = balancer
        self._guard = guard
        self._settle = settle
        self._train = train
        self._leading = False
        self.free_in = 0.0
        """Seconds until the leader's lease could run out (at the last :meth:`hold` of a
        follower; 0 while leading)."""

    @property
    def leading(self) -> bool:
        """This worker held the lease at its last :meth:`hold`."""
        return self._leading

    async def hold(self) -> bool:
        """Take or renew the lease; True when this worker has just taken it.

        Run on its own pace, apart from the leader's work (see the keeper), so a long duty
        never makes a renewal late. A renewal that finds the lease lost ends the leadership at
        once: :attr:`leading` is False from then on, and the leader's work checks it (and the
        lease itself, where it writes what only one worker may) before it acts."""
        free_in = await self._control.try_lead(self._name, self._ttl)
        leading = free_in == 0.0
        self.free_in = free_in + _MARGIN if not leading else 0.0
        taken = leading and not self._leading
        if leading != self._leading:
            self._leading = leading
            self._log_change(leading)
        return taken

    async def rebalance(self) -> bool:
        """As leader, publish a new assignment when it should change; True when one was
        (the publication checks the lease in the same script: a leader that lost it
        meanwhile publishes nothing)."""
        if not self._leading or not self._settled():
            return False
        return await self._balancer.rebalance(self._name) is not None

    async def train(self) -> None:
        """As leader with ``bpnn-pso``, refit the balancer's model when new observations came."""
        if self._train and self._leading and self._settled():
            await self._balancer.train(lambda: self._leading)

    async def reclaim(self, frontier: RedisFrontier) -> int:
        """As leader, return dead workers' expired claims to their queues; how many."""
        if not self._leading or not self._settled():
            return 0
        if await self._control.leader() != self._name:
            return 0
        return await frontier.reclaim_expired()

    def _settled(self) -> bool:
        """Steady long enough since the last Redis failure to act as leader (see module)."""
        return self._guard.steady_for() >= self._settle

    def _log_change(self, leading: bool) -> None:
        job = self._control.job
        fields = {"worker": self._name, "job": job}
        if leading:
            log.info(
                "%s leads job %s now",
                self._name,
                job,
                extra={"event": "leader-acquired", **fields},
            )
        else:
            log.info(
                "%s no longer leads job %s",
                self._name,
                job,
                extra={"event": "leader-lost", **fields},
            )

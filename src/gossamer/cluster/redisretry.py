"""One retry policy for every Redis call a worker makes, on one server or a Redis Cluster.

:func:`transient` says which errors are an outage to wait out rather than a failure: a
connection refused, reset or timed out, ``LOADING``, a Redis Cluster that is down or
reconfiguring while a replica is promoted (``CLUSTERDOWN``, ``TRYAGAIN``, ``MOVED``/``ASK``
storms, a slot not covered yet, ``READONLY`` from a master demoted to a replica) and the
``AttributeError`` redis-py's cluster client raises from inside itself when its slot table is
caught half updated (redis/redis-py#3835: a target node of None), and uvloop's
``RuntimeError ... the handler is closed`` from a write to a connection redis-py was closing
(see :func:`_closed_under_redis_py`). Anything else (a script error, a refused credential, an
ACL rule, a TLS handshake refused for its certificates) is a real failure and passes through
at once.

:class:`GuardedCluster` is a Redis Cluster client whose every command and pipeline goes
through the worker's :class:`~gossamer.cluster.resilient.RedisGuard`: the same shared outage,
backoff and budget as a single-server client's connections. redis-py's own cluster retries
(a few attempts, about a second) stay inside; the guard repeats a call until the cluster
answers again or the outage outlasts its budget, refreshing the slot table before each
repeat. A pipeline reads a slot table asked for as it begins (``async with
client.pipeline()``), before its ``execute``: that read goes through the guard too (it asks the
first master of the new table for its command table, which during a failover may be the dead
master still). A pipeline repeats only its commands that met an outage: those that ran keep
their replies (see :mod:`gossamer.cluster.resilient` for why repeating any of them is safe).

Writes that must survive a failover: Redis replicates asynchronously, so a master killed
right after it answered may take writes its replica never received. A URL added to the
frontier and then lost that way would be lost for good once the page that found it is acked
(on another master). So a pipeline holding the frontier's ``add`` script ends with
``WAIT <replicas> <timeout>`` on each master it added to that has a replica, on the same
connection: its reply comes once a replica holds those URLs, and only then does the caller go
on (to ack the page that found them). Every other write may be lost harmlessly, the write
order sees to it: a lost claim leaves its URLs queued, a lost ack leaves its URL claimed until
the claim expires and is reclaimed (either way a URL whose lease was in flight is fetched
again, never lost), a lost renewal or heartbeat is written again within seconds. A master
whose replica does not answer in time is not waited for again for a while
(:class:`ReplicaWait`): a dead replica slows nothing down for long.

The frontier, the digests and the control plane take the client as it is: nothing at a call
site knows about outages or replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast

import redis
from redis.asyncio.cluster import (
    ClusterNode,
    ClusterPipeline,
    PipelineCommand,
    PipelineStrategy,
    RedisCluster,
)
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthorizationError,
    ClusterDownError,
    ClusterError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gossamer.frontier.redis.scripts import load_script


class RedisGuard(Protocol):
    """What this module needs of the worker's guard (`gossamer.cluster.resilient.RedisGuard`,
    which imports this module: named here by its shape, not imported): its calls always say
    which errors are an outage, and their ``fail`` takes the error alone."""

    async def call_with_retry(
        self,
        do: Callable[[], Awaitable[T]],
        fail: Callable[[BaseException], Awaitable[None]],
        is_retryable: Callable[[Exception], bool],
    ) -> T: ...


T = TypeVar("T")

log = logging.getLogger(__name__)
_REDIS_PY = Path(redis.__file__).resolve().parent
_OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # refused, reset, LOADING (BusyLoadingError), pool exhausted
    RedisTimeoutError,
    OSError,
    ClusterError,  # CLUSTERDOWN, MASTERDOWN, "TTL exhausted" after a redirect storm
    ClusterDownError,
    TryAgainError,
    AskError,  # and MovedError, its subclass
    ReadOnlyError,
    SlotNotCoveredError,
)
_NO_TOPOLOGY = (
    "Redis Cluster cannot be connected",
    "All slots are not covered",
    "startup_nodes could not agree",
)
"""How redis-py's cluster client says it found no usable slot table (no node answered, or
the nodes that did disagree while a failover settles)."""
_CLOSED_HANDLE = "the handler is closed"
"""The end of uvloop's message for a write to a transport it closed already."""
RETRIED: tuple[type[BaseException], ...] = (
    *_OUTAGE_ERRORS,
    RedisClusterException,
    AttributeError,
    RuntimeError,
)
"""The error classes the guard looks at; :func:`transient` decides which of them it waits out."""


def transient(error: BaseException) -> bool:
    """True when ``error`` means Redis is (partly) away for now: wait and try again."""
    if isinstance(error, (AuthenticationError, AuthorizationError)) or _tls_refused(error):
        return False  # wrong credentials or certificates: no wait will help
    if isinstance(error, _OUTAGE_ERRORS):
        return True
    if isinstance(error, RedisClusterException):
        return str(error).startswith(_NO_TOPOLOGY)
    if isinstance(error, AttributeError):
        return _raised_in_redis_py(error.__traceback__)
    if isinstance(error, RuntimeError):
        return _closed_under_redis_py(error)
    return False


def _closed_under_redis_py(error: RuntimeError) -> bool:
    """True when ``error`` is uvloop's refusal of a write to a closed transport made by
    redis-py's code. redis-py closes a node's connections, the idle ones too, when a slot table
    read fails or a node answers CLUSTERDOWN (a failover), and a connection looks connected
    until its close has ended: a call that takes an idle one meanwhile writes to a closed
    transport. The standard loop drops that write and the read then meets the connection's
    end (a ``ConnectionError``); uvloop raises this from the write, which redis-py passes on
    as it is (it closes the connection first: the next try connects again)."""
    if not str(error).endswith(_CLOSED_HANDLE):
        return False
    tb = error.__traceback__
    while tb is not None:
        if _in_redis_py(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def _in_redis_py(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(_REDIS_PY)


def _tls_refused(error: BaseException | None) -> bool:
    """True when ``error`` (or what caused it) is a TLS handshake refused for its
    certificates or protocol (a plain ``ssl.SSLError`` carries an alert), not a connection
    cut (``SSLEOFError`` and the other subclasses, met when a server restarts)."""
    for _ in range(4):  # redis-py wraps an error once or twice
        if not isinstance(error, BaseException):
            return False  # None, or a reply (a pipeline asks of each result)
        if isinstance(error, ssl.SSLCertVerificationError) or type(error) is ssl.SSLError:
            return True
        error = error.__cause__ or error.__context__
    return False


def _raised_in_redis_py(tb: TracebackType | None) -> bool:
    """True when the innermost frame of ``tb`` runs redis-py's code (not gossamer's)."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return _in_redis_py(tb.tb_frame.f_code.co_filename)


@dataclass(frozen=True, slots=True)
class ReplicaWaitStats:
    """How the waits for replicas went: pipelines waited for, and waits a replica missed."""

    replicas: int
    waits: int
    missed: int


def durable_scripts() -> frozenset[str]:
    """The SHA1s of the frontier scripts whose writes are waited for: ``add``."""
    return frozenset({hashlib.sha1(load_script("add").encode()).hexdigest()})


class ReplicaWait:
    """``WAIT replicas timeout`` after a pipeline's calls of ``scripts`` (by SHA1; default
    :func:`durable_scripts`) on each master they went to.

    Only a master with a replica is waited for: each master is asked its replicas (``ROLE``)
    every ``recheck`` seconds (a slot table does not say: Redis leaves a replica out of
    ``CLUSTER SLOTS`` until it has replicated something). A master whose replicas missed a
    wait is skipped for ``rest`` seconds (its replica may be dead or resyncing), logged once
    per such spell.
    """

    def __init__(
        self,
        replicas: int,
        timeout_ms: int = 1000,
        *,
        scripts: frozenset[str] | None = None,
        rest: float = 10.0,
        recheck: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replicas = replicas
        self.scripts = durable_scripts() if scripts is None else scripts
        self.timeout_ms = timeout_ms
        self.rest = rest
        self.recheck = recheck
        self._clock = clock
        self._resting: dict[str, float] = {}
        self._known: dict[str, tuple[int, float]] = {}
        self._waits = 0
        self._missed = 0

    async def commands(self, client: RedisCluster, writes: list[PipelineCommand]) -> list[Any]:
        """A WAIT for each master with a replica that the calls of ``scripts`` among
        ``writes`` go to, to run after them on the same connection."""
        masters: dict[str, ClusterNode] = {}
        for command in writes:
            args = command.args
            if len(args) >= 4 and args[0] == "EVALSHA" and args[1] in self.scripts:
                node = client.nodes_manager.get_node_from_slot(client.keyslot(args[3]))
                masters[node.name] = node
        now = self._clock()
        waits = []
        for name, node in masters.items():
            if self._resting.get(name, 0.0) > now or await self._replicas(node, now) < 1:
                continue
            waits.append(
                PipelineCommand(-1, "WAIT", self.replicas, self.timeout_ms, target_nodes=node)
            )
        return waits

    async def _replicas(self, node: ClusterNode, now: float) -> int:
        """How many replicas ``node`` has, as it said at most ``recheck`` seconds ago."""
        known = self._known.get(node.name)
        if known is not None and known[1] > now:
            return known[0]
        try:
            reply = await node.execute_command("ROLE")
        except (RedisError, OSError):
            return 0  # asked again next time; the writes meet the same outage
        count = 0
        if isinstance(reply, list) and len(reply) >= 3 and reply[0] in (b"master", "master"):
            count = len(reply[2]) if isinstance(reply[2], list) else 0
        self._known[node.name] = (count, now + self.recheck)
        return count

    def settle(self, waits: list[Any], targets: list[str]) -> None:
        """Note the replies of ``waits`` (sent to the masters named ``targets``)."""
        for command, name in zip(waits, targets, strict=True):
            self._waits += 1
            if isinstance(command.result, int) and command.result >= self.replicas:
                continue
            self._missed += 1
            if isinstance(command.result, Exception):
                continue  # the writes met the same outage: they run again
            self._resting[name] = self._clock() + self.rest
            log.warning(
                "replica of Redis master %s did not confirm writes within %d ms; "
                "not waiting for it for %gs",
                name,
                self.timeout_ms,
                self.rest,
                extra={"event": "replica-behind", "master": name},
            )

    def stats(self) -> ReplicaWaitStats:
        """A snapshot of the waits so far."""
        return ReplicaWaitStats(self.replicas, self._waits, self._missed)


CLOSE_TIMEOUT = 5.0
"""Seconds :meth:`GuardedCluster.aclose` waits for its connections to close, at most."""


class GuardedCluster(RedisCluster):
    """A Redis Cluster client whose calls ride through outages (see the module).

    Until :meth:`guard_with` gives it a guard it behaves as redis-py's own client.
    """

    _guard: RedisGuard | None = None
    _replica_wait: ReplicaWait | None = None

    def guard_with(self, guard: RedisGuard) -> None:
        """Send every later command and pipeline through ``guard``."""
        self._guard = guard

    def wait_for_replicas(self, wait: ReplicaWait | None) -> None:
        """End each pipeline of scripts with ``wait``'s WAIT (None: no waits)."""
        self._replica_wait = wait

    @property
    def replica_wait(self) -> ReplicaWait | None:
        """The waits for replicas after pipelined writes, if any."""
        return self._replica_wait

    @property
    def guard(self) -> RedisGuard | None:
        """The guard every call goes through (None: redis-py's retries only)."""
        return self._guard

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        """As redis-py's, repeated through the guard while the cluster is away."""
        if self._guard is None:
            return await super().execute_command(*args, **kwargs)
        run = super().execute_command
        return await self._guard.call_with_retry(
            lambda: run(*args, **kwargs), self.refresh, is_retryable=transient
        )

    async def refresh(self, _error: BaseException | None = None) -> None:
        """Read the slot table again before the next call (a replica may lead a slot now)."""
        self._initialize = True

    async def reload(self) -> None:
        """Read the slot table now, not through the guard (an error passes: the caller tries
        again at its own pace). A pub/sub connection takes its node from the table, and sends
        no command that would have it read again."""
        await self.refresh()
        await self.initialize()

    async def initialize(
        self,
        additional_startup_nodes_info: list[tuple[str, int]] | None = None,
        last_failed_node_name: str | None = None,
    ) -> RedisCluster:
        """As redis-py's; the nodes met are remembered, so that closing the client closes
        the connections of those a failover took out of the slot table too, and of the
        startup nodes the table names otherwise (which redis-py drops)."""
        met = self._met()
        for node in self.nodes_manager.startup_nodes.values():
            met[id(node)] = node
        try:
            return await super().initialize(additional_startup_nodes_info, last_failed_node_name)
        finally:
            for node in self.nodes_manager.nodes_cache.values():
                met[id(node)] = node  # a few per failover: the topology's nodes

    async def aclose(self) -> None:
        """Close every connection, those of nodes no longer in the slot table included, and
        the startup nodes' (the first slot table's read): redis-py's own close does nothing
        while a slot table read is pending, which :meth:`refresh` asks for after an outage.
        The nodes close at once, and redis-py's background closes (of the idle connections
        of a node the slot table dropped, of a connection marked to reconnect) are waited
        for: nothing is open once this returns, or ``CLOSE_TIMEOUT`` has passed."""
        await super().aclose()
        met = self._met()
        manager = self.nodes_manager
        for node in (*manager.nodes_cache.values(), *manager.startup_nodes.values()):
            met[id(node)] = node
        nodes = list(met.values())
        met.clear()
        pending = [*manager._background_tasks, *(t for n in nodes for t in n._background_tasks)]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.gather(
                    *pending, *(node.disconnect() for node in nodes), return_exceptions=True
                )

    def _met(self) -> dict[int, ClusterNode]:
        met: dict[int, ClusterNode] | None = self.__dict__.get("_nodes_met")
        if met is None:
            met = self.__dict__["_nodes_met"] = {}
        return met

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> Any:
        """A pipeline whose ``execute`` rides through outages like a command."""
        if shard_hint:
            raise RedisClusterException("shard_hint is deprecated in cluster mode")
        # redis-py builds its own ClusterPipeline the same way (mypy sees an abstract member).
        return GuardedPipeline(self, transaction)  # type: ignore[abstract]


async def _settle(commands: list[PipelineCommand], quiet: float = 0.05, most: float = 2.0) -> None:
    """Wait for the replies still on their way to ``commands``: redis-py's pipeline raises as
    soon as one master cannot be reached while the others' replies are still being read, and a
    call sent again before its reply came would run twice (an add counted as a duplicate, a
    claim made twice). Returns once no reply has come for ``quiet`` seconds (``most`` at most)."""
    loop = asyncio.get_running_loop()
    end, answered = loop.time() + most, -1
    while loop.time() < end:
        now = sum(command.result is not None for command in commands)
        if now == answered:
            return
        answered = now
        await asyncio.sleep(quiet)


class GuardedPipeline(ClusterPipeline):
    """A cluster pipeline (or one-slot transaction) run through its client's guard."""

    async def initialize(self) -> ClusterPipeline:
        """Begin the pipeline (``async with``, ``await``). As redis-py's, it reads a slot table
        asked for (a transaction places its commands by it as they are queued), but through
        the guard (see the module)."""
        client = self.cluster_client
        if isinstance(client, GuardedCluster) and (guard := client.guard) is not None:
            begin = super().initialize
            return await guard.call_with_retry(begin, client.refresh, is_retryable=transient)
        return await super().initialize()

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> Any:
        """Run the queued commands; those that met an outage run again once it is over."""
        client = self.cluster_client
        guard = client.guard if isinstance(client, GuardedCluster) else None
        if guard is None:
            return await super().execute(raise_on_error, allow_redirections)
        strategy = self._execution_strategy
        try:
            if isinstance(strategy, PipelineStrategy):
                return await self._guarded_pipeline(
                    guard, strategy, raise_on_error, allow_redirections
                )
            return await self._guarded_transaction(guard, raise_on_error, allow_redirections)
        finally:
            await cast(Any, self).reset()

    async def _guarded_pipeline(
        self,
        guard: RedisGuard,
        strategy: PipelineStrategy,
        raise_on_error: bool,
        allow_redirections: bool,
    ) -> list[Any]:
        client = self.cluster_client
        stack: list[PipelineCommand] = list(strategy._command_queue)
        pending = stack

        assert isinstance(client, GuardedCluster)
        replica_wait = client.replica_wait

        async def attempt() -> None:
            nonlocal pending
            if client._initialize:
                await client.initialize()
            for command in pending:
                command.result = None
            waits = [] if replica_wait is None else await replica_wait.commands(client, pending)
            targets = [w.kwargs["target_nodes"].name for w in waits]
            try:
                await strategy._execute(client, [*pending, *waits], False, allow_redirections)
            except Exception as error:
                if transient(error):  # only the calls no master answered run again
                    await _settle(pending)
                    pending = [c for c in pending if c.result is None or transient(c.result)]
                raise
            if replica_wait is not None:
                replica_wait.settle(waits, targets)
            met_outage = [c for c in pending if transient(c.result)]
            if met_outage:
                pending = met_outage
                raise met_outage[0].result

        await guard.call_with_retry(attempt, client.refresh, is_retryable=transient)
        results = [command.result for command in stack]
        if raise_on_error:
            for result in results:
                if isinstance(result, Exception):
                    raise result
        return results

    async def _guarded_transaction(
        self, guard: RedisGuard, raise_on_error: bool, allow_redirections: bool
    ) -> Any:
        strategy = self._execution_strategy
        queue = list(getattr(strategy, "_command_queue", ()))
        slots = set(getattr(strategy, "_pipeline_slots", ()))
        client = self.cluster_client

        async def attempt() -> Any:
            if client._initialize:  # a transaction does not read the slot table itself
                await client.initialize()
            strategy._command_queue = list(queue)  # type: ignore[attr-defined]
            strategy._pipeline_slots = set(slots)  # type: ignore[attr-defined]
            return await strategy.execute(raise_on_error, allow_redirections)

        async def failed(error: BaseException) -> None:
            await cast(Any, strategy).reset()
            assert isinstance(client, GuardedCluster)
            await client.refresh(error)

        return await guard.call_with_retry(attempt, failed, is_retryable=transient)

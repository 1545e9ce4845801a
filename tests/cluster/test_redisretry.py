"""The one retry policy of a worker's Redis calls: which errors are an outage, a Redis Cluster
client riding through a killed master (real servers: 3 masters, 3 replicas), the outage seen
in the guard's stats, and pipelined writes waiting for a replica."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from redis.asyncio.cluster import ClusterNode
from redis.exceptions import (
    AskError,
    AuthenticationError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tests.clock import SleepClock
from tests.redis_replicas import ReplicatedCluster
from tests.redis_server import RedisClusterServer

from gossamer.cluster.control import Control
from gossamer.cluster.jobs import connect, open_control
from gossamer.cluster.redisretry import GuardedCluster, transient
from gossamer.cluster.resilient import RedisGuard, RedisUnavailable, install_guard
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.urls import Scope


@pytest.fixture
def replicated() -> Iterator[ReplicatedCluster]:
    with ReplicatedCluster() as cluster:
        yield cluster


def test_outages_are_waited_out_and_failures_pass() -> None:
    outages = [
        RedisConnectionError("Error 111 connecting. Connection refused."),
        RedisTimeoutError("Timeout reading from socket"),
        ClusterDownError("The cluster is down"),
        TryAgainError("TRYAGAIN"),
        MovedError("3999 127.0.0.1:6381"),
        AskError("3999 127.0.0.1:6381"),
        ReadOnlyError("You can't write against a read only replica."),
        SlotNotCoveredError('Slot "3999" not covered by the cluster.'),
        RedisClusterException("Redis Cluster cannot be connected. Please provide ..."),
        RedisClusterException("All slots are not covered after query all startup_nodes."),
        ConnectionResetError(),
    ]
    failures = [
        AuthenticationError("invalid username-password pair"),
        ResponseError("ERR Error running script"),
        NoScriptError("NOSCRIPT No matching script."),
        RedisClusterException("Too many targets for command"),
        ValueError("bad"),
    ]
    assert all(transient(error) for error in outages)
    assert not any(transient(error) for error in failures)


def test_an_attribute_error_is_an_outage_only_inside_redis_py() -> None:
    # redis-py's cluster client meets a target node of None while its slot table is half
    # updated (redis/redis-py#3835); the same error in gossamer's code is a bug to show.
    try:
        repr(ClusterNode.__repr__(None))  # type: ignore[arg-type]
    except AttributeError as error:
        inside = error
    try:
        None.name  # type: ignore[attr-defined] # noqa: B018
    except AttributeError as error:
        outside = error
    assert transient(inside)
    assert not transient(outside)


async def test_the_guard_shows_an_outage_while_it_lasts() -> None:
    clock = SleepClock()
    guard = RedisGuard("redis://127.0.0.1:1/0", 30.0, clock=clock, sleep=clock.sleep)
    seen = []
    answers = iter([RedisConnectionError("refused")] * 4 + ["up"])

    async def flaky() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            seen.append(guard.stats())
            raise answer
        return answer

    async def noop(_: Exception) -> None:
        return None

    assert guard.stats().down == 0
    assert await guard.call_with_retry(flaky, noop) == "up"
    assert seen[-1].down == 1 and seen[-1].outages_total == 1 and seen[-1].down_seconds > 0
    after = guard.stats()
    assert (after.down, after.outages_total, after.down_seconds) == (0, 1, 0.0)
    assert after.last_outage_seconds == pytest.approx(sum(clock.slept))


def _frontier(control: Control) -> RedisFrontier:
    return RedisFrontier(
        control.redis,
        "j",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        config=RedisFrontierConfig(partitions=64, refresh_interval=0.0),
    )


def _urls(first: int, count: int) -> list[Candidate]:
    return [Candidate(f"http://h{i % 40}.test/{i}") for i in range(first, first + count)]


@pytest.mark.timeout(60)
async def test_cluster_calls_wait_for_a_killed_masters_replica(
    replicated: ReplicatedCluster,
) -> None:
    control = await open_control(replicated.url, "j")
    assert isinstance(control.redis, GuardedCluster)
    guard = install_guard(control.redis, replicated.url, budget=30)
    frontier = _frontier(control)
    try:
        assert (await frontier.add(_urls(0, 200))).added == 200
        victim = replicated.busiest_master()
        heir = replicated.replica_of(victim)
        replicated.kill(victim)
        started = time.monotonic()
        # Scripts in pipelines, transactions and plain commands, all while the slot is down.
        added, _, _ = await asyncio.gather(
            frontier.add(_urls(200, 200)),
            control.heartbeat("w", {"pages": 1}, 5.0),
            control.redis.set("gs:{j}:probe", "1"),
        )
        waited = time.monotonic() - started
        promoted = replicated.role(heir)
    finally:
        await control.redis.aclose()
    assert added.added == 200  # none of the first 200 was lost with the master
    assert promoted == "master"
    assert waited > 0.5  # the calls did wait for the promotion
    stats = guard.stats()
    assert stats.outages_total >= 1 and stats.down == 0


@pytest.mark.timeout(60)
async def test_writes_wait_for_a_replica_and_a_dead_one_is_not_waited_for(
    replicated: ReplicatedCluster,
) -> None:
    control = await open_control(replicated.url, "j")
    guard = install_guard(control.redis, replicated.url, budget=30)
    frontier = _frontier(control)
    try:
        await frontier.add(_urls(0, 200))
        first = guard.stats()
        assert first.replica_waits_total >= 3 and first.replica_waits_missed_total == 0
        replicated.kill(replicated.replicas()[0])
        await frontier.add(_urls(200, 200))  # one master's WAIT times out (1 s)
        missed = guard.stats().replica_waits_missed_total
        started = time.monotonic()
        await frontier.add(_urls(400, 200))
        quick = time.monotonic() - started
    finally:
        await control.redis.aclose()
    assert missed == 1
    assert quick < 0.8  # that master is not waited for again for a while
    assert guard.stats().replica_waits_missed_total == 1


@pytest.mark.timeout(60)
async def test_a_slot_gone_for_good_fails_after_the_budget(replicated: ReplicatedCluster) -> None:
    control = await open_control(replicated.url, "j")
    budget = 3.0
    guard = install_guard(control.redis, replicated.url, budget=budget)
    try:
        victim = replicated.busiest_master()
        heir = replicated.replica_of(victim)
        key = await _key_served_by(control, victim)
        replicated.kill(heir)
        replicated.kill(victim)  # the slot has no node left: no failover can save it
        started = time.monotonic()
        with pytest.raises(RedisUnavailable) as caught:
            await control.redis.set(key, "1")
        waited = time.monotonic() - started
    finally:
        await control.redis.aclose()
    # the last try, begun inside the budget, ends on its own: a topology read and connects to
    # dead nodes, some seconds on a loaded machine (4 s in all here when quiet, 8.3 s seen
    # under a full test run)
    assert budget <= waited < budget + 10, waited
    assert f"unreachable for {budget:g} s" in str(caught.value)
    assert guard.gave_up and guard.stats().outages_total == 1


async def _key_served_by(control: Control, port: int) -> str:
    """A key whose slot the master on ``port`` serves."""
    assert isinstance(control.redis, GuardedCluster)
    for i in range(10_000):
        key = f"gs:{{j:{i}}}:probe"
        node = control.redis.nodes_manager.get_node_from_slot(control.redis.keyslot(key))
        if node.port == port:
            return key
    raise LookupError(port)


async def test_closing_after_a_slot_table_read_was_asked_for_closes_every_connection() -> None:
    """A guarded call that met an outage asks for the slot table again before the next call
    (:meth:`GuardedCluster.refresh`); closed then, the client still closes every connection,
    the startup node's it read the first table from too (redis-py's own close does nothing
    while a read is pending: the connection stayed open past the event loop's end, which
    uvloop reported at its close, or failed with EBUSY)."""
    with RedisClusterServer() as cluster:
        control = await open_control(cluster.url, "j")
        client = control.redis
        assert isinstance(client, GuardedCluster)
        await client.set("gs:{j}:probe", "1")
        await client.refresh()
        await client.aclose()
        manager = client.nodes_manager
        nodes = [*manager.startup_nodes.values(), *manager.nodes_cache.values()]
        assert nodes
        assert not [n.name for n in nodes if any(c.is_connected for c in n._connections)]


async def test_closing_closes_the_connection_of_a_startup_node_the_slot_table_dropped() -> None:
    """A startup node the slot table names otherwise (given as 127.0.0.2, the nodes call
    themselves 127.0.0.1) is dropped from redis-py's nodes, its connection, which read the
    table, left to a background task of redis-py's: closing the client right after the read
    (as a start-up cancelled then does) waits for that task, so nothing is open once the
    close returns. Before, the connection was still open then (and the task pending)."""
    with RedisClusterServer(config=("--bind", "127.0.0.1 127.0.0.2")) as cluster:
        client = connect(cluster.url.replace("//127.0.0.1:", "//127.0.0.2:"), cluster=True)
        assert isinstance(client, GuardedCluster)
        manager = client.nodes_manager
        (given,) = manager.startup_nodes.values()
        await manager.initialize()  # the slot table read, as the client's first call runs it
        assert given not in manager.startup_nodes.values()
        assert [c.is_connected for c in given._connections] == [True]
        await client.aclose()
        nodes = [given, *manager.startup_nodes.values(), *manager.nodes_cache.values()]
        assert not [n.name for n in nodes if any(c.is_connected for c in n._connections)]
        assert not manager._background_tasks


@pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])
async def test_a_connection_taken_while_redis_py_closes_it_is_an_outage() -> None:
    """redis-py closes a node's connections, the idle ones too, when a slot table read fails
    or a failover answers CLUSTERDOWN; until the close ends, an idle one looks connected still
    and another call may take it. uvloop then raises ``RuntimeError ... the handler is closed``
    from the write (the standard loop drops the write, and the read meets the end): a worker
    crashed on it during a master failover. The guard waits it out like any cut connection."""
    with RedisClusterServer() as cluster:
        control = await open_control(cluster.url, "j")
        client = control.redis
        assert isinstance(client, GuardedCluster)
        install_guard(client, cluster.url, budget=30)
        try:
            await client.set("gs:{j}:probe", "1")
            node = client.nodes_manager.get_node_from_slot(client.keyslot("gs:{j}:probe"))
            [idle] = node._free
            assert idle._writer is not None
            # What redis-py's close of a node runs for each of its connections.
            closing = asyncio.create_task(idle.disconnect())
            await asyncio.sleep(0)  # one turn: the close has begun, waits for its end
            assert idle._writer.transport.is_closing()
            assert not closing.done() and idle.is_connected
            assert await client.get("gs:{j}:probe") == b"1"
            await closing
        finally:
            await client.aclose()


def test_a_closed_handler_is_an_outage_only_inside_redis_py() -> None:
    message = "unable to perform operation on <TCPTransport closed=True>; the handler is closed"

    try:
        raise RuntimeError(message)  # not from a write to Redis: a bug of gossamer's to show
    except RuntimeError as error:
        outside = error
    assert not transient(outside)
    assert not transient(RuntimeError("Event loop is closed"))

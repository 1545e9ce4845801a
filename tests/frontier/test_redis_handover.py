"""Handing a partition over (host mode): the new owner claims none of its URLs while the old
owner still has a request to one of its hosts in flight, nor before that host's delay has
passed since the request started; a dead old owner's fence lapses with its leases. A new
owner that learns of the assignment first claims nothing before the old owner has handed the
partition over, unless the old owner is gone from the job's workers or the grace has passed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Collection
from importlib import resources

import pytest
from redis.asyncio import Redis

from gossamer.frontier.base import Candidate, Feedback, Lease
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import (
    Ownership,
    Peers,
    RedisFrontier,
    RedisFrontierConfig,
    partition_keys,
    partition_of,
    run_scripts,
)
from gossamer.urls import Scope, host_key

DELAY = 0.3
HOST = "http://slow.test"


EVERY, NONE = Ownership(frozenset(range(8))), Ownership(frozenset())
LATER_EVERY, LATER_NONE = Ownership(EVERY.partitions, 1), Ownership(NONE.partitions, 1)
"""The next assignment's shares."""
GRACE = 0.8


class Workers:
    """The job's live workers, as the cluster's membership tells them."""

    def __init__(self) -> None:
        self.live = {"old", "new"}

    async def alive(self, names: Collection[str]) -> Collection[str]:
        return self.live & set(names)


def frontier(
    client: Redis,
    owned: Ownership,
    lease_timeout: float = 30.0,
    *,
    name: str = "",
    workers: Workers | None = None,
) -> RedisFrontier:
    made = RedisFrontier(
        client,
        "handover",
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(per_host=1, delay=DELAY),
        ownership=owned,
        config=RedisFrontierConfig(partitions=8, lease_timeout=lease_timeout, handover_grace=GRACE),
    )
    if name:
        made.join(Peers(name, (workers or Workers()).alive))
    return made


def pair(client: Redis, workers: Workers | None = None) -> tuple[RedisFrontier, RedisFrontier]:
    """Two cluster workers: the old owner of every partition, and the new one."""
    old = frontier(client, EVERY, name="old", workers=workers)
    return old, frontier(client, NONE, name="new", workers=workers)


async def first_lease(new: RedisFrontier, limit: float = 3.0) -> tuple[Lease, float]:
    """Lease from ``new`` every 10 ms until it gets a URL; the URL and when."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = await new.lease(1)
        if got:
            return got[0], time.monotonic()
        await asyncio.sleep(0.01)
    raise AssertionError("the new owner never got a URL")


async def test_new_owner_waits_for_the_request_in_flight_and_the_delay(client: Redis) -> None:
    old, new = frontier(client, EVERY), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(3)])
    (in_flight,) = await old.lease(5)  # one at a time: the host has a delay
    started = time.monotonic()
    assert await old.own(NONE) == 2
    await new.own(EVERY)
    for _ in range(4):  # the request is still in flight: nothing for the new owner
        assert await new.lease(5) == []
        await asyncio.sleep(0.1)
    await old.ack(in_flight, Feedback(started_at=started))
    lease, at = await first_lease(new)
    assert lease.url != in_flight.url
    assert at - started >= DELAY - 0.005  # the fence is kept in whole milliseconds
    assert at - started < DELAY + 0.5


async def test_a_host_fetched_just_before_the_hand_over_keeps_its_delay(client: Redis) -> None:
    old, new = frontier(client, EVERY), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (done,) = await old.lease(5)
    started = time.monotonic()
    await old.ack(done, Feedback(started_at=started))
    assert await old.own(NONE) == 1
    await new.own(EVERY)
    _, at = await first_lease(new)
    assert at - started >= DELAY - 0.005


async def test_a_dead_old_owners_fence_lapses_with_its_leases(client: Redis) -> None:
    old, new = frontier(client, EVERY, lease_timeout=0.6), frontier(client, NONE)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    assert len(await old.lease(5)) == 1
    dropped = time.monotonic()
    await old.own(NONE)  # and then it dies: no ack ever comes
    await new.own(EVERY)
    _, at = await first_lease(new)
    assert 0.6 - 0.005 <= at - dropped < 0.6 + 0.5


async def test_a_partition_back_before_its_request_ended_is_fenced_until_then(
    client: Redis,
) -> None:
    """Given away and handed back (assignments in quick succession while workers join): the
    request still in flight lifts the worker's own fence when it ends, as for anyone."""
    worker = frontier(client, EVERY)
    await worker.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (in_flight,) = await worker.lease(5)
    started = time.monotonic()
    await worker.own(NONE)
    await worker.own(EVERY)  # back at once
    assert await worker.lease(5) == []  # its own request is still in flight
    await worker.ack(in_flight, Feedback(started_at=started))
    _, at = await first_lease(worker)
    assert DELAY - 0.005 <= at - started < DELAY + 0.5


async def test_a_late_fence_call_never_undoes_a_later_one(client: Redis) -> None:
    """Fence calls of one worker can reach Redis out of order (two connections, a retried
    call): the lift numbered after the fence wins even when it arrives first."""
    new = frontier(client, EVERY)
    await new.add([Candidate(f"{HOST}/0")])
    fence = partition_keys("handover", partition_of(HOST, 8))["fence"]
    script = client.register_script(
        (resources.files("gossamer.frontier.redis") / "lua" / "fence.lua").read_text("utf-8")
    )
    keys = [fence, partition_keys("handover", partition_of(HOST, 8))["holder"]]
    lift, hold = [0, 2, 60_000, "old", 0], [30_000, 1, 60_000, "old", 0]  # ms, seq, keep, name, v
    assert await run_scripts(client, [(script, keys, ["old", *lift])]) == [1]
    assert await run_scripts(client, [(script, keys, ["old", *hold])]) == [0]
    assert await client.hget(fence, "old") == b"0:2"
    assert len(await new.lease(5)) == 1


async def test_a_new_owner_learning_first_keeps_the_old_owners_delay(client: Redis) -> None:
    """Workers follow the assignment each at its own pace: the new owner may own a partition
    while its old owner, not knowing yet, still fetches from its hosts. A URL queued after the
    old owner's claim (an outlink) is the new owner's to claim once the old owner hands the
    partition over, its host's delay since the old owner's last request start kept."""
    old, new = pair(client)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (in_flight,) = await old.lease(5)  # both claimed, one leased: the host has a delay
    started = time.monotonic()
    await old.add([Candidate(f"{HOST}/late")])  # queued in Redis, claimed by no one yet
    await new.own(LATER_EVERY)  # the old owner has not seen the new assignment yet
    assert await new.lease(5) == []  # it still fetches from the host
    await old.own(LATER_NONE)  # now it has: its request to the host is still in flight
    assert await old.lease(5) == []  # and it starts no other
    assert await new.lease(5) == []
    await old.ack(in_flight, Feedback(started_at=started))
    lease, at = await first_lease(new)
    assert lease.url != in_flight.url
    assert at - started >= DELAY - 0.005, at - started
    assert at - started < DELAY + 0.5


async def test_a_silent_old_owner_is_waited_for_the_grace_only(client: Redis) -> None:
    """An old owner that never follows the assignment (stuck, or killed after it was
    published, its heartbeat not run out yet) holds the partition for the grace, no longer."""
    old, new = pair(client)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    assert len(await old.lease(5)) == 1
    await old.add([Candidate(f"{HOST}/late")])
    gained = time.monotonic()
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert GRACE - 0.005 <= at - gained < GRACE + 0.5
    await old.add([Candidate(f"{HOST}/more")])  # its claims take nothing from now on
    assert all(not lease.url.endswith("/more") for lease in await old.lease(5))
    counts = partition_keys("handover", partition_of(HOST, 8))["counts"]
    assert await client.hget(counts, "queued") == b"1"


async def test_an_old_owner_gone_from_the_workers_is_not_waited_for(client: Redis) -> None:
    """Killed, the old owner leaves the job's workers when its heartbeat runs out, and only
    then are its partitions moved: the new owner claims from them at once."""
    workers = Workers()
    old, new = pair(client, workers)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    assert len(await old.lease(5)) == 1
    await old.add([Candidate(f"{HOST}/late")])  # and then it dies
    workers.live.discard("old")
    gained = time.monotonic()
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert at - gained < GRACE / 2


async def test_a_worker_leaving_hands_over_the_partitions_it_claimed_from(client: Redis) -> None:
    """A worker that stops hands over the partitions it claimed from, those it holds no claim
    of too: the next owner waits for their hosts' delay, neither less nor the grace."""
    old, new = pair(client)
    await old.add([Candidate(f"{HOST}/0")])
    (done,) = await old.lease(5)
    started = time.monotonic()
    await old.ack(done, Feedback(started_at=started))
    await old.add([Candidate(f"{HOST}/1")])
    await old.close()  # it holds no claim now, and leaves
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert DELAY - 0.005 <= at - started < DELAY + 0.3


async def test_a_claim_out_as_the_partition_goes_hands_it_over_too(client: Redis) -> None:
    """A claim answered after its partitions were given away recorded its worker as their
    holder: the worker hands them over again at once, so the new owner does not wait."""
    old, new = pair(client)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    leasing = asyncio.create_task(old.lease(5))
    await asyncio.sleep(0)  # the claim is on its way to Redis
    await old.own(LATER_NONE)
    assert await leasing == []
    gained = time.monotonic()
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert at - gained < GRACE / 2


@pytest.mark.parametrize("record", [b"\xff\x00no version", b"old:123456789012345678901"])
async def test_a_holder_record_gossamer_never_wrote_holds_nothing_back(
    client: Redis, record: bytes
) -> None:
    _, new = pair(client)
    await new.add([Candidate(f"{HOST}/0")])
    await client.set(partition_keys("handover", partition_of(HOST, 8))["holder"], record)
    gained = time.monotonic()
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert at - gained < GRACE / 2


@pytest.mark.parametrize("steps", range(8))
async def test_a_hand_over_cancelled_midway_is_finished_by_the_close(
    client: Redis, steps: int
) -> None:
    """A worker stopping cancels its keeper mid-duty, a hand-over included, ``steps`` turns
    of the loop in (some cancel it at each of its awaits, some after it ended): ``close()``
    still gives every held entry back and lifts its fences, so the new owner gets all the
    URLs at once rather than after the claims' and the fences' lease timeout (30 s here)."""
    old, new = pair(client)
    urls = {f"{HOST}/{i}" for i in range(3)} | {f"http://other{i}.test/" for i in range(4)}
    await old.add([Candidate(url) for url in sorted(urls)])
    in_flight = await old.lease(10)
    started = time.monotonic()
    moving = asyncio.create_task(old.own(LATER_NONE))
    for _ in range(steps):
        await asyncio.sleep(0)
    moving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await moving
    for lease in in_flight:
        await old.ack(lease, Feedback(started_at=started))
    await old.close()
    await new.own(LATER_EVERY)
    got: set[str] = set()
    deadline = time.monotonic() + 3.0
    while got != urls - {lease.url for lease in in_flight}:
        assert time.monotonic() < deadline, sorted(got)
        for lease in await new.lease(10):
            got.add(lease.url)
            await new.ack(lease, Feedback(started_at=time.monotonic()))
        await asyncio.sleep(0.01)


async def test_a_fence_call_redis_refuses_is_not_sent_with_every_later_call(
    client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A fence call Redis answers with an error of its data (a key of another type) is logged
    and dropped: the hand-over goes on, and the call is not kept to fail the later calls of
    other partitions with it (one cut off or cancelled on its way is: see the tests above)."""
    old, _ = pair(client)
    other = "http://other.test"
    assert partition_of(other, 8) != partition_of(HOST, 8)
    await old.add([Candidate(f"{HOST}/0"), Candidate(f"{other}/0")])
    leases = {lease.host: lease for lease in await old.lease(5)}
    assert len(leases) == 2
    await old.ack(leases.pop(host_key(HOST)), Feedback(started_at=time.monotonic()))
    await client.set(partition_keys("handover", partition_of(HOST, 8))["fence"], b"not a hash")
    await old.own(LATER_NONE)
    assert "fence refused by Redis" in caplog.text
    (in_flight,) = leases.values()  # its partition's fence lifted with its ack, alone
    await old.ack(in_flight, Feedback(started_at=time.monotonic()))
    assert caplog.text.count("fence refused by Redis") == 1


async def test_a_request_outside_the_leases_does_not_fence_its_host_for_the_lease_timeout(
    client: Redis,
) -> None:
    """A request outside the leases (through the host gate: a sitemap's read, a focus
    example) holds its host's connection as the partition goes: the new owner waits for the
    host's delay since that request started, not for the fence's lease timeout (30 s here),
    which nothing would lift (the gate hands the slot back to a host the scheduler forgot).
    Before, the fence counted the host as busy until then."""
    old, new = pair(client)
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    assert await old.lease(0) == []  # claimed, the host known: nothing leased
    assert old.slots.claim(host_key(HOST)) == 0.0  # the request starts
    started = time.monotonic()
    await old.own(LATER_NONE)
    await new.own(LATER_EVERY)
    _, at = await first_lease(new)
    assert DELAY - 0.005 <= at - started < DELAY + 0.5
    old.slots.unclaim(host_key(HOST), Feedback(started_at=started))  # it ends


async def test_a_request_outside_the_leases_outlasting_them_does_not_keep_the_fence(
    client: Redis,
) -> None:
    """The last lease of a partition given away lifts its fence down to its hosts' delay
    even while a request outside the leases to another of its hosts is still in flight."""
    old, new = pair(client)
    hosts = (f"http://h{i}.test" for i in range(100))
    other = next(host for host in hosts if partition_of(host, 8) == partition_of(HOST, 8))
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)] + [Candidate(f"{other}/0")])
    assert await old.lease(0) == []
    assert old.slots.claim(host_key(other)) == 0.0  # say its sitemap's read
    (in_flight,) = await old.lease(5)  # HOST's: the other host's connection is taken
    started = time.monotonic()
    await old.own(LATER_NONE)
    await new.own(LATER_EVERY)
    assert await new.lease(5) == []  # the request to HOST is still in flight
    await old.ack(in_flight, Feedback(started_at=started))
    _, at = await first_lease(new)
    assert DELAY - 0.005 <= at - started < DELAY + 0.5
    old.slots.unclaim(host_key(other), Feedback(started_at=started))


async def test_a_robots_redirect_in_flight_as_the_partition_goes_does_not_keep_the_fence(
    client: Redis,
) -> None:
    """A robots.txt redirect's next hop goes through the host gate inside the host's lease,
    pace only (a second connection: :mod:`gossamer.robots_fetch`). Given away meanwhile, the
    host is forgotten and the hop's slot comes back to no host: when the lease ends, the
    fence comes down all the same (here at once: the host has no delay), not after the lease
    timeout (30 s)."""
    workers = Workers()
    policy = PolitenessPolicy(per_host=1)
    old, new = (
        RedisFrontier(
            client,
            "handover",
            Scope.for_seeds([], ["test"], max_depth=5),
            policy,
            ownership=owned,
            config=RedisFrontierConfig(partitions=8, lease_timeout=30.0, handover_grace=GRACE),
        )
        for owned in (EVERY, NONE)
    )
    old.join(Peers("old", workers.alive))
    new.join(Peers("new", workers.alive))
    await old.add([Candidate(f"{HOST}/{i}") for i in range(2)])
    (in_flight,) = await old.lease(5)
    assert old.slots.claim(host_key(HOST), room=False) == 0.0  # the redirect's hop
    await old.own(LATER_NONE)
    await new.own(LATER_EVERY)
    old.slots.unclaim(host_key(HOST), None)  # the hop ends
    assert await new.lease(5) == []  # the lease's request is still in flight
    await old.ack(in_flight, Feedback(started_at=time.monotonic()))
    lease, _ = await first_lease(new, limit=1.0)
    assert lease.url != in_flight.url

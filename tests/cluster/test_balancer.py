"""The leader's balancer on a real redis-server: plans from heartbeat figures and partition
load, keeps the model in Redis, and the workers' observation windows."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from gossamer.balance.capability import Capability, Live
from gossamer.balance.model import Observation
from gossamer.cluster.balancer import (
    KEYS,
    Balancer,
    Observer,
    load_model,
    model_report,
    observations,
    partition_load,
    record,
)
from gossamer.cluster.control import Control
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig
from gossamer.urls import Scope

P = 64
_jobs = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer(cluster=True) as server:
        yield server


@pytest.fixture
async def control(redis_server: RedisServer) -> AsyncIterator[Control]:
    redis = Redis.from_url(redis_server.url)
    await redis.delete(*KEYS.values())
    yield Control(redis, f"bal{next(_jobs)}")
    await redis.aclose()


async def _queue(control: Control, hosts: int, per_host: int) -> None:
    frontier = RedisFrontier(
        control.redis,
        control.job,
        Scope.for_seeds([], ["test"], max_depth=5),
        PolitenessPolicy(),
        config=RedisFrontierConfig(partitions=P),
    )
    await frontier.add(
        [Candidate(f"http://h{h}.test/p{i}") for h in range(hosts) for i in range(per_host)]
    )


async def _join(control: Control, name: str, rate: float) -> None:
    figures = {
        "capability": Capability(cores=2, concurrency=8).to_json(),
        "live": Live(pages_per_second=rate).to_json(),
    }
    await control.heartbeat(name, figures, 30)


def _load_of(owned: frozenset[int], load: dict[int, int]) -> int:
    return sum(load.get(p, 0) for p in owned)


async def test_weighted_plan_follows_measured_rates(control: Control) -> None:
    await _queue(control, hosts=200, per_host=3)
    await _join(control, "slow", 10.0)
    await _join(control, "fast", 30.0)
    assert await control.lead("slow", 30)
    clock = Clock()
    balancer = Balancer(control, P, "weighted", plan_every=2.0, clock=clock)
    assert await balancer.rebalance("slow") == 1
    plan = await control.assignment()
    load = await partition_load(control, P)
    assert sum(load.values()) == 600
    assert set().union(*plan.values()) == set(range(P))
    assert not plan["slow"] & plan["fast"]
    share = _load_of(plan["fast"], load) / 600
    assert 0.65 <= share <= 0.85, share  # 3:1 rates, in whole partitions

    # Small changes in the figures move nothing; nothing is planned before plan_every.
    await _join(control, "fast", 31.0)
    assert await balancer.rebalance("slow") is None
    clock.now += 3
    assert await balancer.rebalance("slow") is None
    assert await control.assignment() == plan

    # The rates swap: the plan follows.
    await _join(control, "slow", 30.0)
    await _join(control, "fast", 10.0)
    clock.now += 3
    assert await balancer.rebalance("slow") == 2
    swapped = await control.assignment()
    assert _load_of(swapped["slow"], load) / 600 >= 0.65


async def test_equal_only_moves_on_membership(control: Control) -> None:
    await _queue(control, hosts=50, per_host=1)
    await _join(control, "a", 1.0)
    assert await control.lead("a", 30)
    balancer = Balancer(control, P, "equal")
    assert await balancer.rebalance("a") == 1
    assert await balancer.rebalance("a") is None
    await _join(control, "b", 100.0)  # a hundred times faster: equal all the same
    assert await balancer.rebalance("a") == 2
    plan = await control.assignment()
    assert sorted(plan["a"] | plan["b"]) == list(range(P)) and not plan["a"] & plan["b"]
    load = await partition_load(control, P)
    assert sum(load.values()) == 50
    # the 50 URLs split evenly, up to one partition's worth
    assert abs(_load_of(plan["a"], load) - _load_of(plan["b"], load)) <= max(load.values())
    assert await balancer.rebalance("a") is None  # the load moves on, the plan stays


async def test_no_workers_publishes_nothing(control: Control) -> None:
    await control.lead("ghost", 30)
    assert await Balancer(control, P, "bpnn-pso").rebalance("ghost") is None
    assert await control.assignment() == {}


async def test_model_is_trained_from_observations_and_kept_in_redis(control: Control) -> None:
    assert await load_model(control) is None
    for i in range(60):
        bandwidth = 50_000.0 * (1 + i % 5)
        cap = Capability(cores=2, concurrency=8, bandwidth_bps=bandwidth)
        n = 20 + i
        await record(control, Observation(cap, n, n * 30_000 / bandwidth))
    assert len(await observations(control)) == 60
    balancer = Balancer(control, P, "bpnn-pso", clock=Clock())
    report = await balancer.train()
    assert report is not None and report.trained == 60
    assert await balancer.train() is None  # not before train_every
    stored = await load_model(control)
    assert stored is not None and stored.kind == report.model.kind
    summary = await model_report(control)
    assert summary is not None and summary["observations"] == 60
    assert summary["linear_mape_pct"] is not None
    # The model predicts that the wider pipe finishes the same work sooner.
    narrow = Capability(cores=2, concurrency=8, bandwidth_bps=50_000.0)
    wide = Capability(cores=2, concurrency=8, bandwidth_bps=250_000.0)
    assert stored.predict(wide, [100])[0] < stored.predict(narrow, [100])[0]


async def test_bpnn_pso_gives_the_faster_worker_more(control: Control) -> None:
    await _queue(control, hosts=200, per_host=3)
    for name, bandwidth in (("a", 100_000.0), ("b", 400_000.0)):
        cap = Capability(cores=2, concurrency=8, bandwidth_bps=bandwidth)
        await control.heartbeat(name, {"capability": cap.to_json()}, 30)
    assert await control.lead("a", 30)
    assert await Balancer(control, P, "bpnn-pso").rebalance("a") == 1
    plan = await control.assignment()
    load = await partition_load(control, P)
    assert _load_of(plan["b"], load) > 2 * _load_of(plan["a"], load)


def test_observer_records_busy_windows_only() -> None:
    cap = Capability(cores=1, concurrency=4)
    observer = Observer(windows=(5.0,))
    assert observer.sample(0.0, 0, True, cap) is None
    assert observer.sample(3.0, 30, True, cap) is None
    seen = observer.sample(5.0, 50, True, cap)
    assert seen is not None and (seen.n, seen.seconds) == (50, 5.0)
    assert observer.busy_rate == 10.0
    # An idle moment discards the window under way.
    assert observer.sample(7.0, 70, False, cap) is None
    assert observer.sample(8.0, 70, True, cap) is None
    assert observer.sample(12.0, 100, True, cap) is None
    seen = observer.sample(13.0, 110, True, cap)
    assert seen is not None and (seen.n, seen.seconds) == (40, 5.0)

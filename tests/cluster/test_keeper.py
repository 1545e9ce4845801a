"""The keeper's schedule on its own: which duty runs when, and how long its Redis errors are
borne; synchronous where it can be, on a fake clock, exact."""

from __future__ import annotations

import pytest
from redis.exceptions import RedisError, ResponseError

from gossamer.cluster.keeper import HEARD, Duties, Pace, heard_periods, periods
from gossamer.cluster.resilient import RedisUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def ok() -> None:
    return None


def duties(clock: Clock, budget: float = 30.0, **every: float) -> Duties:
    return Duties({name: (seconds, ok) for name, seconds in every.items()}, budget, clock)


def names(found: Duties) -> list[str]:
    return [duty.name for duty in found.due()]


def test_each_duty_runs_at_its_own_pace_in_order() -> None:
    clock = Clock()
    keeper = duties(clock, fast=1.0, slow=3.0)
    keeper.start()
    assert keeper.wait() == 1.0
    assert names(keeper) == []  # nothing is due before its first period
    clock.now = 101.0
    assert names(keeper) == ["fast"]
    assert keeper.wait() == 1.0
    clock.now = 103.0
    assert names(keeper) == ["fast", "slow"]
    assert keeper.wait() == 1.0
    clock.now = 110.0  # late: each runs once, not once per period missed
    assert names(keeper) == ["fast", "slow"]
    assert keeper.wait() == 1.0


def test_a_duty_that_runs_long_delays_the_next_ones_by_as_much() -> None:
    clock = Clock()
    keeper = duties(clock, first=1.0, second=1.0)
    keeper.start()
    clock.now = 101.0
    ran = []
    for duty in keeper.due():
        ran.append(duty.name)
        clock.now += 5.0  # the duty took five seconds
    assert ran == ["first", "second"]
    assert [duty.due for duty in keeper.duties] == [102.0, 107.0]
    assert keeper.wait() == 0.0  # first is overdue by then


def test_the_periods_follow_the_job_settings() -> None:
    fast = periods(Pace(heartbeat_ttl=0.9, claim_timeout=3.0, refresh_interval=0.5))
    assert list(fast) == [
        "beat", "lead", "rebalance", "follow", "hints", "renew", "reclaim", "refresh", "look",
        "observe",
        "state",
    ]  # fmt: skip
    assert fast["beat"] == pytest.approx(0.3)
    assert fast["lead"] == pytest.approx(0.3)  # never slower than the heartbeat
    assert fast["follow"] == 0.1
    assert fast["state"] == 0.25
    assert fast["renew"] == 1.0
    assert fast["reclaim"] == 1.0  # at least a second
    assert fast["refresh"] == 2.5
    assert fast["look"] == 2.5  # one worker: as often as at its own partitions
    slow = periods(Pace(heartbeat_ttl=30.0, claim_timeout=600.0))
    assert (slow["beat"], slow["lead"], slow["reclaim"]) == (10.0, 0.5, 10.0)  # at most 10 s


def test_a_notice_runs_its_duty_at_once_and_a_follower_tries_the_lease_when_it_ends() -> None:
    clock = Clock()
    keeper = duties(clock, lead=0.5, follow=HEARD)
    keeper.start()
    keeper.nudge("follow")  # a notice: the new assignment is read now, not in 10 s
    assert keeper.wait() == 0.0
    assert names(keeper) == ["follow"]
    keeper.defer("lead", 7.25)  # the leader's lease has 7.25 s left
    clock.now += 7.0
    assert names(keeper) == []
    clock.now += 0.25
    assert names(keeper) == ["lead"]


def test_notices_heard_slow_the_polls_they_stand_for() -> None:
    pace = Pace(heartbeat_ttl=10.0, claim_timeout=60.0)
    assert heard_periods(pace) == {"follow": HEARD, "state": HEARD, "hints": HEARD}
    assert periods(pace)["hints"] == 0.05  # unheard: the old pace


async def test_redis_errors_are_borne_for_the_budget_then_raised() -> None:
    clock = Clock()
    failures: list[BaseException] = []

    async def failing() -> None:
        if failures:
            raise failures.pop()

    keeper = Duties({"renew": (1.0, failing)}, 10.0, clock)
    (duty,) = keeper.duties
    failures.append(ResponseError("NOSCRIPT"))
    await Duties.attempt(duty)  # borne: the next turn tries again
    clock.now = 105.0
    await Duties.attempt(duty)  # a success ends the run of errors
    failures.append(ResponseError("NOSCRIPT"))
    await Duties.attempt(duty)  # a new run starts at 105
    clock.now = 114.0
    failures.append(ResponseError("NOSCRIPT"))
    await Duties.attempt(duty)  # 9 s into the run: still borne
    clock.now = 115.0
    failures.append(ResponseError("NOSCRIPT"))
    with pytest.raises(RedisError):
        await Duties.attempt(duty)  # the run has lasted the budget


@pytest.mark.parametrize("error", [RedisUnavailable("down"), ValueError("bug")])
async def test_other_errors_are_raised_at_once(error: Exception) -> None:
    async def failing() -> None:
        raise error

    keeper = Duties({"beat": (1.0, failing)}, 10.0, Clock())
    with pytest.raises(type(error)):
        await Duties.attempt(keeper.duties[0])

"""The retry helper: backoff delays, an outage's budget, giving up once and for all."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import pytest
from tests.clock import SleepClock

from gossamer.retry import Backoff, Outage, retry


class Down(Exception):
    pass


def flaky(failures: int) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise Down(f"failure {len(calls)}")
        return "ok"

    return calls, attempt


def test_backoff_doubles_up_to_its_cap() -> None:
    rng = random.Random(1)
    exact = Backoff(0.1, 0.5)
    assert [exact.delay(n, rng) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    jittered = Backoff(1.0, 4.0, jitter=0.5)
    for n, ceiling in enumerate([1.0, 2.0, 4.0, 4.0], start=1):
        assert ceiling / 2 <= jittered.delay(n, rng) <= ceiling
    assert Backoff(1.0, 8.0).delay(10_000, rng) == 8.0  # no overflow


async def test_retry_waits_between_attempts_and_reports_the_outage() -> None:
    clock = SleepClock()
    events: list[object] = []
    outage = Outage(10.0, clock=clock, on_start=events.append, on_end=events.append)
    calls, attempt = flaky(3)
    result = await retry(
        attempt,
        errors=(Down,),
        outage=outage,
        backoff=Backoff(0.1, 1.0),
        give_up=RuntimeError,
        sleep=clock.sleep,
    )
    assert (result, len(calls), clock.slept) == ("ok", 4, [0.1, 0.2, 0.4])
    assert [str(events[0]), events[1]] == ["failure 1", pytest.approx(0.7)]
    assert outage.steady_for() == pytest.approx(0.4)


async def test_retry_gives_up_after_the_budget_and_then_at_once() -> None:
    clock = SleepClock()
    outage = Outage(1.0, clock=clock, started=True)
    calls, attempt = flaky(100)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="gave up: failure 5"):
            await retry(
                attempt,
                errors=(Down,),
                outage=outage,
                backoff=Backoff(0.3, 0.3),
                give_up=lambda error: RuntimeError(f"gave up: {error}"),
                sleep=clock.sleep,
            )
        # the last wait was cut to the budget left; the second call tries nothing
        assert (clock.now, len(calls)) == (pytest.approx(1.0), 5)


async def test_other_errors_and_a_failed_hook_stop_at_once() -> None:
    clock = SleepClock()

    async def broken() -> None:
        raise KeyError("not a retry")

    with pytest.raises(KeyError):
        await retry(broken, errors=(Down,), outage=Outage(9, clock=clock),
                    backoff=Backoff(1, 1), give_up=RuntimeError, sleep=clock.sleep)  # fmt: skip
    seen: list[int] = []

    async def stop_at_two(error: BaseException, failures: int) -> None:
        seen.append(failures)
        if failures == 2:
            raise ValueError("stopped")

    _, attempt = flaky(5)
    with pytest.raises(ValueError, match="stopped"):
        await retry(attempt, errors=(Down,), outage=Outage(9, clock=clock),
                    backoff=Backoff(1, 1), give_up=RuntimeError, failed=stop_at_two,
                    sleep=clock.sleep)  # fmt: skip
    assert seen == [1, 2] and clock.slept == [1]


def test_an_outage_budget_counts_from_its_first_failure() -> None:
    clock = SleepClock()
    outage = Outage(5.0, clock=clock)
    clock.now = 100.0
    assert outage.failed(Down()) == 5.0
    clock.now = 103.0
    assert outage.failed(Down()) == 2.0
    outage.recovered()
    clock.now = 200.0
    assert outage.failed(Down()) == 5.0  # a new outage: the whole budget again

"""A fake monotonic clock for tests of waits and backoff: it moves only when slept on."""

from __future__ import annotations


class SleepClock:
    """Call it for the time; ``await clock.sleep(s)`` moves it ``s`` ahead at once and notes
    ``s`` in ``slept``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

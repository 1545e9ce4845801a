"""Pacing body bytes to a byte rate (``--max-bandwidth``), and the hook that counts them.

One `TokenBucket` is shared by every request of a process. A body's size is not known before
it arrives, so bytes are paid for after they are read: the reader debits them and sleeps until
the balance is back at zero. While it sleeps, aiohttp's read buffer fills and stops reading
the socket, so TCP flow control slows the sender down to the same rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["BURST_SECONDS", "ByteMeter", "TokenBucket"]

#: The default burst: this many seconds' worth of bytes at the full rate.
BURST_SECONDS = 0.1


class ByteMeter(Protocol):
    """Anything told how many body bytes arrived (the fetcher calls it once per chunk)."""

    def add(self, n: int) -> None: ...


class TokenBucket:
    """Paces a flow of bytes to ``rate`` bytes per second with a burst of ``burst`` bytes.

    `take` debits bytes already received and returns how long to wait until they are paid
    for; the balance may go below zero, so concurrent readers reserve successive slices of
    time and share the rate in arrival order, each sleeping exactly once per chunk (no
    polling). The balance never rises above ``burst`` (default `BURST_SECONDS` of the rate):
    an idle spell buys at most that many bytes at full speed. ``clock`` is monotonic seconds;
    ``sleep`` is awaited with each wait (both injectable for exact tests).
    """

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be > 0")
        self.rate = float(rate)
        self.burst = self.rate * BURST_SECONDS if burst is None else float(burst)
        if self.burst < 0:
            raise ValueError("burst must be >= 0")
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._updated = clock()

    @property
    def tokens(self) -> float:
        """The balance now, in bytes (negative while readers wait)."""
        return min(self.burst, self._tokens + (self._clock() - self._updated) * self.rate)

    def take(self, n: int) -> float:
        """Debit ``n`` bytes; return the seconds until the balance is back at zero."""
        now = self._clock()
        elapsed = now - self._updated
        self._updated = now
        self._tokens = min(self.burst, self._tokens + elapsed * self.rate) - n
        return -self._tokens / self.rate if self._tokens < 0 else 0.0

    async def pay(self, n: int) -> float:
        """Debit ``n`` bytes and sleep until they are paid for; return the seconds slept."""
        wait = self.take(n)
        if wait > 0:
            await self._sleep(wait)
        return wait

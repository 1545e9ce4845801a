"""A worker's acks held back until their records are durable (``defer_acks``).

An ack waits in memory, its claim renewed, until a checkpoint takes it (:meth:`DeferredAcks.take`,
just before the commit) and sends it once the commit is durable. One never sent (its
checkpoint failed: a full disk, a corrupt crawl.db) marks a URL whose record was never
committed: :meth:`DeferredAcks.unsent` hands those out, and the frontier's ``close()`` gives
them back to the front of their partitions, fetched again by whoever owns them next at once,
rather than sitting claimed until their claims lapse (``lease_timeout``). One whose record was
committed but whose send failed is fetched twice then, never lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gossamer.frontier.redis.keys import Entry

Send = Callable[[list[Entry]], Awaitable[None]]
"""Sends acks to Redis (the frontier's pipeline)."""


class DeferredAcks:
    """The acks made and not sent yet (see the module doc), sent with ``send``."""

    __slots__ = ("_send", "_taken", "_unsent")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._unsent: list[Entry] = []
        """Acked, not taken by a checkpoint yet."""
        self._taken: dict[int, Entry] = {}
        """Taken by a checkpoint, not sent yet (by identity)."""

    def add(self, entry: Entry) -> None:
        """``entry``'s lease was acked: its ack waits for the next checkpoint."""
        self._unsent.append(entry)

    def take(self) -> Callable[[], Awaitable[None]]:
        """The acks made so far, as a function sending them (see the module doc)."""
        entries, self._unsent = self._unsent, []
        self._taken.update((id(entry), entry) for entry in entries)

        async def send() -> None:
            await self._send(entries)
            for entry in entries:
                self._taken.pop(id(entry), None)

        return send

    def unsent(self) -> list[Entry]:
        """Every ack not sent, taken out: their URLs are to be fetched again."""
        entries = [*self._taken.values(), *self._unsent]
        self._unsent, self._taken = [], {}
        return entries

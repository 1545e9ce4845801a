"""Holders: which worker may claim from a partition now (host mode).

Workers follow a new assignment each in its own time, so a partition's new owner may learn of
it before the old owner does, while the old owner still fetches from the partition's hosts. A
worker's claims therefore record it as the partition's holder (``gs:{J:p}:holder``:
``name:version``, the assignment version it claimed at), and another worker claims there only
once the holder has handed the partition over: its give-away deletes the record in the call
that lays its fence (:mod:`.fences`), after which the fence keeps the hosts' delay. Until
then ``claim.lua`` answers with the record, and the claimer takes the partition over anyway
when the holder is gone from the job's workers (:attr:`Peers.alive`: a dead worker's
partitions move only once its heartbeat has run out, so that costs no wait) or when
``handover_grace`` seconds have passed since the claimer gained the partition (time for any
live worker to follow an assignment: a holder still silent then is stuck, or died just
after the assignment was published). A record of a later version than the claimer's is never
taken over: the claimer has not followed that assignment yet.

In url mode no worker owns a host and nothing is recorded; nor by a frontier alone, which has
no peers (:meth:`RedisFrontier.join <.frontier.RedisFrontier.join>`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

HANDOVER_POLL = 0.25
"""Seconds before asking again for a partition another worker holds or fences (a fence of
requests still in flight ends when they do, earlier than it says)."""
_RECORD = re.compile(rb"(.*):(-?\d+)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Peers:
    """A cluster worker among the job's others: its name in holder records, and how it
    learns which workers live."""

    name: str
    alive: Callable[[Collection[str]], Awaitable[Collection[str]]]
    """Which of the names given are workers of the job now (heartbeat not run out)."""


def holder_of(record: bytes | str) -> tuple[str, int] | None:
    """A holder record's worker and assignment version; None when it does not decode (taken
    over at once: a record gossamer never wrote holds nothing back)."""
    raw = record.encode("utf-8", "surrogateescape") if isinstance(record, str) else record
    match = _RECORD.fullmatch(raw)
    if match is None or len(match[2]) > 18:  # as claim.lua reads it
        return None
    return match[1].decode("utf-8", "replace"), int(match[2])


class Holders:
    """This worker's side of the holder records: the arguments its claims carry, and which
    partitions held by others it takes over now. Records are kept in host mode once the
    worker has :attr:`peers` (a frontier alone keeps none)."""

    def __init__(self, grace: float, *, by_host: bool, clock: Callable[[], float]) -> None:
        self.peers: Peers | None = None
        """This worker among the job's others (see :meth:`RedisFrontier.join`)."""
        self._grace = grace
        self._by_host = by_host
        self._clock = clock
        self._since = clock()
        self.version = 0
        """The assignment version of this worker's ownership."""
        self._gained: dict[int, float] = {}
        """When partitions were gained (by the clock), those gained after the start."""
        self.recorded: set[int] = set()
        """Owned partitions whose claims recorded this worker as their holder (their
        give-away deletes the record)."""

    def args(self, takeover: bool = False) -> list[str | int]:
        """A claim's arguments: this worker's name ('' in url mode: no record), the version
        it owns the partition at, and whether it takes the partition over from its holder."""
        return [self.name, self.version, int(takeover)]

    @property
    def name(self) -> str:
        """This worker's name in holder records ('' while it keeps none)."""
        return self.peers.name if self.peers is not None and self._by_host else ""

    def own(self, version: int, gained: Collection[int], lost: Collection[int]) -> None:
        """This worker owns a new share at ``version``: ``gained`` partitions from now."""
        self.version = version
        now = self._clock()
        for part in gained:
            self._gained[part] = now
        for part in lost:
            self._gained.pop(part, None)

    def claimed(self, part: int) -> None:
        """A claim from ``part`` went through: this worker is its holder."""
        if self.name:
            self.recorded.add(part)

    async def takeovers(self, held: Mapping[int, bytes | str]) -> tuple[set[int], float]:
        """Of the partitions ``held`` by others (their records), those this worker takes over
        now (see the module doc), and the seconds until the others should be asked again."""
        now = self._clock()
        records = {part: holder_of(record) for part, record in held.items()}
        take = {part for part, holder in records.items() if holder is None}
        waiting = {
            part: holder
            for part, holder in records.items()
            if holder is not None and holder[1] <= self.version
        }
        late = {
            part for part in waiting if now - self._gained.get(part, self._since) >= self._grace
        }
        asked = {part: holder[0] for part, holder in waiting.items() if part not in late}
        peers = self.peers
        alive = set(await peers.alive(set(asked.values()))) if asked and peers else set()
        gone = {part for part, name in asked.items() if name not in alive}
        if late:
            silent = sorted({waiting[part][0] for part in late})
            log.info(
                "took over %d partitions their holders (%s) did not hand over within %gs",
                len(late),
                ", ".join(silent[:5]),
                self._grace,
                extra={"event": "partitions-taken-over", "partitions": len(late)},
            )
        take |= late | gone
        left = [self._gained.get(p, self._since) + self._grace - now for p in asked.keys() - gone]
        return take, min([HANDOVER_POLL, *left])

"""New URLs into their partitions' queues (``lua/add.lua``): the job's seen sets decide.

Admitted URLs are batched by partition (:func:`~.keys.batch_entries`), one ``add.lua`` call a
partition, all in one pipeline; the script queues only the entries its partition's seen set
has not met. This worker remembers the fingerprints it has sent (once Redis has them), so one
it sent before is a duplicate without a round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from redis.commands.core import AsyncScript

from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.redis.keys import PartitionKeys, batch_entries
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts

if TYPE_CHECKING:
    from gossamer.frontier.admission import Admitted

__all__ = ["Adds"]


class Adds:
    """Sends admitted URLs to their partitions' queues (see the module docstring)."""

    __slots__ = (
        "_by_url",
        "_keys",
        "_partitions",
        "_redis",
        "_script",
        "duplicates",
        "ranked",
        "sent",
    )

    def __init__(
        self,
        redis: RedisClient,
        keys: PartitionKeys,
        script: AsyncScript,
        partitions: int,
        *,
        by_url: bool,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._script = script
        self._partitions = partitions
        self._by_url = by_url
        self.sent = SeenSet()
        """Fingerprints this worker has sent to Redis: known seen, no round trip needed."""
        self.duplicates = 0
        """URLs this worker added that were seen before."""
        self.ranked = False
        """It added URLs with priorities: claim a few of each partition."""

    async def send(self, admitted: Iterable[Admitted]) -> tuple[dict[int, int], int]:
        """Queue the URLs of ``admitted`` not seen before in their partitions: how many each
        partition sent to took, and how many were duplicates."""
        batches, ranked, fps, duplicates = batch_entries(
            admitted, self.sent, self._partitions, by_url=self._by_url
        )
        self.ranked |= bool(ranked)
        fresh: dict[int, int] = {}
        if batches:
            calls: list[ScriptCall] = []
            for part, rows in batches.items():
                args = ["1" if part in ranked else "0", "".join(rows)]
                keys = self._keys.of(part, "seen", "queue", "counts", "ranked", "ranks", "hosts")
                calls.append((self._script, keys, args))
            results = await run_scripts(self._redis, calls)
            self.sent.add_many(fps)  # only once Redis has them
            fresh = {part: int(result) for part, result in zip(batches, results, strict=True)}
            duplicates += len(fps) - sum(fresh.values())
        self.duplicates += duplicates
        return fresh, duplicates

"""New URLs into their partitions' queues (``lua/add.lua``): the job's seen sets decide.

Admitted URLs are batched by partition and host (:func:`~.keys.batch_entries`), one
``add.lua`` call a partition, all in one pipeline; the script queues only the entries its
partition's seen set has not met. A host's number in its partition comes back in the reply;
this worker keeps it and sends that host's later entries as the partition stores them, which
spares Redis a look-up and a concatenation a URL. A seed's password goes to the job's
``credentials`` first (:mod:`.credentials`); the entries hold it masked. This worker
remembers the fingerprints it has sent (once Redis has them), so one it sent before is a
duplicate without a round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from redis.commands.core import AsyncScript

from gossamer.frontier.dedup import SeenSet
from gossamer.frontier.redis.credentials import Credentials
from gossamer.frontier.redis.faults import Faults, faulty
from gossamer.frontier.redis.keys import Batched, PartitionKeys, batch_entries
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts

if TYPE_CHECKING:
    from gossamer.frontier.admission import Admitted

__all__ = ["Adds"]

HOST_NUMBERS_KEPT = 1_000_000
"""Host numbers a worker keeps (about 100 MB at most); past that it forgets them all and
learns them again."""


class Adds:
    """Sends admitted URLs to their partitions' queues (see the module docstring)."""

    __slots__ = (
        "_by_url",
        "_cached",
        "_credentials",
        "_ids",
        "_keys",
        "_partitions",
        "_redis",
        "_script",
        "duplicates",
        "faults",
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
        faults: Faults | None = None,
    ) -> None:
        self._redis = redis
        self.faults = faults or Faults(redis, keys)
        """The partitions set aside: their URLs go to the job's bad entries."""
        self._keys = keys
        self._script = script
        self._partitions = partitions
        self._by_url = by_url
        self._credentials = Credentials(redis, keys.job)
        self._ids: dict[int, dict[str, str]] = {}
        """Host key -> its number, by partition, as ``add.lua`` answered: a partition never
        renumbers a host, so later entries are sent as it stores them."""
        self._cached = 0
        self.sent = SeenSet()
        """Fingerprints this worker has sent to Redis: known seen, no round trip needed."""
        self.duplicates = 0
        """URLs this worker added that were seen before."""
        self.ranked = False
        """It added URLs with priorities: claim a few of each partition."""

    async def send(self, admitted: Iterable[Admitted]) -> tuple[dict[int, int], int]:
        """Queue the URLs of ``admitted`` not seen before in their partitions: how many each
        partition sent to took, and how many were duplicates."""
        batched = batch_entries(admitted, self.sent, self._partitions, by_url=self._by_url)
        self.ranked |= bool(batched.ranked)
        fresh: dict[int, int] = {}
        duplicates = batched.duplicates
        if batched.batches:
            await self._credentials.store(batched.secrets)  # before an entry can be claimed
            parts = [part for part in batched.batches if part not in self.faults]
            for part in batched.batches.keys() - set(parts):
                fresh[part] = await self._keep(part, batched.batches[part])
            fresh.update(await self._run(batched, parts))
            self.sent.add_many(batched.fps)  # only once Redis has them
            duplicates += len(batched.fps) - sum(fresh.values())
        self.duplicates += duplicates
        return fresh, duplicates

    async def _run(self, batched: Batched, parts: list[int]) -> dict[int, int]:
        """One ``add.lua`` call a partition of ``parts``: how many each queued. A partition
        that answers it never gave a host number this worker sent (the job was cleared) is
        sent again with every host named."""
        calls: list[ScriptCall] = []
        named: list[list[str]] = []
        for part in parts:
            args, hosts = self._args(part, batched.batches[part], part in batched.ranked)
            keys = self._keys.of(part, "seen", "queue", "counts")
            calls.append((self._script, keys, args))
            named.append(hosts)
        results: list[Any] = await run_scripts(self._redis, calls, check=0)
        fresh: dict[int, int] = {}
        again = []
        for part, hosts, result in zip(parts, named, results, strict=True):
            if not _well_formed(result, hosts):
                if isinstance(result, Exception) and not faulty(result):
                    raise result
                error = result if isinstance(result, Exception) else f"add answered {result!r:.100}"
                await self.faults.set_aside(part, error)
                fresh[part] = await self._keep(part, batched.batches[part])
                continue
            added, *ids = result
            if int(added) < 0:
                self._ids.pop(part, None)
                again.append(part)
                continue
            fresh[part] = int(added)
            known = self._ids.setdefault(part, {})
            for host, number in zip(hosts, ids, strict=True):
                if number:
                    known[host] = number.decode() if isinstance(number, bytes) else str(number)
        self._cached += sum(map(len, named))
        if self._cached > HOST_NUMBERS_KEPT:
            self._ids.clear()
            self._cached = 0
        if again:
            fresh.update(await self._run(batched, again))
        return fresh

    async def _keep(self, part: int, hosts: dict[str, list[str]]) -> int:
        """Store the URLs of ``hosts`` (by host key, as :attr:`Batched.batches` holds them) for
        ``part``, set aside, with the job's bad entries; how many (counted as added)."""
        entries = (host + tail for host, rows in hosts.items() for tail in rows[1::2])
        return await self.faults.keep(part, entries)

    def _args(
        self, part: int, hosts: dict[str, list[str]], ranked: bool
    ) -> tuple[list[Any], list[str]]:
        """The arguments of ``add.lua`` for the entries of one partition, and the hosts they
        name by key (those whose number this worker does not know yet). The entries stored as
        they are (a known host's, and those of URLs without a path) come first, counted, with
        no host argument among them: most of a call's URLs are of a host of their own, so a
        marker would be one more argument a URL for Redis to read and tell apart."""
        known = self._ids.get(part, {})
        args: list[Any] = ["1" if ranked else "0", 0, 0]
        named: list[str] = []
        later: list[str] = []
        highest = 0
        for host, rows in hosts.items():
            number = known.get(host)
            if not host:  # URLs without a path: stored as they are, set aside when claimed
                args += rows
            elif number is None:
                later += (host, *rows)
                named.append(host)
            else:  # the entries as the partition stores them
                highest = max(highest, int(number))
                stored = rows.copy()
                stored[1::2] = [number + tail for tail in rows[1::2]]
                args += stored
        args[1], args[2] = highest, (len(args) - 3) // 2
        args += later
        return args, named


def _well_formed(result: object, hosts: list[str]) -> bool:
    """An ``add.lua`` answer: how many were added, and the number of each host named (-1
    alone when the worker's host numbers are not the partition's)."""
    if not isinstance(result, list) or not result or not isinstance(result[0], int):
        return False
    if result[0] < 0:
        return True
    numbers = result[1:]
    return len(numbers) == len(hosts) and all(isinstance(n, bytes | str | int) for n in numbers)

"""Assignment-following: which partitions this worker owns.

The leader publishes the assignment (worker -> partitions) with a version; every worker
follows it, looking at the version often (one GET) and reading its own share when it moves.
Its share goes to the frontier as an :class:`~gossamer.frontier.redis.Ownership` value. The
assignment also tells whom to wake when this worker queues URLs in someone else's partition.
"""

from __future__ import annotations

from collections.abc import Iterable

from gossamer.cluster.control import Control
from gossamer.frontier.redis import Ownership


class Assignment:
    """This worker's view of the published assignment."""

    def __init__(self, control: Control, name: str) -> None:
        self._control = control
        self._name = name
        self._owners: dict[int, str] = {}
        self.ownership = Ownership(frozenset(), version=-1)
        """This worker's share at the last version seen (none before the first)."""

    async def follow(self) -> Ownership | None:
        """This worker's new share when the assignment's version moved, else None."""
        version = self.ownership.version
        if await self._control.version() == version:
            return None
        version, owned = await self._control.owned_by(self._name)
        if version == self.ownership.version:
            return None
        assignment = await self._control.assignment()
        self._owners = {p: name for name, parts in assignment.items() for p in parts}
        self.ownership = Ownership(owned, version)
        return self.ownership

    def owners(self, parts: Iterable[int]) -> dict[str, list[int]]:
        """The other workers owning ``parts`` (by the last assignment seen), with theirs."""
        owners: dict[str, list[int]] = {}
        for part in parts:
            owner = self._owners.get(part)
            if owner is not None and owner != self._name:
                owners.setdefault(owner, []).append(part)
        return owners

"""Assignment-following: which partitions this worker owns.

The leader publishes the assignment (worker -> partitions) with a version; every worker
follows it, looking at the version often (one GET) and reading its own share when it moves.
Its share goes to the frontier as an :class:`~gossamer.frontier.redis.Ownership` value. The
assignment also tells whom to wake when this worker queues URLs in someone else's partition:
the owners of just those partitions are read (``gs:{J}:owners``) and kept until the version
moves, so no worker reads the whole table, which grows with the number of workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gossamer.cluster.control import Control
from gossamer.frontier.redis import Ownership


class Assignment:
    """This worker's view of the published assignment; ``moved`` is told whenever this
    worker's share changes (the sitemap stage's, which reads its hosts' sitemaps only)."""

    def __init__(
        self, control: Control, name: str, moved: Callable[[], None] | None = None
    ) -> None:
        self._control = control
        self._moved = moved
        self.name = name
        """This worker's name."""
        self._owners: dict[int, str | None] = {}
        self.ownership = Ownership(frozenset(), version=-1)
        """This worker's share at the last version seen (none before the first)."""
        self.workers = 0
        """How many workers the assignment at that version names."""

    async def follow(self) -> Ownership | None:
        """This worker's new share when the assignment's version moved, else None."""
        version = self.ownership.version
        if await self._control.version() == version:
            return None
        version, owned = await self._control.owned_by(self.name)
        if version == self.ownership.version:
            return None
        self.workers = await self._control.assigned()
        self._owners.clear()
        self.ownership = Ownership(owned, version)
        if self._moved is not None:
            self._moved()
        return self.ownership

    async def owners(self, parts: Iterable[int]) -> dict[str, list[int]]:
        """The other workers owning ``parts`` (by the assignment since the last version
        seen), with theirs."""
        wanted = sorted(set(parts))
        unknown = [part for part in wanted if part not in self._owners]
        if unknown:
            self._owners.update(await self._control.owners_of(unknown))
        owners: dict[str, list[int]] = {}
        for part in wanted:
            owner = self._owners.get(part)
            if owner is not None and owner != self.name:
                owners.setdefault(owner, []).append(part)
        return owners

"""The URL-seen set of the frontiers: exact membership of 64-bit fingerprints.

Up to :data:`SMALL_LIMIT` fingerprints it is a Python ``set``: the fastest lookups, and a crawl
of a few thousand pages never imports numpy. Past it the fingerprints move once into a
:class:`~gossamer.frontier.packed.PackedSet`, which gives the same answers in 9-12 bytes per
URL instead of a set's 60-100 (a million seeds fit in a few hundred MB).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Self

import msgspec

from gossamer.urls import INT64_MAX, INT64_MIN

if TYPE_CHECKING:
    from gossamer.frontier.packed import PackedSet

__all__ = ["INT64_MAX", "INT64_MIN", "SMALL_LIMIT", "SeenSet", "SeenStats"]

SMALL_LIMIT = 1 << 16
"""Fingerprints held in a Python set (about 5 MB) before they move to the packed form."""
_INT_BYTES = 40
"""A 64-bit Python int: 36 bytes, rounded up to pymalloc's 8-byte size class."""


class SeenStats(msgspec.Struct, frozen=True):
    """Frozen snapshot of a :class:`SeenSet`."""

    entries: int
    nbytes: int
    """Bytes held (Python ints estimated)."""
    bytes_per_entry: float
    """``nbytes / entries``; 0.0 when empty."""


def _check(fps: Sequence[int]) -> None:
    if fps and (min(fps) < INT64_MIN or max(fps) > INT64_MAX):
        raise OverflowError("a fingerprint is not a signed 64-bit integer")


class SeenSet:
    """An exact set of signed 64-bit fingerprints (see :func:`gossamer.urls.fingerprint`)."""

    def __init__(self) -> None:
        self._small: set[int] | None = set()
        self._packed: PackedSet | None = None

    @classmethod
    def from_fingerprints(cls, fps: Iterable[int]) -> Self:
        """A set bulk-loaded with :meth:`update_from`."""
        seen = cls()
        seen.update_from(fps)
        return seen

    def __len__(self) -> int:
        small = self._small
        return len(small) if small is not None else len(self._packed_set())

    def __contains__(self, fp: object) -> bool:
        small = self._small
        return fp in small if small is not None else fp in self._packed_set()

    @property
    def nbytes(self) -> int:
        """Bytes held by the structure."""
        small = self._small
        if small is None:
            return self._packed_set().nbytes
        return sys.getsizeof(small) + len(small) * _INT_BYTES

    def stats(self) -> SeenStats:
        """A frozen snapshot of size and memory."""
        entries, nbytes = len(self), self.nbytes
        return SeenStats(entries, nbytes, nbytes / entries if entries else 0.0)

    def add(self, fp: int) -> bool:
        """Add one fingerprint; True when it was not in the set."""
        small = self._small
        if small is None:
            return self._packed_set().add(fp)
        _check([fp])
        if fp in small:
            return False
        small.add(fp)
        if len(small) > SMALL_LIMIT:
            self._pack()
        return True

    def add_many(self, fps: Sequence[int]) -> list[bool]:
        """Add a batch (a page's outlinks); True for each fingerprint seen for the first time.

        A fingerprint repeated inside the batch is True at its first occurrence only.
        """
        small = self._small
        if small is None:
            return self._packed_set().add_many(fps)
        if not isinstance(fps, list):
            fps = [int(fp) for fp in fps]
        _check(fps)
        out = []
        for fp in fps:
            if fp in small:
                out.append(False)
            else:
                small.add(fp)
                out.append(True)
        if len(small) > SMALL_LIMIT:
            self._pack()
        return out

    def update_from(self, fps: Iterable[int]) -> int:
        """Bulk-load fingerprints (``--resume``); returns how many were new."""
        small = self._small
        if small is None:
            return self._packed_set().update_from(fps)
        batch = fps if isinstance(fps, Sequence) else list(fps)
        if len(small) + len(batch) <= SMALL_LIMIT:
            _check(batch)
            before = len(small)
            small.update(batch)
            return len(small) - before
        before = len(small)
        self._pack()
        self._packed_set().update_from(batch)
        return len(self) - before

    def _pack(self) -> None:
        from gossamer.frontier.packed import PackedSet

        self._packed = PackedSet.from_fingerprints(self._small or ())
        self._small = None

    def _packed_set(self) -> PackedSet:
        assert self._packed is not None
        return self._packed

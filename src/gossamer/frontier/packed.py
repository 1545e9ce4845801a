"""The packed form of the URL-seen set: exact membership of 64-bit fingerprints in numpy arrays.

A Python ``set[int]`` costs 60-100 bytes per URL; :class:`PackedSet` gives the same answers
in about 9-12 bytes per URL from a million URLs on, with no false positives (a false positive
would silently skip a page, so a Bloom filter is not an option). :class:`~gossamer.frontier.
dedup.SeenSet` moves its fingerprints here once it holds enough of them for that to matter.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from collections.abc import Iterable, Sequence
from typing import Self

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from gossamer.urls import INT64_MAX, INT64_MIN

Int64Array = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.int32] | npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


_INT_BYTES = 40
"""A 64-bit Python int: 36 bytes, rounded up to pymalloc's 8-byte size class."""
_MIN_BUFFER = 1024
_BUFFER_SHARE = 32
"""The buffer is merged once it holds 1/32 as many keys as the sorted array."""
_BUCKET_LOAD = 8
"""The directory has a bucket per 4-8 keys."""
_MIN_BITS = 4
_WINDOW = 32
"""Keys a batch lookup copies from the start of each bucket (4 cache lines, one row)."""
_MERGE_CHUNK = 1 << 18
"""Keys moved per step of a merge: a merge's only scratch memory is two such chunks."""
_FILTER_CHUNK = 1 << 13
"""Keys looked up per vectorised step in bulk work (its window copies take 2 MB)."""
_DIR_SLICE = 1 << 15
"""Directory entries updated per step."""


def _windows(keys: Int64Array) -> npt.NDArray[np.int64]:
    """A read-only view whose row ``i`` is ``keys[i : i + _WINDOW]``: no copy."""
    return sliding_window_view(keys, _WINDOW)


_NO_ROWS = _windows(np.zeros(_WINDOW, dtype=np.int64))


class PackedSet:
    """An exact set of signed 64-bit fingerprints (see :func:`gossamer.urls.fingerprint`).

    Layout:

    * ``_keys[:_n]``: every merged fingerprint, sorted and unique, followed by ``_WINDOW``
      copies of the largest one so a lookup window never runs off the end. The array grows in
      place with ``ndarray.resize`` (``realloc``, which Linux does by remapping pages, not by
      copying), so it costs 8 bytes per key.
    * ``_dir``: a directory over the top ``_bits`` bits of a key: bucket ``b`` holds
      ``_keys[_dir[b]:_dir[b + 1]]``, 4-8 keys on average since fingerprints are hashes. A
      batch lookup copies the ``_WINDOW`` keys from each bucket's start in one gather; a key of
      another bucket never equals the key looked up, so no upper bound is needed. Buckets
      wider than the window (skewed input only) fall back to a binary search.
    * ``_buf`` / ``_pending``: fingerprints added since the last merge, in a set (membership)
      and an int64 array (merging without reading the set's scattered int objects).

    When the buffer holds 1/32 of the merged keys it is sorted and merged into ``_keys`` in
    place, back to front, a chunk at a time: a key moves about 32 times over its life
    (amortised O(1) per insert) and a merge never needs a second copy of the array.
    """

    def __init__(self) -> None:
        self._n = 0
        self._keys: Int64Array = np.zeros(_WINDOW, dtype=np.int64)
        self._rows = _NO_ROWS
        self._bits = _MIN_BITS
        self._dir: IndexArray = np.zeros((1 << _MIN_BITS) + 1, dtype=np.int32)
        self._widest = 0
        self._buf: set[int] = set()
        self._pending: Int64Array = np.empty(_MIN_BUFFER, dtype=np.int64)
        self._npending = 0
        self._flush_at = _MIN_BUFFER

    @classmethod
    def from_fingerprints(cls, fps: Iterable[int]) -> Self:
        """A set bulk-loaded with :meth:`update_from`."""
        seen = cls()
        seen.update_from(fps)
        return seen

    # -- queries ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n + len(self._buf)

    def __contains__(self, fp: object) -> bool:
        if not isinstance(fp, int) or not INT64_MIN <= fp <= INT64_MAX:
            return False
        return fp in self._buf or self._merged_contains(fp)

    @property
    def nbytes(self) -> int:
        """Bytes held by the structure, buffers included."""
        buffered = sys.getsizeof(self._buf) + len(self._buf) * _INT_BYTES
        return self._keys.nbytes + self._dir.nbytes + self._pending.nbytes + buffered

    # -- updates ---------------------------------------------------------------------------

    def add(self, fp: int) -> bool:
        """Add one fingerprint; True when it was not in the set."""
        if not INT64_MIN <= fp <= INT64_MAX:
            raise OverflowError(f"fingerprint {fp} is not a signed 64-bit integer")
        if fp in self._buf or self._merged_contains(fp):
            return False
        self._buf.add(fp)
        self._stage([fp])
        return True

    def add_many(self, fps: Sequence[int] | Int64Array) -> list[bool]:
        """Add a batch (a page's outlinks); True for each fingerprint seen for the first time.

        A fingerprint repeated inside the batch is True at its first occurrence only.
        """
        keys = np.asarray(fps, dtype=np.int64)
        if keys.size == 0:
            return []
        merged: list[bool] = self._find(keys).tolist()
        values = fps if isinstance(fps, list) else keys.tolist()
        buf, fresh, out = self._buf, [], []
        for fp, hit in zip(values, merged, strict=True):
            if hit or fp in buf:
                out.append(False)
            else:
                buf.add(fp)
                fresh.append(fp)
                out.append(True)
        if fresh:
            self._stage(fresh)
        return out

    def update_from(self, fps: Iterable[int]) -> int:
        """Bulk-load fingerprints (``--resume``) with one sort; returns how many were new."""
        before = len(self)
        if isinstance(fps, np.ndarray):
            arr: Int64Array = np.ravel(fps).astype(np.int64)
        else:
            arr = np.fromiter(fps, dtype=np.int64)
        self._flush()
        arr.sort()
        self._merge(self._keep_new(arr))
        self._flush_at = max(_MIN_BUFFER, self._n // _BUFFER_SHARE)
        return len(self) - before

    # -- lookups in the merged keys --------------------------------------------------------

    def _buckets(self, keys: Int64Array) -> Int64Array:
        return (keys >> (64 - self._bits)) + (1 << (self._bits - 1))

    def _merged_contains(self, fp: int) -> bool:
        if not self._n:
            return False
        bucket = (fp >> (64 - self._bits)) + (1 << (self._bits - 1))
        lo, hi = int(self._dir[bucket]), int(self._dir[bucket + 1])
        i = bisect.bisect_left(self._keys, fp, lo, hi)
        return i < hi and int(self._keys[i]) == fp

    def _find(self, keys: Int64Array) -> BoolArray:
        """Which of ``keys`` are among the merged keys (vectorised)."""
        if not self._n:
            return np.zeros(len(keys), dtype=np.bool_)
        if len(keys) > _FILTER_CHUNK:
            starts = range(0, len(keys), _FILTER_CHUNK)
            return np.concatenate([self._find(keys[i : i + _FILTER_CHUNK]) for i in starts])
        buckets = self._buckets(keys)
        lo = self._dir[buckets]
        found: BoolArray = (self._rows[lo] == keys[:, None]).any(axis=1)
        if self._widest > _WINDOW:
            for i in np.flatnonzero(self._dir[buckets + 1] - lo > _WINDOW).tolist():
                found[i] = self._merged_contains(int(keys[i]))
        return found

    # -- merging ---------------------------------------------------------------------------

    def _stage(self, fresh: list[int]) -> None:
        """Append fingerprints just put in ``_buf`` to ``_pending``; merge when it is full."""
        start, end = self._npending, self._npending + len(fresh)
        if end > len(self._pending):
            self._pending = np.concatenate((self._pending[:start], np.empty(len(fresh), np.int64)))
        self._pending[start:end] = fresh
        self._npending = end
        if end >= self._flush_at:
            self._flush()

    def _flush(self) -> None:
        """Merge the insertion buffer into the sorted keys."""
        if not self._npending:
            return
        new = self._pending[: self._npending]
        new.sort()
        self._merge(new)
        self._buf.clear()
        self._npending = 0
        self._flush_at = max(_MIN_BUFFER, self._n // _BUFFER_SHARE)
        self._pending = np.empty(self._flush_at, dtype=np.int64)

    def _keep_new(self, arr: Int64Array) -> Int64Array:
        """Drop repeats and merged keys from sorted ``arr``, compacting it in place."""
        kept, previous = 0, None
        for start in range(0, len(arr), _FILTER_CHUNK):
            survivors = self._survivors(arr[start : start + _FILTER_CHUNK], previous)
            previous = int(arr[min(start + _FILTER_CHUNK, len(arr)) - 1])
            arr[kept : kept + len(survivors)] = survivors
            kept += len(survivors)
        arr.resize(kept, refcheck=False)
        return arr

    def _survivors(self, chunk: Int64Array, previous: int | None) -> Int64Array:
        """The keys of a sorted chunk that are neither repeats nor merged (a copy)."""
        keep = np.empty(len(chunk), dtype=np.bool_)
        keep[0] = previous is None or int(chunk[0]) != previous
        np.not_equal(chunk[1:], chunk[:-1], out=keep[1:])
        keep &= ~self._find(chunk)
        survivors: Int64Array = chunk[keep]
        return survivors

    def _merge(self, new: Int64Array) -> None:
        """Merge sorted unique ``new`` keys, none of them merged yet, into ``_keys``."""
        added = len(new)
        if not added:
            return
        self._rows = _NO_ROWS  # no view of _keys may outlive a resize of it
        if self._n:
            self._merge_in_place(new)
        else:
            self._keys = _padded(new)
        self._n += added
        self._keys[self._n :] = self._keys[self._n - 1]
        self._rows = _windows(self._keys)
        if self._n == added or self._dir_bits(self._n) != self._bits:
            self._rebuild_dir()
        else:
            self._count_into_dir(new)

    def _merge_in_place(self, new: Int64Array) -> None:
        """Grow ``_keys`` and merge back to front, so no key is overwritten before it moves.

        Chunk ``i`` of the old keys, with the new keys that sort inside it, lands at its old
        offset plus the number of new keys sorting before it.
        """
        n, t = self._n, len(new)
        starts = list(range(0, n, _MERGE_CHUNK))
        cuts: list[int] = np.searchsorted(new, self._keys[starts]).tolist()
        cuts[0] = 0
        cuts.append(t)
        self._keys.resize(n + t + _WINDOW, refcheck=False)
        keys = self._keys
        for i in reversed(range(len(starts))):
            lo, hi = starts[i], min(starts[i] + _MERGE_CHUNK, n)
            first, last = cuts[i], cuts[i + 1]
            if last == 0:
                break  # this chunk and all before it stay where they are
            if first == last:
                keys[lo + first : hi + first] = keys[lo:hi]
                continue
            merged = np.concatenate((keys[lo:hi], new[first:last]))
            merged.sort(kind="stable")  # timsort: a linear merge of the two sorted runs
            keys[lo + first : hi + last] = merged

    # -- the directory ---------------------------------------------------------------------

    @staticmethod
    def _dir_bits(n: int) -> int:
        return max(_MIN_BITS, (n // _BUCKET_LOAD).bit_length())

    def _rebuild_dir(self) -> None:
        self._bits = self._dir_bits(self._n)
        size = (1 << self._bits) + 1
        # Entries stay below 8 * 2**bits + 8 while these bits are in use.
        if self._bits <= 27:
            self._dir = np.zeros(size, dtype=np.int32)
        else:
            self._dir = np.zeros(size, dtype=np.int64)
        self._widest = 0
        self._count_into_dir(self._keys[: self._n])

    def _count_into_dir(self, sorted_keys: Int64Array) -> None:
        """Add newly merged keys to the directory, a slice of buckets at a time.

        ``_dir[j]`` grows by the number of ``sorted_keys`` in buckets below ``j``; working by
        slices keeps scratch memory small (no array as long as the directory).
        """
        buckets = 1 << self._bits
        lows = np.arange(0, buckets + _DIR_SLICE, _DIR_SLICE)
        lows[-1] = buckets
        firsts = (lows[:-1] - (1 << (self._bits - 1))) << (64 - self._bits)
        bounds = [*np.searchsorted(sorted_keys, firsts).tolist(), len(sorted_keys)]
        for i, (start, end) in enumerate(itertools.pairwise(lows.tolist())):
            counts = np.zeros(end - start, dtype=np.int64)
            for lo in range(bounds[i], bounds[i + 1], _MERGE_CHUNK):
                chunk = sorted_keys[lo : min(lo + _MERGE_CHUNK, bounds[i + 1])]
                counts += np.bincount(self._buckets(chunk) - start, minlength=end - start)
            counts[0] += bounds[i]
            self._dir[start + 1 : end + 1] += np.cumsum(counts)
            if bounds[i] < bounds[i + 1]:
                widths = np.diff(self._dir[start : end + 1])
                self._widest = max(self._widest, int(widths.max()))


def _padded(keys: Int64Array) -> Int64Array:
    """``keys`` followed by room for the ``_WINDOW`` pad, grown in place when it owns its data."""
    if keys.base is None:
        keys.resize(len(keys) + _WINDOW, refcheck=False)
        return keys
    return np.concatenate((keys, np.empty(_WINDOW, dtype=np.int64)))

"""The SimHash of a main text (near duplicates, :mod:`gossamer.digests.base`), in numpy.

Imported only by a crawl that looks for near duplicates: a crawl with exact digests alone does
not load numpy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MAX_NEAR_BYTES = 200_000
"""Bytes of a text (UTF-8) read for its SimHash."""
SHINGLE = 16
"""Letters per shingle (about three words)."""
SAMPLE = 4
"""One shingle in this many votes, in texts of more than ``SAMPLE * 256`` shingles."""
_FEW = 256
_SAMPLED = np.uint64((1 << 64) // SAMPLE)

_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[65:91] += 32
_KEEP = np.zeros(256, dtype=bool)
_KEEP[48:58] = _KEEP[65:91] = _KEEP[97:123] = _KEEP[128:] = True
"""ASCII letters and digits and every byte of a non-ASCII character."""
_LOWER_TABLE = _LOWER.tobytes()
_DROPPED = bytes(np.flatnonzero(~_KEEP).tolist())
_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)
"""Each byte value's bits, as floats: the votes are summed by a float matrix product (BLAS),
a sixth of the time of numpy's integer one, and exact (counts stay far below 2**53)."""
_BYTE_OFFSETS = np.arange(8, dtype=np.uint16) * 256
"""Each byte position's first bin: the keys are built as uint16 in one pass (``np.add`` with
a dtype), not as a copy to intp and a second pass adding the offsets."""
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)
_K3 = np.uint64(0x94D049BB133111EB)
_S31, _S29, _S32 = np.uint64(31), np.uint64(29), np.uint64(32)
_PAD = bytes(SHINGLE)


def text_simhash(encoded: bytes) -> int:
    """The SimHash of a UTF-8 text: its letters and digits, ASCII in lower case."""
    return _simhash(encoded[:MAX_NEAR_BYTES].translate(_LOWER_TABLE, _DROPPED))


def simhash(letters: npt.NDArray[np.uint8]) -> int:
    """The 64-bit SimHash of the :data:`SHINGLE`-byte shingles of ``letters`` (a text's
    letters and digits, lower case, nothing between them), each shingle's hash one vote per
    bit; of a long text's shingles one in :data:`SAMPLE` votes (the same ones in every
    copy of the text)."""
    return _simhash(np.ascontiguousarray(letters, dtype=np.uint8).tobytes())


def _simhash(letters: bytes) -> int:
    """:func:`simhash` of the bytes ``letters``: every step in place or one pass where it
    can be, as the per-call cost of a numpy step is most of a short text's."""
    if len(letters) < SHINGLE:
        letters += _PAD[len(letters) :]
    size = len(letters)
    # the 8-byte window at every offset, as one view (a stride of one byte, no copy)
    windows = np.ndarray((size - 7,), dtype="<u8", buffer=letters, strides=(1,))
    head = windows[:-8] * _K1  # a 16-byte shingle: the window there and the one 8 bytes on
    if size > SAMPLE * _FEW:  # by the top bits of the first half's product
        kept = np.flatnonzero(head < _SAMPLED)
        shingles = windows[8:].take(kept)
        shingles ^= head.take(kept)
    else:
        shingles = head
        shingles ^= windows[8:]
    shingles ^= shingles >> _S31  # splitmix64's finaliser: every bit a fair vote
    shingles *= _K2
    shingles ^= shingles >> _S29
    shingles *= _K3
    shingles ^= shingles >> _S32
    count = len(shingles)
    keys = np.add(shingles.view(np.uint8).reshape(count, 8), _BYTE_OFFSETS, dtype=np.uint16)
    counts = np.bincount(keys.ravel(), minlength=2048).reshape(8, 256).astype(np.float64)
    votes = (counts @ _BITS).ravel()
    majority = votes > count / 2  # as ``votes * 2 > count``: whole counts, exact in floats
    return int(np.packbits(majority, bitorder="little").view("<u8")[0])
